"""Marginal-delay list scheduling: place each queued job where it adds the least delay, or hold it.

Our design (issue 32); not in spec 004.  Under load, co-location is what limits the cluster: one
server's summed normalised speed peaks at 3-5 workers in the default world (``ctc``: 1.92 at 3
workers, 1.06 at 8), so a placement rule that fills every free GPU (every heuristic of
:mod:`.baselines`) loses throughput exactly when the queue is long, and one that ignores what a
job does to its neighbours slows the long jobs that dominate the average JCT.

At a queued job ``j``'s turn, for every server ``m`` its best standalone shape fits on, the rule
estimates the delay placing it there adds, in intervals::

    own(m)   = d_j (T_j(m) / T*_j - 1)                        (its run beyond its standalone run d_j)
    harm(m)  = sum over the jobs k with workers on m of
               min(dur_j(m), rem_k T'_k / T*_k) (T'_k / T_k - 1)  (each neighbour slowed while both run)

with ``T*`` a job's standalone step time, ``T`` its step time now, ``T'`` after ``j`` joins ``m``,
``dur_j(m) = d_j T_j(m) / T*_j`` and ``rem_k`` the standalone intervals ``k`` has left.  Step times
are the world's formulas evaluated host by host on ``m`` (a neighbour's other hosts are taken as
unchanged).  The shapes tried are the job's best standalone placement and, when that spans servers,
its best one-server placement; a one-server shape is priced on every server at once, a spread one
part by part (the largest first, each where its local slowdown and its harm are least, then the
job's step time on those servers exactly, remote communication included).  The job takes the plan
of least ``own + harm`` when that is at most ``hold + hold_share * d_j`` intervals, and is held back
otherwise, or when no shape fits (only while some job holds servers, so the trace always advances;
the simulator places a job on the empty cluster when nothing runs).

Cost: one pass over the running jobs' (job, server) entries per cluster change, then
``O(entries + servers)`` numpy per evaluated job; a job is not evaluated when a job of its class
(type, architecture, W, P) with a standalone run no longer than its own was held back in the same
placement round (both terms grow with ``d_j``), and with the simulator's ``skip_quiet`` no round is
run while nothing changes.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...tolerances import capacity_limit
from .baselines import Planned
from .options import HOLD, HOLD_SHARE
from .placements import job_options, standalone_profile
from .simulate import Env
from .view import HarmonyView
from .world import NET, PCIE, Jobs, World, speeds

#: tolerance of a task fitting a server's free capacity (the simulator's, :meth:`Env.feasible`)
FIT = 1e-9


@dataclass(frozen=True)
class Shape:
    """A job's best standalone count vector, restricted to the servers it uses: workers and PSs per part."""

    w: np.ndarray
    p: np.ndarray

    @property
    def parts(self) -> int:
        return len(self.w)


def candidate_shapes(view: HarmonyView, j: int) -> tuple[Shape, ...]:
    """Job ``j``'s best standalone placement and, when that spans servers, its best one-server
    placement (if it fits one server): the shapes the rule tries, each as parts with the most tasks first."""
    W, P = int(view.jobs.W[j]), int(view.jobs.P[j])
    cap = capacity_limit(view.capacity.max(axis=0))
    M = min(view.M, W + P)
    ow, op = job_options(W, P, M, cap, view.worker_demand[j], view.ps_demand[j], slack=0.0)
    one = Jobs.of([int(view.jobs.kind[j])], [bool(view.jobs.is_ps[j])], [W], [P])
    sp = speeds(view.world, one, ow[:, None, :], op[:, None, :])[:, 0]

    def shape(k: int) -> Shape:
        used = np.flatnonzero(ow[k] + op[k])
        used = used[np.argsort(-(ow[k] + op[k])[used], kind="stable")]
        return Shape(ow[k][used], op[k][used])

    best = shape(int(np.argmax(sp)))
    single = (ow + op > 0).sum(axis=1) == 1
    if best.parts == 1 or not single.any():
        return (best,)
    return best, shape(int(np.flatnonzero(single)[np.argmax(sp[single])]))


