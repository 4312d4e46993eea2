"""symad minimize over sums kept as loops, through the command: L-BFGS by default, bounds on whole
vectors, each(...) families of constraints with IPOPT, a summary that stays short, and clear errors."""

from __future__ import annotations

import json

import numpy as np
import pytest
from support.cli_helpers import run

ROSENBROCK = "n = 1000; sum(i = 1..n-1, 100*(x[i+1] - x[i]^2)^2 + (1 - x[i])^2)"
STEPS = "n = 1000; each(i = 1..n-1, x[i+1] - x[i] - 1)"  # x[i] = x[1] + i - 1


def test_rosenbrock_of_1000_variables_reaches_its_minimum_with_l_bfgs() -> None:
    r = run("minimize", ROSENBROCK, "--from", "x=0", "--json")
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert out["method"] == "l-bfgs" and out["success"] and out["status"] == 0
    assert out["value"] < 1e-10 and out["grad_norm"] <= 1e-8
    x = out["x"]["x"]
    assert x["length"] == 1000 and abs(x["min"] - 1) < 1e-6 and abs(x["max"] - 1) < 1e-6


def test_the_text_summary_has_one_line_for_a_vector() -> None:
    r = run("minimize", ROSENBROCK, "--from", "x=0")
    assert r.returncode == 0 and r.stderr == ""
    lines = r.stdout.splitlines()
    assert lines[0] == "status       converged: gradient norm below tolerance"
    assert lines[1].split() == ["method", "l-bfgs"]
    assert lines[2].startswith("x[1..1000]   1,000 entries: 1, 1, 1, 1, 1, ...; min ")
    assert [line.split()[0] for line in lines[3:]] == ["f", "grad", "iterations", "evaluations", "time"]


def test_scipys_l_bfgs_b_reaches_the_same_minimum_and_is_the_default_with_bounds() -> None:
    r = run("minimize", ROSENBROCK, "--from", "x=0", "--method", "l-bfgs-b", "--json")
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert out["method"] == "l-bfgs-b" and out["success"] and out["grad_norm"] <= 1e-8
    bounded = json.loads(run("minimize", ROSENBROCK, "--from", "x=0", "--bounds", "x=-5:5", "--json").stdout)
    assert bounded["method"] == "l-bfgs-b" and bounded["success"]
    x = out["x"]["x"]
    assert abs(x["min"] - 1) < 1e-6 and abs(x["max"] - 1) < 1e-6


def test_a_bound_on_a_whole_vector_holds_each_entry() -> None:
    r = run("minimize", "n = 2000; sum(i = 1..n, (x[i] - 2)^2 + x[i]*x[i+1]/100)", "--from", "x=0",
            "--bounds", "x=-1:1", "--json", "--full")
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    x = np.array(out["x"]["x"])  # --full: every entry
    assert out["success"] and x.shape == (2001,) and out["bounds"] == {"x": [-1.0, 1.0]}
    assert x.min() >= -1 and x.max() <= 1
    # the minimum over the box: every entry at its upper bound but the last, which is unbounded by the sum's terms
    assert np.all(x[:-1] == 1.0) and abs(x[-1] - (-1.0)) < 1e-12
    assert len(out["grad"]) == 2001


def test_a_family_of_constraints_with_ipopt() -> None:
    pytest.importorskip("cyipopt")
    r = run("minimize", "n = 1000; sum(i = 1..n, x[i]^2)", "--from", "x=0", "--eq", STEPS,
            "--ineq", "x[1] >= -400", "--method", "ipopt", "--json")
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert out["success"] and out["method"] == "ipopt" and "ipopt_status" in out
    # steps of 1 from x[1] >= -400: the sum of squares is least at x[1] = -400 (unbounded: -499.5)
    assert abs(out["x"]["x"]["first"][0] + 400) < 1e-6 and abs(out["x"]["x"]["max"] - 599) < 1e-6
    family, single = out["constraints"]
    assert family == {"kind": "eq", "expr": STEPS, "rows": 999, "violation": family["violation"]}
    assert family["violation"] < 1e-8 and out["violation"] < 1e-8
    assert single["kind"] == "ineq" and single["as"] == "x[1] + 400" and single["multiplier"] > 0


def test_the_json_summary_and_full() -> None:
    r = run("minimize", ROSENBROCK, "--from", "x=[" + ",".join(["0.5"] * 1000) + "]", "--max-iter", "3", "--json")
    assert r.returncode == 0
    out = json.loads(r.stdout)
    assert not out["success"] and out["status"] == 2 and out["warnings"] == ["did not converge: " + out["message"]]
    assert set(out["x"]["x"]) == {"length", "first", "min", "max"} and len(out["x"]["x"]["first"]) == 5
    assert out["from"]["x"]["length"] == 1000 and set(out["grad"]) == {"length", "first", "min", "max"}
    assert out["variables"] == "x[1..1000]" and out["iterations"] == 3
    full = json.loads(run("minimize", ROSENBROCK, "--from", "x=0.5", "--max-iter", "3", "--json", "--full").stdout)
    assert len(full["x"]["x"]) == 1000 and len(full["grad"]) == 1000 and full["from"] == {"x": 0.5}
    assert full["x"]["x"][:5] == out["x"]["x"]["first"] and full["value"] == out["value"]  # the same bits


