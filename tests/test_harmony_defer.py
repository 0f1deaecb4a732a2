"""Harmony deferral (issue 21): the simulator's "not now" rule, the JCT-shaped signal, the
deferral heuristics and the policy's "not now" action, each through the independent checker."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import numpy as np
import pytest

from mlsched_opt.checking.core import CheckResult
from mlsched_opt.cli import main
from mlsched_opt.io import from_document, load_catalog
from mlsched_opt.problems import REGISTRY, GenerateSpec
from mlsched_opt.problems.harmony.baselines import Standalone, make_heuristic
from mlsched_opt.problems.harmony.check import check as harmony_check, job_speed
from mlsched_opt.problems.harmony.generate import generate
from mlsched_opt.problems.harmony.options import DEFERRING
from mlsched_opt.problems.harmony.placements import standalone_speeds
from mlsched_opt.problems.harmony.simulate import Env, interference_now, place_job, simulate
from mlsched_opt.problems.harmony.view import view_of
from mlsched_opt.solvers import SolveOptions

FAMILY = REGISTRY["harmony"]
ROOT = Path(__file__).resolve().parents[1]
needs_torch = pytest.mark.skipif(importlib.util.find_spec("torch") is None, reason="PyTorch not installed: pip install -e '.[rl]'")


def generated(seed, jobs, servers, **options):
    catalog = load_catalog()
    spec = GenerateSpec(jobs=jobs, servers=servers, seed=seed, options=FAMILY.parse_generate_options(options))
    return from_document(generate(spec, catalog), catalog=catalog)


def verdict(inst, decision):
    result = CheckResult()
    harmony_check(inst, json.loads(json.dumps(decision)), {}, result)
    return result


class Always(Standalone):
    """Holds back every job it is asked about (the rule alone bounds the waiting)."""

    def __init__(self):
        self.asked: list[tuple[int, int]] = []

    def defer(self, env, j):
        self.asked.append((j, env.interval))
        return True


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("D", [1, 4])
def test_the_deferral_rule_bounds_waiting_by_choice(seed, D):
    inst = generated(seed, 16, 4)
    view = view_of(inst, {})
    chooser = Always()
    run = simulate(view, chooser, defer_max=D)
    assert chooser.asked and run.deferrals == len(chooser.asked)
    for j, k in chooser.asked:   # asked only within D intervals of the arrival
        assert view.arrival[j] <= k < view.arrival[j] + D
    # a chooser that always holds back lets a job start before arrival + D only when the rule did
    # not ask: on an idle cluster, as the first job of its interval
    slot = view.slot_s
    for j in range(view.J):
        s = run.start[j]
        if s >= view.arrival[j] + D:
            continue
        running = [k for k in range(view.J) if run.start[k] < s and run.finish_s[k] > s * slot + 1e-9]
        assert running == [], (j, s, running)
        others = [k for k in range(view.J) if k != j and run.start[k] == s]
        assert all(s >= view.arrival[k] + D for k in others), (j, s, others)
    result = verdict(inst, run.decision(view))
    assert result.feasible, result.violations
    assert result.objective == pytest.approx(run.jct(view).mean(), rel=1e-9)


def test_defer_zero_never_asks_and_matches_the_plain_heuristic():
    view = view_of(generated(3, 14, 3), {})

    class Refuses(Standalone):
        def defer(self, env, j):
            raise AssertionError("asked to defer under defer_max=0")

    assert simulate(view, Refuses()).decision(view) == simulate(view, make_heuristic("standalone")).decision(view)


def test_an_idle_cluster_never_holds_a_job_back():
    # one job at a time on an empty cluster: nothing to wait for, so the rule never asks
    view = view_of(generated(4, 1, 2), {})
    chooser = Always()
    run = simulate(view, chooser, defer_max=5)
    assert chooser.asked == [] and run.start[0] == view.arrival[0]


@pytest.mark.parametrize("seed", range(4))
def test_jobs_in_the_system_add_up_to_the_total_jct(seed):
    # Little's law, the JCT-shaped reward's premise: summed per-interval occupancy = total JCT
    view = view_of(generated(seed, 20, 4), {})
    occupancy = []
    run = simulate(view, make_heuristic("standalone-defer"), on_interval=lambda env, r: occupancy.append(env.occupancy),
                   defer_max=6)
    assert sum(occupancy) == pytest.approx(run.jct(view).sum(), rel=1e-9)


def test_the_interference_dry_run_leaves_the_state_as_it_was():
    view = view_of(generated(5, 12, 3), {})
    alone = standalone_speeds(view)
    seen = []

    class Probe(Standalone):
        def defer(self, env, j):
            env.left = {"ps": 7, "worker": 9}   # whatever the simulator left there must come back
            before = (env.free.copy(), env.w.copy(), env.p.copy(), env.live.copy(), dict(env.left))
            own, lost = interference_now(env, j, alone, Standalone())
            after = (env.free, env.w, env.p, env.live, env.left)
            assert all(np.array_equal(a, b) for a, b in zip(before[:4], after[:4])) and before[4] == after[4]
            seen.append((own, lost))
            return False

    plain = simulate(view, make_heuristic("standalone"), defer_max=3)
    probed = simulate(view, Probe(), defer_max=3)
    assert seen and probed.decision(view) == plain.decision(view)
    assert all(0 <= own <= 1 + 1e-9 and lost >= -1e-9 for own, lost in seen)   # co-location never speeds up here


def _loop_speed(view, j, w, p):
    """Job j's speed by the checker's plain loops (check.job_speed), every job's tasks in w, p."""
    world, kind = view.world, view.jobs.kind

    def load(m):
        return [sum(w[k, m] * world.u_worker[kind[k], r] + p[k, m] * world.u_ps[kind[k], r] for k in range(view.J))
                for r in range(4)]

    return job_speed(view, j, {m: int(n) for m, n in enumerate(w[j]) if n}, {m: int(n) for m, n in enumerate(p[j]) if n}, load)


