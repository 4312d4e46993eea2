"""symad jacobian over loops: each(i = ...) families as rows in i, or the nonzeros at a point."""

from __future__ import annotations

import json

import numpy as np
from support.cli_helpers import run

import symad
from symad import Graph

TEXT = "n = 20000; each(i = 1..n-1, x[i+1] - x[i]^2); sum(i = 1..n, x[i]) - 1"


def test_a_family_prints_its_row_and_partials_in_i() -> None:
    r = run("jacobian", TEXT)
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines() == [
        "f1[i] = x[i + 1] - x[i]^2    for i = 1..19999",
        "df1[i]/dx[i + 1] = 1    for i = 1..19999",
        "df1[i]/dx[i] = -(2*x[i])    for i = 1..19999",
        "f2 = sum(i = 1..20000, x[i]) - 1",
        "df2/dx[k] = 1    for k = 1..20000"]


def test_at_a_point_the_values_and_the_nonzeros() -> None:
    r = run("jacobian", TEXT, "--at", "x=2")
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines[0] == "f1[1] = -2" and lines[19999] == "f2 = 39999" and lines[20000] == "jacobian: 59,998 nonzeros"
    assert lines[20001:20003] == ["df1[1]/dx[1] = -4", "df1[1]/dx[2] = 1"] and lines[-1] == "df2/dx[20000] = 1"
    js = json.loads(run("jacobian", TEXT, "--at", "x=2", "--json").stdout)
    F = symad.compile(symad.parse_outputs(TEXT, Graph()))
    rows, cols = F.jacobian_pattern()
    assert js["jacobian"]["rows"] == rows.tolist() and js["jacobian"]["cols"] == cols.tolist()
    assert js["jacobian"]["values"] == F.jacobian_values(np.full(20000, 2.0)).tolist()
    assert js["values"] == F.value(np.full(20000, 2.0)).tolist()


def test_a_familys_row_has_its_partials_along_scalars_and_fixed_entries_too() -> None:
    """f1[i] = x[i]^2 - y + x[5]*x[n]: its partials along y, x[5] and x[n] were left out (exit 0).
    Where two references name one entry (x[i] and x[5] at i = 5) the entry's partial is their sum:
    the Jacobian at a point is what the printed rows add up to (written out below by hand)."""
    text = "n = 400; each(i = 1..n, x[i]^2 - y + x[5]*x[n])"
    r = run("jacobian", text)
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines() == ["f1[i] = x[i]^2 - y + x[5]*x[400]    for i = 1..400",
                                     "df1[i]/dx[i] = 2*x[i]    for i = 1..400",
                                     "df1[i]/dy = -1    for i = 1..400",
                                     "df1[i]/dx[5] = x[400]    for i = 1..400",
                                     "df1[i]/dx[400] = x[5]    for i = 1..400"]
    js = json.loads(run("jacobian", text, "--at", "x=[" + ",".join(str(k / 100) for k in range(1, 401)) + "],y=3",
                        "--json").stdout)
    x = np.arange(1, 401) / 100
    dense = np.zeros((400, 401))  # columns x[1..400], then y
    for i in range(400):
        dense[i, i] += 2 * x[i]
        dense[i, 400] += -1
        dense[i, 4] += x[399]
        dense[i, 399] += x[4]
    got = np.zeros((400, 401))
    got[js["jacobian"]["rows"], js["jacobian"]["cols"]] = js["jacobian"]["values"]
    assert js["variables"] == ["x[1..400]", "y"]
    np.testing.assert_array_equal(got, dense)
