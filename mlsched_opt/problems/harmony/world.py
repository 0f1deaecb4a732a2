"""The interference world: the speed simulator of spec 004 section 3 [PROP, our design].

The Harmony papers measure interference on a real cluster; we cannot, so the spec's synthetic
model stands in for it.  Every task (worker or PS of a job of type ``l``) on a server presses on
four contention dimensions ``R = (cpu, mem_bw, pcie, net)`` with intensity ``u`` and each job
type is sensitive to them with ``s``.  For a task, the pressure of the others on its server is

    O_{m,r} = sum of u_{tau',r} over the other tasks on m (the job's own tasks included),

the contention response is ``g(x) = x + kappa * max(0, x - 1)^2`` and a worker's step on m takes

    comp = t_comp * (1 + sum_{r in cpu, mem_bw, pcie} s_r * g(O_{m,r}))
    comm = (1 - f_rem) * t_loc * (1 + s_pcie * g(O_{m,pcie})) + f_rem * t_rem * fan * (1 + s_net * g(o_net))

with, for a PS job, ``f_rem = (P - p_m) / P`` (shards off-host), ``fan = sqrt(max(1, remote / P))``
and ``o_net`` the largest net pressure of the other jobs at m and at the job's PS hosts; for an
all-reduce job ``f_rem = 1`` when its workers span more than one server, ``fan = 1`` and ``o_net``
the largest other-job net pressure over its worker hosts.  A synchronous job steps at its slowest
worker's pace: ``T = max over worker hosts of (comp + comm)``, and trains ``W * batch / T``
samples per second.

The spec leaves "remote workers" open; we count worker-to-shard pairs that cross hosts,
``remote = sum_m w_m (1 - p_m / P)`` (our reading).  Everything here is vectorized over a leading
batch axis so that exhaustive search (:mod:`.exact`) evaluates thousands of placements per call;
:mod:`.check` recomputes the same formulas with plain loops, independently.

Worlds
------
``default``: the spec's table, read from the workload catalog's ``[interference]`` sections.
``hard``: the same with every sensitivity x 1.5 and kappa = 2 (spec section 3).
``gavel``: the workload types Gavel measured, with intensities and sensitivities fitted by least
squares to Gavel's pairwise co-location throughputs (:mod:`.gavel_fit`).
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

DIMENSIONS = ("cpu", "mem_bw", "pcie", "net")
CPU, MEM, PCIE, NET = range(4)


@dataclass(frozen=True)
class World:
    """Per-type timing and contention parameters (arrays indexed by type, in ``types`` order).

    Attributes
    ----------
    t_comp, t_loc, t_rem
        Seconds per step: compute, local (co-located PS / one-server ring) and remote communication.
    batch
        Samples per worker step.
    u_worker, u_ps
        Contention intensity of one task, shape (types, 4).
    s
        Sensitivity of the type, shape (types, 4).
    """

    name: str
    types: tuple[str, ...]
    t_comp: np.ndarray
    t_loc: np.ndarray
    t_rem: np.ndarray
    batch: np.ndarray
    u_worker: np.ndarray
    u_ps: np.ndarray
    s: np.ndarray
    kappa: float = 1.0
    source: str = ""

    def index(self, model: str) -> int:
        return self.types.index(model)

    def g(self, x: np.ndarray) -> np.ndarray:
        """Contention response: linear while unsaturated, superlinear once oversubscribed."""
        over = np.maximum(0.0, x - 1.0)
        return x + self.kappa * over * over

    def harder(self) -> World:
        """The spec's "hard" world: sensitivities x 1.5 and kappa = 2."""
        return replace(self, name="hard", s=self.s * 1.5, kappa=2.0, source=self.source + "; hard: s x 1.5, kappa = 2")


@dataclass(frozen=True)
class Jobs:
    """The jobs a speed call is about: type index, PS architecture flag, W and P (arrays of length J)."""

    kind: np.ndarray
    is_ps: np.ndarray
    W: np.ndarray
    P: np.ndarray

    @classmethod
    def of(cls, kinds: Sequence[int], is_ps: Sequence[bool], W: Sequence[int], P: Sequence[int]) -> Jobs:
        return cls(np.asarray(kinds, int), np.asarray(is_ps, bool), np.asarray(W, float), np.asarray(P, float))

    def take(self, idx: np.ndarray | Sequence[int]) -> Jobs:
        idx = np.asarray(idx, int)
        return Jobs(self.kind[idx], self.is_ps[idx], self.W[idx], self.P[idx])

    def __len__(self) -> int:
        return len(self.kind)


