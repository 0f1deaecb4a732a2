"""The workload catalog's Gavel figures, written by code from Gavel's throughput file.

Gavel (Narayanan et al., OSDI 2020) measured the training throughput (steps/s) of 26 job types
(7 model families, most at several batch sizes) on K80, P100 and V100 GPUs at scale 1, 2, 4 and
8 (``../shared/data/gavel/simulation_throughputs.json``, :data:`GAVEL_FILE`).  Its top-level
keys are GPU types (``v100``) and the same with ``_unconsolidated`` (the job's GPUs spread over
servers instead of packed on one); below them each job type is keyed by a Python tuple string
``"('ResNet-50 (batch size 64)', 4)"`` (model, scale), parsed with :func:`ast.literal_eval`,
and its ``"null"`` entry is the throughput of the job alone (the other entries are co-location
pairs, not read here).

:func:`import_catalog` writes one catalog entry per job type:

* a family's entry of :data:`FAMILIES` (``resnet50``) takes its batch size :data:`BASE_BATCH`
  (the one its hand-copied rows used); every other batch size is a new entry
  ``<entry>-bs<batch>`` (``resnet50-bs128``);
* an entry that exists (in ``catalog_dir``) keeps every section and every throughput row that
  does not come from Gavel as it is; its Gavel rows are replaced by the complete set;
* a new ``-bs`` entry copies its family entry's batch-independent fields (:data:`COPIED`:
  ``task``, ``dataset``, ``size``, and ``layers`` when it carries no per-layer times) and says
  its batch size in the title.  It does *not* copy ``interference`` (a batch-specific design
  assumption, and the harmony ``default`` world's type set is the entries that carry one) nor
  ``demand`` (the catalog's ``demand`` is read by the instance generators only, as the pool they
  draw workloads from; instances give their own demand.  Without it the generators keep drawing
  from exactly the workloads they drew before, so every generated instance stays the same);
  on a rerun a ``-bs`` entry's copied fields follow the family entry again, its other sections
  are kept;
* rows: every (GPU, scale) measured, ``placement = "consolidated"``, and ``"spread"`` from the
  ``*_unconsolidated`` keys.  Three readings of the file, checked by the tests: a 1-GPU
  "unconsolidated" figure equals the consolidated one everywhere (one GPU cannot be spread), so
  it is written only if it differs; a figure of 0 (K80 ResNet-50 at batch 128 on 2, 4, 8 GPUs)
  means "not run" and writes no row; and figures are rounded to :data:`DECIMALS` = 6 decimals,
  the precision of the rows copied by hand before (Gavel's smallest non-zero figure is 0.35
  steps/s, so at least 6 significant digits are kept, far below the measurement noise, and
  every figure the catalog had keeps its value, so nothing computed from them moves).

Every row's ``source`` names the file and the exact key.  The output is deterministic, written
with the project's TOML writer, and nothing is written before every entry has been computed
and validated against ``workload.schema.json``.
"""

from __future__ import annotations

import ast
import math
import re
from pathlib import Path
from typing import Any

from ..errors import UserError
from ..io.catalog import default_catalog_dir
from ..io.files import check_writable, dump_toml, read_document, write_atomic
from ..io.schema import SchemaViolation, load_schema, validate

GAVEL_FILE = "gavel/simulation_throughputs.json"
#: how every row's ``source`` begins; the key follows as ``v100["('A3C', 1)"]``
CITATION = ("Gavel (Narayanan et al., OSDI 2020) measured throughput, stanford-futuredata/gavel@c4fa400 "
            "scheduler/simulation_throughputs.json")
HEADER = '# Workload catalog entry "{name}". Schema: mlsched_opt/io/workload.schema.json; every figure group names its source.'
#: decimals of a written steps/s figure (see the module docstring)
DECIMALS = 6

