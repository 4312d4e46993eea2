"""--params over sums kept as loops: held at their values, given at the call as data, not
differentiated (they were refused), as for written-out expressions."""

from __future__ import annotations

import json

import numpy as np
from support.cli_helpers import run

import symad
from symad.indexed_function import IndexedFunction

TEXT = "sum(i = 1..20000, c*x[i]^2 + d[i]*x[i]) + y*c"


def test_grad_and_eval_hold_the_params() -> None:
    r = run("grad", TEXT, "--at", "x=1,y=2", "--params", "c=3,d=0.5", "--json")
    assert r.returncode == 0, r.stderr
    js = json.loads(r.stdout)
    assert js["params"] == {"c": 3.0, "d": 0.5}
    grad = js["grad"]
    assert set(grad) == {*(f"x[{k}]" for k in range(1, 20001)), "y"}  # no partial along c or d
    f = IndexedFunction(symad.parse(TEXT), wrt=["x", "y"])
    value, want = f.value_and_grad({"x": np.ones(20000), "y": 2.0, "c": 3.0, "d": np.full(20000, 0.5)})
    assert js["value"] == value == 20000 * 3.5 + 6
    assert [grad[f"x[{k}]"] for k in range(1, 20001)] + [grad["y"]] == want.tolist()
    r = run("eval", TEXT, "--at", "x=1,y=2", "--params", "c=3,d=0.5")
    assert (r.returncode, r.stdout) == (0, "70006\n")


def test_the_hessian_and_jacobian_at_a_point_hold_the_params() -> None:
    r = run("hessian", "sum(i = 1..400, c*x[i]^3)", "--at", "x=1", "--params", "c=2")
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines()[:3] == ["f = 800", "hessian: 400 nonzeros of the lower triangle", "d2f/dx[1]2 = 12"]
    r = run("jacobian", "each(i = 1..400, c*x[i]^2); sum(i = 1..400, x[i])", "--at", "x=1", "--params", "c=2",
            "--json")
    assert r.returncode == 0, r.stderr
    js = json.loads(r.stdout)
    assert js["variables"] == ["x[1..400]"] and set(js["jacobian"]["values"]) == {4.0, 1.0}


def test_what_params_cannot_mean_is_refused() -> None:
    for args, said in ((["grad", TEXT, "--at", "x=1,y=2,c=2", "--params", "c=3,d=1"], "c is given by both --at "
                        "and --params"),
                       (["grad", TEXT, "--at", "x=1,y=2", "--params", "z=3"], "--params names z, which the "
                        "expression does not differentiate"),
                       (["hessian", "sum(i = 1..400, c*x[i]^3)", "--params", "c=2"], "add --at"),
                       (["jacobian", "each(i = 1..400, c*x[i]^2)", "--params", "c=2"], "add --at")):
        r = run(*args)
        assert r.returncode == 2 and said in r.stderr, r.stderr
