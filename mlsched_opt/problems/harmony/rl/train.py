"""Training Harmony (spec 004 sections 2.5-2.7) on generated traces, on a CPU, in minutes.

1. **Reward model** (2.6): run the heuristics (load balancing, bin packing, Tetris, standalone,
   random) on training traces in the true world; every event logs each running job's placement
   context and its speed with multiplicative N(0, 0.03) noise; a :class:`~.policy.RewardNet` is fit
   to normalised speed (MSE, Adam 1e-3, batch 128, early stopping on a held-out 15%).  Its MAPE on
   the held-out heuristic samples is reported.
2. **Supervised warm-up** [DL2's SL mode; our choice of teacher]: the actor imitates the heuristic
   with the lowest average JCT on the validation traces, deferral variants included (its "not
   now" answers too), ``warmup`` passes over its decisions.  The policy's interference features
   dry-run the teacher's own placement heuristic (``placer``, saved with the policy), so the
   teacher's deferral rule is a function of the policy's state.
3. **Improvement** after the warm-up, one training trace per episode, in the reward model's
   speeds (``speeds=model``, the faithful setting: Harmony trains against its learned reward
   model) or the true world's (``speeds=true``, the control).  Two algorithms (``algo``):

   * ``rollout`` (default; our design, issue 21): policy improvement by rollouts, and DAgger
     for a policy trained without advice (:func:`_rollout_labels`).  ``probes`` hold-back
     decisions of the teacher's own run are answered both ways, each scored by the teacher
     finishing the run in ``futures`` sampled futures, and labelled with the better answer (one
     step of policy iteration from the teacher); without advice, every decision of the greedy
     policy's run is also labelled with the teacher's answer in the state the policy reached
     (DAgger).  ``updates`` steps of cross-entropy per episode, each on 64 rollout labels (a
     FIFO of 8192) and 64 teacher labels (the warm-up's and the newest DAgger ones,
     :data:`DAGGER_KEEP`).
   * ``ac``: actor-critic (spec 2.5).  The reward of interval t is JCT-shaped by default
     (``reward=jct``): minus the jobs in the system during the interval (Little's law: over an
     episode they add up to the total JCT), plus the same count in the teacher's run of the same
     trace, a baseline that depends on the trace and the interval only (so the gradient stays
     unbiased) and removes the trace's load from the signal; divided by 10.  ``reward=progress``
     is Harmony's (the summed fraction of work trained).  Every action of interval t is labelled
     with ``R_t = sum_k gamma^k r_{t+k}``; loss ``-A log pi - beta H + (R - V)^2 / 2`` with
     ``A = R - V`` (normalised per minibatch); entropy weight beta annealed 0.1 -> 0.01; job-aware
     omega-greedy exploration, omega 0.3 -> 0.02 over the first half; a FIFO replay buffer of 8192
     steps, minibatches of 256, ``updates`` gradient steps per episode, Adam, gradient norm <= 1.
     Measured (before advice, issue 21): within tens of episodes it drifted away from the
     imitated policy rather than improving it (validation 29.50 -> 30.96 in 20 episodes), which
     is why ``rollout`` is the default.
4. **Validation**: every ``eval_every`` episodes the argmax policy runs the validation traces in
   the true world; the policy with the lowest validation JCT is the one saved (the learning curve
   is saved with it).

Train, validation and test traces come from disjoint seed ranges (:func:`trace_seed`).  Same seed,
same policy: numpy and torch are seeded and torch runs one thread.
"""

from __future__ import annotations

import copy
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ....errors import OptionError
from ....io import from_document, load_catalog
from ...base import GenerateSpec, TrainSpec, parse_values
from ..baselines import HEURISTICS, Delegating, make_heuristic
from ..generate import generate
from ..options import DEFERRING
from ..placements import standalone_profile, standalone_speeds
from ..simulate import Ask, holds_back, simulate, true_speeds
from ..view import HarmonyView, view_of
from ..world import Jobs
from .features import advice_of, decision_state, reward_inputs
from .options import FUTURE_POOL, TRAIN_OPTIONS
from .policy import PolicyChooser