#: Gavel model family -> catalog entry
FAMILIES = {
    "A3C": "a3c",
    "CycleGAN": "cyclegan",
    "LM": "lm",
    "Recommendation": "recommendation",
    "ResNet-18": "resnet18",
    "ResNet-50": "resnet50",
    "Transformer": "transformer",
}
#: catalog entry -> the batch size it stands for (its hand-copied rows'); A3C and CycleGAN have
#: no batch size in Gavel's names, and 1 means their throughput is in steps
BASE_BATCH = {"a3c": 1, "cyclegan": 1, "lm": 20, "recommendation": 2048, "resnet18": 32, "resnet50": 64, "transformer": 64}
#: the family entry's fields a ``-bs`` entry copies (``title`` is copied and given the batch size)
COPIED = ("task", "dataset", "size", "layers")
#: per-layer fields that depend on the batch size: ``layers`` is copied only without them
BATCH_DEPENDENT_LAYERS = ("forward_ms", "backward_ms")
GPU_ORDER = {"K80": 0, "P100": 1, "V100": 2}

_FAMILY = re.compile(r"^(?P<family>.+?) \(batch size (?P<batch>[1-9][0-9]*)\)$")
_BATCH_VARIANT = re.compile(r"-bs[1-9][0-9]*$")


def is_batch_variant(name: str) -> bool:
    """Whether ``name`` is a ``-bs<batch>`` entry (another batch size of a family entry)."""
    return bool(_BATCH_VARIANT.search(name))


def is_gavel_row(row: dict[str, Any]) -> bool:
    """Whether a catalog throughput row was taken from Gavel's file (and is rewritten here)."""
    return "simulation_throughputs.json" in str(row.get("source", ""))


def entry_name(job_type: str, file: str, field: str) -> tuple[str, int]:
    """Catalog entry and batch size of a Gavel job type (``'ResNet-50 (batch size 128)'``)."""
    match = _FAMILY.match(job_type)
    family, batch = (match.group("family"), int(match.group("batch"))) if match else (job_type, 1)
    if family not in FAMILIES:
        raise UserError(f"unknown Gavel job type {job_type!r}: no catalog entry for model {family!r} "
                        f"(known: {', '.join(sorted(FAMILIES))})", file=file, field=field)
    base = FAMILIES[family]
    return (base if batch == BASE_BATCH[base] else f"{base}-bs{batch}"), batch


def _field(worker: str, key: str) -> str:
    return f'{worker}["{key}"]'


