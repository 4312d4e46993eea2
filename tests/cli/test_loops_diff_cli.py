"""symad diff over sums and products kept as loops: a loop the partials would print more than once
is named once (_1 = prod(...);), as the written-out partials' shared parts are."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest
from hypothesis import assume, given
from hypothesis import strategies as st
from support.cli_helpers import run
from support.loops import loop_bodies, looping
from support.properties import property_test

import symad
from symad import Graph
from symad.core import binders
from symad.indexed_function import IndexedFunction

PRODUCT = "prod(i = 1..20000, x[i]^2) + y*sum(i = 1..20000, x[i]) + y^2"


def _as_one_expression(definitions: list[str], body: str, span: str) -> str:
    """The listing as one text: its definitions, then the partial summed over its range (so that
    k is bound and the text parses)."""
    return "".join(definitions) + f"sum(k = {span}, {body})"


def test_a_loop_printed_twice_is_named_once_and_means_the_inline_partial() -> None:
    r = run("diff", PRODUCT)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    definitions = [line for line in lines if re.match(r"_\d+ = ", line)]
    assert definitions[0] == "_1 = prod(i = 1..20000, x[i]^2);"
    (row,) = [line for line in lines if line.startswith("df/dx[k] = ")]
    body, span = row[len("df/dx[k] = "):].split("    for k = ")
    assert span == "1..20000" and "prod(" not in body and "sum(" not in body
    assert lines[-1] == "df/dy = sum(i = 1..20000, x[i]) + 2*y"  # printed once: left inline
    # the names stand for what the partial printed inline says: the same node, parsed
    inline = dict((label, text) for label, text, _ in IndexedFunction(symad.parse(PRODUCT)).gradient_text())
    g = Graph()
    named = symad.parse(_as_one_expression(definitions, body, span), g)
    assert named.id == symad.parse(_as_one_expression([], inline["x[k]"], span), g).id
    js = json.loads(run("diff", PRODUCT, "--json").stdout)
    assert js["shared"]["_1"] == "prod(i = 1..20000, x[i]^2)"
    assert js["diff"]["x[k]"] == body and js["ranges"]["x[k]"] == [1, 20000]


def test_partials_that_print_each_loop_once_stay_inline() -> None:
    r = run("diff", "sum(i = 1..20000, x[i]^2*sum(j = 1..20000, x[j]))", "--json")
    js = json.loads(r.stdout)
    assert "shared" not in js
    assert js["diff"] == {"x[k]": "sum(i = 1..20000, x[i])*(2*x[k]) + sum(i = 1..20000, x[i]^2)"}


def test_latex_of_a_loop_gradient_names_its_loops_and_gives_the_range() -> None:
    r = run("diff", PRODUCT, "--latex")
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines[0] == r"\begin{aligned}" and lines[-1] == r"\end{aligned}"
    assert lines[1] == r"t_{1} &= \prod_{i=1}^{20000} x_{i}^{2} \\"
    (row,) = [line for line in lines if line.startswith(r"\frac{\partial f}{\partial x_{k}} &= ")]
    assert row.endswith(r" \qquad k = 1, \dots, 20000 \\") and r"\prod" not in row and r"\sum" not in row
    assert lines[-2] == r"\frac{\partial f}{\partial y} &= \sum_{i=1}^{20000} x_{i} + 2\,y"
    text = r.stdout
    assert text.count("{") == text.count("}") and text.count(r"\left") == text.count(r"\right")
    js = json.loads(run("diff", PRODUCT, "--latex", "--json").stdout)
    assert js["latex"] == text.rstrip("\n")


def test_an_entry_of_a_vector_kept_in_loops_gets_its_own_partial() -> None:
    """--wrt x[3] (refused with loops, while written out it worked): the vector's row at k = 3,
    folded; an entry past the vector's range is 0 with a warning, as an absent variable is."""
    text = "sum(i = 1..20000, x[i]^2*x[i+1]) + x[3]*y"
    r = run("diff", text, "--wrt", "y,x[3],x[20001],x[20005]")
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines() == ["df/dy = x[3]", "df/dx[3] = y + (x[4]*(2*x[3]) + x[2]^2)",
                                     "df/dx[20001] = x[20000]^2", "df/dx[20005] = 0"]
    assert "x[20005] does not appear in the expression (x runs over 1..20001): its derivative is 0" in r.stderr
    point = {"x": np.linspace(-1, 1, 20001), "y": 0.25}
    grad = IndexedFunction(symad.parse(text)).value_and_grad(point)[1]
    x = point["x"]
    assert float(symad.parse("y + (x4*(2*x3) + x2^2)").compile()(x2=x[1], x3=x[2], x4=x[3], y=0.25)) \
        == pytest.approx(grad[2], rel=1e-15)  # (the flat gradient: x[1..20001], then y)
    js = json.loads(run("diff", text, "--wrt", "x[3]", "--json").stdout)
    assert js["diff"] == {"x[3]": "y + (x[4]*(2*x[3]) + x[2]^2)"} and js["ranges"] == {}
    r = run("diff", text, "--wrt", "y[2]")  # an entry of no vector (y is a scalar): 0, warned (was a KeyError)
    assert (r.returncode, r.stdout) == (0, "df/dy[2] = 0\n") and "y is no vector of it" in r.stderr
    r = run("diff", text, "--wrt", "x[2]", "--latex")
    assert r.stdout.splitlines()[1] == r"\frac{\partial f}{\partial x_{2}} &= x_{3} \cdot 2\,x_{2} + x_{1}^{2}"


@property_test(40)
@given(body=loop_bodies(), wrap=st.sampled_from(["prod(i = 3..42, 1 + ({b})/4)", "sum(i = 3..42, {b})^2",
                                                  "sin(sum(i = 3..42, {b}))*prod(i = 3..42, 2 + cos({b}))"]))
def test_named_loops_mean_what_the_inline_partials_say(body, wrap) -> None:
    """The listing's definitions and rows, read back (each row summed over its range so that k is
    bound), are the same nodes as the rows printed inline."""
    with looping():
        expr = symad.parse(wrap.format(b=body("i")), Graph())
    assume(binders.has_scoped(expr.graph, [expr.id]))
    f = IndexedFunction(expr)
    definitions, rows = f.gradient_listing("shared")
    _, inline = f.gradient_listing("inline")
    assert definitions or not wrap.startswith("prod")  # a product's partials print its loops twice: named
    g = Graph()
    defs = "".join(f"{name} = {value};" for name, value in definitions)
    with looping():
        for (label, text, span), (_, plain, _) in zip(rows, inline):
            named, whole = (f"sum(k = {span[0]}..{span[1]}, {t})" if span else t for t in (text, plain))
            assert symad.parse(defs + named, g).id == symad.parse(whole, g).id, (label, text)