SEED_BASE = {"train": 1_000_000, "validation": 2_000_000, "test": 3_000_000}


def trace_seed(split: str, seed: int, k: int) -> int:
    """Generator seed of trace ``k`` of ``split`` for training seed ``seed`` (ranges never overlap)."""
    return SEED_BASE[split] + 10_000 * seed + k if split == "train" else SEED_BASE[split] + k


def make_trace(seed: int, jobs: int, servers: int, world: str, load: float, static: bool = False) -> HarmonyView:
    """A generated trace's view in ``world`` (the hard world runs the default world's job types)."""
    catalog = load_catalog()
    gen_world = "gavel" if world == "gavel" else "default"
    options = {"world": gen_world, "load": load, "static": static}
    doc = generate(GenerateSpec(jobs=jobs, servers=servers, seed=seed, options=options), catalog)
    return view_of(from_document(doc, catalog=catalog), {"world": world})


@dataclass
class TrainResult:
    net: Any
    meta: dict


def train_command(spec: TrainSpec) -> str:
    from .policy import check_output, require_torch, save_policy

    require_torch(field="--problem")
    if spec.episodes < 1:
        raise OptionError(f"episodes must be >= 1, got {spec.episodes}", field="--episodes")
    opts = parse_values(TRAIN_OPTIONS, spec.options, "--set", "harmony training")
    check_output(spec.output)  # before the minutes of training, not after
    result = train(spec.episodes, spec.seed, opts, spec.progress)
    save_policy(spec.output, result.net, tuple(result.meta["types"]), result.meta)
    return spec.output


