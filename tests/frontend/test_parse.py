"""Text → postfix → DAG: the grammar, precedence, and syntax errors."""

import json
import math
import re
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import lark
import pytest

import symad
from symad import ParseError, UnknownFunctionError, parse, to_postfix
from symad.frontend.tables import LARK_TESTED, grammar_text
from symad.frontend.tables import from_lark as lark_tables


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
    ("x*y; x+y; -x", "x y * x y + ; x neg ;"),  # several outputs: ';' after each next one
    ("t = x*y; t+1; t", "x y * =t t 1 + t ;"),
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


@pytest.mark.parametrize("text, column, fragment", [
    ("sum*2", 1, "sum is a keyword, not a variable"),
    ("x + prod", 5, "prod is a keyword, not a variable"),
    ("sum[2] + 1", 1, "sum is a keyword"),
    ("sum(e = 1..3, e)", 5, "e is a constant, not an index's name"),
    ("prod(pi = 1..3, x)", 6, "pi is a constant"),
    ("sum(prod = 1..3, x)", 5, "prod is a keyword"),
    ("f(sum) = 1; f(2)", 3, "sum is a keyword"),
])
def test_a_reserved_word_is_never_a_variable(text, column, fragment):
    """`sum` and `prod` read as variables, and a constant bound as an index, were silently
    variables (`sum*2` at sum=1 gave 2; `sum(e = 1..3, e)` gave 6)."""
    with pytest.raises(ParseError, match=re.escape(fragment)) as info:
        parse(text)
    assert info.value.column == column


@pytest.mark.parametrize("text, suggestion", [
    ("1 + if c then a else b", "1 + (if c then a else b)"),
    ("2*if c then a else b", "2*(if c then a else b)"),
    ("-if c then 1 else 2", "-(if c then 1 else 2)"),
    ("x^if c then 1 else 2", "x^(if c then 1 else 2)"),
])
def test_an_if_inside_an_operation_asks_for_parentheses(text, suggestion):
    with pytest.raises(ParseError, match="needs parentheses") as info:
        parse(text)
    assert suggestion in str(info.value)
    assert info.value.column == text.index("if") + 1
    assert parse(suggestion) is not None  # the suggestion parses


def test_an_if_where_no_operand_goes_is_a_plain_syntax_error():
    with pytest.raises(ParseError, match="unexpected 'if'") as info:
        parse("x if c")
    assert "parentheses" not in str(info.value)


def test_parse_rejects_non_strings():
    with pytest.raises(TypeError):
        parse(42)  # type: ignore[arg-type]


def test_grammar_is_the_checked_in_file():
    from pathlib import Path

    repo = Path(__file__).resolve().parents[2]
    assert grammar_text() == (repo / "grammar" / "symad.lark").read_text()


def test_no_eval_or_exec_of_user_text():
    """The only exec in the package runs generated code (the Python backend's program, written
    from the op table and node numbers), never user text; nothing calls eval.  Every module, at
    every depth of the package."""
    import re
    from pathlib import Path

    pkg = Path(symad.__file__).parent
    found = []
    for path in sorted(pkg.rglob("*.py")):
        for line in path.read_text().splitlines():
            if re.search(r"\b(eval|exec)\(", line) and not line.strip().startswith("#"):
                found.append((path.relative_to(pkg).as_posix(), line.strip().split("(")[0]))
    assert found == [("backends/python_code.py", "exec"), ("backends/python_code.py", "exec")], found


# ---------------------------------------------------------------- Lark's internals
# The lean driver reads Lark's LALR table and terminals (not public API): `lark_tables` extracts
# and checks them, so a Lark with another layout fails with one clear error.

def _lark():
    return lark.Lark(grammar_text(), parser="lalr")


def test_lark_tables_extract_from_the_installed_lark():
    tables = lark_tables(_lark())
    assert tables.start in tables.states and tables.end in tables.states
    assert set(tables.pattern.groupindex) >= {"NUMBER", "NAME", "POW", "LPAR", "RPAR", "WS"}
    assert tables.ignore == {"WS"}
    shifts = {symbol for row in tables.states.values() for symbol, (shift, _) in row.items() if shift}
    reductions = {arg[2] for row in tables.states.values() for shift, arg in row.values() if not shift}
    assert {"NUMBER", "NAME", "sum"} <= shifts
    assert {"add", "neg", "pow", "call", "number", "name", "define", "program", "output"} <= reductions
    assert any("$END" in row for row in tables.states.values())


