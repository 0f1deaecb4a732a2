"""The ``mlsched`` command.

Exit codes: 0 success (an infeasible instance is an answer, not a failure); 1 a solution
that fails the checker, or a solver error; 2 a user error (bad file, field or option),
reported in one line naming the file and the field.
"""

from __future__ import annotations

import importlib
import json
import sys
from pathlib import Path
from typing import Any

import click

from . import __version__
from .errors import OptionError, UserError

EXAMPLES_SOLVE = """
\b
Examples:
  mlsched solve instances/demo.toml --method exact
  mlsched solve instances/demo.toml --problem packing --method exact --solver cpsat --gap 0
  mlsched solve instances/demo.toml --method ffd --set objective=servers --json
  mlsched solve instances/demo.toml --method exact --out demo.sol.json
"""


def _parse_sets(pairs: tuple[str, ...]) -> dict[str, str]:
    out = {}
    for pair in pairs:
        if "=" not in pair:
            raise OptionError(f"expected KEY=VALUE, got {pair!r}", field="--set")
        key, value = pair.split("=", 1)
        if key.strip() in out:  # which one was meant is a guess we do not make
            raise OptionError(f"{key.strip()} is set twice ({out[key.strip()]!r} and {value.strip()!r})", field="--set")
        out[key.strip()] = value.strip()
    return out


def _load(path: str, catalog: str | None):
    from .io import load_instance

    return load_instance(path, catalog=catalog)


def _catalog_files(catalog) -> list[Path]:
    """Every file of a catalog (the one an instance was resolved against, or a generator's): inputs
    of the command too, which no output may overwrite."""
    folder = getattr(catalog, "directory", None)
    if folder is None or not Path(folder).is_dir():
        return []
    return [f for f in Path(folder).iterdir() if f.is_file()]


def _family_for(instance, problem: str | None):
    from .problems import get_family

    name = problem or instance.default_problem
    if not name:
        raise OptionError("no problem given and the instance names none (set `problem` in the file)", field="--problem")
    return get_family(name)


def _solve_options(solver: str, time_limit: float, gap: float, threads: int, seed: int, certify: bool = True):
    from .solvers import SolveOptions, check_solver

    check_solver(solver)
    return SolveOptions(solver=solver, time_limit=time_limit, gap=gap, threads=threads, seed=seed, certify=certify)


def solver_options(f):
    """The options every solving command shares."""
    f = click.option("--seed", type=int, default=0, show_default=True, help="Random seed (solver and randomized methods).")(f)
    f = click.option("--threads", type=int, default=1, show_default=True, help="Solver threads (1 = repeatable runs).")(f)
    f = click.option("--gap", type=float, default=1e-6, show_default=True, help="Relative gap at which 'optimal' may be claimed.")(f)
    f = click.option("--time-limit", type=float, default=60.0, show_default=True, help="Seconds per solve; always enforced.")(f)
    f = click.option("--solver", default="highs", show_default=True, help="highs, cpsat, or any installed Pyomo solver (cbc, glpk, scip, gurobi).")(f)
    f = click.option("--set", "sets", multiple=True, metavar="KEY=VALUE", help="Problem option, e.g. --set objective=servers.")(f)
    f = click.option("--certify/--no-certify", default=True, show_default=True,
                     help="Confirm every 'optimal' or 'infeasible' of an exact solve by an independent solver.")(f)
    return f


def _limits_epilog() -> str:
    from .io.files import LIMITS

    rows = "\n".join(f"  {name + '=' + str(default):<18} {what}" for name, (default, what) in LIMITS.items())
    return ("\b\nLimits (refused with exit 2 and the field named; raise with --limit NAME=N or\n"
            "MLSCHED_LIMITS=\"NAME=N,...\"; the command line wins):\n" + rows)


class _Commands(click.Group):
    """The commands, with ``bench`` imported only when it is run or listed (its module pulls in the
    comparison harness: 0.3 s that no other command should pay at start-up)."""

    LAZY = {"bench": ("mlsched_opt.bench.cli", "bench")}

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*super().list_commands(ctx), *self.LAZY})

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        if name in self.LAZY and name not in self.commands:
            module, attr = self.LAZY[name]
            self.add_command(getattr(importlib.import_module(module), attr))
        return super().get_command(ctx, name)


@click.group(cls=_Commands, context_settings={"help_option_names": ["-h", "--help"]}, epilog=_limits_epilog())
@click.version_option(__version__, prog_name="mlsched")
@click.option("--catalog", envvar="MLSCHED_CATALOG", default=None, metavar="DIR",
              help="Workload catalog directory (default: models/ of this repository; env MLSCHED_CATALOG).")
