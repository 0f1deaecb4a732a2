"""The solvers' names, which every layer may read without importing a solver."""

from __future__ import annotations

#: Solvers wired in directly (SCIP through pyscipopt, the referee of certification).
NATIVE = ("highs", "cpsat", "scip")
#: Other solvers reached through Pyomo's SolverFactory when installed.  Only these names are
#: ever handed to Pyomo: any other ``--solver`` is refused before anything is probed or run.
OTHER_KNOWN = ("cbc", "glpk", "gurobi", "cplex")
KNOWN_SOLVERS = NATIVE + OTHER_KNOWN
