"""``symad minimize --eq/--ineq``: constrained minimisation on the installed command line."""

from __future__ import annotations

import json

import pytest
from support.cli_helpers import run


def test_an_equality_gives_the_solution_and_its_multiplier() -> None:
    r = run("minimize", "x^2+y^2", "--from", "x=0,y=0", "--eq", "x+y-1", "--json")
    assert r.returncode == 0, r.stderr
    obj = json.loads(r.stdout)
    assert obj["method"] == "slsqp" and obj["success"] is True
    assert obj["x"]["x"] == pytest.approx(0.5, abs=1e-8) and obj["x"]["y"] == pytest.approx(0.5, abs=1e-8)
    (c,) = obj["constraints"]
    assert c["kind"] == "eq" and c["expr"] == "x+y-1" and abs(c["value"]) < 1e-10
    assert c["multiplier"] == pytest.approx(1.0, abs=1e-7)  # grad f = 1 * grad (x+y-1) at (1/2, 1/2)
    assert obj["violation"] < 1e-10


def test_constraints_keep_their_order_and_the_summary_shows_them() -> None:
    # scipy's tutorial problem: the minimum (1.4, 1.7), the first inequality active
    r = run("minimize", "(x-1)^2+(y-2.5)^2", "--from", "x=2,y=0", "--ineq", "x-2*y+2",
            "--ineq", "-x-2*y+6", "--ineq", "-x+2*y+2", "--bounds", "x=0:,y=0:")
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines[0].startswith("status") and "converged" in lines[0] and "not converged" not in lines[0]
    assert float(lines[2].split()[1]) == pytest.approx(1.4, abs=1e-6)
    assert float(lines[3].split()[1]) == pytest.approx(1.7, abs=1e-6)
    shown = [line for line in lines if line.startswith("ineq")]
    assert [line.split()[1] for line in shown] == ["x-2*y+2", "-x-2*y+6", "-x+2*y+2"]
    assert "(>= 0), multiplier" in shown[0]
    assert float(next(line for line in lines if line.startswith("grad norm")).split()[2]) < 1e-8  # KKT


def test_trust_constr_reaches_the_constrained_minimum_at_a_tight_tolerance() -> None:
    r = run("minimize", "x^2+y^2", "--from", "x=2,y=0", "--ineq=-x-y+2", "--ineq", "x-1",
            "--method", "trust-constr", "--tol", "1e-12", "--json")
    obj = json.loads(r.stdout)
    assert obj["success"] is True and obj["method"] == "trust-constr"
    # an interior-point method: off by its last barrier parameter (docs/guide/optimize.md)
    assert obj["x"]["x"] == pytest.approx(1.0, abs=1e-4) and obj["x"]["y"] == pytest.approx(0.0, abs=1e-4)
    assert [c["multiplier"] for c in obj["constraints"]] == pytest.approx([0.0, 2.0], abs=1e-3)


def test_a_constraint_may_bring_its_own_variables() -> None:
    r = run("minimize", "x^2", "--from", "x=3,y=3", "--eq", "x-y-1", "--json")
    obj = json.loads(r.stdout)
    assert obj["x"]["x"] == pytest.approx(0.0, abs=1e-8) and obj["x"]["y"] == pytest.approx(-1.0, abs=1e-8)


def test_an_infeasible_problem_is_not_converged() -> None:
    r = run("minimize", "x^2", "--from", "x=0", "--eq", "x^2+1", "--strict")
    assert r.returncode == 1
    assert "not converged" in r.stdout and "symad: warning: did not converge" in r.stderr


@pytest.mark.parametrize("args, words", [
    (["--eq", "x+"], "in --eq 'x+': unexpected end of input"),
    (["--ineq", "x", "--method", "newton"], "--method newton takes no constraints"),
    (["--eq", "x", "--trace", "t.csv"], "scipy's slsqp keeps no path"),
    (["--eq", "x+z"], "--from has no value for z"),
])
def test_bad_constraints_are_explained(args: list[str], words: str) -> None:
    r = run("minimize", "x^2+y^2", "--from", "x=1,y=1", *args)
    assert r.returncode == 2
    assert words in r.stderr and "Traceback" not in r.stderr
