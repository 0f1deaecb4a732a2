"""Harmony's networks and the policy chooser (PyTorch, the optional ``rl`` extra).

Spec 004 section 2 [PROP where marked there; sized for a 2-core CPU, our design]:

* :class:`PolicyNet` — the actor scores every server for the task being placed: a shared MLP
  over (server row, job context, mean of the server embeddings) gives one logit per server, the
  capacity mask zeroes infeasible servers, a softmax gives the action distribution (one task per
  action, spec 2.2; the per-server pointer form of the ToN decoder, 2.4, so any cluster size
  works and server symmetry holds by construction, pitfall P7).  One more action, "not now"
  [our design, issue 21], is scored by a head over the mean- and max-pooled server embeddings and
  the context (whose deferral block carries the interference the job would meet now); it is open
  at a job's first task while the simulator's deferral rule allows holding the job back.  The
  critic is a separate network of the same trunk with mean- and max-pooling and a scalar head (2.3).
* :class:`RewardNet` — the reward prediction model of 2.6 (INFOCOM variant, per job): a per-host
  MLP, max- and mean-pooled over the job's hosts (the barrier is a max), joined with the job's own
  features, predicts its speed normalised by its standalone speed.
* :class:`PolicyChooser` — plugs a policy into the simulator: argmax or sampled actions, the
  job-aware omega-greedy exploration of 2.5 (with probability omega a whole job follows bin
  packing or load balancing, drawn once per job), and a log of (state, mask, action, interval)
  for training.  Its interference features dry-run ``placer``, the placement heuristic of the
  teacher it was trained from, and it sees that teacher's answer to the decision as advice (one
  more server column and context entry; both saved in the policy's metadata; format ``/3``).
"""

from __future__ import annotations

import contextlib
import os
import pickletools
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ....errors import UserError
from ....io.files import atomic_path, limits, over_limit
from ..baselines import HEURISTICS, Heuristic, LoadBalance, Packing, make_heuristic
from ..options import DEFERRING
from ..placements import standalone_profile, standalone_speeds
from ..simulate import Ask, Env
from ..view import HarmonyView
from .features import advice_of, context_width, decision_state, first_role, host_width, job_width, reward_inputs, server_width

try:
    import torch
    from torch import nn
except ImportError:  # pragma: no cover - exercised where the extra is absent
    # None marks the absent rl extra (require_torch tests it); a module-or-None has no static type
    torch = None  # type: ignore[assignment]
    nn = None  # type: ignore[assignment]

from ....io.catalog import shipped_catalog_dir  # the checkout's models/, else the installed package data

DEFAULT_MODEL = shipped_catalog_dir() / "harmony-drl.pt"
HIDDEN = 64


def require_torch(field: str = "--method") -> None:
    if torch is None:
        raise UserError("the drl method and `mlsched train` need PyTorch: pip install -e '.[rl]' (torch==2.13.0, the CPU build)",
                        field=field)


