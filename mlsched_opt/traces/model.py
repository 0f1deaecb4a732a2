"""What every trace reader produces and every family importer consumes.

A :class:`Trace` is a window of real jobs in submission order, with what the source measured
about each (submit time, duration, GPUs, demands, model) and nothing invented; a cluster is a
list of :class:`Node` s.  What a family needs beyond that (a workload for a Philly job, a speed
for an anonymized GPU) is added by the family's importer (``problems/<family>/trace.py``) by a
stated rule, and written into the instance's ``source``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from .table import TraceError


@dataclass(frozen=True)
class TraceJob:
    """One job of a trace; ``None`` where the source does not say."""

    id: str
    row: int                      # the row of the source file (header = 1)
    submit_s: float               # seconds after the window's first submission
    gpus: int                     # GPUs (0 for CPU-only tasks)
    duration_s: float | None = None
    gpu_share: float = 1.0        # fraction of each GPU (Alibaba's gpu_milli / 1000)
    cpu: float | None = None      # cores
    memory_gb: float | None = None
    gpu_models: tuple[str, ...] | None = None   # allowed GPU models (Alibaba's gpu_spec)
    model: str | None = None      # catalog workload (Pollux names its models)
    batch_size: int | None = None  # global batch (Pollux)


@dataclass(frozen=True)
class Node:
    """One server of a real cluster; ``gpu_model`` is ``None`` for a CPU-only node."""

    name: str
    gpu_model: str | None
    gpus: int
    cpu: float | None = None
    memory_gb: float | None = None

    def server(self) -> dict[str, Any]:
        """This node as an instance's server: its GPUs, cores and memory, and its GPU model if any."""
        out: dict[str, Any] = {"name": self.name, "capacity": {"gpu": self.gpus, "cpu": self.cpu, "memory_gb": self.memory_gb}}
        if self.gpu_model:
            out["gpu_model"] = self.gpu_model
        return out


@dataclass(frozen=True)
class Trace:
    """A window of a trace: its jobs in submission order, where they come from, and what was assumed."""

    source: str                    # alibaba | philly | pollux
    file: str                      # the file read, relative to the data folder
    jobs: tuple[TraceJob, ...]
    window: str                    # which rows, e.g. "jobs 120..319 of 82,247 by submit time"
    assumptions: tuple[str, ...] = ()
    time_column: str = ""          # the column submit times come from (for messages)

    @property
    def submit_s(self) -> np.ndarray:
        return np.array([j.submit_s for j in self.jobs], dtype=float)

    def provenance(self) -> str:
        """One sentence for the instance's ``source``."""
        notes = "".join(f"; {a}" for a in self.assumptions)
        return f"{self.source} trace {self.file}, {self.window}{notes}"


@dataclass(frozen=True)
class Cluster:
    """The servers an import places its jobs on, and where they come from."""

    name: str
    nodes: tuple[Node, ...]
    provenance: str

    @property
    def gpu_nodes(self) -> tuple[Node, ...]:
        return tuple(n for n in self.nodes if n.gpus > 0 and n.gpu_model)


@dataclass(frozen=True)
class ImportSpec:
    """What ``mlsched import`` asks for; ``options`` are the source's and the family's, parsed."""

    source: str
    problem: str
    data: Path
    jobs: int | None
    servers: int | None
    slots: int | None
    seed: int
    options: Mapping[str, Any] = field(default_factory=dict)   # the source's and the family's, parsed
    sets: Mapping[str, str] = field(default_factory=dict)      # as given on the command line
    notes: list[str] = field(default_factory=list)   # what the import said to the user (taken all, ...)
    #: the most jobs a window without --jobs may hold, refused as the trace streams (import_instance sets
    #: the jobs limit; None, for a reader used on its own, reads the whole trace)
    window_limit: int | None = None

    def rng(self, purpose: str) -> np.random.Generator:
        """A generator for one purpose, so that adding a draw in one place does not move the others."""
        return np.random.default_rng([self.seed, *purpose.encode()])

    def command(self) -> str:
        """The ``mlsched import`` command that reproduces the instance."""
        parts = [f"mlsched import {self.source} --problem {self.problem}"]
        for flag, value in (("--jobs", self.jobs), ("--servers", self.servers), ("--slots", self.slots)):
            if value is not None:
                parts.append(f"{flag} {value}")
        parts.append(f"--seed {self.seed}")
        parts += [f"--set {k}={v}" for k, v in sorted(self.sets.items())]
        return " ".join(parts)


def window(count: int, want: int | None, start: int | None, rng: np.random.Generator, what: str,
           notes: list[str], file: str) -> tuple[int, int]:
    """``(first, n)``: ``want`` consecutive items of ``count`` from ``start`` (or a seeded start);
    asking for more than there are takes all of them and says so."""
    if count == 0:
        raise TraceError(f"no {what} in the trace", file)
    n = count if want is None or want >= count else want
    if want is not None and want > count and not start:
        notes.append(f"--jobs {want}: the trace has {count:,} {what}; took all of them")
    if start is None:
        first = int(rng.integers(0, count - n + 1))
    else:
        if start >= count:
            raise TraceError(f"start {start} is past the last of {count:,} {what}", file, "--set start")
        first = start
        if n > count - first:
            notes.append(f"--jobs {want}: from start {start} the trace has {count - first:,} {what}; took all of them")
            n = count - first
    return first, n


def pick_nodes(nodes: list[Node], want: int | None, rng: np.random.Generator, what: str, notes: list[str]) -> list[Node]:
    """``want`` nodes drawn without replacement (in list order), or all of them when ``want`` is
    ``None`` or at least their number (which it says)."""
    if not nodes:
        raise TraceError(f"the cluster has no {what}", None, "--servers")
    if want is None or want >= len(nodes):
        if want is not None and want > len(nodes):
            notes.append(f"--servers {want}: the cluster has {len(nodes):,} {what}; took all of them")
        return list(nodes)
    pick = np.sort(rng.choice(len(nodes), size=want, replace=False))
    return [nodes[int(i)] for i in pick]
