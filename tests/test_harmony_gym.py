"""Harmony's Gymnasium environment (the ``gym`` extra): the gymnasium contract, the same runs as
``simulate`` under a fixed policy (decision, JCTs, return = -total JCT / scale), the checker,
masking and seeding."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

gymnasium = pytest.importorskip("gymnasium")

from gymnasium.utils.env_checker import check_env  # noqa: E402

from mlsched_opt.checking.core import CheckResult  # noqa: E402
from mlsched_opt.io import from_document, load_catalog  # noqa: E402
from mlsched_opt.problems import GenerateSpec  # noqa: E402
from mlsched_opt.problems.harmony import FAMILY  # noqa: E402
from mlsched_opt.problems.harmony.baselines import make_heuristic  # noqa: E402
from mlsched_opt.problems.harmony.generate import generate  # noqa: E402
from mlsched_opt.problems.harmony.rl.features import first_role  # noqa: E402
from mlsched_opt.problems.harmony.rl.gym_env import HarmonyEnv  # noqa: E402
from mlsched_opt.problems.harmony.rl.train import make_trace, trace_seed  # noqa: E402
from mlsched_opt.problems.harmony.simulate import simulate  # noqa: E402
from mlsched_opt.problems.harmony.view import view_of  # noqa: E402

D = 20
#: gymnasium's advice that is no defect here: the features are unbounded by design, and the env has no renderer
KNOWN_WARNINGS = ("minimum value is -infinity", "maximum value is infinity", "render")


def generated(seed: int, jobs: int = 14, servers: int = 4, world: str = "default"):
    """A generated trace as an instance (for the checker) and its view, as train.make_trace builds it."""
    catalog = load_catalog()
    doc = generate(GenerateSpec(jobs=jobs, servers=servers, seed=seed, options={"world": world, "load": 0.9}), catalog)
    inst = from_document(doc, catalog=catalog)
    return inst, view_of(inst, {"world": world})


@pytest.fixture(scope="module")
def trace():
    return generated(trace_seed("validation", 0, 7))


class CoinDefer:
    """Standalone-first, holding a job back on a seeded coin per (job, interval): the same answer
    however often or in whatever order it is asked."""

    def __init__(self, seed: int, p: float = 0.5):
        self.seed, self.p = seed, p
        self.inner = make_heuristic("standalone")

    def coin(self, j: int, interval: int) -> bool:
        return bool(np.random.default_rng([self.seed, j, interval]).random() < self.p)

    def defer(self, env, j):
        return self.coin(j, env.interval)

    def start_job(self, env, j):
        self.inner.start_job(env, j)

    def choose(self, env, j, role, mask):
        return self.inner.choose(env, j, role, mask)

    def end_job(self, env, j, placed):
        self.inner.end_job(env, j, placed)


def action_of(chooser, env: HarmonyEnv) -> int:
    """The env action a chooser's answers amount to at the env's pending ask."""
    ask = env.pending
    assert ask is not None
    mask = env.action_masks()
    if ask.kind == "task":
        return chooser.choose(ask.env, ask.j, ask.role, ask.mask)
    defer = getattr(chooser, "defer", None)
    if (defer is not None and defer(ask.env, ask.j)) or not mask[:env.M].any():
        return env.M   # held back (or its first task fits nowhere: placing would roll back, the same outcome)
    return chooser.choose(ask.env, ask.j, first_role(ask.env.view, ask.j), mask[:env.M])


def episode(env: HarmonyEnv, chooser, **reset):
    obs, info = env.reset(**reset)
    total, steps, held, done = 0.0, 0, 0, False
    while not done:
        assert env.observation_space.contains(obs) and np.array_equal(info["action_mask"], env.action_masks())
        a = action_of(chooser, env)
        held += int(a == env.M and env.action_masks()[:env.M].any())   # held back by choice
        obs, reward, done, truncated, info = env.step(a)
        assert not truncated
        total += reward
        steps += 1
    return total, steps, held, info


def test_check_env_passes(trace):
    _, view = trace
    env = HarmonyEnv([view], defer_max=D)
    # check_env draws its determinism check's action before its reset(seed=123): deterministic here
    # because the trace's first two decisions are tasks of one job, every server valid at the first
    env.reset(seed=0)
    assert env.pending is not None and env.pending.kind == "task" and env.action_masks()[:env.M].all()
    env.step(0)
    assert env.pending is not None and env.pending.kind == "task"
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        check_env(env, skip_render_check=True)
    unexpected = [str(w.message) for w in caught if not any(k in str(w.message) for k in KNOWN_WARNINGS)]
    assert not unexpected
    for _ in range(50):   # a random agent through the action space takes valid actions only
        if env.step(env.action_space.sample())[2]:
            break


@pytest.mark.parametrize("name, scale", [("standalone", None), ("coin", 7.0), ("standalone-defer", 3.5)])
def test_an_episode_is_simulate_with_the_same_policy(trace, name, scale):
    inst, view = trace
    make = (lambda: CoinDefer(seed=3)) if name == "coin" else (lambda: make_heuristic(name))
    want = simulate(view, make(), defer_max=D)
    env = HarmonyEnv([view], defer_max=D, reward_scale=scale)
    total, steps, held, info = episode(env, make(), seed=0)
    assert info["decision"] == want.decision(view)
    assert info["avg_jct"] == float(want.jct(view).mean())
    # Little's law: the undiscounted return is minus the total JCT over the scale
    assert total == pytest.approx(-want.jct(view).sum() / (scale or view.J), abs=1e-9)
    assert steps >= int((view.jobs.W + view.jobs.P).sum())
    if name == "standalone":
        assert held == 0
    else:
        assert held > 0 and want.deferrals > 0   # the deferral path is exercised
    check = CheckResult()
    FAMILY.check(inst, info["decision"], {"world": "default"}, check)
    assert check.feasible, check.violations
    assert check.objective == pytest.approx(info["avg_jct"], rel=1e-9)
    assert env.action_masks().sum() == 0 and env.pending is None
    with pytest.raises(RuntimeError, match="reset"):
        env.step(0)


def test_masked_actions_raise(trace):
    _, view = trace
    env = HarmonyEnv([view], defer_max=D)
    env.reset(seed=0)
    chooser = make_heuristic("standalone")
    seen: set[str] = set()
    while len(seen) < 3:
        ask, mask = env.pending, env.action_masks()
        assert ask is not None and mask.shape == (env.M + 1,)
        assert mask[env.M] == (ask.kind == "defer")
        bad = [a for a in range(-1, env.M + 2) if not (0 <= a <= env.M and mask[a])]
        for a in bad:
            with pytest.raises(ValueError, match="invalid action"):
                env.step(a)
        if ask.kind == "task" and not mask[:env.M].all():
            seen.add("infeasible server")
        seen.add(ask.kind)
        # a refused action changed nothing: the same ask is pending
        assert env.pending is ask
        _, _, done, _, _ = env.step(action_of(chooser, env))
        assert not done


def test_same_seed_same_observations_and_traces_of_another_size_are_refused():
    def factory(rng):
        return make_trace(trace_seed("train", 0, int(rng.integers(1000))), 10, 4, "default", 0.8)

    def run(env, seed, n=40):
        obs, _ = env.reset(seed=seed)
        out = [obs]
        for _ in range(n):
            obs, _, done, _, _ = env.step(int(np.flatnonzero(env.action_masks())[0]))
            out.append(obs)
            if done:
                break
        return np.stack(out)

    a, b = HarmonyEnv(factory, defer_max=D), HarmonyEnv(factory, defer_max=D)
    first = run(a, 5)
    assert np.array_equal(first, run(b, 5))
    assert np.array_equal(first, run(a, 5))   # reseeding restarts the stream of traces
    assert a.observation_space.shape == (first.shape[1],) and first.dtype == np.float32
    run(a, 6)
    assert a.view is not None and b.view is not None
    assert not np.array_equal(a.view.samples, b.view.samples)   # another seed, another trace

    four = a.view
    _, six = generated(1, jobs=4, servers=6)
    with pytest.raises(ValueError, match="4 servers"):
        a.reset(options={"view": six})
    with pytest.raises(ValueError, match="servers"):
        HarmonyEnv([four, six])
    _, gavel = generated(1, jobs=4, servers=4, world="gavel")
    with pytest.raises(ValueError, match="job types"):
        HarmonyEnv([four, gavel])