def test_interference_now_is_the_speed_the_job_would_run_at():
    inst = generated(6, 2, 1, static=True)   # two jobs that fit on one server together
    view = view_of(inst, {})
    alone = standalone_speeds(view)
    env = Env.empty(view)
    assert interference_now(env, 1, alone, Standalone()) == (pytest.approx(1.0), 0.0)   # an empty cluster
    assert place_job(env, 0, Standalone())
    w0, p0 = env.w.copy(), env.p.copy()
    first_alone = _loop_speed(view, 0, w0, p0)
    own, lost = interference_now(env, 1, alone, Standalone())
    # where it would go: the dry run's placement, read back by placing it for real here
    assert place_job(env, 1, Standalone())
    assert own == pytest.approx(_loop_speed(view, 1, env.w, env.p) / alone[1], rel=1e-9)
    assert lost == pytest.approx((first_alone - _loop_speed(view, 0, env.w, env.p)) / alone[0], rel=1e-9, abs=1e-12)
    assert own < 1 and lost > 0


@pytest.mark.parametrize("name", sorted(DEFERRING))
def test_deferral_heuristics_answer_checked_and_deterministic(name):
    inst = generated(7, 24, 4)
    a = FAMILY.run(inst, name, SolveOptions(), {"defer": 8})
    b = FAMILY.run(inst, name, SolveOptions(), {"defer": 8})
    assert a.decision == b.decision
    result = verdict(inst, a.decision)
    assert result.feasible and result.objective == pytest.approx(a.report.objective, rel=1e-9)


def test_deferral_heuristics_hold_jobs_back_under_load_and_never_past_the_rule():
    # whether holding back pays is measured by benchmarks/harmony_drl.toml, not asserted here
    for seed in (11, 12, 13):
        view = view_of(generated(seed, 30, 4, load=1.0), {})
        chooser = make_heuristic("standalone-defer")
        asked: list[tuple[int, int]] = []
        inner = chooser.defer
        chooser.defer = lambda env, j, asked=asked, inner=inner: (asked.append((j, env.interval)), inner(env, j))[1]
        run = simulate(view, chooser, defer_max=5)
        assert run.deferrals > 0
        assert all(view.arrival[j] <= k < view.arrival[j] + 5 for j, k in asked)


@pytest.mark.parametrize("method", ["standalone-defer", "least-interference-defer", pytest.param("drl", marks=needs_torch)])
def test_nothing_is_held_back_when_every_job_must_start_at_its_arrival(method):
    for seed in range(3):
        inst = generated(seed, 5, 6, static=True)
        a = FAMILY.run(inst, method, SolveOptions(), {"starts": "simultaneous"})
        b = FAMILY.run(inst, method, SolveOptions(), {"starts": "simultaneous", "defer": 0})
        assert a.decision == b.decision and a.report.status == b.report.status