def train(episodes: int, seed: int, opts: Mapping[str, Any], progress: Callable[[int, str], None] | None = None) -> TrainResult:
    import torch

    from .policy import PolicyNet, RewardModelSpeeds

    torch.manual_seed(seed)
    torch.set_num_threads(1)
    rng = np.random.default_rng(seed)
    start = time.perf_counter()
    M = int(opts["servers"])
    lo, hi = int(opts["jobs_min"]), int(opts["jobs_max"])
    if not 1 <= lo <= hi:
        raise OptionError("need 1 <= jobs_min <= jobs_max", field="--set jobs_min")

    def trace(split: str, k: int) -> HarmonyView:
        jobs = lo + (trace_seed(split, seed, k) * 7919) % (hi - lo + 1)
        return make_trace(trace_seed(split, seed, k), jobs, M, opts["world"], float(opts["load"]), bool(opts["static"]))

    validation = [trace("validation", k) for k in range(int(opts["validation"]))]
    futures = [trace("train", 40_000 + k) for k in range(FUTURE_POOL)] if opts["algo"] == "rollout" else []
    types = validation[0].world.types
    L = len(types)

    # 1. reward model from logged heuristic runs
    reward_net, rm_stats = fit_reward_model([trace("train", 10_000 + k) for k in range(int(opts["reward_traces"]))], L, seed)

    def speeds(view: HarmonyView):
        return RewardModelSpeeds(reward_net, view) if opts["speeds"] == "model" else true_speeds(view)

    # 2. supervised warm-up on the best heuristic
    net = PolicyNet(L)
    opt = torch.optim.Adam(net.parameters(), lr=float(opts["lr"]))
    D = int(opts["defer"])
    heur_jct = {name: float(np.mean([simulate(v, make_heuristic(name, seed), defer_max=D).jct(v).mean() for v in validation]))
                for name in (*HEURISTICS, *DEFERRING, "random")}
    teacher = min(heur_jct, key=lambda name: heur_jct[name])
    placer = placer_of(teacher)
    advisor = teacher if opts["advice"] and teacher != "random" else None
    taught = _imitate(net, [trace("train", 20_000 + k) for k in range(16)], teacher, int(opts["warmup"]), seed, D, placer,
                      advisor is not None)
    policy: dict[str, Any] = {"placer": placer, "advisor": advisor}   # how the policy's states are built

    def validate() -> float:
        return float(np.mean([simulate(v, PolicyChooser(net, v, greedy=True, record=False, **policy), defer_max=D).jct(v).mean()
                              for v in validation]))

    curve = [(0, validate())]
    best = (curve[0][1], copy.deepcopy(net.state_dict()))
    buffer: list[tuple] = []
    labelled: list[tuple] = []
    dagger: list[tuple] = []
    gamma = float(opts["gamma"])
    for e in range(1, episodes + 1):
        frac = (e - 1) / max(1, episodes - 1)
        omega = float(opts["omega"]) * max(0.0, 1 - 2 * frac) + (0.02 if float(opts["omega"]) > 0 else 0.0) * min(1.0, 2 * frac)
        beta = 0.1 * (1 - frac) + 0.01 * frac
        view = trace("train", e)
        speed_fn = speeds(view)
        if opts["algo"] == "rollout":
            pick = rng.choice(len(futures), size=min(int(opts["futures"]), len(futures)), replace=False)
            found, expert = _rollout_labels(net, view, speeds, D, rng, int(opts["probes"]), teacher, seed,
                                            [futures[int(i)] for i in pick], policy)
            labelled += found
            del labelled[:-8192]
            dagger += expert
            del dagger[:-DAGGER_KEEP]
            for _ in range(int(opts["updates"])):
                _supervised_step(net, opt, labelled, taught + dagger, rng)
        else:
            chooser = PolicyChooser(net, view, greedy=False, omega=omega, seed=int(rng.integers(2**31)), **policy)
            rewards = _episode_rewards(view, chooser, speed_fn, opts["reward"], make_heuristic(teacher, seed), D)
            returns = _returns(rewards, gamma)
            for step in chooser.log:
                buffer.append((step.servers, step.context, step.mask, step.action, returns.get(step.interval, 0.0)))
            del buffer[:-8192]
            for _ in range(int(opts["updates"])):
                _update(net, opt, buffer, rng, beta)
        if e % int(opts["eval_every"]) == 0 or e == episodes:
            value = validate()
            curve.append((e, value))
            if value < best[0]:
                best = (value, copy.deepcopy(net.state_dict()))
        if progress:
            progress(e, f"validation JCT {curve[-1][1]:.2f} (best {best[0]:.2f}, {teacher} {heur_jct[teacher]:.2f})")
    net.load_state_dict(best[1])
    net.eval()
    meta = {"types": list(types), "world": opts["world"], "episodes": episodes, "seed": seed, "options": dict(opts),
            "curve": curve, "validation_jct": best[0], "heuristics_validation_jct": heur_jct, "teacher": teacher, **policy,
            "reward_model": rm_stats, "train_s": round(time.perf_counter() - start, 1), "servers": M}
    return TrainResult(net, meta)


def placer_of(teacher: str) -> str:
    """The placement heuristic behind ``teacher`` (a deferral variant's inner one): the policy's
    interference features dry-run it, so the teacher's deferral rule is a function of the state."""
    inner = DEFERRING[teacher][0] if teacher in DEFERRING else teacher
    return inner if inner in HEURISTICS else "standalone"


#: JCT-shaped rewards are divided by this (jobs in the system per interval are tens at most)
JCT_REWARD_SCALE = 10.0

#: teacher labels (DAgger) kept for the improvement steps: the newest, about 30 training traces' worth
DAGGER_KEEP = 12_000


def _episode_rewards(view: HarmonyView, chooser, speed_fn, reward: str, teacher, defer_max: int) -> dict[int, float]:
    """Rewards per interval of one training episode under ``chooser`` (see the module docstring)."""
    rewards: dict[int, float] = {}
    if reward == "progress":
        simulate(view, chooser, speed_fn, on_interval=lambda env, r: rewards.__setitem__(env.interval, r), defer_max=defer_max)
        return rewards
    base: dict[int, float] = {}
    simulate(view, teacher, speed_fn, on_interval=lambda env, r: base.__setitem__(env.interval, env.occupancy), defer_max=defer_max)
    simulate(view, chooser, speed_fn, on_interval=lambda env, r: rewards.__setitem__(env.interval, -env.occupancy),
             defer_max=defer_max)
    # the teacher's count counts in every interval either run used (an interval only one of them ran is 0 in the other)
    return {k: (rewards.get(k, 0.0) + base.get(k, 0.0)) / JCT_REWARD_SCALE for k in sorted(set(rewards) | set(base))}


