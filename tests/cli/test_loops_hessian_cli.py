"""symad hessian over sums kept as loops: the bands as indexed expressions, or the nonzeros at a point."""

from __future__ import annotations

import json

import numpy as np
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
    r = run("hessian", ROSENBROCK, "--latex")
    assert r.returncode == 2 and "--latex are not supported yet with sums kept as loops" in r.stderr