@needs_torch
def test_placing_now_at_the_defer_decision_puts_the_first_task_on_the_chosen_server():
    import torch

    from mlsched_opt.problems.harmony.rl.policy import PolicyChooser, PolicyNet

    view = view_of(generated(10, 20, 4), {})
    torch.manual_seed(2)
    chosen = {}

    class LastServer(PolicyChooser):
        def _act(self, env, j, servers, context, mask):
            if mask[-1]:   # the defer decision: place now, on the last server that fits
                s = int(np.flatnonzero(mask[:-1])[-1])
                chosen[j] = (env.interval, s)
                return s
            return super()._act(env, j, servers, context, mask)

    run = simulate(view, LastServer(PolicyNet(len(view.world.types)), view), defer_max=3)
    checked = 0
    for j, (k, s) in chosen.items():
        if run.start[j] == k:   # its last decision placed it
            first = run.p[j] if view.jobs.P[j] > 0 else run.w[j]
            assert first[s] >= 1
            checked += 1
    assert checked


@needs_torch
def test_the_policy_can_hold_a_job_back_and_its_answer_passes_the_checker():
    import torch

    from mlsched_opt.problems.harmony.rl.policy import PolicyChooser, PolicyNet

    inst = generated(8, 20, 4)
    view = view_of(inst, {})
    torch.manual_seed(0)
    net = PolicyNet(len(view.world.types))
    with torch.no_grad():   # "not now" always wins where it is open
        net.defer[-1].bias.fill_(1e6)
    chooser = PolicyChooser(net, view, greedy=True)
    run = simulate(view, chooser, defer_max=3)
    assert run.deferrals > 0
    logged = [s for s in chooser.log if s.mask[-1]]
    assert logged and all(s.action == len(s.mask) - 1 for s in logged)
    result = verdict(inst, run.decision(view))
    assert result.feasible, result.violations


@needs_torch
@pytest.mark.parametrize(("version", "name"), [(1, "first format"), (2, "second format")])
def test_an_earlier_format_policy_is_refused_by_name(tmp_path, capsys, version, name):
    import torch

    from mlsched_opt.errors import UserError
    from mlsched_opt.problems.harmony.rl.policy import load_policy

    path = tmp_path / "old.pt"
    torch.save({"format": f"mlsched-harmony-policy/{version}", "types": ["a"], "state_dict": {}, "meta": {}}, path)
    with pytest.raises(UserError, match=name):
        load_policy(path, view_of(generated(0, 2, 2), {}))
    # through the command line: one message naming the file and the field, exit 2, nothing written
    out = tmp_path / "h.sol.json"
    with pytest.raises(SystemExit) as exc:
        main(["solve", str(ROOT / "instances" / "harmony-40jobs.toml"), "--method", "drl", "--model", str(path), "--out", str(out)])
    err = capsys.readouterr().err
    assert exc.value.code == 2 and name in err and str(path) in err and "--model" in err
    assert not out.exists()
    # train -o may replace an earlier-format policy (it checks the target before training)
    from mlsched_opt.problems.harmony.rl.policy import check_output

    assert check_output(path) == path


@needs_torch
@pytest.mark.parametrize("value", [["mlsched-harmony-policy/3"], {"a": 1}, 3, None])
def test_a_policy_whose_format_placer_or_advisor_is_any_json_value_is_refused(tmp_path, value):
    import torch

    from mlsched_opt.errors import UserError
    from mlsched_opt.problems.harmony.rl.policy import FORMAT, load_policy

    view = view_of(generated(0, 2, 2), {})
    path = tmp_path / "odd.pt"
    torch.save({"format": value, "types": list(view.world.types), "state_dict": {}, "meta": {}}, path)
    with pytest.raises(UserError, match="not an mlsched harmony policy"):
        load_policy(path, view)
    torch.save({"format": FORMAT, "types": list(view.world.types), "state_dict": {}, "meta": {"placer": value}}, path)
    with pytest.raises(UserError, match="placer"):
        load_policy(path, view)
    if value is not None:   # no advisor is a policy trained without advice
        torch.save({"format": FORMAT, "types": list(view.world.types), "state_dict": {}, "meta": {"advisor": value}}, path)
        with pytest.raises(UserError, match="advisor"):
            load_policy(path, view)
    for name in ("random", "exact"):   # names, but not of a heuristic a policy may follow
        torch.save({"format": FORMAT, "types": list(view.world.types), "state_dict": {}, "meta": {"advisor": name}}, path)
        with pytest.raises(UserError, match="advisor"):
            load_policy(path, view)


class _Fixed:
    """A heuristic whose hold-back answer is fixed at one (job, interval) (written here, apart from train.py)."""

    def __init__(self, name, job, interval, answer):
        self.h, self.key, self.answer = make_heuristic(name), (job, interval), answer
        self.first = None   # the server the job's first task took at that interval

    def start_job(self, env, j):
        self.h.start_job(env, j)

    def end_job(self, env, j, placed):
        self.h.end_job(env, j, placed)

    def choose(self, env, j, role, mask):
        m = self.h.choose(env, j, role, mask)
        if (j, env.interval) == self.key and self.first is None:
            self.first = m
        return m

    def defer(self, env, j):
        if (j, env.interval) == self.key:
            return self.answer
        return hasattr(self.h, "defer") and self.h.defer(env, j)


