"""Text → postfix → DAG: the grammar, precedence, and syntax errors."""

import math

import pytest

import symad
from symad import ParseError, UnknownFunctionError, parse, to_postfix
from symad.parser import grammar_text


def postfix(text: str) -> str:
    return " ".join(map(str, to_postfix(text)))


@pytest.mark.parametrize("text, expected", [
    ("(x+y)+x*(x+y)", "x y + x x y + * +"),
    ("-x^2", "x 2 ^ neg"),
    ("2^3^2", "2 3 2 ^ ^"),
    ("x**-2", "x 2 neg ^"),
    ("a-b-c", "a b - c -"),
    ("a/b/c", "a b / c /"),
    ("a+b*c", "a b c * +"),
    ("+x", "x"),
    ("atan2(y, x)", "y x atan2"),
    ("log(x, 2)", "x 2 log/2"),
    ("min(a, max(b, c))", "a b c max min"),
    ("sin(x)^2/sqrt(1+y)", "x sin 2 ^ 1 y + sqrt /"),
])
def test_postfix(text, expected):
    assert postfix(text) == expected


@pytest.mark.parametrize("text, value", [
    ("2", 2.0), ("3.5", 3.5), (".5", 0.5), ("1e-3", 1e-3), ("6.02E23", 6.02e23), ("5.", 5.0),
    ("pi", math.pi), ("e", math.e), ("2^3^2", 512.0), ("-2^2", -4.0), ("2**3", 8.0),
    ("(-2)^2", 4.0), ("10-4-3", 3.0), ("100/10/5", 2.0), ("2^-1", 0.5),
    ("log(8, 2)", 3.0), ("pow(2, 10)", 1024.0), ("min(3, 4) + max(3, 4)", 7.0),
    ("atan2(1, 1)", math.pi / 4), ("abs(-3)", 3.0),
])
def test_values(text, value):
    assert parse(text).evaluate() == pytest.approx(value, rel=1e-15)


@pytest.mark.parametrize("name", ["x", "x1", "theta_2", "_t", "X"])
def test_variable_names(name):
    assert parse(name).variables == (name,)


def test_functions_cover_the_required_set():
    for name in "sin cos tan asin acos atan sinh cosh tanh exp log sqrt abs".split():
        assert parse(f"{name}(x)").op == name
    assert parse("atan2(y, x)").op == "atan2"
    assert parse("pow(a, b)") == parse("a^b")


@pytest.mark.parametrize("text, column, fragment", [
    ("x+", 3, "end of input"),
    ("x*(y+", 6, "end of input"),
    ("(x", 3, "')'"),
    ("x $ 2", 3, "'$'"),
    ("x y", 3, "unexpected"),
    ("2 +* 3", 4, "unexpected"),
    (")", 1, "unexpected"),
    ("", 1, "end of input"),
])
def test_syntax_errors_point_at_the_column(text, column, fragment):
    with pytest.raises(ParseError) as info:
        parse(text)
    err = info.value
    assert err.column == column
    assert fragment in str(err)
    assert "^" in str(err) or not text


def test_error_caret_lines_up():
    with pytest.raises(ParseError) as info:
        parse("sin(x) + * 2")
    lines = str(info.value).splitlines()
    assert lines[1].strip() == "sin(x) + * 2"
    assert lines[2].index("^") == lines[1].index("*")


def test_expected_tokens_are_named():
    with pytest.raises(ParseError) as info:
        parse("x*")
    assert "a number" in info.value.expected and "a name" in info.value.expected


def test_unknown_function():
    with pytest.raises(UnknownFunctionError, match="unknown function 'foo'") as info:
        parse("1 + foo(x)")
    assert info.value.column == 5


def test_wrong_arity():
    with pytest.raises(UnknownFunctionError, match="sin takes 1 argument"):
        parse("sin(x, y)")
    with pytest.raises(UnknownFunctionError, match="atan2 takes 2"):
        parse("atan2(x)")


def test_function_name_without_call():
    with pytest.raises(UnknownFunctionError, match="sin is a function"):
        parse("sin + 1")


def test_parse_rejects_non_strings():
    with pytest.raises(TypeError):
        parse(42)  # type: ignore[arg-type]


def test_grammar_is_the_checked_in_file():
    from pathlib import Path

    repo = Path(__file__).resolve().parent.parent
    assert grammar_text() == (repo / "grammar" / "symad.lark").read_text()


def test_no_eval_or_exec_of_user_text():
    """The only exec in the package runs generated code (compiler.py), never user text."""
    import re
    from pathlib import Path

    pkg = Path(symad.__file__).parent
    for path in pkg.glob("*.py"):
        for line in path.read_text().splitlines():
            if re.search(r"\b(eval|exec)\(", line) and not line.strip().startswith("#"):
                assert path.name == "compiler.py" and "exec(code," in line, (path, line)