def read_gavel(data_dir: Path) -> tuple[str, dict[str, list[dict[str, Any]]]]:
    """The Gavel file's path and its rows by catalog entry: ``{entry: [row, ...]}``, rows sorted.

    Raises :class:`UserError` naming the file and the JSON key for a missing or unreadable file,
    a key that is not a ``(str, int)`` tuple, an unknown model, or a figure that is not a
    non-negative number.
    """
    path = Path(data_dir) / GAVEL_FILE
    name = str(path)
    doc = read_document(path)  # refuses a missing file, bad JSON, NaN/Infinity, duplicate keys
    cells: dict[tuple[str, str, int, str], tuple[float, str]] = {}  # (entry, gpu, scale, placement) -> (figure, JSON path)
    batches: dict[str, int] = {}
    for worker in sorted(doc):
        table = doc[worker]
        spread = worker.endswith("_unconsolidated")
        gpu = worker.removesuffix("_unconsolidated").upper()
        if not isinstance(table, dict) or not gpu:
            raise UserError("expected an object of job types", file=name, field=worker)
        for key in sorted(table):
            field = _field(worker, key)
            try:
                parsed = ast.literal_eval(key)
            except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
                raise UserError("key does not parse as a Python tuple (model, scale)", file=name, field=field) from None
            if not (isinstance(parsed, tuple) and len(parsed) == 2 and isinstance(parsed[0], str)
                    and isinstance(parsed[1], int) and not isinstance(parsed[1], bool) and 1 <= parsed[1] <= 2**20):
                raise UserError(f"key must be a tuple (model name, GPU count >= 1), got {parsed!r}", file=name, field=field)
            job_type, scale = parsed
            entry = table[key]
            figure = entry.get("null") if isinstance(entry, dict) else None
            if not isinstance(entry, dict) or "null" not in entry:
                raise UserError("expected an object with the isolated throughput under \"null\"", file=name, field=field)
            if isinstance(figure, bool) or not isinstance(figure, (int, float)) or not math.isfinite(figure) or figure < 0:
                raise UserError(f"throughput must be a non-negative number (steps/s), got {figure!r}", file=name, field=f"{field}.null")
            catalog_name, batch = entry_name(job_type, name, field)
            batches[catalog_name] = batch
            cell = (catalog_name, gpu, scale, "spread" if spread else "consolidated")
            if cell in cells:
                raise UserError(f"the same job type, scale and GPU as {cells[cell][1]}", file=name, field=field)
            cells[cell] = (float(figure), field)
    if not batches:
        raise UserError("no Gavel job types (expected objects like \"v100\": {\"('ResNet-50 (batch size 64)', 1)\": ...})",
                        file=name)
    rows: dict[str, list[dict[str, Any]]] = {n: [] for n in batches}
    for (catalog_name, gpu, scale, placement), (figure, field) in cells.items():
        if figure == 0:
            continue  # Gavel's 0: the job type was not run there
        if placement == "spread" and scale == 1 and cells.get((catalog_name, gpu, 1, "consolidated"), (None,))[0] == figure:
            continue  # one GPU cannot be spread: the figure is the consolidated one
        rows[catalog_name].append({
            "gpu_model": gpu, "gpus": scale, "placement": placement, "batch_size": batches[catalog_name],
            "steps_per_s": _rounded(figure), "source": f"{CITATION}: {field}",
        })
    for catalog_name in rows:
        rows[catalog_name].sort(key=lambda r: (r["gpus"], GPU_ORDER.get(r["gpu_model"], len(GPU_ORDER)), r["gpu_model"],
                                               r["placement"] == "spread"))
    return name, dict(sorted(rows.items()))


def _rounded(figure: float) -> float:
    value = round(figure, DECIMALS)
    return value if value > 0 else float(f"{figure:.{DECIMALS}g}")  # a tiny figure keeps its digits


def _existing(catalog_dir: Path, name: str) -> dict[str, Any] | None:
    path = catalog_dir / f"{name}.toml"
    return read_document(path) if path.is_file() else None


def _with_rows(doc: dict[str, Any], rows: list[dict[str, Any]]) -> dict[str, Any]:
    """``doc`` with its Gavel rows replaced by ``rows`` (first), its other rows kept (after)."""
    kept = [row for row in doc.get("throughput", []) if not is_gavel_row(row)]
    out: dict[str, Any] = {}
    for key, value in doc.items():
        out[key] = rows + kept if key == "throughput" else value
    if "throughput" not in out:  # place it where the catalog files have it: after size, else after dataset
        order = list(out)
        anchor = next((k for k in ("size", "dataset", "task", "title") if k in out), order[-1])
        out = {}
        for key in order:
            out[key] = doc[key]
            if key == anchor:
                out["throughput"] = rows
    return out


def _variant(name: str, batch: int, base: dict[str, Any], existing: dict[str, Any] | None,
             rows: list[dict[str, Any]]) -> dict[str, Any]:
    """A ``-bs`` entry: the family entry's batch-independent fields (:data:`COPIED`, in the family
    entry's order), the title with the batch size, its own Gavel rows; when the file exists
    already, its non-Gavel rows and the sections the family entry does not supply are kept."""
    own = existing or {}
    kept = [row for row in own.get("throughput", []) if not is_gavel_row(row)]
    doc: dict[str, Any] = {"name": name, "title": f"{base['title']}, batch size {batch}"}
    for key, value in base.items():
        if key == "throughput":
            doc["throughput"] = rows + kept
        elif key in COPIED and not (key == "layers" and any(f in value for f in BATCH_DEPENDENT_LAYERS)):
            doc[key] = value
    doc.setdefault("throughput", rows + kept)
    for key, value in own.items():
        doc.setdefault(key, value)
    return doc