def test_a_spliced_future_keeps_the_past_and_its_decisions():
    from mlsched_opt.problems.harmony.rl.train import splice

    view = view_of(generated(9, 20, 3, load=1.5), {})
    future = view_of(generated(10, 20, 3, load=1.5), {})
    for t in (0, int(np.median(view.arrival)), int(view.arrival.max())):
        spliced, past = splice(view, t, future)
        assert past.tolist() == np.flatnonzero(view.arrival <= t).tolist()
        assert len(set(spliced.ids)) == spliced.J == len(past) + int((future.arrival > t).sum())
        assert (spliced.arrival[len(past):] > t).all() and np.array_equal(spliced.samples[:len(past)], view.samples[past])
        a = simulate(view, make_heuristic("standalone-defer"), defer_max=6)
        b = simulate(spliced, make_heuristic("standalone-defer"), defer_max=6)
        # what was decided by interval t is decided again: the past jobs that started by then
        early = [i for i, j in enumerate(past) if 0 <= a.start[j] <= t]
        assert [b.start[i] for i in early] == [a.start[past[i]] for i in early]
        assert all(np.array_equal(b.w[i], a.w[past[i]]) and np.array_equal(b.p[i], a.p[past[i]]) for i in early)


@needs_torch
def test_rollout_labels_name_the_answer_with_the_lower_mean_total_jct_over_the_futures():
    import torch

    from mlsched_opt.problems.harmony.rl.policy import PolicyNet
    from mlsched_opt.problems.harmony.rl.train import _Recorder, _rollout_labels, splice

    teacher = "standalone-defer"
    view = view_of(generated(9, 20, 3, load=1.5), {})
    futures = [view_of(generated(20 + k, 20, 3, load=1.5), {}) for k in range(2)]
    torch.manual_seed(1)
    net = PolicyNet(len(view.world.types))
    policy = {"placer": "standalone", "advisor": teacher}
    labels, expert = _rollout_labels(net, view, lambda v: None, 6, np.random.default_rng(0), 8, teacher, 0, futures, policy)
    assert labels and not expert   # with advice the state shows the teacher's answer: no DAgger labels
    rec = _Recorder(make_heuristic(teacher), view, "standalone", True)
    simulate(view, rec, defer_max=6)
    for servers, context, mask, action in labels:
        i = next(i for i, x in enumerate(rec.log) if rec.asks[i] and np.array_equal(x[0], servers) and np.array_equal(x[1], context))
        j, t, _ = rec.asks[i]
        totals, firsts = {}, set()
        for held in (False, True):
            totals[held] = 0.0
            for future in futures:
                spliced, past = splice(view, t, future)
                k = int(np.flatnonzero(past == j)[0])
                run = _Fixed(teacher, k, t, held)
                totals[held] += simulate(spliced, run, defer_max=6).jct(spliced).sum()
                if not held:
                    firsts.add(run.first)
        assert totals[True] != totals[False]
        assert (action == len(mask) - 1) == (totals[True] < totals[False])
        if action != len(mask) - 1:   # "place now" names the server the scored runs put its first task on
            assert firsts == {action}


@needs_torch
@pytest.mark.parametrize("teacher", ["standalone", "least-interference-defer"])
def test_teacher_labels_are_the_teachers_answers_in_the_policys_own_states(teacher):
    import torch

    from mlsched_opt.problems.harmony.rl.features import decision_state
    from mlsched_opt.problems.harmony.rl.policy import PolicyChooser, PolicyNet
    from mlsched_opt.problems.harmony.rl.train import _Labelling
    from mlsched_opt.problems.harmony.simulate import Ask

    view = view_of(generated(9, 20, 3, load=1.5), {})
    torch.manual_seed(1)
    net = PolicyNet(len(view.world.types))
    plain = PolicyChooser(net, view, greedy=True)
    expected = simulate(view, plain, defer_max=6)
    run = _Labelling(net, view, greedy=True, record=True, teacher=make_heuristic(teacher))
    got = simulate(view, run, defer_max=6)
    # asking the teacher (its dry runs included) leaves the policy's run as it was
    assert got.decision(view) == expected.decision(view)
    assert len(run.labels) == len(run.log) == len(plain.log)
    assert all(step.mask[a] for step, a in zip(run.log, run.labels))

    # the teacher's answers, asked here in the policy's states by replaying the policy's run
    answers: list[int] = []

    class Replay(PolicyChooser):

        def defer(self, env, j):
            t = make_heuristic(teacher)
            _, _, mask = decision_state(Ask("defer", env, j), self.length, self.alone, self.dry_run)
            if mask[:-1].any():
                held = hasattr(t, "defer") and t.defer(env, j)
                first = "ps" if view.jobs.P[j] else "worker"
                answers.append(len(mask) - 1 if held else t.choose(env, j, first, mask[:-1]))
            return super().defer(env, j)

        def choose(self, env, j, role, mask):
            if self.first is None:
                answers.append(make_heuristic(teacher).choose(env, j, role, mask))
            return super().choose(env, j, role, mask)

    replay = Replay(net, view, greedy=True, record=False)
    simulate(view, replay, defer_max=6)
    assert answers == run.labels
    if teacher == "standalone":   # a teacher without a deferral rule never says "not now"
        assert all(a < view.M for a in run.labels)
    else:
        assert any(a == view.M for a in run.labels)


