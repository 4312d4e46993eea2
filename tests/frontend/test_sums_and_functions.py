"""Indexed variables, sums and products over ranges, and functions defined in the text."""

from __future__ import annotations

import numpy as np
import pytest

import symad
from symad import Graph, LimitError, ParseError, UnknownFunctionError, parse
from symad.core.limits import override
from symad.frontend.parser import parse_into

ROSENBROCK = "n = 100; sum(i = 1..n-1, 100*(x[i+1] - x[i]^2)^2 + (1 - x[i])^2)"


def written_out(n: int) -> str:
    """The chained Rosenbrock as a script would generate it: one parenthesised term per i."""
    return " + ".join(f"(100*(x[{i + 1}] - x[{i}]^2)^2 + (1 - x[{i}])^2)" for i in range(1, n))


def same_node(a: str, b: str) -> bool:
    g = Graph()
    return parse_into(a, g) == parse_into(b, g)


# ---------------------------------------------------------------- sums and products
def test_the_one_line_rosenbrock_is_the_written_out_dag() -> None:
    g = Graph()
    one, many = parse_into(ROSENBROCK, g), parse_into(written_out(100), g)
    assert one == many  # hash-consing: the same DAG is the same node
    e = symad.parse(ROSENBROCK)
    assert len(e.variables) == 100 and e.variables[:3] == ("x[1]", "x[2]", "x[3]")
    assert e.variables[9] == "x[10]"  # natural order: x[2] before x[10]
    value, grad = e.compile().value_and_grad(np.ones(100))
    assert value == 0.0 and not grad.any()


@pytest.mark.parametrize(("text", "expanded"), [
    ("sum(i = 1..3, x[i]^2)", "x[1]^2 + x[2]^2 + x[3]^2"),
    ("prod(k = 1..3, y + k)", "(y + 1)*(y + 2)*(y + 3)"),
    ("n = 4; sum(i = 2..n-1, i*x[i])", "2*x[2] + 3*x[3]"),
    ("sum(i = 1..2, sum(j = i..2, x[i]*x[j]))", "x[1]*x[1] + x[1]*x[2] + x[2]*x[2]"),
    ("sum(i = 1..3, x[2*i - 1])", "x[1] + x[3] + x[5]"),
    ("sum(i = -1..1, x[i])", "x[-1] + x[0] + x[1]"),
    ("sum(i = 3..2, x[i])", "0"),  # an empty range: the sum is 0
    ("prod(i = 3..2, x[i])", "1"),  # and the product 1
    ("sum(i = 1..1, x[i]) + sum(i = 1..2, y)", "x[1] + (y + y)"),  # an index is local to its sum
])
def test_sums_unroll_into_the_expression_written_out(text: str, expanded: str) -> None:
    assert same_node(text, expanded)


def test_an_indexed_variable_prints_and_parses_back() -> None:
    g = Graph()  # a product's factors print in the order their nodes were made: in a fresh graph, as typed
    e = parse("sum(i = 1..3, sin(x[i])*x[i+1])", g)
    assert parse(str(e), g) == e and parse(str(e)) == e
    assert str(e) == "sin(x[1])*x[2] + sin(x[2])*x[3] + sin(x[3])*x[4]"
    assert symad.to_postfix("x[i+1]")[-1].kind == "index"


def test_nested_sums_do_not_recurse_in_python() -> None:
    depth = 1100  # past Python's recursion limit (each level replays the levels inside it: 600k steps)
    text = "".join(f"sum(i{k} = 1..1, " for k in range(depth)) + "x[i0]" + ")" * depth
    assert same_node(text, "x[1]")


def test_a_huge_range_is_refused_at_once() -> None:
    for reduction in ("sum", "prod"):
        g = Graph()
        parse(f"{reduction}(i = 1..2^31, x[i])", g)  # one node: the graph does not grow with the range
        assert len(g) < 10
    with override(max_nodes=1000), pytest.raises(LimitError, match="1,000 steps"):
        parse("sum(i = 1..17, sum(j = 1..17, x[i]*x[j]))", Graph())  # written out: under 300 terms


