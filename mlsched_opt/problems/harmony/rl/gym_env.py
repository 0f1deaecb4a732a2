"""Harmony as a Gymnasium environment (the optional ``gym`` extra): one placement decision per step.

[Our design, issue 21.]  :class:`HarmonyEnv` steps the same simulator as every harmony method,
:func:`~..simulate.run_steps` (the generator behind :func:`~..simulate.simulate`), so an episode
driven by a fixed policy gives exactly the decision and JCTs that ``simulate`` gives with the
corresponding chooser.  It exists so that off-the-shelf RL libraries (sb3-contrib's
``MaskablePPO`` in ``benchmarks/harmony_gym.py``) can be compared with our own trainer on the same
problem.

* **Episode**: one trace (a :class:`~..view.HarmonyView`) from arrival of the first job to the
  finish of the last, drawn at :meth:`HarmonyEnv.reset` from ``self.np_random``.
* **Steps**: the simulator's decisions, in its order: a ``"defer"`` ask (a queued job may be held
  back, :meth:`~..simulate.Env.may_defer`, within ``defer_max`` intervals of its arrival) and every
  ``"task"`` ask (one PS or worker of the job being placed).  ``"start"`` and ``"end"`` asks need
  no answer and are passed through.
* **Action**: ``Discrete(M + 1)``.  At a task ask, a server ``m < M`` among the feasible ones.  At a
  defer ask, ``M`` means "not now" (hold the job back this interval) and ``m < M`` means "place the
  job now, its first task on server ``m``" (the env answers the defer ask, the start ask and the
  job's first task ask with it).  Index ``M`` is valid only at a defer ask.  :meth:`HarmonyEnv.action_masks`
  (sb3-contrib's convention) and ``info["action_mask"]`` give the valid actions; an invalid action
  raises :class:`ValueError` (never silently fixed); ``action_space.sample()`` draws a valid one
  (:class:`MaskedDiscrete`).  At a defer ask where the job's first task fits nowhere, "not now" is
  the only valid action (placing would roll back: the same outcome; the run counts it in
  ``deferrals``, where ``drl``'s chooser answers "place now" and does not).
* **Observation**: one flat ``Box(float32)``: the per-server rows of
  :func:`~.features.decision_state` (``M x server_width(L)``, raveled) followed by its context row
  (``context_width(L)``, the deferral block included; the interference features dry-run
  standalone-first, and the advice entries are zeros: an agent here learns without a teacher).
  ``M`` and the job types are fixed per env:
  a trace of another cluster size or another world's types is refused with a :class:`ValueError`.
* **Reward**: minus the jobs in the system during the intervals simulated since the previous step
  (:attr:`~..simulate.Env.occupancy`, a finishing job for its fraction), divided by the reward
  scale.  By Little's law the undiscounted return of an episode is ``-(total JCT) / scale``
  (intervals); the default scale is the trace's job count, so the return is minus the average JCT.
* **End**: ``terminated`` when the trace's last job finishes (never truncated); the last step's
  ``info`` has ``avg_jct``, ``jct`` (per job), ``run`` (the :class:`~..simulate.HarmonyRun`) and
  ``decision`` (the solution document the family checker takes).

Same seed to :meth:`HarmonyEnv.reset`, same trace and the same observations.  Speeds are the true world's.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import gymnasium
import numpy as np
from gymnasium import spaces

from ..baselines import make_heuristic
from ..options import DEFER_MAX
from ..placements import standalone_profile
from ..simulate import Ask, Chooser, Env, HarmonyRun, Steps, run_steps
from ..view import HarmonyView
from .features import context_width, decision_state, server_width

#: a trace factory: draws the next episode's trace from the env's generator
TraceFactory = Callable[[np.random.Generator], HarmonyView]


class MaskedDiscrete(spaces.Discrete):
    """``Discrete`` whose ``sample()`` without a mask draws among the env's valid actions now (so a
    random agent, and gymnasium's ``check_env``, only take valid actions); an explicit ``mask`` or
    ``probability`` is used as given.  A copy or a pickle is a plain ``Discrete``."""

    def __init__(self, n: int, masks: Callable[[], np.ndarray]):
        super().__init__(n)
        self._masks = masks

    def sample(self, mask: Any = None, probability: Any = None) -> np.int64:
        if mask is None and probability is None:
            now = self._masks()
            if now.any():
                mask = now.astype(np.int8)
        return super().sample(mask=mask, probability=probability)

    def __reduce__(self) -> tuple[Any, ...]:
        # the env (the mask's owner) holds a running generator: copies and pickles leave it behind
        return spaces.Discrete, (int(self.n),)


class HarmonyEnv(gymnasium.Env):
    """Harmony's placement, one decision per step (see the module docstring).

    ``traces``: either a factory ``rng -> HarmonyView`` called with ``self.np_random`` at every
    reset (for a stream of generated training traces; it is called once at construction with
    ``np.random.default_rng(0)`` to learn ``M`` and the job types), or a non-empty sequence of
    views, one drawn uniformly from ``self.np_random`` at every reset.  Every trace must have the
    same number of servers and the same job types.  ``defer_max``: the simulator's deferral rule
    (0: no defer asks).  ``reward_scale``: rewards are divided by it; ``None`` (default) divides by
    each trace's job count, so the episode return is minus its average JCT."""

    def __init__(self, traces: TraceFactory | Sequence[HarmonyView], defer_max: int = DEFER_MAX, reward_scale: float | None = None):
        super().__init__()
        if callable(traces):
            self._factory: TraceFactory | None = traces
            self._views: tuple[HarmonyView, ...] = ()
            probe = traces(np.random.default_rng(0))
        else:
            self._factory = None
            self._views = tuple(traces)
            if not self._views:
                raise ValueError("HarmonyEnv needs at least one trace")
            probe = self._views[0]
        if defer_max < 0:
            raise ValueError(f"defer_max must be >= 0, got {defer_max}")
        if reward_scale is not None and not reward_scale > 0:
            raise ValueError(f"reward_scale must be > 0 (or None: the trace's job count), got {reward_scale}")
        self.defer_max = int(defer_max)
        self.reward_scale = reward_scale
        self.M = int(probe.M)
        self.types = tuple(probe.world.types)
        L = len(self.types)
        self.server_features = server_width(L)
        self.context_features = context_width(L)
        for view in self._views:
            self._accept(view)
        self.size = self.M * self.server_features + self.context_features
        self.observation_space = spaces.Box(-np.inf, np.inf, shape=(self.size,), dtype=np.float32)
        self.action_space = MaskedDiscrete(self.M + 1, self.action_masks)
        self._dry_run: Chooser = make_heuristic("standalone")
        self.view: HarmonyView | None = None
        self._steps: Steps | None = None
        self._ask: Ask | None = None
        self._mask = np.zeros(self.M + 1, bool)
        self._state: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None   # decision_state of the pending ask
        self._occupancy = 0.0   # jobs x intervals simulated since the last step's reward
        self._scale = 1.0
        self._lengths = np.zeros(0)
        self._alone = np.zeros(0)

    # --- gymnasium API ----------------------------------------------------------------------------

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[np.ndarray, dict[str, Any]]:
        """Seed ``self.np_random`` (when ``seed`` is given), draw the next trace from it and run the
        simulation to its first decision.  ``options={"view": view}`` runs that trace instead."""
        super().reset(seed=seed)
        if options and "view" in options:
            view = options["view"]
        elif self._factory is not None:
            view = self._factory(self.np_random)
        else:
            view = self._views[int(self.np_random.integers(len(self._views)))]
        self._accept(view)
        if self._steps is not None:
            self._steps.close()
        self.view = view
        self._alone, self._lengths = standalone_profile(view)
        self._scale = float(view.J) if self.reward_scale is None else float(self.reward_scale)
        self._occupancy = 0.0
        self._steps = run_steps(view, on_interval=self._on_interval, defer_max=self.defer_max)
        run = self._advance(None)
        if run is not None:   # every job has at least one task: the simulator always asks
            raise RuntimeError("the trace ended before its first decision")
        return self._observe(), {"action_mask": self._mask.copy()}

    def step(self, action: Any) -> tuple[np.ndarray, float, bool, bool, dict[str, Any]]:
        if self._ask is None:
            raise RuntimeError("step() before reset() or after the episode ended; call reset()")
        a = int(action)
        if not 0 <= a <= self.M or not self._mask[a]:
            valid = np.flatnonzero(self._mask).tolist()
            raise ValueError(f"invalid action {a} at a {self._ask.kind!r} ask of job {self._ask.j} "
                             f"(valid: {valid}; {self.M} is 'not now', valid only at a defer ask)")
        ask = self._ask
        if ask.kind == "defer":
            run = self._place_now(a) if a < self.M else self._advance(True)
        else:
            run = self._advance(a)
        reward = -self._occupancy / self._scale
        self._occupancy = 0.0
        if run is None:
            return self._observe(), reward, False, False, {"action_mask": self._mask.copy()}
        assert self.view is not None
        jct = run.jct(self.view)
        info = {"action_mask": self._mask.copy(), "avg_jct": float(jct.mean()), "jct": jct, "run": run,
                "decision": run.decision(self.view)}
        return np.zeros(self.size, np.float32), reward, True, False, info

    def action_masks(self) -> np.ndarray:
        """The valid actions now, ``(M + 1,)`` bool (index ``M``: "not now"); all false once the episode ended."""
        return self._mask.copy()

    @property
    def pending(self) -> Ask | None:
        """The simulator's ask the next action answers (its ``env`` is the live cluster state: read
        it, never change it); ``None`` before :meth:`reset` and once the episode ended."""
        return self._ask

    def close(self) -> None:
        if self._steps is not None:
            self._steps.close()
            self._steps = None
        self._ask = None

    # --- the simulator ------------------------------------------------------------------------------

    def _accept(self, view: HarmonyView) -> None:
        if view.M != self.M:
            raise ValueError(f"this HarmonyEnv has {self.M} servers (its observation and action spaces are sized for them); "
                             f"a trace with {view.M} servers needs an env of its own")
        if tuple(view.world.types) != self.types:
            raise ValueError(f"this HarmonyEnv's traces have job types {', '.join(self.types)}; "
                             f"a trace with {', '.join(view.world.types)} needs an env of its own")

    def _on_interval(self, env: Env, reward: float) -> None:
        self._occupancy += env.occupancy

    def _send(self, answer: Any) -> Ask | HarmonyRun:
        assert self._steps is not None
        try:
            return self._steps.send(answer)
        except StopIteration as stop:
            self._steps = None
            run: HarmonyRun = stop.value
            return run

    def _advance(self, answer: Any) -> HarmonyRun | None:
        """Send ``answer`` and run to the next decision (a defer or task ask), passing start and end
        asks through; returns the run when the trace ended (then no ask is pending)."""
        while True:
            got = self._send(answer)
            if isinstance(got, HarmonyRun):
                self._ask = None
                self._mask = np.zeros(self.M + 1, bool)
                return got
            if got.kind in ("defer", "task"):
                self._ask = got
                self._state = decision_state(got, self._lengths, self._alone, self._dry_run)
                self._mask = self._state[2]
                return None
            answer = None

    def _place_now(self, m: int) -> HarmonyRun | None:
        """At a defer ask: place the job now (answer false), its first task on server ``m``."""
        ask = self._ask
        assert ask is not None
        got = self._send(False)
        assert isinstance(got, Ask) and got.kind == "start" and got.j == ask.j, got
        got = self._send(None)
        assert isinstance(got, Ask) and got.kind == "task" and got.j == ask.j and got.mask is not None, got
        if not np.array_equal(got.mask, self._mask[:self.M]):
            raise RuntimeError(f"job {ask.j}'s first task mask differs from its defer ask's (features out of step)")
        return self._advance(m)

    def _observe(self) -> np.ndarray:
        if self._ask is None or self._state is None:
            return np.zeros(self.size, np.float32)
        servers, context, _ = self._state
        return np.concatenate([servers.ravel(), context]).astype(np.float32)