@click.option("--limit", "limit", multiple=True, metavar="NAME=N",
              help="Raise (or lower) a size limit for this run, e.g. --limit servers=100000 (see Limits below).")
@click.pass_context
def cli(ctx: click.Context, catalog: str | None, limit: tuple[str, ...]) -> None:
    """Optimization models for scheduling distributed deep-learning jobs on GPU clusters.

    \b
    Start here:
      mlsched info                                   problems, methods, solvers
      mlsched validate instances/demo.toml           check an instance file
      mlsched compare instances/demo.toml            every method against the optimum
      mlsched solve instances/demo.toml --method exact
    """
    from .io.files import limits, set_limits

    set_limits(limit)
    limits()  # a malformed $MLSCHED_LIMITS is reported before any work
    ctx.obj = {"catalog": catalog}


@cli.command()
@click.argument("file")
@click.pass_context
def validate(ctx: click.Context, file: str) -> int:
    """Validate an instance FILE (.json or .toml) and summarize it.

    \b
    Example:
      mlsched validate instances/demo.toml
    """
    inst = _load(file, ctx.obj["catalog"])
    gpus = sum(s.capacity.get("gpu", 0) for s in inst.servers)
    click.echo(f"{file}: valid ({inst.name})")
    click.echo(f"  servers: {len(inst.servers)} ({gpus:g} GPUs), jobs: {len(inst.jobs)}, resources: {', '.join(inst.resource_names())}")
    if inst.slots:
        click.echo(f"  time: {inst.slots} slots of {inst.slot_s:g} s")
    click.echo(f"  sha256: {inst.sha256}")
    return 0


@cli.command(epilog=EXAMPLES_SOLVE)
@click.argument("file")
@click.option("--problem", default=None, help="Problem family (default: the instance's `problem`).")
@click.option("--method", default="exact", show_default=True, help="exact, or an algorithm of the family (see `mlsched info`).")
@solver_options
@click.option("--samples", type=int, default=None, metavar="M", help="Shorthand for --set samples=M (sampling methods).")
@click.option("--epsilon", type=float, default=None, metavar="EPS", help="Shorthand for --set epsilon=EPS (covering inflation of LP + rounding).")
@click.option("--attempts", type=int, default=None, metavar="F", help="Shorthand for --set attempts=F (rounding attempts).")
@click.option("--model", "model", default=None, metavar="PATH", help="Shorthand for --set model=PATH (a trained policy, method drl).")
@click.option("--out", "out", default=None, metavar="SOLUTION.json", help="Write the solution file here.")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object instead of text.")
@click.pass_context
def solve(ctx, file, problem, method, sets, certify, solver, time_limit, gap, threads, seed, samples, epsilon, attempts, model, out, as_json) -> int:
    """Solve an instance FILE with one method; the answer is checked independently."""
    from .checking import check_solution

    from .io.files import check_writable

    inst = _load(file, ctx.obj["catalog"])
    family = _family_for(inst, problem)
    family.method(method)
    raw = _parse_sets(sets)
    for name, value, what in (("samples", samples, "a sampling method"), ("epsilon", epsilon, "LP rounding"),
                              ("attempts", attempts, "LP rounding"), ("model", model, "a learned policy")):
        if value is None:
            continue
        if name not in {o.name for o in family.options}:
            raise OptionError(f"--{name} applies to families with {what}; {family.name} has none", field=f"--{name}")
        raw[name] = str(value)
    options = family.resolve_options(inst, raw)
    inputs = (file, raw.get("model"), *_catalog_files(inst.catalog))
    if out:
        check_writable(out, inputs)  # before the solve, which may take long
        if Path(out).suffix.lower() != ".json":  # `check` reads solutions only as .json
            raise OptionError(f"solution files are JSON: {out!r} must end in .json", field="--out")
    sol = family.run(inst, method, _solve_options(solver, time_limit, gap, threads, seed, certify), options)
    check = check_solution(inst, sol, options) if sol.decision is not None else None
    write_error = None
    if out:
        try:
            sol.write(out, inputs)
        except UserError as exc:  # the answer is printed all the same, then exit 2
            write_error = exc
            out = None
    rep = sol.report
    if as_json:
        doc: dict[str, Any] = {"problem": family.name, "method": method, "instance": file, **rep.to_dict()}
        doc["check"] = None if check is None else check.to_dict()
        if out:
            doc["solution_file"] = out
        click.echo(json.dumps(doc))
    else:
        click.echo(f"{family.name} / {method} on {inst.name}: {rep.status}")
        click.echo(f"  objective {rep.objective}   bound {rep.bound}   gap {rep.gap}")
        click.echo(f"  wall {rep.wall_s:.3f} s (build {rep.build_s:.3f}, solve {rep.solve_s:.3f})   solver {rep.solver} {rep.solver_version}")
        if rep.message:
            click.echo(f"  note: {rep.message}")
        if check is not None:
            click.echo("  check: ok" if check.feasible else f"  check: FAILED ({len(check.violations)} violations)")
        if out:
            click.echo(f"  solution written to {out}")
    if check is not None and not check.feasible:
        for v in check.violations:
            click.echo(f"  violation: {v}", err=True)
    if write_error is not None:
        raise write_error
    if check is not None and not check.feasible:
        return 1
    if rep.status == "disputed":
        click.echo(f"DISPUTED: {rep.message}", err=True)
    return 1 if rep.status in ("error", "disputed") else 0


