"""End-to-end: the installed ``symad`` command."""

import json

import pytest
from cli_helpers import run


def test_grad_seed_json():
    p = run("grad", "(x+y)+x*(x+y)", "--at", "x=1,y=2", "--json")
    assert p.returncode == 0, p.stderr
    assert p.stderr == ""
    assert json.loads(p.stdout) == {"expr": "(x+y)+x*(x+y)", "at": {"x": 1.0, "y": 2.0},
                                    "value": 6.0, "grad": {"x": 5.0, "y": 2.0}}
    assert p.stdout.count("\n") == 1  # exactly one JSON object


def test_grad_text():
    p = run("grad", "(x+y)+x*(x+y)", "--at", "x=1,y=2")
    assert p.returncode == 0
    assert p.stdout.split("\n")[:3] == ["f     = 6", "df/dx = 5", "df/dy = 2"]


def test_json_variables_in_natural_order():
    p = run("grad", "x10*x2 + x1", "--at", "x10=1,x2=2,x1=3", "--json")
    out = json.loads(p.stdout)
    assert list(out["grad"]) == ["x1", "x2", "x10"]
    assert list(out["at"]) == ["x1", "x2", "x10"]
    assert out["grad"] == {"x1": 1.0, "x2": 1.0, "x10": 2.0}


def test_at_values_may_be_constant_expressions():
    p = run("eval", "sin(x)", "--at", "x=pi/2", "--json")
    assert json.loads(p.stdout)["value"] == 1.0
    p = run("eval", "x+y", "--at", "x=atan2(1, 1)", "--at", "y=-1e-3")
    assert p.returncode == 0 and float(p.stdout) == pytest.approx(0.7853981633974483 - 1e-3)


def test_eval_diff_postfix_stats():
    assert run("eval", "2^3^2").stdout == "512\n"
    assert run("diff", "x^3*y", "--wrt", "x").stdout == "y*(3*x^2)\n"
    out = json.loads(run("diff", "x*y", "--json").stdout)
    assert out["diff"] == {"x": "y", "y": "x"}
    assert run("postfix", "(x+y)+x*(x+y)").stdout == "x y + x x y + * +\n"
    stats = json.loads(run("stats", "(x+y)+x*(x+y)", "--json").stdout)
    assert stats["dag_nodes"] == 5 and stats["tree_nodes"] == 9
    assert stats["depth"] == 3 and stats["variables"] == ["x", "y"]
    assert stats["gradient_nodes"] == 3
    assert "DAG nodes       5" in run("stats", "(x+y)+x*(x+y)").stdout


def test_expression_from_stdin_and_file(tmp_path):
    p = run("grad", "-", "--at", "x=3", "--json", stdin="x^2\n")
    assert json.loads(p.stdout)["grad"] == {"x": 6.0}
    f = tmp_path / "e.txt"
    f.write_text("x*y")
    assert json.loads(run("eval", f"@{f}", "--at", "x=2,y=4", "--json").stdout)["value"] == 8.0


@pytest.mark.parametrize("args, message", [
    (["grad", "x*(y+", "--at", "x=1,y=2"], "unexpected end of input at line 1, column 6"),
    (["grad", "x $ y", "--at", "x=1,y=2"], "unexpected character '$'"),
    (["eval", "foo(x)", "--at", "x=1"], "unknown function 'foo'"),
    (["eval", "sin(x, y)", "--at", "x=1,y=1"], "sin takes 1 argument"),
    (["grad", "x*y", "--at", "x=1"], "missing value for variable y"),
    (["grad", "x*y", "--at", "x=1,y=2,z=3"], "unknown variable z"),
    (["grad", "x*y", "--at", "x=abc,y=2"], "value for x is not a number: 'abc'"),
    (["grad", "x*y", "--at", "x=1,y="], "value for y is not a number"),
    (["grad", "x*y", "--at", "x1"], "expects name=value"),
    (["grad", "x*y", "--at", "x=1,x=2"], "gives x twice"),
    (["eval", "@/nonexistent/file"], "cannot read /nonexistent/file"),
    (["diff", "x", "--wrt", "1x"], "not a variable name"),
    (["frobnicate", "x"], "invalid choice"),
    (["grad"], "required"),
])
def test_errors_are_one_clear_line_and_exit_2(args, message):
    p = run(*args)
    assert p.returncode == 2, (p.stdout, p.stderr)
    assert message in p.stderr
    assert "Traceback" not in p.stderr


def test_syntax_error_shows_caret():
    p = run("grad", "sin(x) + * 2", "--at", "x=1")
    lines = p.stderr.splitlines()
    assert lines[1].strip() == "sin(x) + * 2"
    assert lines[2].index("^") == lines[1].index("*")
    assert "expected" in lines[0]


def test_domain_problems_warn_but_succeed():
    p = run("eval", "1/x + log(y)", "--at", "x=0,y=1")
    assert p.returncode == 0 and p.stdout == "inf\n"
    assert "1/x = inf (divide by zero)" in p.stderr
    p = run("grad", "log(x)", "--at", "x=-1", "--json")
    out = json.loads(p.stdout)
    assert out["value"] == "nan" and out["grad"] == {"x": -1.0}
    assert any("log(x) = nan" in w for w in out["warnings"])
    p = run("grad", "sqrt(x)", "--at", "x=0")
    assert "df/dx = inf at x=0" in p.stderr


def test_help_teaches():
    p = run("--help")
    assert p.returncode == 0
    for word in ["grad", "eval", "diff", "postfix", "stats", "examples:", "--at x=1,y=2"]:
        assert word in p.stdout
    p = run("grad", "--help")
    assert "--at" in p.stdout and "--json" in p.stdout and "stdin" in p.stdout


def test_version():
    assert run("--version").stdout.startswith("symad ")


def test_no_command_prints_help_and_exits_2():
    p = run()
    assert p.returncode == 2 and "usage:" in p.stdout