def step_times(world: World, jobs: Jobs, w: np.ndarray, p: np.ndarray) -> np.ndarray:
    """Step time of every job under every placement of a batch.

    Parameters
    ----------
    w, p
        Worker and PS counts, shape (B, J, M) (or (J, M) for one placement).  A job with no
        workers is not running: it exerts no pressure only if it also has no PSs.

    Returns
    -------
    np.ndarray
        Seconds per step, shape (B, J) (or (J,)); ``inf`` for jobs with no workers.
    """
    single = w.ndim == 2
    if single:
        w, p = w[None], p[None]
    w = w.astype(float)
    p = p.astype(float)
    uw = world.u_worker[jobs.kind]                     # (J, 4)
    up = world.u_ps[jobs.kind]
    s = world.s[jobs.kind]
    own = w[..., None] * uw[None, :, None, :] + p[..., None] * up[None, :, None, :]   # (B, J, M, 4)
    total = own.sum(axis=1, keepdims=True)                                            # (B, 1, M, 4)
    pressure = total - uw[None, :, None, :]             # a worker's view: everything on m but itself
    gp = world.g(pressure)
    comp = world.t_comp[jobs.kind][None, :, None] * (1.0 + (s[None, :, None, :3] * gp[..., :3]).sum(-1))

    other_net = (total - own)[..., NET]                 # (B, J, M): net pressure of the other jobs
    hosts = w > 0
    P = np.maximum(jobs.P, 1.0)[None, :, None]
    ps_hosts = p > 0
    ps_net = np.where(ps_hosts, other_net, -np.inf).max(axis=2, keepdims=True)
    f_rem_ps = (P - p) / P
    remote = (w * f_rem_ps).sum(axis=2, keepdims=True)
    fan_ps = np.sqrt(np.maximum(1.0, remote / P))
    onet_ps = np.maximum(other_net, ps_net)
    spans = hosts.sum(axis=2, keepdims=True) > 1
    f_rem_ar = np.broadcast_to(spans.astype(float), w.shape)
    onet_ar = np.broadcast_to(np.where(hosts, other_net, -np.inf).max(axis=2, keepdims=True), w.shape)
    is_ps = jobs.is_ps[None, :, None]
    f_rem = np.where(is_ps, f_rem_ps, f_rem_ar)
    fan = np.where(is_ps, fan_ps, 1.0)
    onet = np.maximum(np.where(is_ps, onet_ps, onet_ar), 0.0)

    t_loc = world.t_loc[jobs.kind][None, :, None]
    t_rem = world.t_rem[jobs.kind][None, :, None]
    comm = ((1.0 - f_rem) * t_loc * (1.0 + s[None, :, None, PCIE] * gp[..., PCIE])
            + f_rem * t_rem * fan * (1.0 + s[None, :, None, NET] * world.g(onet)))
    per_host = np.where(hosts, comp + comm, -np.inf)
    T = per_host.max(axis=2)
    T = np.where(np.isfinite(T), T, np.inf)
    return T[0] if single else T


def speeds(world: World, jobs: Jobs, w: np.ndarray, p: np.ndarray) -> np.ndarray:
    """Samples per second of every job (0 for jobs without workers), same shapes as :func:`step_times`."""
    T = step_times(world, jobs, w, p)
    return jobs.W * world.batch[jobs.kind] / T