def gavel_entries(data_dir: Path, catalog_dir: Path | None = None) -> dict[str, dict[str, Any]]:
    """Catalog name -> entry document for every Gavel job type (see the module docstring)."""
    catalog_dir = Path(catalog_dir) if catalog_dir is not None else default_catalog_dir()
    file, rows = read_gavel(data_dir)
    docs: dict[str, dict[str, Any]] = {}
    bases: dict[str, dict[str, Any]] = {}
    for base_name in sorted(set(FAMILIES.values())):
        existing = _existing(catalog_dir, base_name)
        if existing is None:
            raise UserError(f"the catalog has no entry {base_name!r} to take the Gavel rows and to derive its batch sizes from",
                            file=str(catalog_dir / f"{base_name}.toml"))
        for i, row in enumerate(existing.get("throughput", [])):
            if is_gavel_row(row) and row.get("batch_size") != BASE_BATCH[base_name]:
                raise UserError(f"a Gavel row of batch size {row.get('batch_size')}, but {base_name} stands for batch size "
                                f"{BASE_BATCH[base_name]}", file=str(catalog_dir / f"{base_name}.toml"), field=f"throughput[{i}]")
        bases[base_name] = existing
    for name, entry_rows in rows.items():
        if name in bases:
            docs[name] = _with_rows(bases[name], entry_rows)
        else:
            base_name = _BATCH_VARIANT.sub("", name)
            batch = entry_rows[0]["batch_size"] if entry_rows else int(name.rsplit("-bs", 1)[1])
            docs[name] = _variant(name, batch, bases[base_name], _existing(catalog_dir, name), entry_rows)
    schema = load_schema("workload")
    for name, doc in docs.items():
        try:
            validate(doc, schema)
        except SchemaViolation as exc:
            raise UserError(f"the computed entry {name!r} is not a valid catalog entry: {exc.reason}", file=file,
                            field=exc.path or None) from None
    return docs


def render(name: str, doc: dict[str, Any]) -> str:
    """The text of a catalog file: the one-line header, then the TOML."""
    return HEADER.format(name=name) + "\n" + dump_toml(doc)


def import_catalog(data_dir: Path, out_dir: Path, catalog_dir: Path | None = None) -> list[str]:
    """Write one catalog file per Gavel job type into ``out_dir``; lines saying what was written.

    ``catalog_dir`` (default: the repository's ``models/``) holds the entries whose non-Gavel
    rows and sections are kept.  Every entry is computed and validated before the first file is
    written; a file whose text would not change is left alone.
    """
    docs = gavel_entries(Path(data_dir), catalog_dir)
    out = Path(out_dir)
    texts = {out / f"{name}.toml": (name, render(name, doc)) for name, doc in docs.items()}
    if out.exists() and not out.is_dir():
        raise UserError("is not a folder", file=str(out))
    out.mkdir(parents=True, exist_ok=True)
    for path in texts:
        check_writable(path)
    lines = []
    for path, (name, text) in texts.items():
        old = path.read_text(encoding="utf-8") if path.is_file() else None
        gavel = sum(is_gavel_row(r) for r in docs[name].get("throughput", []))
        other = len(docs[name].get("throughput", [])) - gavel
        what = f"{gavel} Gavel rows" + (f", {other} other kept" if other else "")
        if old == text:
            lines.append(f"unchanged {path} ({what})")
            continue
        write_atomic(path, text)
        lines.append(f"{'updated' if old is not None else 'created'} {path} ({what})")
    return lines
