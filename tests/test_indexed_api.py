"""Indexed variables through the Python API and the command line: vectors in, vectors out."""

from __future__ import annotations

import json

import numpy as np
import pytest
from support.cli_helpers import run

import symad
from symad import PointError, SymadError, VariableError

ROSENBROCK = "n = {n}; sum(i = 1..n-1, 100*(x[i+1] - x[i]^2)^2 + (1 - x[i])^2)"


def test_an_indexed_variable_is_a_vector_of_the_api() -> None:
    f = symad.compile(ROSENBROCK.format(n=12))
    assert f.variables[:2] == ("x[1]", "x[2]") and f.variables[-1] == "x[12]"
    x = np.linspace(-1, 1, 12)
    value, grad = f.value_and_grad(x)
    assert grad.shape == (12,)
    for by_name in (f.value_and_grad({"x": x}), f.value_and_grad(x=x)):
        assert by_name[0] == value and np.array_equal(by_name[1], grad)
    # a batch: the last axis runs over the indices
    values, grads = f.value_and_grad(x=np.stack([x, -x]))
    assert values[0] == value and grads.shape == (2, 12)


def test_one_number_sets_every_index() -> None:
    f = symad.compile("sum(i = 1..3, x[i]^2)")
    assert f.value(x=2) == 12.0


def test_a_base_name_selects_the_indexed_variables_to_differentiate() -> None:
    f = symad.compile("sum(i = 1..3, a*x[i]^2) + b", wrt=["x"])
    assert f.variables == ("x[1]", "x[2]", "x[3]") and f.params == ("a", "b")
    value, grad = f.value_and_grad([1, 2, 3], {"a": 2, "b": 1})
    assert value == 29.0 and grad.tolist() == [4.0, 8.0, 12.0]


def test_a_wrong_length_or_a_double_value_is_named() -> None:
    f = symad.compile("sum(i = 1..3, x[i]^2)")
    with pytest.raises(PointError, match=r"x stands for 3 indexed variable\(s\) \(x\[1..3\]\).*shape \(2,\)"):
        f.value(x=[1, 2])
    with pytest.raises(PointError, match=r"x\[1\] is given twice"):
        f.value({"x": [1, 2, 3], "x[1]": 1})
    with pytest.raises(VariableError, match=r"missing value for variable x\[3\]"):
        f.value({"x[1]": 1, "x[2]": 2})


def test_symad_vector_builds_the_same_variables_as_the_text() -> None:
    x = symad.vector("x", 3)
    assert x.shape == (3,) and len(x) == 3 and np.asarray(x).dtype == object  # a symbolic vector, its entries
    assert x @ x == symad.parse("x[1]*x[1] + x[2]*x[2] + x[3]*x[3]")
    f = symad.compile(np.sum(np.exp(x)) + x[0] * x[2])
    assert f.variables == ("x[1]", "x[2]", "x[3]")
    assert np.allclose(f.grad([0, 0, 0]), [1, 1, 1])
    for bad in (("x y", 3), ("x", -1), ("x", 2.0)):
        with pytest.raises(SymadError):
            symad.vector(*bad)


def test_minimize_takes_vector_starts_and_bounds() -> None:
    r = symad.minimize("sum(i = 1..4, (x[i] - i)^2)", {"x": 0}, bounds={"x": (0, 2.5)})
    assert r.success and np.allclose(r.x, [1, 2, 2.5, 2.5])


def test_a_named_point_is_never_reordered() -> None:
    f = symad.compile("x + 2*y^2", variables=["y", "x"])
    ordered = np.array([(1.0, 2.0)], dtype=[("y", float), ("x", float)])[0]
    assert f.value_and_grad(ordered)[1].tolist() == [4.0, 1.0]
    swapped = np.array([(2.0, 1.0)], dtype=[("x", float), ("y", float)])
    with pytest.raises(PointError, match=r"another order \(x, y\) than the function's inputs \(y, x\)"):
        f.value_and_grad(swapped)
    with pytest.raises(VariableError, match="missing value for variable y"):
        f.value(np.array([(2.0, 1.0)], dtype=[("x", float), ("z", float)]))


# ---------------------------------------------------------------- the command line
def test_cli_takes_a_vector_and_single_indices() -> None:
    text = "sum(i = 1..3, x[i]^2)"
    for at in ("x=[1, 2, 3]", "x[1]=1, x[2]=2, x[ 3 ]=3"):
        r = run("grad", text, "--at", at, "--json")
        assert r.returncode == 0, r.stderr
        obj = json.loads(r.stdout)
        assert obj["value"] == 14 and obj["grad"] == {"x[1]": 2, "x[2]": 4, "x[3]": 6}
    r = run("grad", text, "--at", "x=[1, 2]")
    assert r.returncode == 2 and "x stands for 3 indexed variable(s)" in r.stderr and "Traceback" not in r.stderr


def test_cli_stats_of_the_one_line_rosenbrock_equal_the_written_out_form() -> None:
    written = " + ".join(f"(100*(x[{i + 1}] - x[{i}]^2)^2 + (1 - x[{i}])^2)" for i in range(1, 200))
    one, many = run("stats", ROSENBROCK.format(n=200)), run("stats", written)  # short enough to be written out
    assert one.returncode == 0, one.stderr
    assert one.stdout == many.stdout
    assert "variables       x[1..200]\n" in one.stdout and "DAG nodes       1794\n" in one.stdout


def test_cli_minimizes_the_chained_rosenbrock_from_one_number() -> None:
    r = run("minimize", ROSENBROCK.format(n=10), "--from", "x=0", "--json")
    assert r.returncode == 0, r.stderr
    obj = json.loads(r.stdout)
    assert obj["success"] and all(abs(v - 1) < 1e-6 for v in obj["x"].values()) and len(obj["x"]) == 10