@cli.command()
@click.argument("file")
@click.argument("solution")
@click.option("--problem", default=None, help="Problem family (default: the solution's).")
@click.option("--set", "sets", multiple=True, metavar="KEY=VALUE",
              help="Problem option (default: the instance's options, else the family's defaults; never the solution's).")
@click.option("--json", "as_json", is_flag=True, help="Print the verdict as JSON.")
@click.pass_context
def check(ctx, file, solution, problem, sets, as_json) -> int:
    """Check SOLUTION (JSON) against the instance FILE, trusting nothing but the decision.

    The problem is the instance's with its options and --set: a solution that records other
    problem options breaks the rule `problem-options`.  Exit 0 when the decision is feasible
    and the stated objective is right; 1 otherwise, with every violation listed.

    \b
    Example:
      mlsched solve instances/demo.toml --method ffd --out ffd.sol.json
      mlsched check instances/demo.toml ffd.sol.json
    """
    from .checking import check_solution
    from .io.solution import read_solution

    inst = _load(file, ctx.obj["catalog"])
    sol = read_solution(solution)
    if problem is not None and problem != sol.problem:
        raise OptionError(f"the solution is for problem {sol.problem!r}, not {problem!r}", field="--problem")
    result = check_solution(inst, sol, _parse_sets(sets))
    if as_json:
        click.echo(json.dumps(result.to_dict()))
    elif result.feasible:
        click.echo(f"ok: feasible, objective {result.objective:g} as stated")
    else:
        click.echo(f"{len(result.violations)} violation(s):")
        for v in result.violations:
            click.echo(f"  {v}")
    return 0 if result.feasible else 1


@cli.command()
@click.argument("file")
@click.option("--problem", default=None, help="Problem family (default: the instance's `problem`).")
@click.option("--format", "fmt", type=click.Choice(["mps", "lp"]), default=None, help="Default: from the output's extension.")
@click.option("-o", "--output", required=True, metavar="PATH", help="Where to write the model.")
@click.option("--set", "sets", multiple=True, metavar="KEY=VALUE", help="Problem option.")
@click.pass_context
def export(ctx, file, problem, fmt, output, sets) -> int:
    """Write the exact formulation of FILE as MPS or LP, with readable names.

    \b
    Example:
      mlsched export instances/demo.toml --format lp -o demo.lp
    """
    from .io.files import atomic_path, check_writable
    from .solvers import EXPORT_FORMATS, export_model

    inst = _load(file, ctx.obj["catalog"])
    family = _family_for(inst, problem)
    options = family.resolve_options(inst, _parse_sets(sets))
    fmt = fmt or Path(output).suffix.lstrip(".").lower()
    if fmt not in EXPORT_FORMATS:
        raise OptionError(f"format must be one of {', '.join(EXPORT_FORMATS)}, got {fmt!r} (use --format or a .mps/.lp name)", field="--format")
    inputs = (file, *_catalog_files(inst.catalog))
    check_writable(output, inputs)  # before building the model
    model = family.build_model(inst, options)
    with atomic_path(output, inputs) as tmp:
        export_model(model, tmp, fmt)
    click.echo(f"wrote {output} ({fmt}, {model.nvariables()} variables, {model.nconstraints()} constraints)")
    return 0