def _returns(rewards: Mapping[int, float], gamma: float) -> dict[int, float]:
    out: dict[int, float] = {}
    acc = 0.0
    last = max(rewards, default=-1)
    for k in range(last, -1, -1):
        acc = rewards.get(k, 0.0) + gamma * acc
        if k in rewards:
            out[k] = acc
    return out


def _batch(items: list[tuple]):
    import torch

    servers = torch.as_tensor(np.stack([x[0] for x in items]), dtype=torch.float32)
    context = torch.as_tensor(np.stack([x[1] for x in items]), dtype=torch.float32)
    mask = torch.as_tensor(np.stack([x[2] for x in items]))
    action = torch.as_tensor([x[3] for x in items])
    return servers, context, mask, action


def _update(net, opt, buffer: list[tuple], rng: np.random.Generator, beta: float, batch: int = 256) -> None:
    import torch

    if len(buffer) < 32:
        return
    pick = rng.choice(len(buffer), size=min(batch, len(buffer)), replace=False)
    items = [buffer[i] for i in pick]
    servers, context, mask, action = _batch(items)
    ret = torch.as_tensor([x[4] for x in items], dtype=torch.float32)
    logp = torch.log_softmax(net.logits(servers, context, mask), dim=-1)
    chosen = logp.gather(1, action[:, None]).squeeze(1)
    entropy = -(logp.exp() * logp.masked_fill(~mask, 0.0)).sum(dim=1)
    value = net.values(servers, context)
    adv = (ret - value).detach()
    adv = (adv - adv.mean()) / (adv.std() + 1e-6)
    loss = -(adv * chosen).mean() - beta * entropy.mean() + 0.5 * ((ret - value) ** 2).mean()
    opt.zero_grad()
    loss.backward()
    torch.nn.utils.clip_grad_norm_(net.parameters(), 1.0)
    opt.step()


class _Recorder(Delegating):
    """Wraps a heuristic and logs the policy state and action of each of its decisions (for
    imitation): at a job's turn "not now" (the last action) or the server of its first task."""

    def __init__(self, inner, view: HarmonyView, placer: str, advise: bool):
        super().__init__(inner)
        self.alone, self.length = standalone_profile(view)
        self.dry_run = make_heuristic(placer)
        self.advise = advise   # the states show the teacher's own answer as advice
        self.log: list[tuple] = []
        # per log entry of a hold-back decision: (job, interval, the server placing it now takes first)
        self.asks: list[tuple[int, int, int] | None] = []
        self.pending: tuple | None = None   # the state of a defer decision answered "place now"

    def end_job(self, env, j, placed):
        self.pending = None
        super().end_job(env, j, placed)

    def defer(self, env, j):
        ask = Ask("defer", env, j)
        advice = advice_of(self.inner, ask)
        held = advice == env.view.M
        # where placing it now would put its first task: the answer of the teacher's placement heuristic
        # (a deferral variant's inner one, which never holds back)
        instead = advice_of(getattr(self.inner, "inner", self.inner), ask) if held else None
        servers, context, mask = decision_state(ask, self.length, self.alone, self.dry_run, advice if self.advise else None)
        self.pending = None
        if held:
            self.log.append((servers, context, mask, len(mask) - 1))
            self.asks.append(None if instead is None else (j, env.interval, instead))
        elif mask[:-1].any():
            self.pending = (servers, context, mask, j, env.interval)
        return held

    def choose(self, env, j, role, mask):
        a = self.inner.choose(env, j, role, mask)
        key = None
        if self.pending is not None:
            servers, context, full, k, t = self.pending
            key = (k, t, a)
            self.pending = None
        else:
            servers, context, full = decision_state(Ask("task", env, j, role, mask), self.length, self.alone, self.dry_run,
                                                    a if self.advise else None)
        self.log.append((servers, context, full, a))
        self.asks.append(key)
        return a