def test_installed_lark_is_in_the_pinned_range():
    """pyproject.toml pins lark to the versions `lark_tables` was tested with."""
    tomllib = pytest.importorskip("tomllib")
    specifiers = pytest.importorskip("packaging.specifiers")
    from pathlib import Path

    pyproject = Path(__file__).resolve().parents[2] / "pyproject.toml"
    deps = tomllib.loads(pyproject.read_text())["project"]["dependencies"]
    (pin,) = [d for d in deps if re.match(r"lark\b", d)]
    spec = specifiers.SpecifierSet(pin[len("lark"):])
    assert "<" in str(spec), f"{pin}: lark needs an upper bound (the parser reads its internals)"
    assert lark.__version__ in spec, (pin, lark.__version__)


def _drop_parse_table(mp, lk):
    mp.delattr(lk.parser.parser.parser, "parse_table")


def _plain_actions(mp, lk):  # actions as strings instead of Lark's Action objects
    table = lk.parser.parser.parser.parse_table
    mp.setattr(table, "states", {state: {symbol: (action.name, arg) for symbol, (action, arg) in row.items()}
                                 for state, row in table.states.items()})


def _rules_without_alias(mp, lk):
    table = lk.parser.parser.parser.parse_table
    def strip(action, arg):
        return (action, SimpleNamespace(origin=arg.origin, expansion=arg.expansion) if action.name == "Reduce" else arg)
    mp.setattr(table, "states", {state: {symbol: strip(*entry) for symbol, entry in row.items()}
                                 for state, row in table.states.items()})


def _start_states_renamed(mp, lk):
    mp.setattr(lk.parser.parser.parser.parse_table, "start_states", {"main": 0})


def _terminals_without_priority(mp, lk):
    mp.setattr(lk, "terminals", [SimpleNamespace(name=t.name, pattern=t.pattern) for t in lk.terminals])


def _terminals_renamed(mp, lk):
    mp.setattr(lk, "terminals", [SimpleNamespace(name="T_" + t.name, pattern=t.pattern, priority=t.priority)
                                 for t in lk.terminals])


@pytest.mark.parametrize("change", [_drop_parse_table, _plain_actions, _rules_without_alias, _start_states_renamed,
                                    _terminals_without_priority, _terminals_renamed])
def test_lark_tables_reject_another_layout_clearly(monkeypatch, change):
    lk = _lark()
    change(monkeypatch, lk)
    with pytest.raises(symad.SymadError) as info:
        lark_tables(lk)
    message = str(info.value)
    assert message.startswith(f"symad's parser needs lark's LALR table layout of lark {LARK_TESTED} "
                              f"(found lark {lark.__version__}: "), message
    assert message.endswith("): pin lark or report this"), message
    assert not isinstance(info.value, ParseError)


def test_a_changed_lark_fails_parse_with_the_clear_error(monkeypatch):
    """Through the public API too: a grammar the shipped tables were not built from is built
    with Lark, through `from_lark`."""
    from symad.frontend import parser, tables

    class MovedTable(lark.Lark):  # a Lark whose parse table moved elsewhere
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            del self.parser.parser.parser.parse_table

    monkeypatch.setattr(parser, "_driver", None)  # built afresh, then the real one restored
    monkeypatch.setattr(tables, "load_shipped", lambda text: None)
    monkeypatch.setattr(lark, "Lark", MovedTable)
    with pytest.raises(symad.SymadError, match=r"lark's LALR table layout .*: pin lark or report this"):
        parse("x + 1")


# ---------------------------------------------------------------- the shipped tables
def test_the_shipped_tables_are_what_lark_builds_from_the_grammar():
    """`lalr_tables.json` is generated (python -m symad.frontend.tables): it must be Lark's tables
    of the grammar as it is now, stamped with the grammar's digest."""
    from symad.frontend import tables

    text = grammar_text()
    shipped = tables.load_shipped(text)
    assert shipped is not None, "lalr_tables.json is missing or stale: run python -m symad.frontend.tables"
    built = tables.build_with_lark(text)
    assert shipped == built
    path = Path(tables.__file__).with_name(tables.SHIPPED)
    assert json.loads(path.read_text()) == json.loads(tables.to_json(built, text))


def test_tables_of_another_grammar_are_built_with_lark(monkeypatch):
    """A grammar edited since the tables were generated (its digest differs) is built by Lark,
    never parsed with stale tables."""
    from symad.frontend import tables

    rule = '| sum "-" product    -> sub'
    edited = grammar_text().replace(rule, rule + '\n    | sum "~" product -> sub')
    assert edited != grammar_text()
    assert tables.load_shipped(edited) is None
    monkeypatch.setattr(tables, "grammar_text", lambda: edited)
    assert "~" in tables.tables().pattern.pattern and "~" not in tables.load_shipped(grammar_text()).pattern.pattern


def test_parsing_with_the_shipped_tables_needs_no_lark():
    """`symad grad` never imports Lark: its tables come from the shipped file."""
    out = subprocess.run([sys.executable, "-c", "import sys, symad; symad.parse('sin(x)^2/sqrt(1+y)'); "
                          "print('lark' in sys.modules)"], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