if torch is not None:
    class _Trunk(nn.Module):
        def __init__(self, fs: int, fc: int):
            super().__init__()
            self.embed = nn.Sequential(nn.Linear(fs + fc, HIDDEN), nn.ReLU())
            self.mix = nn.Sequential(nn.Linear(2 * HIDDEN, HIDDEN), nn.ReLU())

        def forward(self, servers, context):
            # servers (B, M, Fs), context (B, Fc) -> per-server features (B, M, H)
            ctx = context[:, None, :].expand(-1, servers.shape[1], -1)
            h = self.embed(torch.cat([servers, ctx], dim=-1))
            pooled = h.mean(dim=1, keepdim=True).expand_as(h)
            return self.mix(torch.cat([h, pooled], dim=-1))

    class PolicyNet(nn.Module):
        def __init__(self, L: int):
            super().__init__()
            self.actor = _Trunk(server_width(L), context_width(L))
            self.logit = nn.Linear(HIDDEN, 1)
            self.defer = nn.Sequential(nn.Linear(2 * HIDDEN + context_width(L), HIDDEN), nn.ReLU(), nn.Linear(HIDDEN, 1))
            self.critic = _Trunk(server_width(L), context_width(L))
            self.value = nn.Sequential(nn.Linear(2 * HIDDEN, HIDDEN), nn.ReLU(), nn.Linear(HIDDEN, 1))

        def logits(self, servers, context, mask):
            """(B, M + 1) logits: one per server, then "not now"; ``mask`` (B, M + 1)."""
            h = self.actor(servers, context)
            z = self.logit(h).squeeze(-1)
            d = self.defer(torch.cat([h.mean(dim=1), h.max(dim=1).values, context], dim=-1))
            return torch.cat([z, d], dim=1).masked_fill(~mask, -1e9)

        def values(self, servers, context):
            h = self.critic(servers, context)
            return self.value(torch.cat([h.mean(dim=1), h.max(dim=1).values], dim=-1)).squeeze(-1)

    class RewardNet(nn.Module):
        def __init__(self, L: int):
            super().__init__()
            self.host = nn.Sequential(nn.Linear(host_width(L), HIDDEN), nn.ReLU(), nn.Linear(HIDDEN, HIDDEN), nn.ReLU())
            self.head = nn.Sequential(nn.Linear(2 * HIDDEN + job_width(L), HIDDEN), nn.ReLU(), nn.Linear(HIDDEN, 1))

        def forward(self, hosts, mask, jobs):
            h = self.host(hosts)
            m = mask[..., None]
            hmax = h.masked_fill(~m, -1e9).max(dim=1).values
            hmean = (h * m).sum(dim=1) / m.sum(dim=1).clamp(min=1)
            return torch.sigmoid(self.head(torch.cat([hmax, hmean, jobs], dim=-1)).squeeze(-1)) * 1.5


@dataclass
class Step:
    servers: np.ndarray
    context: np.ndarray
    mask: np.ndarray
    action: int
    interval: int
    job: int = -1


def state_logits(net: Any, servers: np.ndarray, context: np.ndarray, mask: np.ndarray) -> Any:
    """The (M + 1,) logits of one decision state, without gradient (a tensor)."""
    with torch.no_grad():
        return net.logits(torch.as_tensor(servers[None], dtype=torch.float32), torch.as_tensor(context[None], dtype=torch.float32),
                          torch.as_tensor(mask[None]))[0]


