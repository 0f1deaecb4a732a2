"""highspy and ortools each bundle HiGHS; the pinned versions must load and solve in one process,
and so must pyscipopt, the referee that certifies their answers."""

import subprocess
import sys

import pytest

SCRIPT = """
import {first}, {second}, {third}
import highspy
import pyscipopt
from ortools.sat.python import cp_model
h = highspy.Highs()
h.setOptionValue("output_flag", False)
inf = highspy.kHighsInf
h.addVar(0, 10); h.addVar(0, 10)
h.changeColIntegrality(0, highspy.HighsVarType.kInteger)
h.changeColIntegrality(1, highspy.HighsVarType.kInteger)
h.changeColCost(0, -3); h.changeColCost(1, -2)
h.addRow(-inf, 7, 2, [0, 1], [2.0, 1.0])
h.run()
assert h.getModelStatus() == highspy.HighsModelStatus.kOptimal
m = cp_model.CpModel()
x = m.new_int_var(0, 10, "x"); y = m.new_int_var(0, 10, "y")
m.add(2 * x + y <= 7); m.maximize(3 * x + 2 * y)
s = cp_model.CpSolver(); assert s.solve(m) == cp_model.OPTIMAL
scip = pyscipopt.Model(); scip.hideOutput()
a = scip.addVar(vtype="I", ub=10); b = scip.addVar(vtype="I", ub=10)
scip.addCons(2 * a + b <= 7); scip.setObjective(3 * a + 2 * b, "maximize"); scip.optimize()
print(-h.getInfo().objective_function_value, s.objective_value, scip.getObjVal())
"""
ORDERS = [("highspy", "ortools.sat.python.cp_model", "pyscipopt"), ("ortools.sat.python.cp_model", "highspy", "pyscipopt"),
          ("pyscipopt", "ortools.sat.python.cp_model", "highspy")]


@pytest.mark.parametrize("first,second,third", ORDERS)
def test_highspy_ortools_and_scip_solve_in_one_process(first, second, third):
    out = subprocess.run([sys.executable, "-c", SCRIPT.format(first=first, second=second, third=third)],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["14.0", "14.0", "14.0"]  # max 3x + 2y, 2x + y <= 7: x = 0, y = 7


def test_pins_are_the_coexisting_versions():
    from importlib.metadata import version

    assert version("highspy") == "1.11.0"
    assert version("ortools") == "9.15.6755"
    assert version("pyscipopt") == "6.3.0"
