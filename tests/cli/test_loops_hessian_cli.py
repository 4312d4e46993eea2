"""symad hessian over sums kept as loops: the bands as indexed expressions, or the nonzeros at a point."""

from __future__ import annotations

import json

import numpy as np
import pytest
from support.cli_helpers import run

import symad
from symad import Graph

ROSENBROCK = "n = 20000; sum(i = 1..n-1, 100*(x[i+1] - x[i]^2)^2 + (1 - x[i])^2)"


def test_the_hessian_of_a_loop_prints_its_bands_in_k() -> None:
    r = run("hessian", ROSENBROCK + " + y^2*x[1]")
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines[0].startswith("d2f/dx[k]2 = ") and lines[0].endswith("    for k = 1..20000")
    assert lines[1] == "d2f/dx[k]dx[k+1] = where(k <= 19999, 2*(100*-(2*x[k])), 0)    for k = 1..19999"
    assert lines[-1] == "d2f/dy2 = 2*x[1]"
    js = json.loads(run("hessian", ROSENBROCK, "--json").stdout)
    assert [(h["row"], h["col"], h["range"]) for h in js["hessian"]] == [("x[k]", "x[k]", [1, 20000]),
                                                                         ("x[k]", "x[k+1]", [1, 19999])]


def test_the_hessian_of_a_loop_at_a_point_is_its_nonzeros() -> None:
    r = run("hessian", ROSENBROCK, "--at", "x=0.5")
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    # 1200 x^2 - 400 x[k+1] + 2 (+ 200 inside), -400 x off the diagonal, 200 at the last entry
    assert lines[:5] == ["f = 129993.5", "hessian: 39,999 nonzeros of the lower triangle",
                         "d2f/dx[1]2 = 102", "d2f/dx[2]dx[1] = -200", "d2f/dx[2]2 = 302"]
    assert lines[-1] == "d2f/dx[20000]2 = 200"
    js = json.loads(run("hessian", ROSENBROCK, "--at", "x=0.5", "--json").stdout)
    f = symad.compile(symad.parse(ROSENBROCK, Graph()))
    rows, cols = f.hessian_pattern()
    assert js["hessian"]["rows"] == rows.tolist() and js["hessian"]["cols"] == cols.tolist()
    assert js["hessian"]["values"] == f.hessian_values(np.full(20000, 0.5)).tolist()


def test_what_the_hessian_of_a_loop_does_not_take_says_so() -> None:
    r = run("hessian", ROSENBROCK, "--params", "c=1")
    assert r.returncode == 2 and "--params gives values, which the Hessian as expressions (no --at)" in r.stderr
    r = run("hessian", ROSENBROCK, "--latex", "--at", "x=1")
    assert r.returncode == 2 and "--latex prints the Hessian's expressions" in r.stderr


def test_the_latex_of_a_loops_hessian_is_its_bands_with_their_ranges() -> None:
    r = run("hessian", ROSENBROCK + " + y^2*x[1]", "--latex")
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines[0] == r"\begin{aligned}" and lines[-1] == r"\end{aligned}"
    assert lines[1].startswith(r"\frac{\partial^2 f}{\partial x_{k}^2} &= ")
    assert lines[1].endswith(r" \qquad k = 1, \dots, 20000 \\")
    assert lines[2] == (r"\frac{\partial^2 f}{\partial x_{k}\,\partial x_{k+1}} &= \begin{cases} 2 \cdot 100\,"
                        r"\left(-\left(2\,x_{k}\right)\right) & \text{if } k \le 19999 \\ 0 & \text{otherwise} "
                        r"\end{cases} \qquad k = 1, \dots, 19999 \\")
    assert lines[-2] == r"\frac{\partial^2 f}{\partial y^2} &= 2\,x_{1}"
    assert r.stdout.count("{") == r.stdout.count("}")
    js = json.loads(run("hessian", ROSENBROCK, "--latex", "--json").stdout)
    assert js["latex"].startswith(r"\begin{aligned}") and js["variables"] == ["x[1..20000]"]


def test_a_hessian_that_is_not_bands_is_refused_never_printed_in_part() -> None:
    """(sum x)^2 couples every entry with every other: its rows printed as bands were none at all
    (exit 0, nothing printed); a product's, only its diagonal."""
    for text, holds in (("sum(i = 1..20000, x[i])^2", "sum(i = 1..20000, x[i])"),
                        ("prod(i = 1..20000, x[i])", "prod(i = 1..20000, ")):
        said = f"the Hessian is not a few bands: df/dx[k] holds {holds}"
        for extra in ([], ["--latex"]):
            r = run("hessian", text, *extra)
            assert (r.returncode, r.stdout) == (2, "") and said in r.stderr, r.stdout
        r = run("hessian", text, "--json")
        assert r.returncode == 2 and said in json.loads(r.stdout)["error"]["message"]
    with pytest.raises(symad.SymadError, match="not a few bands"):
        symad.compile("sum(i = 1..20000, x[i])^2").hessian_text()
    # at a point, its nonzeros are computed: every pair's 2
    js = json.loads(run("hessian", "sum(i = 1..400, x[i])^2", "--at", "x=0.5", "--json").stdout)
    assert len(js["hessian"]["values"]) == 400 * 401 // 2 and set(js["hessian"]["values"]) == {2.0}


def test_a_linear_functions_hessian_is_printed_as_zero_not_as_nothing() -> None:
    r = run("hessian", "sum(i = 1..20000, x[i]) + y")
    assert r.returncode == 0 and r.stdout.splitlines() == ["d2f/dx[k]2 = 0    for k = 1..20000", "d2f/dy2 = 0"]


def test_one_number_fills_every_entry_of_a_matrix_of_data() -> None:
    """A[i, 2] is data (a name of two indices); A=2 gives each of its 400 x 2 entries (it was refused
    as "not an array of shape (800,)")."""
    text = "sum(i = 1..400, x[i]*A[i, 2]) + sum(i = 1..400, x[i]^2*A[i, 1])"
    r = run("hessian", text, "--at", "x=1,A=2")
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines()[:3] == ["f = 1600", "hessian: 400 nonzeros of the lower triangle", "d2f/dx[1]2 = 4"]
    r = run("grad", text, "--at", "x=1,A=2", "--json")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["value"] == 1600