class HostState:
    """The live jobs' (job, server) entries with the pieces of their step times that a new task on
    their server changes (pressure, other jobs' network pressure) and those it does not (remote
    share, fan-out, network pressure seen elsewhere), after :func:`~.world.sparse_speeds`."""

    def __init__(self, view: HarmonyView, env: Env, T_star: np.ndarray):
        world = view.world
        self.view = view
        rows = env.rows()
        self.rows = rows
        M = view.M
        self.total = np.zeros((M, 4))
        if len(rows) == 0:
            self.entry_job = np.zeros(0, int)
            return
        w, p = env.w[rows], env.p[rows]
        r, m = np.nonzero((w != 0) | (p != 0))
        jobs = rows[r]
        kind = view.jobs.kind[jobs]
        wv, pv = w[r, m].astype(float), p[r, m].astype(float)
        own = wv[:, None] * world.u_worker[kind] + pv[:, None] * world.u_ps[kind]
        np.add.at(self.total, m, own)
        P = np.maximum(view.jobs.P[jobs], 1.0)
        is_ps = view.jobs.is_ps[jobs]
        other_net = self.total[m, NET] - own[:, NET]
        # per-job figures are indexed by the entry's row among the live jobs (r), not by job: arrays of
        # every job of the trace, rebuilt at each decision, made a whole trace quadratic
        live = len(rows)
        ps_net = np.full(live, -np.inf)
        np.maximum.at(ps_net, r[pv > 0], other_net[pv > 0])
        remote = np.zeros(live)
        np.add.at(remote, r, wv * (P - pv) / P)
        spans = np.bincount(r[wv > 0], minlength=live) > 1
        host_net = np.full(live, -np.inf)
        np.maximum.at(host_net, r[wv > 0], other_net[wv > 0])
        f_rem = np.where(is_ps, (P - pv) / P, spans[r].astype(float))
        fan = np.where(is_ps, np.sqrt(np.maximum(1.0, remote[r] / P)), 1.0)
        # the network pressure a worker sees from elsewhere (its PS hosts, its other worker hosts)
        elsewhere = np.where(is_ps, ps_net[r], host_net[r])
        keep = wv > 0
        self.entry_job = jobs[keep]
        self.entry_row = r[keep]
        self.entry_server = m[keep]
        self.kind = kind[keep]
        self.own = own[keep]
        self.f_rem, self.fan, self.elsewhere = f_rem[keep], fan[keep], elsewhere[keep]
        T = np.full(live, -np.inf)
        np.maximum.at(T, self.entry_row, self.step(self.total[self.entry_server]))
        #: every worker entry's job's step time now (the slowest of its servers)
        self.T_entry = T[self.entry_row]
        self.T_star_entry = T_star[self.entry_job]

    def step(self, total: np.ndarray) -> np.ndarray:
        """Every worker entry's step time (s) were its server's summed intensities ``total`` (entries x 4)."""
        world, kind = self.view.world, self.kind
        s = world.s[kind]
        gp = world.g(total - world.u_worker[kind])
        comp = world.t_comp[kind] * (1.0 + (s[:, :3] * gp[:, :3]).sum(-1))
        onet = np.maximum(np.maximum(total[:, NET] - self.own[:, NET], self.elsewhere), 0.0)
        comm = ((1.0 - self.f_rem) * world.t_loc[kind] * (1.0 + s[:, PCIE] * gp[:, PCIE])
                + self.f_rem * world.t_rem[kind] * self.fan * (1.0 + s[:, NET] * world.g(onet)))
        return comp + comm

    def harm(self, add: np.ndarray, span: np.ndarray, rem: np.ndarray) -> np.ndarray:
        """Per server: the delay (intervals) the running jobs there suffer when tasks of summed intensity
        ``add`` (4,) join it and stay ``span[m]`` intervals; ``rem``: the worker entries' jobs' standalone
        intervals left (:meth:`Marginal._remaining`)."""
        out = np.zeros(self.view.M)
        if len(self.entry_job) == 0:
            return out
        m = self.entry_server
        after = np.maximum(self.step(self.total[m] + add), self.T_entry)
        ratio = after / self.T_entry
        lasting = np.minimum(span[m], rem * after / self.T_star_entry)
        # a job with workers on two servers counts on each: it is slowed by the worse of them, an over-count we accept
        np.add.at(out, m, lasting * (ratio - 1.0))
        return out


