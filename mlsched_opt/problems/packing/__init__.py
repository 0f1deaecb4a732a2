"""``packing``: place fixed-size jobs (workers and PSs) on servers, all resources at once.

The spine's first problem, wired through every layer: an exact ILP (HiGHS or CP-SAT), a
first-fit-decreasing baseline and its variants, an independent checker and a generator.  At
production scale the exact model, its LP bound and the POP-style partitioned method are built as
arrays for HiGHS directly (:mod:`.arrays`, :mod:`.aggregate`); the bound is the configuration LP
(:mod:`.bound`) and the exact method searches large neighbourhoods (:mod:`.lns`).  Option
``objective``: ``weight`` (default) admits a subset of jobs of maximum total weight; ``servers``
places every job on as few servers as possible.
"""

from __future__ import annotations

from ..base import Family, Method, MethodKind, Option, TraceImport, lazy
from .options import GPU_MODES, OBJECTIVES

L = lazy(__name__)
#: Largest ``parts`` a user may ask for (each part is one HiGHS run).
MAX_PARTS = 1024
#: Largest ``windows`` a user may ask for (each window is one HiGHS run)
MAX_WINDOWS = 1_000_000
#: Largest ``rounds`` a user may ask for (each round prices every server shape once)
MAX_ROUNDS = 100_000


def contract():
    """The data of the contract checks (:mod:`mlsched_opt.testing`), imported only when they run."""
    from ...testing import Case, Contract

    return Contract(toy="demo.toml",
                    tiny=(Case(6, 2),
                          Case(4, 4, options={"objective": "servers"})))  # every job must fit: more servers


FAMILY = Family(
    name="packing",
    summary="multi-resource placement of fixed-size jobs: max admitted weight, or min servers used",
    quick="ffd",  # --method exact answers with it first (problems/anytime.py)
    build_model=L("formulation:build_model"),
    decision_from_model=L("formulation:decision_from_model"),
    check=L("check:check"),
    sense=lambda options: "min" if options["objective"] == "servers" else "max",
    generate=L("generate:generate"),
    algorithms=(
        # replaces the generic Pyomo route for --solver highs (other solvers still take the Pyomo model)
        Method("exact", MethodKind.EXACT, L("exact:exact_method"),
               "the exact ILP, solved to proven optimality (--solver, --gap); built as arrays for HiGHS, Pyomo for other solvers"),
        Method("ffd", MethodKind.HEURISTIC, L("methods:ffd"), "first-fit decreasing, task by task, rolling back jobs that do not fit",
               guarantee="none in general; 11/9 OPT + 6/9 (1-D bin packing) and OPT/2 (knapsack) in the special cases"),
        Method("ffd-large", MethodKind.HEURISTIC, L("methods:ffd_large"), "first-fit decreasing on the servers taken largest first",
               guarantee="none"),
        Method("bfd", MethodKind.HEURISTIC, L("methods:bfd"),
               "best-fit decreasing: each task on the open server it leaves fullest, servers opened largest first",
               guarantee="none in general; 11/9 OPT + 6/9 in one-dimensional bin packing"),
        Method("lns", MethodKind.HEURISTIC, L("lns:lns_method"),
               "the best greedy variant, then large-neighbourhood search: windows of servers re-packed exactly by HiGHS",
               guarantee="none; never worse than its greedy start"),
        Method("pop", MethodKind.HEURISTIC, L("pop:pop"),
               "POP (SOSP 2021), our adaptation: random parts of jobs and servers, each solved exactly by HiGHS, combined",
               guarantee="none in general (POP's argument: near-optimal on granular instances); parts=1 is the exact ILP"),
        # the fragmentation paper's online methods (Weng et al., USENIX ATC 2023): jobs arrive in instance order
        Method("fgd", MethodKind.HEURISTIC, L("fragmentation:fgd"),
               "FGD (ATC 2023): each arriving job to the node and GPU whose fragmentation of the target workload grows least",
               guarantee="none proven"),
        Method("best-fit", MethodKind.HEURISTIC, L("fragmentation:best_fit"),
               "online best fit (ATC 2023's baseline): each arriving job to the node it leaves with least free resources",
               guarantee="none proven"),
        Method("dot-product", MethodKind.HEURISTIC, L("fragmentation:dot_product"),
               "online dot product (Tetris, SIGCOMM 2014; ATC 2023's baseline): the node whose free resources align best with the job",
               guarantee="none proven"),
        Method("gpu-packing", MethodKind.HEURISTIC, L("fragmentation:gpu_packing"),
               "online GPU packing (ATC 2023's baseline): shared GPUs first, then idle GPUs of busy nodes, then idle nodes",
               guarantee="none proven"),
        Method("gpu-clustering", MethodKind.HEURISTIC, L("fragmentation:gpu_clustering"),
               "online GPU clustering (ATC 2023's baseline): jobs of one GPU demand packed together on the same nodes",
               guarantee="none proven"),
        Method("random-fit", MethodKind.HEURISTIC, L("fragmentation:random_fit"),
               "online random fit (ATC 2023's baseline): each arriving job to a random node with room (seeded)",
               guarantee="none proven"),
    ),
    relaxation=L("bound:relaxation"),
    diagnose=L("view:diagnose"),
    options=(Option("objective", "weight", OBJECTIVES, "weight: max admitted weight; servers: min servers used, all jobs placed",
                    problem=True),
             Option("gpus", "pooled", GPU_MODES, "pooled: a node's GPUs are one total; per-gpu: each GPU holds at most 1, "
                    "a share below 1 on one GPU, whole GPUs unshared (see problems/packing/pergpu.py)", problem=True),
             Option("parts", 0, None, "pop: number of parts (0 = automatic from the instance's size)",
                    minimum=0, maximum=MAX_PARTS),
             Option("windows", 1000, None, "lns: most windows re-packed (a work limit; it also stops after 60 in a row without gain)",
                    minimum=1, maximum=MAX_WINDOWS),
             Option("rounds", 400, None, "exact: most rounds of column generation on the configuration LP (a work limit; "
                    "exact's LNS takes windows as lns does)", minimum=1, maximum=MAX_ROUNDS)),
    trace=TraceImport(("alibaba",), L("trace:from_trace"),
                      (Option("gpus", "pooled", GPU_MODES, "the imported instance's gpus option (pooled or per-gpu)"),)),
    contract=contract,
)