def _imitate(net, views: list[HarmonyView], teacher: str, passes: int, seed: int, defer_max: int, placer: str,
             advise: bool) -> list[tuple]:
    """``passes`` epochs of imitation of ``teacher`` on ``views``; returns its (state, action) samples."""
    import torch

    data: list[tuple] = []
    for k, view in enumerate(views):
        rec = _Recorder(make_heuristic(teacher, seed + k), view, placer, advise)
        simulate(view, rec, defer_max=defer_max)
        data += rec.log
    opt = torch.optim.Adam([*net.actor.parameters(), *net.logit.parameters(), *net.defer.parameters()], lr=1e-3)
    rng = np.random.default_rng(seed)
    for _ in range(passes):
        order = rng.permutation(len(data))
        for lo in range(0, len(order), 128):
            _cross_entropy_step(net, opt, [data[i] for i in order[lo:lo + 128]], clip=False)
    return data


def _cross_entropy_step(net, opt, items: list[tuple], clip: bool = True) -> None:
    """One step of cross-entropy on (state, action) samples; ``clip``: gradient norm <= 1."""
    import torch

    servers, context, mask, action = _batch(items)
    loss = torch.nn.functional.cross_entropy(net.logits(servers, context, mask), action)
    opt.zero_grad()
    loss.backward()
    if clip:
        torch.nn.utils.clip_grad_norm_(net.parameters(), 1.0)
    opt.step()


def _rollout_labels(net, view: HarmonyView, speeds: Callable[[HarmonyView], Any], defer_max: int, rng: np.random.Generator,
                    probes: int, teacher: str, seed: int, futures: list[HarmonyView],
                    policy: Mapping[str, Any] | None = None) -> tuple[list[tuple], list[tuple]]:
    """Labels for one training trace: ``(rollout labels, teacher labels)``.

    Teacher labels (DAgger, Ross, Gordon and Bagnell 2011), for a policy trained without advice:
    the greedy policy runs the trace and every decision it makes is labelled with the teacher's
    answer in the state the policy reached (behaviour cloning alone learns the teacher's states
    only, and one early difference puts the policy where it never learnt anything).  With advice
    the state already shows that answer, so there are none.

    Rollout labels [our design, issue 21], one step of policy iteration from the teacher
    (Bertsekas's rollout algorithm, by Monte Carlo over futures): ``probes`` of the hold-back
    decisions of the teacher's own run of the trace are each answered both ways, and each answer
    is scored by the teacher finishing the run (it decides every other hold-back and task) in
    each of the ``futures``: the trace's jobs up to the decision's interval, then a future
    trace's later arrivals (:func:`splice`; a decision must not be judged by the one future the
    trace happens to have, which the policy cannot see).  The state is labelled with the answer
    of the lower mean total JCT ("place now": the server the teacher's placement puts its first
    task on, which is what the rollout scored); ties teach nothing.  ``speeds(view)``: the speed
    function rollouts run at (the reward model's by default)."""
    policy = dict(policy or {})
    expert: list[tuple] = []
    if policy.get("advisor") is None:
        run = _Labelling(net, view, greedy=True, record=True, teacher=make_heuristic(teacher, seed), **policy)
        simulate(view, run, speeds(view), defer_max=defer_max)
        assert len(run.labels) == len(run.log)   # labels[i] answers log[i]
        expert = [(s.servers, s.context, s.mask, a) for s, a in zip(run.log, run.labels)]

    rec = _Recorder(make_heuristic(teacher, seed), view, policy.get("placer", "standalone"), policy.get("advisor") is not None)
    simulate(view, rec, speeds(view), defer_max=defer_max)
    asks = {i: key for i, key in enumerate(rec.asks) if key is not None}
    out: list[tuple] = []
    for i in (rng.choice(sorted(asks), size=min(probes, len(asks)), replace=False) if asks else []):
        servers, context, mask, _ = rec.log[int(i)]
        j, t, first = asks[int(i)]
        cost = answer_costs(view, lambda: make_heuristic(teacher, seed), {}, (j, t), futures, speeds, defer_max)
        if abs(cost[True] - cost[False]) <= 1e-9 * max(1.0, cost[False]):
            continue
        out.append((servers, context, mask, len(mask) - 1 if cost[True] < cost[False] else first))
    return out, expert