def own_step(view: HarmonyView, j: int, servers: np.ndarray, shape: Shape, others: np.ndarray) -> float:
    """Job ``j``'s step time (s) with ``shape``'s parts on ``servers`` where the other jobs' summed intensities
    are ``others`` (M x 4): the world's formulas (:func:`~.world.step_times`) for this one job."""
    world = view.world
    kind = int(view.jobs.kind[j])
    P = max(float(view.jobs.P[j]), 1.0)
    w, p = shape.w.astype(float), shape.p.astype(float)
    own = w[:, None] * world.u_worker[kind] + p[:, None] * world.u_ps[kind]
    other = others[servers]
    s = world.s[kind]
    gp = world.g(other + own - world.u_worker[kind])
    comp = world.t_comp[kind] * (1.0 + (s[:3] * gp[:, :3]).sum(-1))
    other_net = other[:, NET]
    hosts = w > 0
    if view.jobs.is_ps[j]:
        f_rem = (P - p) / P
        fan = np.sqrt(max(1.0, float((w * f_rem).sum()) / P))
        onet = np.maximum(other_net, other_net[p > 0].max(initial=-np.inf))
    else:
        f_rem = np.full(len(w), 1.0 if hosts.sum() > 1 else 0.0)
        fan = 1.0
        onet = np.full(len(w), other_net[hosts].max(initial=-np.inf))
    comm = ((1.0 - f_rem) * world.t_loc[kind] * (1.0 + s[PCIE] * gp[:, PCIE])
            + f_rem * world.t_rem[kind] * fan * (1.0 + s[NET] * world.g(np.maximum(onet, 0.0))))
    return float((comp + comm)[hosts].max())


def one_server_step(world: World, kind: int, shape: Shape, total: np.ndarray) -> np.ndarray:
    """Step time (s) of a job with all its tasks (``shape``, one part) on each server of summed intensities
    ``total`` (M x 4) before it joins: local communication only (its PSs, if any, are on the same host)."""
    add = shape.w[0] * world.u_worker[kind] + shape.p[0] * world.u_ps[kind]
    s = world.s[kind]
    gp = world.g(total + add - world.u_worker[kind])
    comp = world.t_comp[kind] * (1.0 + (s[:3] * gp[:, :3]).sum(-1))
    return comp + world.t_loc[kind] * (1.0 + s[PCIE] * gp[:, PCIE])


