"""highspy and ortools each bundle HiGHS; the pinned versions must load and solve in one process."""

import subprocess
import sys

import pytest

SCRIPT = """
import {first}, {second}
import highspy
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
print(-h.getInfo().objective_function_value, s.objective_value)
"""


@pytest.mark.parametrize("first,second", [("highspy", "ortools.sat.python.cp_model"), ("ortools.sat.python.cp_model", "highspy")])
def test_highspy_and_ortools_solve_in_one_process(first, second):
    out = subprocess.run([sys.executable, "-c", SCRIPT.format(first=first, second=second)],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["14.0", "14.0"]  # max 3x + 2y, 2x + y <= 7: x = 0, y = 7


def test_pins_are_the_coexisting_versions():
    from importlib.metadata import version

    assert version("highspy") == "1.14.0"
    assert version("ortools") == "9.15.6755"