def _instance_output(ctx: click.Context, problem: str, output: str, sizes: dict[str, int | None]):
    """What ``generate`` and ``import`` check before any work: the sizes asked for against the
    limits, the output's format and writability (never over a catalog file); returns the family,
    the catalog and the input files."""
    from .io import load_catalog
    from .io.files import check_writable, format_of, limits, over_limit
    from .problems import get_family

    caps = limits()
    for name, value in sizes.items():
        if value is not None and value > caps[name]:
            raise over_limit(name, value, f"the number of {name}", None, f"--{name}")
    format_of(output)
    family = get_family(problem)
    catalog = load_catalog(ctx.obj["catalog"])
    inputs = _catalog_files(catalog)
    check_writable(output, inputs)
    return family, catalog, inputs


@cli.command()
@click.option("--problem", required=True, help="Problem family.")
@click.option("--jobs", type=click.IntRange(min=1), required=True)
@click.option("--servers", type=click.IntRange(min=1), required=True)
@click.option("--slots", type=click.IntRange(min=1), default=None, help="Time slots (slotted problems).")
@click.option("--seed", type=int, required=True)
@click.option("-o", "--output", required=True, metavar="FILE", help="Instance file to write (.toml or .json).")
@click.option("--set", "sets", multiple=True, metavar="KEY=VALUE", help="Generator option (see `mlsched info`).")
@click.pass_context
def generate(ctx, problem, jobs, servers, slots, seed, output, sets) -> int:
    """Write a random instance; the same seed gives the same file.

    \b
    Examples:
      mlsched generate --problem packing --jobs 12 --servers 4 --seed 7 -o my.toml
      mlsched generate --problem smd --jobs 30 --servers 2 --seed 1 --set sgd=sync -o smd.toml
    """
    from .io import from_document, write_document
    from .problems import GenerateSpec

    if seed < 0:
        raise OptionError(f"seed must be >= 0, got {seed}", field="--seed")
    # the sizes a generator would draw are refused before it draws them, like a file's would be
    family, catalog, inputs = _instance_output(ctx, problem, output, {"jobs": jobs, "servers": servers, "slots": slots})
    options = family.parse_generate_options(_parse_sets(sets))
    doc = family.generate(GenerateSpec(jobs=jobs, servers=servers, seed=seed, slots=slots, options=options), catalog)
    from_document(doc, file=output, catalog=catalog)  # a generator bug must not produce an invalid file
    write_document(doc, output, inputs)
    click.echo(f"wrote {output}")
    return 0


@cli.command("import")
@click.argument("source", metavar="SOURCE")
@click.option("--problem", default=None, help="Problem family to import into (see `mlsched info`); not for gavel.")
@click.option("-o", "--output", required=True, metavar="FILE",
              help="Instance file to write (.toml or .json); for gavel, the catalog directory.")
@click.option("--jobs", type=click.IntRange(min=1), default=None, help="Jobs in the window (default: all of the source's).")
@click.option("--servers", type=click.IntRange(min=1), default=None, help="Servers of the cluster (default: all).")
@click.option("--slots", type=click.IntRange(min=1), default=None, help="Time slots (default: the family's, or what the arrivals need).")
@click.option("--seed", type=click.IntRange(min=0), default=0, show_default=True, help="Seed of every draw (window, servers, workloads).")
@click.option("--data", default=None, metavar="DIR",
              help="Folder of the data sets (layout of ../shared/data); default $MLSCHED_SHARED_DATA, else ../shared/data.")