class Marginal(Planned):
    """The marginal-delay chooser (module docstring); ``hold`` and ``slack`` set the threshold."""

    def __init__(self, view: HarmonyView, hold: float = HOLD, slack: float = HOLD_SHARE):
        self.view = view
        self.hold, self.slack = float(hold), float(slack)
        self.alone, self.d = standalone_profile(view)
        self.T_star = view.jobs.W * view.world.batch[view.jobs.kind] / self.alone
        self.shapes: dict[tuple, tuple[Shape, ...]] = {}
        self.plan: dict[int, list[tuple[str, int]]] = {}
        self.state: HostState | None = None
        self.round = -1
        self.refused: dict[tuple, float] = {}
        self.unfit: set[tuple] = set()

    def key(self, j: int) -> tuple:
        v = self.view
        return (int(v.jobs.kind[j]), bool(v.jobs.is_ps[j]), int(v.jobs.W[j]), int(v.jobs.P[j]),
                v.worker_demand[j].tobytes(), v.ps_demand[j].tobytes())

    def shape(self, j: int) -> tuple[Shape, ...]:
        key = self.key(j)
        if key not in self.shapes:
            self.shapes[key] = candidate_shapes(self.view, j)
        return self.shapes[key]

    # --- the simulator's protocol ------------------------------------------------------------------

    def start_job(self, env: Env, j: int) -> None:
        if j not in self.plan:   # not asked whether to hold it (it may not wait now): its best plan, whatever it costs
            found = self._best(env, j)
            if found is not None:
                self.plan[j] = found[1]

    def defer(self, env: Env, j: int) -> bool:
        return not self._decide(env, j)

    def end_job(self, env: Env, j: int, placed: bool) -> None:
        super().end_job(env, j, placed)
        if placed:
            self.state = None   # the cluster changed

    # --- the rule ------------------------------------------------------------------------------------

    def _decide(self, env: Env, j: int) -> bool:
        """Plan job ``j`` now (true) or hold it (false): no shape of it fits now, or its least added delay
        exceeds the threshold.  (A job that fits nowhere would be rolled back anyway; holding it keeps the
        simulator's fallback placement from starting it in a shape the rule never priced.)"""
        if env.interval != self.round:
            self.round, self.refused, self.unfit, self.state = env.interval, {}, set(), None
        key = self.key(j)
        if key in self.unfit:
            return False
        if self.d[j] >= self.refused.get(key, np.inf):
            return False
        found = self._best(env, j)
        if found is None:
            self.unfit.add(key)
            return False
        cost, plan = found
        if cost > self.hold + self.slack * self.d[j]:
            self.refused[key] = min(self.d[j], self.refused.get(key, np.inf))
            return False
        self.plan[j] = plan
        return True

    def _best(self, env: Env, j: int) -> tuple[float, list[tuple[str, int]]] | None:
        """The plan of least added delay and that delay, or ``None`` when no shape fits."""
        if self.state is None:
            self.state = HostState(self.view, env, self.T_star)
        found = [self._one_server(env, j, shape) if shape.parts == 1 else self._spread(env, j, shape) for shape in self.shape(j)]
        options = [f for f in found if f is not None]
        return min(options, key=lambda f: f[0]) if options else None

    def _one_server(self, env: Env, j: int, shape: Shape) -> tuple[float, list[tuple[str, int]]] | None:
        """The best server for a one-part shape: every server at once (local communication only)."""
        view, state = self.view, self.state
        assert state is not None
        kind = int(view.jobs.kind[j])
        need = shape.w[0] * view.worker_demand[j] + shape.p[0] * view.ps_demand[j]
        fits = np.all(env.free >= need - FIT, axis=1)
        if not fits.any():
            return None
        T = one_server_step(view.world, kind, shape, state.total)
        dur = self.d[j] * T / self.T_star[j]
        add = shape.w[0] * view.world.u_worker[kind] + shape.p[0] * view.world.u_ps[kind]
        cost = np.where(fits, (dur - self.d[j]) + state.harm(add, dur, self._remaining(env)), np.inf)
        m = int(np.argmin(cost))
        return float(cost[m]), [("ps", m)] * int(shape.p[0]) + [("worker", m)] * int(shape.w[0])

    def _spread(self, env: Env, j: int, shape: Shape) -> tuple[float, list[tuple[str, int]]] | None:
        """Parts on distinct servers, the largest first, each where its own local slowdown and its harm
        are least; then the job's step time on them exactly (its remote communication included)."""
        view, state = self.view, self.state
        assert state is not None
        world, kind = view.world, int(view.jobs.kind[j])
        rem = self._remaining(env)
        span = np.full(view.M, self.d[j])
        taken = np.zeros(view.M, bool)
        servers = np.zeros(shape.parts, int)
        harm = 0.0
        for part in range(shape.parts):
            one = Shape(shape.w[[part]], shape.p[[part]])
            need = one.w[0] * view.worker_demand[j] + one.p[0] * view.ps_demand[j]
            fits = np.all(env.free >= need - FIT, axis=1) & ~taken
            if not fits.any():
                return None
            add = one.w[0] * world.u_worker[kind] + one.p[0] * world.u_ps[kind]
            hurt = state.harm(add, span, rem)
            local = one_server_step(world, kind, one, state.total) if one.w[0] > 0 else np.zeros(view.M)
            score = np.where(fits, self.d[j] * local / self.T_star[j] + hurt, np.inf)
            m = int(np.argmin(score))
            servers[part], taken[m] = m, True
            harm += float(hurt[m])
        T = own_step(view, j, servers, shape, state.total)
        cost = self.d[j] * (T / self.T_star[j] - 1.0) + harm
        plan = [("ps", int(m)) for m, n in zip(servers, shape.p) for _ in range(int(n))]
        plan += [("worker", int(m)) for m, n in zip(servers, shape.w) for _ in range(int(n))]
        return max(cost, 0.0), plan

    def _remaining(self, env: Env) -> np.ndarray:
        """The worker entries' jobs' standalone intervals left (:meth:`HostState.harm`'s ``rem``), for those
        entries only: the same quotients as over every job, without a pass over the whole trace per shape."""
        assert self.state is not None
        k = self.state.entry_job
        return env.remaining[k] / (self.alone[k] * self.view.slot_s)
