"""LaTeX: every op renders, fractions, powers and function names as in mathematics, the fewest
parentheses, balanced groups on random expressions, shared parts named for big derivatives."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st
from support.expressions import NAMES, expressions
from support.properties import property_test

import symad
from symad import Graph
from symad.core.latex import latex_name, latex_number, to_latex
from symad.core.ops import FUNCTIONS, OPS


def latex(text: str) -> str:
    e = symad.parse(text, Graph())
    return to_latex(e.graph, e.id)


@pytest.mark.parametrize(("text", "want"), [
    ("sin(x)^2/sqrt(1+y)", r"\frac{\sin\left(x\right)^{2}}{\sqrt{y + 1}}"),
    ("(x+y)+x*(x+y)", r"x + y + x\,\left(x + y\right)"),
    ("x*2", r"2\,x"),
    ("x*(2*y)", r"x \cdot 2\,y"),
    ("x*(-y)", r"x\,\left(-y\right)"),
    ("(a-b)-(c-d)", r"a - b - \left(c - d\right)"),
    ("(x/y)^2", r"\left(\frac{x}{y}\right)^{2}"),
    ("x^(y+1)", r"x^{y + 1}"),
    ("2^3^x", r"2^{3^{x}}"),
    ("-x^2", r"-x^{2}"),
    ("(-x)^2", r"\left(-x\right)^{2}"),
    ("abs(x) + floor(y) + ceil(z)", r"\left|x\right| + \left\lfloor y\right\rfloor + \left\lceil z\right\rceil"),
    ("softplus(x)", r"\operatorname{softplus}\left(x\right)"),
    ("atan2(y, x)", r"\operatorname{atan2}\left(y, x\right)"),
    ("asin(x) + exp(x) + log(x)", r"\arcsin\left(x\right) + \exp\left(x\right) + \log\left(x\right)"),
    ("where(x > 0, sqrt(x), 0)", r"\begin{cases} \sqrt{x} & \text{if } x > 0 \\ 0 & \text{otherwise} \end{cases}"),
    ("not (x < 1) and y >= 2", r"\lnot \left(x < 1\right) \land y \ge 2"),
    ("x != y or x <= 1", r"x \ne y \lor x \le 1"),
])
def test_forms_and_parentheses(text: str, want: str) -> None:
    assert latex(text) == want


@pytest.mark.parametrize(("name", "want"), [
    ("x", "x"), ("x2", "x_{2}"), ("x_10", "x_{10}"), ("x[3]", "x_{3}"), ("theta", r"\theta"),
    ("theta_2", r"\theta_{2}"), ("rate", r"\mathit{rate}"), ("learning_rate", r"\mathit{learning\_rate}"),
])
def test_names(name: str, want: str) -> None:
    assert latex_name(name) == want


@pytest.mark.parametrize(("value", "want"), [
    (2.0, "2"), (0.5, "0.5"), (3.141592653589793, r"\pi"), (float("inf"), r"\infty"), (1e-05, "10^{-5}"),
    (1.5e-07, r"1.5 \cdot 10^{-7}"), (-2.5e300, r"-2.5 \cdot 10^{300}"),
])
def test_numbers(value: float, want: str) -> None:
    assert latex_number(value) == want


def test_every_operation_renders() -> None:
    for name, spec in OPS.items():
        if spec.arity:
            args = ", ".join("xyz"[:spec.arity])
            g = Graph()
            node = g.make(name, *(g.var(v) for v in "xyz"[:spec.arity]))
            out = to_latex(g, node)
            assert out and "None" not in out, (name, args)
    for name in FUNCTIONS:
        assert latex(f"{name}({', '.join('xyz'[:min(FUNCTIONS[name])])})")


def balanced(text: str) -> bool:
    depth = 0
    for ch in text:
        depth += ch == "{"
        depth -= ch == "}"
        if depth < 0:
            return False
    return depth == 0 and text.count(r"\left") == text.count(r"\right") \
        and text.count(r"\begin{") == text.count(r"\end{")


@property_test(300)
@given(text=st.one_of(expressions(sums=True), expressions(variables=NAMES)))
def test_random_expressions_give_balanced_latex(text: str) -> None:
    e = symad.parse(text, Graph())
    out = e.latex()
    assert balanced(out), out


def test_big_derivatives_name_their_shared_parts() -> None:
    levels = "".join(f"t{k} = t{k - 1}*t{k - 1} + t{k - 1}; " for k in range(1, 9))
    e = symad.parse("t0 = sin(x*y) + cos(x*y); " + levels + "t8", Graph())
    out = e.latex()
    assert out.startswith("\\begin{aligned}\nt_{1} &= ") and "\nf &= " in out
    assert len(out) < 2000 and balanced(out)
    assert e._repr_latex_().startswith("$\\displaystyle ")


# ---------------------------------------------------------------- the command line
def test_cli_latex_on_diff_hessian_and_explain() -> None:
    from support.cli_helpers import run

    r = run("diff", "x^3*y", "--latex")
    assert r.returncode == 0, r.stderr
    assert r.stdout == ("\\begin{aligned}\n\\frac{\\partial f}{\\partial x} &= y \\cdot 3\\,x^{2} \\\\\n"
                        "\\frac{\\partial f}{\\partial y} &= x^{3}\n\\end{aligned}\n")
    r = run("hessian", "x^3*y", "--latex")
    assert r.returncode == 0 and r.stdout.startswith("\\begin{pmatrix}\n") and balanced(r.stdout), r.stderr
    r = run("hessian", "x^3*y", "--latex", "--at", "x=1,y=2")
    assert r.returncode == 2 and "--latex prints the Hessian's expressions" in r.stderr
    r = run("explain", "(x+y)+x*(x+y)", "--at", "x=1,y=2", "--latex")
    assert r.returncode == 0, r.stderr
    assert "\\bar{z}_{1} &= \\bar{z}_{4} \\cdot z_{3} + \\bar{z}_{3} \\cdot 1 = 1 \\cdot 3 + 2 \\cdot 1 = 5" in r.stdout
    assert balanced(r.stdout)
    r = run("explain", "where(x > 0, sqrt(x), 0)", "--at", "x=-1", "--latex")
    assert "0\\ \\text{(branch not taken)}" in r.stdout and "z_{2} &= \\left(z_{1} > 0\\right) = 0" in r.stdout
