"""An expression with a sum kept as a loop through Expr's own methods: grad, diff, stats, compile."""

from __future__ import annotations

import numpy as np
import pytest

import symad
from symad.core.dag import Graph
from symad.indexed_function import IndexedFunction

TEXT = "n = 20000; sum(i = 1..n-1, 100*(x[i+1] - x[i]^2)^2 + (1 - x[i])^2) + y^2*x[3]"


def test_grad_gives_a_vectors_partial_as_one_each_expression() -> None:
    e = symad.parse(TEXT, Graph())
    grads = e.grad()
    assert sorted(grads) == ["x", "y"]
    assert str(grads["x"]).startswith("each(i = 1..20000, ") and "where(i == 3, y^2" in str(grads["x"])
    assert symad.parse(str(grads["x"]), e.graph) == grads["x"]  # prints and parses back
    assert e.diff("x") == grads["x"] and str(e.diff("y")) == "x[3]*(2*y)"
    with pytest.raises(symad.VariableError, match="z is not a variable or vector"):
        e.grad(["z"])


def test_compile_and_stats_take_loops() -> None:
    e = symad.parse(TEXT, Graph())
    f = e.compile()
    assert isinstance(f, IndexedFunction) and f.variables == ("x[1..20000]", "y")
    value, grad = f.value_and_grad(np.concatenate([np.ones(20000), [2.0]]))
    assert value == 4.0 and grad[2] == 4.0 and grad[-1] == 4.0
    stats = e.stats()
    assert stats["dag_nodes"] < 40 and stats["variables"] == ["y", "x[1..20000]"]
    assert list(stats["ops"])[-3:] == ["item", "sum", "vector"]
