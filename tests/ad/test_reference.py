"""The floats-only reference reverse mode (``symad/ad/reference.py``) against the full machinery.

On random expressions without ``where`` (whose strong zeros the reference leaves out), the
reference's value and gradient must be the bits of symad's gradient, built as nodes and
compiled to Python code.  And ``docs/reference/reading.md``, which walks through the reference, quotes
it as it is.
"""

from __future__ import annotations

import math
import re
from pathlib import Path

import numpy as np
from hypothesis import given
from hypothesis import strategies as st
from support.expressions import expressions, points
from support.properties import property_test, text_variables

import symad
from symad import Graph
from symad.ad import reference
from symad.ad.sweep import canonical_order
from symad.core.ops import OPS

ROOT = Path(__file__).resolve().parents[2]
BRANCHES = frozenset(name for name, spec in OPS.items() if spec.arms)


def bits(v: float) -> str:
    return float(v).hex()


def test_a_small_example():
    e = symad.parse("(x+y)+x*(x+y)", Graph())
    assert reference.value_and_grad(e.graph, e.id, {"x": 1.0, "y": 2.0}) == (6.0, {"x": 5.0, "y": 2.0})


def test_a_deep_chain_needs_no_recursion():
    e = symad.parse("x" + "".join(f" * (1 + {k}e-6*x)" for k in range(3000)), Graph())
    value, grad = reference.value_and_grad(e.graph, e.id, {"x": 0.5})
    assert math.isfinite(value) and math.isfinite(grad["x"])


def test_matches_the_compiled_gradient_bit_for_bit(property_tally):
    tally = property_tally("random expressions, reference reverse mode vs compiled gradient")

    @property_test(400)
    @given(text=expressions(sums=True), data=st.data())
    def check(text, data):
        e = symad.parse(text, Graph())
        names = text_variables(text)
        point = data.draw(points(names, special=True), label="point")
        tally.tried += 1
        if any(e.graph.op[n] in BRANCHES for n in canonical_order(e.graph, [e.id])):
            return tally.skip("a where (strong zeros)")
        program = e.compile(variables=list(names), backend="python").value_grad_program()
        want = program.point(np.array([point[n] for n in names], dtype=float)).tolist()
        if not all(math.isfinite(v) for v in want):
            return tally.skip("non-finite")
        try:
            value, grad = reference.value_and_grad(e.graph, e.id, point)
        except (ValueError, ZeroDivisionError, OverflowError):
            return tally.skip("math raises (a NumPy retry in symad)")
        got = [value, *(grad.get(n, 0.0) for n in names)]
        # (the one difference the reference documents: a zero of the other sign, where symad's
        # graph folds `0*a` to 0 and `a + 0` to a: not once in 30,000 examples of several seeds)
        bad = [f"{label}: {bits(g)} vs symad {bits(w)}" for label, g, w in zip(["value", *names], got, want)
               if bits(g) != bits(w) and not g == w == 0.0]
        tally.compared_with(bad, f"{text} at {point}")

    check()
    assert tally.compared >= 0.5 * tally.tried, tally.line()


def test_it_adds_in_the_canonical_order():
    """In a graph that held other nodes first (node ids in another order), the reference still
    adds each adjoint's contributions in the order of the symbolic gradient: its bits."""
    text = "sin(x)*cos(y*x) + x*exp(x/3) + x^3*y + log(x+y)*x + sqrt(x*y+1)/(x+2)"
    program = symad.parse(text, Graph()).compile(backend="python").value_grad_program()
    g = Graph()
    for part in ["x/3", "y*x + 1", "sin(x)*cos(y*x)", "x^3*y", "log(x+y)*x", "sqrt(x*y+1)/(x+2)"]:
        symad.parse(part, g)
    e = symad.parse(text, g)
    for x, y in np.random.default_rng(0).uniform(0.1, 3.0, size=(300, 2)):
        value, grad = reference.value_and_grad(g, e.id, {"x": x, "y": y})
        assert [bits(v) for v in (value, grad["x"], grad["y"])] == [bits(v) for v in program.point(np.array([x, y]))]


def test_what_it_leaves_out_a_rewrite_of_zero():
    """symad's graph folds ``0*a`` to 0, a sum of terms that cancel to a zero adjoint then
    passes on +0; the reference multiplies floats: -0 where the partial is negative."""
    e = symad.parse("2*sin(x) + -2*sin(x)", Graph())
    assert bits(reference.value_and_grad(e.graph, e.id, {"x": 2.5})[1]["x"]) == bits(-0.0)
    assert bits(e.compile(backend="python").value_grad_program().point(np.array([2.5]))[1]) == bits(0.0)


def test_the_reading_page_quotes_the_code_as_it_is():
    """Each code listing of docs/reference/reading.md names the file it quotes on its first line
    (``# reference.py`` is symad/ad/reference.py) and is that file's text, verbatim."""
    page = (ROOT / "docs" / "reference" / "reading.md").read_text()
    blocks = re.findall(r"```text\n(.*?)```", page, flags=re.S)
    assert sum(block.startswith("# reference.py\n") for block in blocks) >= 5
    for block in blocks:
        header, _, body = block.partition("\n")
        path = "symad/ad/reference.py" if header == "# reference.py" else header.removeprefix("# ")
        assert (ROOT / path).is_file(), f"docs/reference/reading.md: a listing names no file of the checkout: {header}"
        assert body in (ROOT / path).read_text(), f"reading.md quotes lines {path} does not have:\n{body}"
