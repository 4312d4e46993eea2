"""A comparison given as a constraint means what it says (``x <= 1`` is ``1 - x >= 0``), and
a condition that cannot mean what it says, as a constraint or as the objective, is refused."""

from __future__ import annotations

import json

import numpy as np
import pytest
from support.cli_helpers import run

import symad
from symad import SymadError
from symad.optimize import scipy_functions


@pytest.mark.parametrize("constraint, x", [
    (("ineq", "x <= 1"), 1.0),  # was vacuous (a comparison is 1 or 0 >= 0): success at x = 3
    (("ineq", "1 >= x"), 1.0),
    (("ineq", "x >= 4"), 4.0),
    (("ineq", "2*x <= x + 1"), 1.0),
    (("eq", "x == 1"), 1.0),  # was "Singular matrix" inside scipy
    (("eq", "2 == x"), 2.0),
])
@pytest.mark.parametrize("method", ["slsqp", "trust-constr"])
def test_a_comparison_constraint_is_what_it_says(constraint, x, method):
    r = symad.minimize("(x-3)^2", {"x": 0}, method=method, constraints=[constraint], tol=1e-12)
    assert r.success, r.message
    assert r.x[0] == pytest.approx(x, abs=1e-6 if method == "slsqp" else 1e-4)  # (an interior point method)
    assert r.constraints["violation"] <= 1e-8


def test_comparisons_built_in_python_and_scipys_dicts_are_read_the_same():
    x = symad.var("x")
    r = symad.minimize("(x-3)^2", {"x": 0}, constraints=[("ineq", symad.le(x, 1))])
    assert r.x[0] == pytest.approx(1.0, abs=1e-8)
    r = symad.minimize("(x-3)^2", {"x": 0}, constraints=[{"type": "ineq", "fun": "x <= 1"}])
    assert r.x[0] == pytest.approx(1.0, abs=1e-8)
    # the reported value is the expression the comparison is read as: 1 - x
    assert r.constraints["values"][0] == pytest.approx(0.0, abs=1e-8)
    s = scipy_functions("(x-3)^2")
    (nonlinear,) = s.constraints([("ineq", "x <= 1")])
    assert nonlinear.fun(np.array([0.25]))[0] == 0.75


@pytest.mark.parametrize("constraint, words", [
    (("eq", "x <= 1"), r"x <= 1 is an inequality, given as an eq constraint: give it as an ineq constraint"),
    (("eq", "x >= 1"), r"or write the equality with == \(x == 1\)"),
    (("ineq", "x == 1"), r"x == 1 is an equality, given as an ineq constraint: give it as an eq constraint"),
    (("ineq", "x < 1"), r"x < 1 is a strict inequality.*write x <= 1"),
    (("ineq", "x > 1"), r"write x >= 1"),
    (("ineq", "x != 1"), r"x != 1 cannot be a constraint"),
    (("ineq", "0 <= x <= 1"), r"is a condition \(built with and\).*0 <= x <= 1 is two: x >= 0 and x <= 1"),
    (("ineq", "x >= 0 or x <= -1"), r"condition \(built with or\)"),
    (("ineq", "not x"), r"condition \(built with not\)"),
    (("ineq", "if x > 0 then x <= 1 else x >= -1"), r"condition \(built with"),
    (("eq", "where(x > 0, 1, 0)"), r"condition \(built with where\)"),
])
def test_a_condition_that_cannot_mean_what_it_says_is_refused(constraint, words):
    with pytest.raises(SymadError, match=words):
        symad.minimize("(x-3)^2", {"x": 0}, constraints=[constraint])


def test_an_expression_with_a_branch_is_still_a_constraint():
    # where(...) whose arms are numbers other than 0 and 1 is a function, not a condition
    r = symad.minimize("(x-3)^2", {"x": 0}, constraints=[("ineq", "if x > 2 then 2 - x else 1")])
    assert r.success and r.x[0] == pytest.approx(2.0, abs=1e-6)


@pytest.mark.parametrize("text", ["x > 1", "x <= 1 and y >= 0", "not x", "if x > 0 then 1 else 0", "x == y"])
def test_a_condition_is_no_objective(text):
    start = dict.fromkeys(symad.parse(text).variables, 0.0)
    with pytest.raises(SymadError, match="is a condition"):
        symad.minimize(text, start)
    with pytest.raises(SymadError, match="is a condition"):
        symad.minimize(text, start, method="slsqp")
    with pytest.raises(SymadError, match="is a condition"):
        scipy_functions(text)


def test_the_command_line_reads_a_comparison_as_what_it_says():
    # was: y = -1.5e31 and exit 0 (y >= 0 is 1 or 0, always >= 0)
    r = run("minimize", "(x-1)^2 + y", "--from", "x=0,y=0", "--ineq", "y >= 0", "--ineq", "x <= 0.5", "--json")
    assert r.returncode == 0, r.stderr
    obj = json.loads(r.stdout)
    assert obj["success"] is True
    assert obj["x"]["y"] == pytest.approx(0.0, abs=1e-8) and obj["x"]["x"] == pytest.approx(0.5, abs=1e-8)
    first, second = obj["constraints"]
    assert (first["expr"], first["as"], second["expr"], second["as"]) == ("y >= 0", "y", "x <= 0.5", "0.5 - x")
    text = run("minimize", "(x-1)^2", "--from", "x=0", "--eq", "x == 0.25")
    assert text.returncode == 0, text.stderr
    assert "x == 0.25: x - 0.25 = 0 (must be 0)" in text.stdout


@pytest.mark.parametrize("flag, text, words", [
    ("--eq", "y <= 0", "in --eq 'y <= 0': y <= 0 is an inequality"),
    ("--ineq", "0 <= y <= 1", "in --ineq '0 <= y <= 1': 0 <= y and y <= 1 is a condition"),
    ("--ineq", "y > 0", "strict inequality"),
])
def test_the_command_line_refuses_a_condition_it_cannot_read(flag, text, words):
    r = run("minimize", "(x-1)^2 + y", "--from", "x=0,y=0", flag, text)
    assert r.returncode == 2 and r.stdout == ""
    assert words in r.stderr and "Traceback" not in r.stderr and len(r.stderr.strip().splitlines()) == 1


def test_the_command_line_refuses_a_condition_as_the_objective():
    r = run("minimize", "x > 1", "--from", "x=0")
    assert r.returncode == 2 and "is a condition" in r.stderr


def test_a_condition_over_data_is_no_objective_to_minimise():
    count = symad.objective("a*x > y", {"x": [1.0, 2.0], "y": [0.5, 3.0]})
    assert count.value([1.0]) == 1.0  # a count is a fine value to compute
    with pytest.raises(SymadError, match="is a condition"):
        symad.minimize(count, [0.0])
    with pytest.raises(SymadError, match="is a condition"):
        scipy_functions(count)