class _FollowAdvice:
    """A stand-in network whose logits are its input's advice: the server column, and the context
    entry for "not now" (so a policy with it must decide exactly as its adviser)."""

    def __init__(self, L):
        from mlsched_opt.problems.harmony.rl.features import DEFER_WIDTH, context_width

        self.hold = context_width(L) - DEFER_WIDTH - 1

    def logits(self, servers, context, mask):
        import torch

        z = torch.cat([10 * servers[..., -1], 10 * context[:, self.hold:self.hold + 1] - 5], dim=1)
        return z.masked_fill(~mask, -1e9)


@needs_torch
@pytest.mark.parametrize("advisor", ["least-interference-defer", "standalone-defer", "tetris"])
def test_a_policy_that_follows_its_advice_decides_as_its_teacher(advisor):
    from mlsched_opt.problems.harmony.rl.policy import PolicyChooser
    from mlsched_opt.problems.harmony.rl.train import placer_of

    for seed in (9, 11):
        view = view_of(generated(seed, 20, 3, load=1.5), {})
        chooser = PolicyChooser(_FollowAdvice(len(view.world.types)), view, advisor=advisor, placer=placer_of(advisor))
        got = simulate(view, chooser, defer_max=6)
        want = simulate(view, make_heuristic(advisor), defer_max=6)
        assert got.decision(view) == want.decision(view)
        assert got.deferrals == want.deferrals
        assert advisor == "tetris" or want.deferrals > 0
        # every logged state shows exactly one piece of advice, and the policy took it
        for step in chooser.log:
            shown = np.flatnonzero(step.servers[:, -1]).tolist() + ([view.M] if step.context[chooser.net.hold] else [])
            assert shown == [step.action]


@needs_torch
def test_teacher_labels_need_the_policys_own_decisions():
    import torch

    from mlsched_opt.problems.harmony.rl.policy import PolicyNet
    from mlsched_opt.problems.harmony.rl.train import _Labelling

    view = view_of(generated(9, 12, 3, load=1.2), {})
    torch.manual_seed(1)
    with pytest.raises(ValueError, match="omega"):
        _Labelling(PolicyNet(len(view.world.types)), view, omega=0.3, teacher=make_heuristic("standalone"))


@pytest.mark.parametrize("name", sorted(DEFERRING))
def test_a_deferral_heuristics_rule_is_a_function_of_the_policys_state(name):
    """The deferral block shows what the heuristic's rule reads: the shortest queued job behind
    over the job's own length, and its speed under the heuristic's own placement (the policy's
    placer is its teacher's), so a policy can learn the rule exactly."""
    from mlsched_opt.problems.harmony.rl.features import DEFER_WIDTH
    from mlsched_opt.problems.harmony.rl.train import _Recorder, placer_of

    inner, threshold, shorter = DEFERRING[name]
    assert placer_of(name) == inner
    seen = set()
    for seed in (9, 11, 12):
        view = view_of(generated(seed, 20, 3, load=1.5), {})
        rec = _Recorder(make_heuristic(name), view, placer_of(name), False)
        simulate(view, rec, defer_max=6)
        for _, context, mask, action in rec.log:
            if not mask[-1]:
                continue
            block = context[-DEFER_WIDTH:]
            ratio, own = block[3], block[4]
            rule = ratio * shorter <= 1.0 + 1e-12 or 0.0 < own < threshold
            assert (action == view.M) == rule, (seed, ratio, own, action)
            seen.add(action == view.M)
    assert seen == {True, False}
