"""The command line's errors (issue #29 §7): with ``--json`` one JSON object on stdout on every
command, usage errors included; ``--at x=1 y=2`` gets the command's usage and a hint; ``#``
comments in ``@FILE`` and stdin."""

from __future__ import annotations

import io
import json

import pytest
from support.cli_helpers import run

from symad.cli import grad
from symad.cli.main import COMMANDS, main

# What each command needs besides EXPR to get as far as reading it.
NEEDS = {"graph": ["-o", "-"], "minimize": ["--from", "x=1"], "save": ["-o", "-"],
         "export-c": ["-o", "-"], "export-py": ["-o", "-"]}


def symad(capsys, *args: str) -> tuple[int, str, str]:
    """``symad ARGS`` in this process: exit status, stdout, stderr."""
    status = main(list(args))
    out = capsys.readouterr()
    return status, out.out, out.err


def json_error(capsys, *args: str) -> dict:
    status, out, err = symad(capsys, *args)
    assert (status, err) == (2, ""), (out, err)
    lines = out.splitlines()
    assert len(lines) == 1, out
    obj = json.loads(lines[0])
    assert list(obj) == ["error"] and {"type", "message"} <= set(obj["error"]), obj
    return obj["error"]


@pytest.mark.parametrize("command", list(COMMANDS))
def test_every_command_reports_a_syntax_error_as_json(capsys, command):
    error = json_error(capsys, command, "x*(y+", *NEEDS.get(command, []), "--json")
    assert error["type"] == "ParseError"
    assert error["message"].startswith("unexpected end of input at line 1, column 6; expected '('")
    assert (error["line"], error["column"]) == (1, 6)
    assert "'('" in error["expected"] and "\n" not in error["message"]


@pytest.mark.parametrize("command", list(COMMANDS))
def test_every_command_reports_a_usage_error_as_json(capsys, command):
    error = json_error(capsys, command, "x", *NEEDS.get(command, []), "--bogus", "--json")
    assert error == {"type": "UsageError", "message": "unrecognized arguments: --bogus",
                     "usage": error["usage"]}
    assert error["usage"].startswith(f"usage: symad {command} [-h] [--json]") and "\n" not in error["usage"]


@pytest.mark.parametrize("args, kind, message", [
    (["eval", "foo(x)", "--at", "x=1"], "UnknownFunctionError", "unknown function 'foo'"),
    (["grad", "x*y", "--at", "x=1"], "VariableError", "missing value for variable y (the expression uses x, y)"),
    (["eval", "x", "--at", "x=abc"], "PointError", "value for x is not a number: 'abc'"),
    (["eval", "x+x+x+x", "--at", "x=1", "--max-input", "5"], "LimitError", "raise it with --max-input"),
    (["eval", "@/nonexistent/file"], "SymadError", "cannot read /nonexistent/file"),
    (["eval", "x", "--at", "x=1", "--max-input", "lots"], "UsageError", "argument --max-input: invalid int value"),
    (["eval"], "UsageError", "the following arguments are required: EXPR"),
    (["frob", "x"], "UsageError", "argument COMMAND: invalid choice: 'frob'"),
    (["grad", "x*y", "--at", "x=1", "y=2"], "UsageError", "separate assignments with commas: --at x=1,y=2"),
    (["hessian", "x*y", "--at", "x=1", "--js"], "VariableError", "missing value"),  # --json abbreviated
])
def test_errors_of_each_kind_are_json(capsys, args, kind, message):
    error = json_error(capsys, *args, "--json")
    assert error["type"] == kind and message in error["message"]


def test_without_json_errors_stay_text_on_stderr(capsys):
    status, out, err = symad(capsys, "grad", "x*(y+", "--at", "x=1,y=2")
    assert (status, out) == (2, "") and err.startswith("symad: error: unexpected end of input") and "^" in err


def test_an_internal_error_is_json_too(capsys, monkeypatch):
    def broken(args, text, expr):
        raise RuntimeError("boom")

    monkeypatch.setattr(grad, "run", broken)
    status, out, err = symad(capsys, "grad", "x", "--at", "x=1", "--json")
    assert (status, err) == (70, "")
    assert json.loads(out) == {"error": {"type": "InternalError", "message": "RuntimeError: boom (please report this)"}}
    status, out, err = symad(capsys, "grad", "x", "--at", "x=1")
    assert (status, out) == (70, "") and err == "symad: internal error: RuntimeError: boom (please report this)\n"