@dataclass
class PolicyChooser:
    """A policy as a simulator chooser; ``log`` collects the steps taken (for training; with
    ``record`` false it stays empty: a state per task is 0.1 MB on a 549-server cluster).

    At a job's turn the simulator asks whether to hold it back; the policy answers with one action
    over the servers and "not now" (:func:`~.features.decision_state`): a server places the job now
    and takes its first task."""

    net: Any
    view: HarmonyView
    greedy: bool = True
    omega: float = 0.0
    seed: int = 0
    log: list[Step] = field(default_factory=list)
    record: bool = True
    # the heuristic whose dry run gives the interference features (the policy's teacher's placement)
    placer: str = "standalone"
    # the heuristic whose answer the policy sees as advice (its teacher; None: a policy trained without)
    advisor: str | None = None

    def __post_init__(self) -> None:
        self.rng = np.random.default_rng(self.seed)
        self.heuristic: Heuristic | None = None
        self.alone, self.length = standalone_profile(self.view)
        self.dry_run = make_heuristic(self.placer)
        self.adviser = None if self.advisor is None else make_heuristic(self.advisor)
        self.first: int | None = None   # the first task's server, chosen at the defer decision
        self.turn: int | None = None    # the job whose exploration draw is made (at its defer ask, else at its start)

    def _draw(self, j: int) -> None:
        self.turn = j
        self.heuristic = None
        if self.omega > 0 and self.rng.random() < self.omega:
            self.heuristic = Packing() if self.rng.random() < 0.5 else LoadBalance()

    def start_job(self, env: Env, j: int) -> None:
        if self.turn != j:
            self._draw(j)

    def defer(self, env: Env, j: int) -> bool:
        self.first = None
        self._draw(j)
        if self.heuristic is not None:   # an exploring job follows its heuristic, which places it now
            return False
        if not env.feasible(j, first_role(env.view, j)).any():   # no task of it fits now: it waits whatever the answer
            return False
        servers, context, mask = self.state(Ask("defer", env, j))
        action = self._act(env, j, servers, context, mask)
        if action == len(mask) - 1:
            self.turn = None   # its next turn draws again
            return True
        self.first = action
        return False

    def choose(self, env: Env, j: int, role: str, mask: np.ndarray) -> int:
        if self.first is not None:
            first, self.first = self.first, None
            if self.heuristic is None and mask[first]:
                return first
        if self.heuristic is not None:
            action = self.heuristic.choose(env, j, role, mask)
            if self.record:
                servers, context, full = self.state(Ask("task", env, j, role, mask))
                self.log.append(Step(servers, context, full, action, env.interval, j))
            return action
        servers, context, full = self.state(Ask("task", env, j, role, mask))
        return self._act(env, j, servers, context, full)

    def state(self, ask: Ask) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The policy's input for ``ask`` (:func:`~.features.decision_state`, with the advice)."""
        advice = None if self.adviser is None else advice_of(self.adviser, ask)
        return decision_state(ask, self.length, self.alone, self.dry_run, advice)

    def _act(self, env: Env, j: int, servers: np.ndarray, context: np.ndarray, mask: np.ndarray) -> int:
        z = state_logits(self.net, servers, context, mask).numpy().astype(float)
        if self.greedy:
            action = int(np.argmax(z))
        else:
            prob = np.exp(z - z.max()) * mask
            action = int(self.rng.choice(len(prob), p=prob / prob.sum()))
        if self.record:
            self.log.append(Step(servers, context, mask.copy(), action, env.interval, j))
        return action

    def end_job(self, env: Env, j: int, placed: bool) -> None:
        self.heuristic = None
        self.first = None
        self.turn = None


class RewardModelSpeeds:
    """Speeds predicted by a :class:`RewardNet` (normalised speed x standalone speed): the
    simulator's speed oracle when training against the learned reward (spec 2.7)."""

    def __init__(self, net: Any, view: HarmonyView):
        self.net = net
        self.view = view
        self.alone = standalone_speeds(view)

    def __call__(self, idx: np.ndarray, w: np.ndarray, p: np.ndarray) -> np.ndarray:
        live = np.zeros(self.view.J, bool)
        live[idx] = True
        hosts, mask, jobs = reward_inputs(self.view, idx, w * live[:, None], p * live[:, None])
        with torch.no_grad():
            out = self.net(torch.as_tensor(hosts, dtype=torch.float32), torch.as_tensor(mask),
                           torch.as_tensor(jobs, dtype=torch.float32)).numpy().astype(float)
        return np.maximum(out, 1e-3) * self.alone[idx]


@dataclass
class LoadedPolicy:
    net: Any
    types: tuple[str, ...]
    path: str
    meta: dict

    def chooser(self, view: HarmonyView, greedy: bool = True, seed: int = 0) -> PolicyChooser:
        return PolicyChooser(self.net, view, greedy=greedy, seed=seed, record=False, placer=self.placer, advisor=self.advisor)

    @property
    def advisor(self) -> str | None:
        advisor = self.meta.get("advisor")
        return None if advisor is None else str(advisor)

    @property
    def placer(self) -> str:
        return str(self.meta.get("placer", "standalone"))


