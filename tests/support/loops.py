"""Sums kept as loops against their unrolled form: the oracle of the indexed tests.

The same text is read twice into fresh graphs: once with :data:`symad.core.binders.UNROLL_MAX_TERMS`
lowered (so a short sum stays one loop node) and once with the default limit (unrolled into scalar
nodes, differentiated by the scalar reverse sweep and compiled by the ordinary backends).
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Callable, Iterator, Mapping, Sequence

import numpy as np
from hypothesis import strategies as st

import symad
from symad.core import binders
from symad.core.dag import Graph
from symad.indexed_function import IndexedFunction

LOOP_LIMIT = 3  # a sum over more terms than this stays a loop while `looping` is on


@contextlib.contextmanager
def looping(limit: int = LOOP_LIMIT) -> Iterator[None]:
    """Sums over more than ``limit`` terms stay loops inside the block."""
    saved = binders.UNROLL_MAX_TERMS
    binders.UNROLL_MAX_TERMS = limit
    try:
        yield
    finally:
        binders.UNROLL_MAX_TERMS = saved


def parse_looped(text: str) -> symad.Expr:
    """``text`` in a fresh graph, its sums over more than :data:`LOOP_LIMIT` terms kept as loops."""
    with looping():
        expr = symad.parse(text, Graph())
    assert binders.has_scoped(expr.graph, [expr.id]), f"{text}: no sum stayed a loop"
    return expr


def parse_unrolled(text: str) -> symad.Expr:
    """``text`` in a fresh graph with the default limit: short sums written out."""
    expr = symad.parse(text, Graph())
    assert not binders.has_scoped(expr.graph, [expr.id]), f"{text}: a sum stayed a loop"
    return expr


_ENTRY = re.compile(r"^(\w+)\[(-?\d+)\]$")


def by_entry(values: Mapping[str, object]) -> dict[str, float]:
    """Whole vectors (``{"x": (array, first index)}``) and scalars as ``{"x[3]": ..., "y": ...}``."""
    out: dict[str, float] = {}
    for name, value in values.items():
        if isinstance(value, tuple):
            array, first = value
            out.update({f"{name}[{first + k}]": float(v) for k, v in enumerate(array)})
        else:
            out[name] = float(value)  # type: ignore[arg-type]
    return out


def unrolled_value_and_grad(text: str, point: Mapping[str, object], wrt: Sequence[str] | None = None
                            ) -> tuple[float, dict[str, float]]:
    """The unrolled form's value and ``{entry name: partial}`` at ``point`` (see :func:`by_entry`)."""
    expr = parse_unrolled(text)
    f = symad.compile(expr, wrt=list(wrt) if wrt else None, backend="python")
    entries = by_entry(point)
    params = [{p: entries[p] for p in f.params}] if f.params else []
    value, grad = f.value_and_grad([entries[v] for v in f.variables], *params)
    return float(value), dict(zip(f.variables, map(float, grad)))


def loop_value_and_grad(text: str, point: Mapping[str, object], wrt: Sequence[str] | None = None
                        ) -> tuple[float, dict[str, float], IndexedFunction]:
    """The looped form's value and ``{entry name: partial}`` at ``point``, and its function."""
    f = IndexedFunction(parse_looped(text), wrt=wrt)
    given = {}
    for name, value in point.items():  # each vector cut to the entries the expression reaches
        if isinstance(value, tuple) and name in f.spans:
            (array, first), ((low, high),) = value, f.spans[name]
            assert first <= low and high - first < len(array), f"{text}: the point lacks entries of {name}"
            given[name] = array[low - first:high - first + 1]
        elif not isinstance(value, tuple):
            given[name] = value
    value, grad = f.value_and_grad(given)
    partials: dict[str, float] = {}
    at = 0
    for name in f.wrt:
        span = f.spans.get(name)
        if span is None:
            partials[name] = float(grad[at])
            at += 1
            continue
        ((low, high),) = span
        for k in range(low, high + 1):
            partials[f"{name}[{k}]"] = float(grad[at])
            at += 1
    assert at == len(grad)
    return float(value), partials, f


def term_scales(body: Callable[[str], str], low: int, high: int, point: Mapping[str, object]
                ) -> tuple[float, dict[str, float]]:
    """``(Σ|term|, {entry: Σ|∂term/∂entry|})`` over the terms ``body(str(i))``, i = low..high: the
    magnitudes that bound the rounding of a sum of those terms taken in any order."""
    f = symad.compile([body(str(i)) for i in range(low, high + 1)], backend="python")
    entries = by_entry(point)
    values, jacobian = f.value_and_jacobian([entries[v] for v in f.variables])
    return float(np.abs(values).sum()), dict(zip(f.variables, np.abs(jacobian).sum(axis=0)))


def assert_loop_matches_unrolled(text: str, point: Mapping[str, object], value_scale: float,
                                 grad_scale: Mapping[str, float], wrt: Sequence[str] | None = None,
                                 rtol: float = 1e-13) -> None:
    """Value and gradient of the looped and the unrolled ``text`` equal to within ``rtol`` of the
    magnitudes they add (an entry the unrolled form lacks has partial 0 in the looped one)."""
    value, grad, _ = loop_value_and_grad(text, point, wrt)
    want_value, want_grad = unrolled_value_and_grad(text, point, wrt)
    assert abs(value - want_value) <= rtol * value_scale, (text, value, want_value)
    missing = set(want_grad) - set(grad)
    assert not missing, f"{text}: the loop's gradient lacks {sorted(missing)}"
    for name, partial in grad.items():
        want = want_grad.get(name, 0.0)
        bound = rtol * (grad_scale.get(name, 0.0) + abs(want))
        assert abs(partial - want) <= bound, (text, name, partial, want)


_OFFSETS = (-2, -1, 0, 1, 2)


def loop_bodies() -> st.SearchStrategy[Callable[[str], str]]:
    """Bodies built from entries x[i + c] (and one reversed, x[48 - i]), the scalar y, the index
    as a number, constants, and the ops the loops lower: arithmetic, powers, where, max, abs, sin."""
    leaves = st.one_of(
        st.sampled_from(_OFFSETS).map(lambda c: lambda i: f"x[{i}{c:+d}]"),
        st.just(lambda i: f"x[48-{i}]"),
        st.just(lambda i: "y"),
        st.just(lambda i: f"({i}/20)"),
        st.sampled_from(["0.5", "2", "3"]).map(lambda c: lambda i: c),
    )

    def extend(inner: st.SearchStrategy) -> st.SearchStrategy:
        unary = st.tuples(st.sampled_from(["sin", "tanh", "abs", "-", "sq"]), inner).map(
            lambda t: (lambda i: f"({t[1](i)})^2") if t[0] == "sq" else (lambda i: f"{t[0]}({t[1](i)})"))
        binary = st.tuples(st.sampled_from(["+", "-", "*"]), inner, inner).map(
            lambda t: lambda i: f"({t[1](i)} {t[0]} {t[2](i)})")
        maxed = st.tuples(inner, inner).map(lambda t: lambda i: f"max({t[0](i)}, {t[1](i)})")
        branch = st.tuples(inner, inner, inner).map(
            lambda t: lambda i: f"where({t[0](i)} > 0, {t[1](i)}, {t[2](i)})")
        return st.one_of(unary, binary, maxed, branch)

    return st.recursive(leaves, extend, max_leaves=6).filter(lambda b: "x[" in b("i"))