def test_the_console_script_prints_json_errors_on_stdout():
    p = run("grad", "x*y", "--at", "x=1", "--json")
    assert (p.returncode, p.stderr) == (2, "")
    assert json.loads(p.stdout)["error"]["type"] == "VariableError"


# ---------------------------------------------------------------- --at x=1 y=2
@pytest.mark.parametrize("args, hint", [
    (["grad", "x*y", "--at", "x=1", "y=2"], "--at x=1,y=2"),
    (["eval", "x*y*z", "--at", "x=1", "y=2", "z=3"], "--at x=1,y=2,z=3"),
    (["grad", "x*y", "--at=x=1", "y=2"], "--at x=1,y=2"),
    (["grad", "a*x", "--at", "x=1", "--params", "a=1", "b=2"], "--params a=1,b=2"),
])
def test_assignments_separated_by_a_space_get_the_commands_usage_and_a_hint(capsys, args, hint):
    status, out, err = symad(capsys, *args)
    assert (status, out) == (2, "")
    usage, message = err.split("\nsymad: error: ")
    assert usage.startswith(f"usage: symad {args[0]} [-h]")
    assert message.startswith("unrecognized arguments: ") and f"(separate assignments with commas: {hint})" in message


def test_other_leftovers_get_the_commands_usage_without_a_hint(capsys):
    status, _, err = symad(capsys, "diff", "x*y", "--wrt", "x", "y")
    assert status == 2 and err.startswith("usage: symad diff [-h]")
    assert err.endswith("symad: error: unrecognized arguments: y\n")
    _, _, err = symad(capsys, "grad", "-x", "--at", "x=1", "--bogus")
    assert err.startswith("usage: symad grad [-h]") and err.endswith("unrecognized arguments: --bogus\n")


# ---------------------------------------------------------------- comments in @FILE and stdin
def test_comments_in_a_file_and_on_stdin(capsys, tmp_path, monkeypatch):
    path = tmp_path / "f.txt"
    path.write_text("# Rosenbrock's function\na = 1; b = 100;   # the usual constants\n"
                    "(a - x)^2 + b*(y - x^2)^2  # its minimum is at (1, 1)\n", encoding="utf-8")
    status, out, _ = symad(capsys, "grad", f"@{path}", "--at", "x=1,y=1")
    assert status == 0 and out.splitlines() == ["f     = 0", "df/dx = -0", "df/dy = 0"]
    monkeypatch.setattr("sys.stdin", io.StringIO("x^2 # square\n  + y # and y\n"))
    assert symad(capsys, "eval", "-", "--at", "x=2,y=1")[:2] == (0, "5\n")


def test_errors_in_a_commented_file_point_at_the_same_place(capsys, tmp_path):
    path = tmp_path / "f.txt"
    path.write_text("# first\nx + # second\n  * y\n", encoding="utf-8")
    status, _, err = symad(capsys, "eval", f"@{path}", "--at", "x=1,y=2")
    assert status == 2 and "unexpected '*' at line 3, column 3" in err


def test_a_saved_document_still_loads_and_a_hash_in_the_argument_is_no_comment(capsys, tmp_path):
    doc = tmp_path / "f.json"
    assert symad(capsys, "save", "t = x*y; t + x", "-o", str(doc))[0] == 0
    status, out, _ = symad(capsys, "grad", f"@{doc}", "--at", "x=1,y=2")
    assert status == 0 and out.splitlines()[0] == "f     = 3"
    status, _, err = symad(capsys, "eval", "x # no comment here", "--at", "x=1")
    assert status == 2 and "unexpected character '#'" in err


def test_explaining_a_number_is_a_clear_error(capsys):
    """``2*3`` folds to the number 6: explain has no step to show (it raised a KeyError)."""
    status, out, err = symad(capsys, "explain", "2*3")
    assert status == 2 and out == "" and "nothing to explain: the expression is the number 6" in err
    assert "nothing to explain" in json_error(capsys, "explain", "2*3", "--json")["message"]