def save_policy(path: str | Path, net: Any, types: tuple[str, ...], meta: dict) -> None:
    """Write the policy atomically (:func:`~mlsched_opt.io.files.atomic_path`: a temporary file in the
    target folder, then ``os.replace``, so an interrupted save never leaves a truncated policy where a
    good one was, and a signal handler can remove the temporary file).  The file holds only tensors,
    strings, numbers, lists and dicts, so :func:`load_policy` reads it with ``torch.load(weights_only=True)``."""
    import json

    # JSON round trip: the metadata must be plain data (no numpy scalars, no objects) to load safely
    doc = {"format": FORMAT, "types": list(types), "state_dict": net.state_dict(), "meta": json.loads(json.dumps(meta, default=_plain))}
    with atomic_path(path) as tmp:
        torch.save(doc, tmp)


def _plain(value: Any) -> Any:
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, np.ndarray):
        return value.tolist()
    raise TypeError(f"policy metadata must be plain data, got {type(value).__name__}")


def check_output(output: str | Path) -> Path:
    """Refuse an output target before hours of training are spent: its folder must exist and be
    writable, it must not be a folder, and an existing file there must be a harmony policy (a
    catalog entry, an instance or anything else is never overwritten)."""
    import os

    path = Path(output)
    where = str(path)
    if path.is_dir():
        raise UserError("is a folder; give a file name for the policy", file=where, field="--output")
    parent = path.parent if str(path.parent) else Path(".")
    if not parent.is_dir():
        raise UserError(f"folder {str(parent)!r} does not exist", file=where, field="--output")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise UserError(f"folder {str(parent)!r} is not writable", file=where, field="--output")
    if path.exists():
        if not path.is_file():
            raise UserError("exists and is not a regular file", file=where, field="--output")
        try:
            _read_policy_document(path, earlier_formats=True)
        except UserError:
            raise UserError("exists and is not a harmony policy file; refusing to overwrite it", file=where,
                            field="--output") from None
    return path


#: /3: the deferral block with the shortest-first ratio, the teacher's dry run (``meta["placer"]``) and
#: its advice (``meta["advisor"]``)
FORMAT = "mlsched-harmony-policy/3"
#: earlier formats, refused by name: what they lack
EARLIER_FORMATS = {
    "mlsched-harmony-policy/1": "a policy of the first format, without the \"not now\" action",
    "mlsched-harmony-policy/2": "a policy of the second format, whose deferral block lacks the shortest-first ratio",
}


# --- sizes before loading ---------------------------------------------------------------------
# ``weights_only`` stops code, not memory: a 3 MiB file whose deflated entry or whose storage declares
# gigabytes made torch.load allocate them (3.5 GB peak before its error).  So a policy is refused by what it
# declares, read without torch and without unpickling [our design, issue 31].

#: bytes per element of torch's storage classes as a pickle names them (``torch FloatStorage``); an unknown
#: class counts as the widest element (complex128), so the estimate stays an upper bound
_ELEMENT_BYTES = {"DoubleStorage": 8, "FloatStorage": 4, "HalfStorage": 2, "BFloat16Storage": 2, "LongStorage": 8,
                  "IntStorage": 4, "ShortStorage": 2, "CharStorage": 1, "ByteStorage": 1, "BoolStorage": 1,
                  "ComplexFloatStorage": 8, "ComplexDoubleStorage": 16, "UntypedStorage": 1}
_WIDEST = 16
#: the most ``data.pkl`` bytes read: it holds the tensors' index and the metadata (3.6 KB in the shipped
#: policy), and unpickling it, ours or torch's, is Python code at about 3 s per 10 MiB
MAX_PICKLE_BYTES = 4 * 2**20
_MARK = object()
_UNKNOWN = object()


class _Global(str):
    """A ``module name`` reference read from a pickle (never imported)."""


def _policy_error(message: str, p: Path) -> UserError:
    return UserError(message, file=str(p), field="--model")