def sparse_speeds(world: World, jobs: Jobs, w: np.ndarray, p: np.ndarray) -> np.ndarray:
    """:func:`speeds` of one placement (``w``, ``p``: (J, M)) from its non-zero entries only:
    O(entries) instead of O(J M), bit for bit the same numbers.

    Why the same: every elementwise formula is written as in :func:`step_times`; the server totals
    are summed job by job in job order (``np.add.at`` applies its entries in order, as numpy's
    reduction over the job axis does, and the skipped terms are exact zeros); the remote count
    adds multiples of 1/2 (exact in any order); the other reductions are maxima.
    """
    rows, cols = np.nonzero((w != 0) | (p != 0))   # row-major: job order within every server
    J = len(jobs)
    if J == 0:
        return np.zeros(0)
    kind = jobs.kind[rows]
    wv = w[rows, cols].astype(float)
    pv = p[rows, cols].astype(float)
    uw, up, s = world.u_worker[kind], world.u_ps[kind], world.s[kind]
    own = wv[:, None] * uw + pv[:, None] * up                          # (E, 4)
    servers, col = np.unique(cols, return_inverse=True)
    total = np.zeros((len(servers), 4))
    np.add.at(total, col, own)
    pressure = total[col] - uw
    gp = world.g(pressure)
    comp = world.t_comp[kind] * (1.0 + (s[:, :3] * gp[:, :3]).sum(-1))

    other_net = (total[col] - own)[:, NET]
    hosts = wv > 0
    P = np.maximum(jobs.P, 1.0)[rows]
    ps_net = np.full(J, -np.inf)
    np.maximum.at(ps_net, rows[pv > 0], other_net[pv > 0])
    f_rem_ps = (P - pv) / P
    remote = np.zeros(J)
    np.add.at(remote, rows, wv * f_rem_ps)
    fan_ps = np.sqrt(np.maximum(1.0, remote[rows] / P))
    onet_ps = np.maximum(other_net, ps_net[rows])
    spans = np.bincount(rows[hosts], minlength=J) > 1
    f_rem_ar = spans[rows].astype(float)
    host_net = np.full(J, -np.inf)
    np.maximum.at(host_net, rows[hosts], other_net[hosts])
    onet_ar = host_net[rows]
    is_ps = jobs.is_ps[rows]
    f_rem = np.where(is_ps, f_rem_ps, f_rem_ar)
    fan = np.where(is_ps, fan_ps, 1.0)
    onet = np.maximum(np.where(is_ps, onet_ps, onet_ar), 0.0)

    t_loc = world.t_loc[kind]
    t_rem = world.t_rem[kind]
    comm = ((1.0 - f_rem) * t_loc * (1.0 + s[:, PCIE] * gp[:, PCIE])
            + f_rem * t_rem * fan * (1.0 + s[:, NET] * world.g(onet)))
    T = np.full(J, -np.inf)
    np.maximum.at(T, rows[hosts], (comp + comm)[hosts])
    T = np.where(np.isfinite(T), T, np.inf)
    return jobs.W * world.batch[jobs.kind] / T


_CACHE: dict[tuple[int, Hashable], tuple[World, Any]] = {}


def cached_per_world(world: World, key: Hashable, compute: Callable[[], Any]) -> Any:
    """``compute()`` once per world object and ``key`` (a World holds arrays: it cannot be a dict key;
    the stored world guards against a reused ``id``)."""
    hit = _CACHE.get((id(world), key))
    if hit is None or hit[0] is not world:
        hit = _CACHE[(id(world), key)] = (world, compute())
    return hit[1]


def world_from_catalog(catalog: Mapping, types: Sequence[str], name: str = "default") -> World:
    """The default world for ``types``, from the catalog entries' ``[interference]`` sections."""
    rows = []
    for t in types:
        data = catalog[t].data.get("interference")
        if data is None:
            raise KeyError(t)
        rows.append(data)
    vec = lambda key: np.array([[float(r[key][d]) for d in DIMENSIONS] for r in rows])  # noqa: E731
    arr = lambda key: np.array([float(r[key]) for r in rows])  # noqa: E731
    return World(name=name, types=tuple(types), t_comp=arr("compute_s"), t_loc=arr("local_comm_s"),
                 t_rem=arr("remote_comm_s"), batch=arr("batch_size"), u_worker=vec("worker"), u_ps=vec("ps"),
                 s=vec("sensitivity"), kappa=1.0, source=rows[0].get("source", ""))


def interference_types(catalog: Mapping) -> list[str]:
    """The catalog workloads that carry an ``[interference]`` section (the default world's types)."""
    return [name for name in catalog if "interference" in catalog[name].data]