def answer_costs(view: HarmonyView, teacher: Callable[[], Any], fixed: Mapping[tuple[int, int], bool], ask: tuple[int, int],
                 futures: list[HarmonyView], speeds: Callable[[HarmonyView], Any], defer_max: int) -> dict[bool, float]:
    """The total JCT summed over ``futures`` (:func:`splice` at the ask's interval) when the
    hold-back decision ``ask = (job, interval)`` is answered each way (True: hold back) and
    ``teacher()`` decides the rest, with the earlier answers ``fixed`` ((job, interval) -> answer,
    in ``view``'s job indices; they replay the run up to the ask)."""
    return {answer: future_cost(view, lambda at: _Scripted(teacher(), at), {**fixed, ask: answer}, ask[1], futures, speeds, defer_max)
            for answer in (False, True)}


def future_cost(view: HarmonyView, chooser: Callable[[dict], Any], fixed: Mapping[tuple[int, int], Any], t: int,
                futures: list[HarmonyView], speeds: Callable[[HarmonyView], Any], defer_max: int) -> float:
    """The total JCT summed over ``futures`` (each spliced by :func:`splice` at interval ``t``) of the runs
    of ``chooser(at)``, where ``at`` is ``fixed`` ((job, interval) -> the chooser's answer, in
    ``view``'s job indices) in the spliced trace's job indices."""
    total = 0.0
    for future in futures:
        spliced, past = splice(view, t, future)
        at = {(int(np.searchsorted(past, k)), s): a for (k, s), a in fixed.items()}
        total += float(simulate(spliced, chooser(at), speeds(spliced), defer_max=defer_max).jct(spliced).sum())
    return total


def splice(view: HarmonyView, t: int, future: HarmonyView) -> tuple[HarmonyView, np.ndarray]:
    """``view``'s jobs that arrived by interval ``t``, then ``future``'s jobs arriving after it (the
    same cluster and world): one possible future of the trace seen at ``t``.  Returns the view and
    the original indices of the kept jobs (kept in order, so job ``j`` is ``searchsorted(past, j)``)."""
    import dataclasses

    past = np.flatnonzero(view.arrival <= t)
    later = np.flatnonzero(future.arrival > t)

    def cat(a: np.ndarray, b: np.ndarray) -> np.ndarray:
        return np.concatenate([a[past], b[later]])

    jobs = Jobs(*(cat(getattr(view.jobs, f), getattr(future.jobs, f)) for f in ("kind", "is_ps", "W", "P")))
    ids = tuple(view.ids[i] for i in past) + tuple(f"future-{future.ids[i]}" for i in later)
    spliced = dataclasses.replace(view, ids=ids, jobs=jobs, worker_demand=cat(view.worker_demand, future.worker_demand),
                                  ps_demand=cat(view.ps_demand, future.ps_demand), samples=cat(view.samples, future.samples),
                                  arrival=cat(view.arrival, future.arrival))
    return spliced, past


class _Scripted(Delegating):
    """A heuristic whose hold-back answers are fixed for the listed (job, interval) pairs."""

    def __init__(self, inner, fixed: Mapping[tuple[int, int], bool]):
        super().__init__(inner)
        self.fixed = fixed

    def defer(self, env, j):
        got = self.fixed.get((j, env.interval))
        if got is not None:
            return got
        return holds_back(self.inner, env, j)


@dataclass
class _Labelling(PolicyChooser):
    """The policy, with the teacher's answer recorded beside each decision it makes and logs
    (``labels[i]`` answers ``log[i]``; none without a teacher).  No exploration: a heuristic's
    step is not the policy's decision."""

    teacher: Any = None
    labels: list[int] = field(default_factory=list)

    def __post_init__(self) -> None:
        if self.omega > 0:
            raise ValueError("teacher labels are for the policy's own decisions: omega must be 0")
        super().__post_init__()

    def defer(self, env, j):
        self.asked = Ask("defer", env, j)
        return super().defer(env, j)

    def choose(self, env, j, role, mask):
        self.asked = Ask("task", env, j, role, mask)
        return super().choose(env, j, role, mask)

    def _act(self, env, j, servers, context, mask):
        if self.teacher is not None and self.record:
            label = advice_of(self.teacher, self.asked)
            assert label is not None   # the policy decides only when a task of the job fits
            self.labels.append(label)
        return super()._act(env, j, servers, context, mask)