def _over_model_mb(what: str, size: int, p: Path) -> UserError:
    return over_limit("model_mb", -(-size // 2**20), f"{what} in MiB", str(p), "--model")


def declared_bytes(p: Path) -> int:
    """The bytes ``torch.load`` of ``p`` would allocate for tensors, read from what the file declares, or a
    :class:`UserError` naming ``p`` when the file, an entry or the tensors exceed ``model_mb``.

    Checked without torch and without unpickling: the file's size; that it is a zip archive whose
    entries are all stored (``torch.save`` never compresses, and a deflated entry is how a small file
    inflates to gigabytes); every entry's declared size; and, from ``data.pkl``'s opcodes
    (:func:`pickletools.genops`, nothing executed), each storage's persistent id ``('storage', type,
    key, location, numel)``, whose bytes are ``numel`` x the type's element size.
    """
    cap = limits()["model_mb"] * 2**20
    try:
        size = p.stat().st_size
        if size > cap:
            raise _over_model_mb("the file size", size, p)
        with zipfile.ZipFile(p) as archive:
            pickles = [_entry_bytes(archive, info, cap, p) for info in archive.infolist()]
    except (zipfile.BadZipFile, zipfile.LargeZipFile, EOFError, ValueError, RuntimeError, NotImplementedError):
        # RuntimeError: an encrypted entry; NotImplementedError: an unknown compression
        raise _policy_error("not a policy file: not the zip archive torch.save writes", p) from None
    except OSError as exc:
        raise _policy_error(f"cannot read file ({exc.strerror or exc})", p) from None
    found = [raw for raw in pickles if raw is not None]
    if not found:
        raise _policy_error("not a policy file: the archive has no data.pkl", p)
    storages: dict[tuple[int, Any], int] = {}
    for i, raw in enumerate(found):
        for key, nbytes in _storage_sizes(raw, p).items():
            storages[i, key] = max(nbytes, storages.get((i, key), 0))
    total = sum(storages.values())
    if total > cap:
        raise _over_model_mb("the size its tensors declare", total, p)
    return total


def _entry_bytes(archive: zipfile.ZipFile, info: zipfile.ZipInfo, cap: int, p: Path) -> bytes | None:
    """Check one entry's compression and declared size; the content of a ``data.pkl`` entry, else None."""
    if info.compress_type != zipfile.ZIP_STORED:
        raise _policy_error(f"the archive entry {info.filename!r} is compressed; torch.save stores its entries uncompressed, "
                            "and a compressed entry may inflate without bound", p)
    if info.file_size > cap:
        raise _over_model_mb(f"the archive entry {info.filename!r}", info.file_size, p)
    if info.filename.rsplit("/", 1)[-1] != "data.pkl":
        return None
    if info.file_size > MAX_PICKLE_BYTES:
        raise _policy_error(f"the archive entry {info.filename!r} is {info.file_size:,} bytes; a policy's index and "
                            f"metadata take kilobytes (at most {MAX_PICKLE_BYTES >> 20} MiB is read)", p)
    return archive.read(info)


def _storage_sizes(raw: bytes, p: Path) -> dict[Any, int]:
    """key -> declared bytes of every storage a pickle refers to, by a stack walk over its opcodes that
    keeps literals, globals and tuples and nothing else (so nothing is built or run)."""
    stack: list[Any] = []
    memo: dict[Any, Any] = {}
    sizes: dict[Any, int] = {}
    try:
        for op, arg, _ in pickletools.genops(raw):
            if op.name == "BINPERSID":
                key, nbytes = _storage_id(stack.pop(), p)
                sizes[key] = max(nbytes, sizes.get(key, 0))
                stack.append(_UNKNOWN)
            elif op.name == "PERSID":
                raise _policy_error("not a policy file: a persistent id that torch.save does not write", p)
            else:
                _step(op, arg, stack, memo)
    except (ValueError, IndexError, KeyError):  # a truncated or malformed pickle, an unknown opcode, a stack underflow
        raise _policy_error("not a policy file: data.pkl is not a well-formed pickle", p) from None
    return sizes


def _storage_id(pid: Any, p: Path) -> tuple[Any, int]:
    ok = isinstance(pid, tuple) and len(pid) == 5 and pid[0] == "storage" and isinstance(pid[1], _Global)
    numel = pid[4] if ok else None
    if not ok or not isinstance(numel, int) or isinstance(numel, bool) or numel < 0 or not isinstance(pid[2], str):
        raise _policy_error("not a policy file: a tensor storage whose declared size cannot be read", p)
    kind = pid[1].rpartition(" ")[2]
    return pid[2], numel * _ELEMENT_BYTES.get(kind, _WIDEST)


_LITERALS = {"BINUNICODE", "SHORT_BINUNICODE", "BINUNICODE8", "UNICODE", "STRING", "BINSTRING", "SHORT_BINSTRING",
             "INT", "BININT", "BININT1", "BININT2", "LONG", "LONG1", "LONG4", "NONE", "NEWTRUE", "NEWFALSE"}
_TUPLES = {"EMPTY_TUPLE": 0, "TUPLE1": 1, "TUPLE2": 2, "TUPLE3": 3}


def _step(op: pickletools.OpcodeInfo, arg: Any, stack: list[Any], memo: dict[Any, Any]) -> None:
    """One opcode's effect on the stack; an opcode that builds anything but a tuple leaves an unknown value
    (its stack effect comes from :mod:`pickletools`' table)."""
    name = op.name
    if name in _LITERALS:
        stack.append(arg)
    elif name == "MARK":
        stack.append(_MARK)
    elif name == "GLOBAL":
        stack.append(_Global(arg))
    elif name == "STACK_GLOBAL":
        attr, module = stack.pop(), stack.pop()
        stack.append(_Global(f"{module} {attr}") if isinstance(module, str) and isinstance(attr, str) else _UNKNOWN)
    elif name in _TUPLES:
        n = _TUPLES[name]
        if n > len(stack):
            raise IndexError("stack underflow")
        items = tuple(stack[len(stack) - n:]) if n else ()
        del stack[len(stack) - n:]
        stack.append(items)
    elif name == "TUPLE":
        stack.append(tuple(_pop_mark(stack)))
    elif name in ("PUT", "BINPUT", "LONG_BINPUT"):
        memo[arg] = stack[-1]
    elif name == "MEMOIZE":
        memo[len(memo)] = stack[-1]
    elif name in ("GET", "BINGET", "LONG_BINGET"):
        stack.append(memo[arg])
    else:
        before = op.stack_before
        if pickletools.markobject in before:
            _pop_mark(stack)
            before = before[:before.index(pickletools.markobject)]
        for _ in before:
            stack.pop()
        stack.extend(_UNKNOWN for _ in op.stack_after)


def _pop_mark(stack: list[Any]) -> list[Any]:
    """The items above the topmost mark, removed with it (an IndexError when there is no mark)."""
    for at in range(len(stack) - 1, -1, -1):
        if stack[at] is _MARK:
            items = stack[at + 1:]
            del stack[at:]
            return items
    raise IndexError("no mark")


@contextlib.contextmanager
def _address_space_cap(extra: int) -> Iterator[None]:
    """While the block runs, the process may map at most ``extra`` bytes more than it has now (RLIMIT_AS,
    lowered and then restored; never raised).  A second guard behind :func:`declared_bytes` for an
    allocation we did not foresee: measured, a torch.load under it fails with torch's own "can't
    allocate memory" instead of taking the memory.  The limit is the process's: another thread's
    allocations meanwhile count too (:data:`LOAD_HEADROOM` leaves them room; a bench worker runs one
    task at a time).  Where there is no ``resource`` module or no /proc (not Linux), it does nothing."""
    try:
        import resource

        with open("/proc/self/statm") as fh:
            mapped = int(fh.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
    except (ImportError, OSError, ValueError):
        yield
        return
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    cap = mapped + extra
    for bound in (soft, hard):
        if bound != resource.RLIM_INFINITY:
            cap = min(cap, bound)
    resource.setrlimit(resource.RLIMIT_AS, (cap, hard))
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_AS, (soft, hard))


#: what a load may map beyond the tensors it declares (twice, for a copy): the pickle's plain data,
#: torch's buffers, and any other thread's allocations meanwhile [our design; the shipped policy needs 1 MiB]
LOAD_HEADROOM = 512 * 2**20


def _read_policy_document(p: Path, earlier_formats: bool = False) -> dict:
    """The policy document, read with ``weights_only=True``: unpickling may build tensors and plain
    containers only, so a crafted file cannot run code (a policy is a file people download); and only
    after :func:`declared_bytes` has found what it declares within ``model_mb``, with the address
    space capped meanwhile (:func:`_address_space_cap`).
    ``earlier_formats``: accept a policy of an earlier format too (``train -o`` may replace one)."""
    tensors = declared_bytes(p)
    try:
        with _address_space_cap(2 * tensors + LOAD_HEADROOM):
            doc = torch.load(p, map_location="cpu", weights_only=True)
    except Exception as exc:  # noqa: BLE001 -- a corrupt, foreign or code-carrying file is the user's, not a bug
        raise UserError(f"not a safe policy file: only tensors and plain data are loaded ({type(exc).__name__})",
                        file=str(p), field="--model") from None
    fmt = doc.get("format") if isinstance(doc, dict) else None
    fmt = fmt if isinstance(fmt, str) else None   # a crafted file may hold any value here
    if fmt in EARLIER_FORMATS and not earlier_formats:
        raise UserError(f"{EARLIER_FORMATS[fmt]}; train it again with mlsched train --problem harmony", file=str(p),
                        field="--model")
    if fmt != FORMAT and fmt not in EARLIER_FORMATS:
        raise UserError("not an mlsched harmony policy file", file=str(p), field="--model")
    types, state = doc.get("types"), doc.get("state_dict")
    if not isinstance(types, list) or not types or not all(isinstance(t, str) for t in types):
        raise UserError("the policy's types are not a list of names", file=str(p), field="--model")
    if not isinstance(state, dict) or not all(isinstance(k, str) and isinstance(v, torch.Tensor) for k, v in state.items()):
        raise UserError("the policy's weights are not a mapping of tensors", file=str(p), field="--model")
    if not isinstance(doc.get("meta", {}), dict):
        raise UserError("the policy's metadata is not a mapping", file=str(p), field="--model")
    placer = doc.get("meta", {}).get("placer", "standalone")
    if not isinstance(placer, str) or placer not in HEURISTICS:
        raise UserError(f"the policy's placer is not one of {', '.join(HEURISTICS)}", file=str(p), field="--model")
    advisor = doc.get("meta", {}).get("advisor")
    if advisor is not None and (not isinstance(advisor, str) or advisor not in (*HEURISTICS, *DEFERRING)):
        raise UserError(f"the policy's advisor is not one of {', '.join((*HEURISTICS, *DEFERRING))}", file=str(p),
                        field="--model")
    return doc


def load_policy(path: str | Path | None, view: HarmonyView) -> LoadedPolicy:
    """Load a trained policy (tensors and plain data only) and check it was trained on ``view``'s job types."""
    require_torch()
    p = Path(path) if path else DEFAULT_MODEL
    if not p.is_file():
        hint = "" if path else " (train one: mlsched train --problem harmony -o models/harmony-drl.pt)"
        raise UserError(f"no trained policy here{hint}", file=str(p), field="--model")
    doc = _read_policy_document(p)
    types = tuple(doc["types"])
    if types != view.world.types:
        raise UserError(f"the policy was trained on types {', '.join(types)}; this world has {', '.join(view.world.types)} "
                        "(train one with the same --set world)", file=str(p), field="--model")
    net = PolicyNet(len(types))
    try:
        net.load_state_dict(doc["state_dict"])
    except RuntimeError as exc:  # missing keys or wrong shapes: not this network
        raise UserError(f"the policy's weights do not fit the network ({str(exc).splitlines()[0]})", file=str(p),
                        field="--model") from None
    net.eval()
    return LoadedPolicy(net, types, str(p), doc.get("meta", {}))