def test_strict_exits_1_when_a_loop_problem_does_not_converge() -> None:
    r = run("minimize", ROSENBROCK, "--from", "x=0", "--max-iter", "2", "--strict")
    assert r.returncode == 1 and "did not converge: maximum number of iterations reached" in r.stderr


@pytest.mark.parametrize("args, message", [
    (["--from", "y=0"], "--from: y is not a variable of the problem (x[1..1000])"),
    (["--from", "x=[1, 2]"], "--from: x has 1,000 entries (x[1] to x[1000]), not 2 numbers"),
    (["--from", "x[1]=0"], "--from has no value for x[2] (the problem's variables: x[1..1000])"),
    (["--from", "x=0", "--method", "newton"], "--method newton does not take sums kept as loops"),
    (["--from", "x=0", "--method", "slsqp"], "(its matrices are dense)"),
    (["--from", "x=0", "--trace", "t.csv"], "--trace and --plot record and draw the path of a few variables"),
    (["--from", "x=0", "--fix", "a=1"], "--fix names a, which the objective does not use"),
    (["--from", "x=0", "--fix", "x[2]=1"], "--fix holds whole names with sums kept as loops: an entry such as x[2]"),
    (["--from", "x=0", "--fix", "q=1", "--eq", STEPS], "--fix names q, which the problem does not use"),
    (["--from", "x=0", "--eq", STEPS, "--method", "l-bfgs-b"], "--method l-bfgs-b takes no constraints"),
    (["--from", "x=0", "--eq", STEPS, "--method", "l-bfgs"], "--method l-bfgs takes no constraints"),
    (["--from", "x=0", "--bounds", "x=-1:1", "--method", "l-bfgs"], "--method l-bfgs takes no bounds: use "
     "l-bfgs-b (the default with bounds)"),
    (["--from", "x=0", "--bounds", "x=1:0"], "--bounds: empty for x[1]: 1 > 0"),
    (["--from", "x=0", "--bounds", "z=0:1"], "--bounds: z is not a variable of the problem (x[1..1000])"),
    (["--from", "x=0", "--eq", "each(i = 1..n, x[i])"], "in --eq 'each(i = 1..n, x[i])': the last bound"),
])
def test_what_a_loop_problem_does_not_take_is_a_clear_error(args: list[str], message: str) -> None:
    r = run("minimize", ROSENBROCK, *args)
    assert r.returncode == 2 and r.stdout == "" and message in r.stderr
    assert r.stderr.startswith("symad: error: ") and "Traceback" not in r.stderr


def test_l_bfgs_b_takes_written_out_expressions_too_but_no_constraints() -> None:
    r = run("minimize", "(x-1)^2", "--from", "x=0", "--method", "l-bfgs-b")
    assert r.returncode == 0 and "converged" in r.stdout and "l-bfgs-b" in r.stdout
    r = run("minimize", "(x-1)^2", "--from", "x=0", "--method", "l-bfgs-b", "--eq", "x - 2")
    assert r.returncode == 2 and "--method l-bfgs-b takes no constraints" in r.stderr


def test_fix_holds_a_name_in_the_constraints_too() -> None:
    pytest.importorskip("scipy")
    r = run("minimize", "n = 500; sum(i = 1..n, (x[i] - c*i)^2)", "--from", "x=0", "--fix", "c=2",
            "--eq", "n = 500; sum(i = 1..n, x[i]) - c*100", "--json")
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert out["success"] and out["method"] == "trust-constr" and out["fixed"] == {"c": 2.0}
    assert abs(out["constraints"][0]["value"]) <= 1e-6 and set(out["x"]) == {"x"}


def test_fix_holds_a_scalar_or_a_whole_vector() -> None:
    text = "n = 1000; sum(i = 1..n, (x[i] - c*d[i])^2) + (y - c)^2"
    r = run("minimize", text, "--from", "x=0,y=0", "--fix", "c=2,d=0.5")
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert {tuple(line.split()) for line in lines} >= {("c", "2", "(fixed)"), ("d", "0.5", "(fixed)")}
    js = json.loads(run("minimize", text, "--from", "x=0,y=0", "--fix", "c=2,d=0.5", "--json").stdout)
    assert js["success"] and js["fixed"] == {"c": 2.0, "d": 0.5} and set(js["x"]) == {"x", "y"}
    assert js["x"]["x"]["min"] == pytest.approx(1.0, rel=1e-9) and js["x"]["y"] == pytest.approx(2.0, rel=1e-9)