def _supervised_step(net, opt, labelled: list[tuple], taught: list[tuple], rng: np.random.Generator, batch: int = 64) -> None:
    """One step of cross-entropy on ``batch`` rollout labels (none before there are that many),
    mixed with as many of the teacher's samples (so placements the rollouts never question are not
    forgotten)."""
    items = []
    if len(labelled) >= batch:   # a handful of labels repeated step after step would be learnt by heart
        items = [labelled[i] for i in rng.choice(len(labelled), size=batch, replace=False)]
    if taught:
        items += [taught[i] for i in rng.choice(len(taught), size=min(batch, len(taught)), replace=False)]
    if items:
        _cross_entropy_step(net, opt, items)


def reward_samples(views: list[HarmonyView], seed: int, noise: float = 0.03):
    """Logged (hosts, mask, job features) -> normalised speed (with noise) from heuristic runs."""
    rng = np.random.default_rng(seed)
    H, K, F, Y, Yt = [], [], [], [], []
    for k, view in enumerate(views):
        alone = standalone_speeds(view)
        truth = true_speeds(view)
        for name in ("load-balance", "packing", "tetris", "standalone", "random"):
            def logged(idx, w, p, truth=truth, alone=alone, view=view):
                v = truth(idx, w, p)
                live = np.zeros(view.J, bool)
                live[idx] = True
                hosts, mask, jobs = reward_inputs(view, idx, w * live[:, None], p * live[:, None])
                H.append(hosts)
                K.append(mask)
                F.append(jobs)
                Yt.append(v / alone[idx])
                Y.append(v / alone[idx] * (1 + noise * rng.standard_normal(len(idx))))
                return v
            simulate(view, make_heuristic(name, seed + k), logged)
    return (np.concatenate(H), np.concatenate(K), np.concatenate(F), np.concatenate(Y), np.concatenate(Yt))


def fit_reward_model(views: list[HarmonyView], L: int, seed: int, epochs: int = 30):
    """Fit the reward model; returns it and its held-out MAPE (against noisy and true speeds)."""
    import torch

    from .policy import RewardNet

    hosts, mask, jobs, y, y_true = reward_samples(views, seed)
    rng = np.random.default_rng(seed)
    order = rng.permutation(len(y))
    cut = int(0.85 * len(y))
    tr, te = order[:cut], order[cut:]
    T = lambda a, dt=torch.float32: torch.as_tensor(a, dtype=dt)  # noqa: E731
    Ht, Mt, Ft, Yt = T(hosts), torch.as_tensor(mask), T(jobs), T(y)
    net = RewardNet(L)
    opt = torch.optim.Adam(net.parameters(), lr=1e-3)
    best = (np.inf, copy.deepcopy(net.state_dict()))
    stale = 0
    for _ in range(epochs):
        perm = tr[rng.permutation(len(tr))]
        for lo in range(0, len(perm), 128):
            b = perm[lo:lo + 128]
            loss = ((net(Ht[b], Mt[b], Ft[b]) - Yt[b]) ** 2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
        with torch.no_grad():
            err = float(((net(Ht[te], Mt[te], Ft[te]) - Yt[te]) ** 2).mean())
        if err < best[0] - 1e-7:
            best, stale = (err, copy.deepcopy(net.state_dict())), 0
        else:
            stale += 1
            if stale >= 4:
                break
    net.load_state_dict(best[1])
    net.eval()
    with torch.no_grad():
        pred = net(Ht[te], Mt[te], Ft[te]).numpy()
    stats = {"samples": int(len(y)), "heldout": int(len(te)),
             "mape_vs_measured": float(np.mean(np.abs(pred - y[te]) / np.abs(y[te]))),
             "mape_vs_true": float(np.mean(np.abs(pred - y_true[te]) / y_true[te]))}
    return net, stats