@pytest.mark.parametrize(("text", "message"), [
    ("sum(i = 1..y, x[i])", "the last bound of sum must be a number known as the text is read"),
    ("sum(i = 0.5..2, x[i])", "the first bound of sum must be a whole number, not 0.5"),
    ("sum(i = 1..10^12, x[i])", "beyond ±2^31"),
    ("x[y]", "the index of x must be a number known"),
    ("x[0.5]", "the index of x must be a whole number"),
    ("sum(i = 1..3, x[i]) + x", "x is used both as a variable and indexed"),
    ("sum(i = 1..3, sum(i = 1..2, x[i]))", "the index i is already a name here"),
    ("i = 2; sum(i = 1..3, x[i])", "the index i is already a name here"),
    ("pi[1]", "pi is a number or an expression, not an indexed variable"),
    ("a = 2; a[1]", "a is a number or an expression"),
    ("mean(i = 1..2, x)", "only sum, prod and each run an index over a range"),
])
def test_bad_sums_and_indices_are_named(text: str, message: str) -> None:
    with pytest.raises(ParseError, match=message.replace("^", r"\^").replace("(", r"\(").replace("+", r"\+")):
        parse(text)


def test_sum_called_as_a_function_says_how_to_write_it() -> None:
    with pytest.raises(UnknownFunctionError, match=r"sum runs an index over a range: sum\(i = 1..n, x\[i\]\)"):
        parse("sum(x, y)")


def test_a_range_after_a_number_is_not_a_decimal_point() -> None:
    assert same_node("sum(i = 1..2, x[i])", "x[1] + x[2]")
    assert parse("1. + x") == parse("1 + x")  # `1.` is still a number


# ---------------------------------------------------------------- functions in the text
@pytest.mark.parametrize(("text", "expanded"), [
    ("f(t) = t^2 + sin(t); f(x) + f(y)^2", "x^2 + sin(x) + (y^2 + sin(y))^2"),
    ("f(a, b) = a*b - b; f(x, y + 1)", "x*(y + 1) - (y + 1)"),
    ("f(t) = t^2; g(t) = f(t) + f(2*t); g(x)", "x^2 + (2*x)^2"),
    ("f(n) = sum(i = 1..n, x[i]); f(3)", "x[1] + x[2] + x[3]"),  # a parameter as a bound
    ("f(t) = t^2; sum(i = 1..2, f(x[i]))", "x[1]^2 + x[2]^2"),
    ("a = x + 1; f(t) = a*t; f(y)", "(x + 1)*y"),  # a definition made before the function
    ("f(t) = t*a; a = 2; f(x)", "x*a"),  # one made after it is not the function's: a is a variable
    ("f(t) = t*i; sum(i = 1..2, f(x))", "x*i + x*i"),  # nor is the caller's index
    ("f(x) = x^2; f(y)", "y^2"),  # a parameter may share a variable's name
])
def test_functions_inline_with_lexical_scope(text: str, expanded: str) -> None:
    assert same_node(text, expanded)


def test_a_doubling_chain_of_functions_inlines_each_call_once() -> None:
    defs = "f0(t) = t + 1; " + "".join(f"f{k}(t) = f{k - 1}(t)*f{k - 1}(t); " for k in range(1, 60))
    with override(max_nodes=10_000):  # 2^59 calls written out; one per distinct argument here
        e = parse(defs + "f59(x)", Graph())
    assert e.compile().value(x=0.0) == 1.0


@pytest.mark.parametrize(("text", "error", "message"), [
    ("f(t) = f(t) + 1; f(x)", ParseError, "f calls itself"),
    ("f(t) = t; f(x, y)", UnknownFunctionError, "f takes 1 argument"),
    ("g(x) + 1; g(t) = t", UnknownFunctionError, "unknown function 'g'.*define it before use"),
    ("sin(t) = t; 1", ParseError, "cannot define sin: it is a built-in name"),
    ("sum(t) = t; 1", ParseError, "cannot define sum"),
    ("f(t + 1) = t; 1", ParseError, "the parameters of f must be names"),
    ("f(t, t) = t; 1", ParseError, "f names the parameter t twice"),
    ("f(pi) = pi; 1", ParseError, "pi is a constant, not a parameter name"),
    ("f(t) = t; f + 1", UnknownFunctionError, "f is a function: call it as f"),
    ("f(t) = t; f = 2; 1", ParseError, "f is defined twice"),
    ("f(t) = t; f(u) = u; 1", ParseError, "f is defined twice"),
    ("a = 1; a(t) = t; 1", ParseError, "a is already defined"),
    ("f(t) = t[1]; f(x)", ParseError, "t is a number or an expression"),
])
def test_bad_functions_are_named(text: str, error: type, message: str) -> None:
    with pytest.raises(error, match=message):
        parse(text)


def test_postfix_shows_bodies_and_ranges() -> None:
    words = [str(t) for t in symad.to_postfix("f(t) = t^2; sum(i = 1..3, f(x[i]))")]
    assert words == ["t", "{f(t)", "t", "2", "^", "}", "1", "3", "{sum i", "i", "x[]", "f", "}"]