@click.option("--set", "sets", multiple=True, metavar="KEY=VALUE", help="Source or family option (see below).")
@click.pass_context
def import_(ctx, source, problem, output, jobs, servers, slots, seed, data, sets) -> int:
    """Turn a real trace SOURCE into an instance: alibaba, philly, pollux (jobs) or gavel (the catalog).

    Same arguments, same file.  The instance's `source` names the file, the rows, the seed and
    every assumption.

    \b
    Examples:
      mlsched import alibaba --problem packing --jobs 200 -o pods.toml
      mlsched import alibaba --problem hetero --jobs 100 --set pods=gpuspec33 -o hetero.toml
      mlsched import philly --problem oasis --jobs 50 --servers 20 --seed 3 -o philly.toml
      mlsched import pollux --problem locality --set workload=2 --set cluster=pollux -o pollux.toml
      mlsched import gavel -o models/
    """
    from .io import from_document, write_document
    from .traces import SOURCES, data_dir, import_instance

    if source not in SOURCES:
        raise OptionError(f"unknown source {source!r}; choose from {', '.join(SOURCES)}", field="SOURCE")
    folder = data_dir(data)
    if source == "gavel":
        from .traces.gavel import import_catalog

        if problem or jobs or servers or slots or sets:
            raise OptionError("gavel writes the workload catalog: it takes only -o DIR (and --data)", field="SOURCE")
        base = Path(ctx.obj["catalog"]) if ctx.obj["catalog"] else None  # entries kept are the catalog's in use
        for line in import_catalog(folder, Path(output), base):
            click.echo(line)
        return 0
    if not problem:
        raise OptionError(f"importing {source} needs --problem (see `mlsched info`)", field="--problem")
    family, catalog, inputs = _instance_output(ctx, problem, output, {"jobs": jobs, "servers": servers, "slots": slots})
    doc, notes = import_instance(source, family, folder, jobs, servers, slots, seed, _parse_sets(sets), catalog)
    inst = from_document(doc, file=output, catalog=catalog)  # an importer bug must not produce an invalid file
    write_document(doc, output, inputs)
    for note in notes:
        click.echo(f"note: {note}", err=True)
    gpus = sum(s.capacity.get("gpu", 0) for s in inst.servers)
    click.echo(f"wrote {output} ({len(inst.jobs):,} jobs, {len(inst.servers):,} servers, {gpus:,g} GPUs)")
    return 0


@cli.command()
@click.argument("file")
@click.option("--problem", default=None, help="Problem family (default: the instance's `problem`).")
@click.option("--methods", default=None, help="Comma-separated methods (default: all of the family's but oracles).")
@click.option("--solvers", "solvers", default="highs,cpsat", show_default=True, help="Solvers for the exact method.")
@solver_options
@click.option("--json", "as_json", is_flag=True, help="Print the rows as JSON.")
@click.pass_context
def compare(ctx, file, problem, methods, solvers, sets, certify, solver, time_limit, gap, threads, seed, as_json) -> int:
    """Run methods on FILE, check every answer, and print ratios to the proven optimum.

    The exact method runs once per solver in --solvers; the LP relaxation adds a bound.

    \b
    Example:
      mlsched compare instances/demo.toml
      mlsched compare instances/demo.toml --set objective=servers --solvers highs
    """
    from .bench import compare as run_compare, format_table

    inst = _load(file, ctx.obj["catalog"])
    family = _family_for(inst, problem)
    # oracles (exhaustive enumeration) run only when asked for: they are for tiny instances
    names = methods.split(",") if methods else [m.name for m in family.methods.values() if m.kind != "oracle" and m.available]
    if not methods and not as_json:
        for m in family.methods.values():
            if not m.available:
                click.echo(f"skipping {m.name}: needs {m.requires} (pip install -e '.[rl]')", err=True)
    solver_list = [s.strip() for s in solvers.split(",") if s.strip()]
    pairs = []
    for name in names:
        m = family.method(name.strip())
        pairs += [(m.name, s) for s in solver_list] if m.kind == "exact" else [(m.name, solver)]
    for _, s in pairs:
        _solve_options(s, time_limit, gap, threads, seed)
    options = family.resolve_options(inst, _parse_sets(sets))
    base = _solve_options(solver, time_limit, gap, threads, seed, certify)
    progress = None if as_json else (lambda msg: click.echo(msg, err=True))
    rows = run_compare(inst, family, pairs, options, base, progress=progress)
    if as_json:
        click.echo(json.dumps([r.to_dict() for r in rows]))
    else:
        opts = options
        click.echo(f"{family.name} on {inst.name} ({len(inst.jobs)} jobs, {len(inst.servers)} servers; "
                   f"{', '.join(f'{k}={v}' for k, v in opts.items())}; sense {family.sense(opts)}; gap {gap:g})")
        click.echo(format_table(rows))
        click.echo("ratio: how far from the proven optimum (1 = optimal); '<=' when only a bound is proven")
        for r in rows:
            if r.report.status == "disputed":
                click.echo(f"DISPUTED {r.label}: {r.report.message}", err=True)
    bad = [r for r in rows if (r.check is not None and not r.check.feasible) or r.report.status == "disputed"]
    return 1 if bad else 0


