"""``symad jacobian``: several outputs on the installed command line."""

from __future__ import annotations

import json

from support.cli_helpers import run


def test_one_output_per_line_with_its_partials() -> None:
    r = run("jacobian", "x*y; x + y; sin(x)", "--at", "x=1,y=2")
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert len(lines) == 3
    assert lines[0].split() == ["f1", "=", "2", "df1/dx", "=", "2", "df1/dy", "=", "1"]
    assert lines[2].split()[-3:] == ["df3/dy", "=", "0"]


def test_json_has_the_values_and_the_matrix() -> None:
    r = run("jacobian", "t = x*y; t + x; t - y", "--at", "x=1,y=2", "--json")
    assert r.returncode == 0, r.stderr
    obj = json.loads(r.stdout)
    assert obj["variables"] == ["x", "y"]
    assert obj["values"] == [3.0, 0.0]
    assert obj["jacobian"] == [[3.0, 1.0], [2.0, 0.0]]


def test_params_are_held_and_not_differentiated() -> None:
    r = run("jacobian", "a*x^2; x*y", "--at", "x=3,y=1", "--params", "a=2", "--json")
    obj = json.loads(r.stdout)
    assert obj["params"] == {"a": 2.0} and obj["variables"] == ["x", "y"]
    assert obj["jacobian"] == [[12.0, 0.0], [1.0, 3.0]]


def test_without_a_point_the_partials_are_expressions() -> None:
    r = run("jacobian", "x*y; x + y")
    assert r.returncode == 0, r.stderr
    assert "df1/dx = y" in r.stdout and "df2/dy = 1" in r.stdout


def test_non_finite_entries_are_explained_and_one_output_commands_say_why_they_refuse() -> None:
    r = run("jacobian", "x; log(x - 1)", "--at", "x=1")
    assert r.returncode == 0
    assert "symad: warning: f2 = -inf at x=1: log(x - 1) = -inf" in r.stderr
    r = run("grad", "x; y", "--at", "x=1,y=2")
    assert r.returncode == 2
    assert "expected one expression, got 2 separated by ';'" in r.stderr and "Traceback" not in r.stderr