@cli.command()
@click.option("--problem", required=True, help="Problem family with a learned method (harmony).")
@click.option("--episodes", type=click.IntRange(min=1), required=True, help="Reinforcement-learning episodes (one generated trace each).")
@click.option("--seed", type=click.IntRange(min=0), default=0, show_default=True, help="Seeds the traces, the networks and the exploration.")
@click.option("-o", "--output", required=True, metavar="MODEL", help="Where to write the trained policy (e.g. models/harmony-drl.pt).")
@click.option("--set", "sets", multiple=True, metavar="KEY=VALUE", help="Training option (see `mlsched info`).")
def train(problem, episodes, seed, output, sets) -> int:
    """Train a family's learned policy on generated traces; the same seed gives the same policy.

    \b
    Example:
      mlsched train --problem harmony --episodes 200 --seed 0 -o models/harmony-drl.pt
    """
    from .problems import get_family
    from .problems.base import TrainSpec

    from .io.files import check_writable

    family = get_family(problem)
    if family.train is None:
        raise OptionError(f"problem {family.name} has no learned method to train", field="--problem")
    check_writable(output)  # before the training, not after it
    spec = TrainSpec(episodes=episodes, seed=seed, output=output, options=_parse_sets(sets))
    if sys.stderr.isatty():
        with click.progressbar(length=episodes, label=f"training {family.name}", file=sys.stderr,
                               item_show_func=lambda msg: msg) as bar:
            spec.progress = lambda episode, message: bar.update(episode - bar.pos, message)
            path = family.train(spec)
    else:  # a log file gets a line every 5% instead of a bar it cannot show
        every = max(1, episodes // 20)
        spec.progress = lambda episode, message: (episode % every == 0 or episode == episodes) and click.echo(
            f"episode {episode}/{episodes}: {message}", err=True)
        click.echo(f"training {family.name}: reward model, warm-up, then {episodes} episodes", err=True)
        path = family.train(spec)
    click.echo(f"wrote {path}")
    return 0


@cli.command()
@click.pass_context
def info(ctx) -> int:
    """List problems, their methods and options, solvers on this machine, and the workload catalog."""
    from .io import load_catalog
    from .problems import REGISTRY
    from .solvers import available_solvers
    from .traces import source_table

    click.echo("problems:")
    for fam in REGISTRY.values():
        click.echo(f"  {fam.name}: {fam.summary}")
        for m in fam.methods.values():
            g = f" [guarantee: {m.guarantee}]" if m.guarantee else ""
            click.echo(f"    --method {m.name} ({m.kind}): {m.summary}{g}")
        for o in fam.options:
            kind = " [problem]" if o.problem else ""
            click.echo(f"    --set {o.name}=<{o.describe()}> (default {o.default}){kind}: {o.help}")
        for verb, opts in (("generate", fam.generate_options), ("train", fam.train_options)):
            for o in opts:
                click.echo(f"    {verb} --set {o.name}=<{o.describe()}> (default {o.default}): {o.help}")
        if fam.trace is not None:
            click.echo(f"    import from: {', '.join(fam.trace.sources)}")
            for o in fam.trace.options:
                click.echo(f"    import --set {o.name}=<{o.describe()}> (default {o.default}): {o.help}")
    click.echo("trace sources (mlsched import SOURCE):")
    for src in source_table().values():
        click.echo(f"  {src.name}: {src.summary}")
        for o in src.options:
            click.echo(f"    import --set {o.name}=<{o.describe()}> (default {o.default}): {o.help}")
    click.echo("  gavel: the workload catalog from Gavel's throughput file (mlsched import gavel -o models/)")
    click.echo("solvers:")
    for name, version in available_solvers().items():
        click.echo(f"  {name}: {version or 'not installed'}")
    try:
        cat = load_catalog(ctx.obj["catalog"])
        click.echo(f"workload catalog ({cat.directory}): {', '.join(cat)}")
    except UserError as exc:
        click.echo(f"workload catalog: unavailable ({exc.message()})")
    return 0


def main(argv: list[str] | None = None) -> None:
    """Entry point: user errors end in one line and exit code 2, never a traceback."""
    from .io.files import set_limits

    try:
        code = cli.main(args=argv, prog_name="mlsched", standalone_mode=False)
    except UserError as exc:
        click.echo(f"mlsched: error: {exc.message()}", err=True)
        sys.exit(2)
    except click.ClickException as exc:
        exc.show()
        sys.exit(exc.exit_code)
    except click.exceptions.Abort:
        click.echo("aborted", err=True)
        sys.exit(1)
    except KeyboardInterrupt:
        click.echo("interrupted", err=True)
        sys.exit(130)
    finally:
        set_limits(())  # --limit holds for one command (main runs many times in one test process)
    sys.exit(code if isinstance(code, int) else 0)


if __name__ == "__main__":
    main()
