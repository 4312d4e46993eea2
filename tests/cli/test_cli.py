"""End-to-end: the ``symad`` command (the checkout's, ``python -m symad``)."""

import importlib.util
import json
import os
import random
import select
import signal
import subprocess
import time
from pathlib import Path

import pytest
from support.cli_helpers import run, symad_command


def test_grad_seed_json():
    p = run("grad", "(x+y)+x*(x+y)", "--at", "x=1,y=2", "--json")
    assert p.returncode == 0, p.stderr
    assert p.stderr == ""
    assert json.loads(p.stdout) == {"expr": "(x+y)+x*(x+y)", "at": {"x": 1.0, "y": 2.0},
                                    "value": 6.0, "grad": {"x": 5.0, "y": 2.0}}
    assert p.stdout.count("\n") == 1  # exactly one JSON object


def test_params_are_held_and_not_differentiated():
    p = run("grad", "(x-a)^2 + b*(y-x^2)^2", "--at", "x=0,y=1", "--params", "a=1,b=100", "--json")
    assert p.returncode == 0, p.stderr
    assert json.loads(p.stdout) == {"expr": "(x-a)^2 + b*(y-x^2)^2", "at": {"x": 0.0, "y": 1.0},
                                    "params": {"a": 1.0, "b": 100.0}, "value": 101.0,
                                    "grad": {"x": -2.0, "y": 200.0}}
    p = run("hessian", "x*a*x", "--at", "x=2", "--params", "a=3", "--json")
    assert json.loads(p.stdout)["hessian"] == [[6.0]] and json.loads(p.stdout)["variables"] == ["x"]
    p = run("eval", "x*a", "--at", "x=2", "--params", "a=3")
    assert p.stdout.strip() == "6"


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
    (["grad", "x*a", "--at", "x=1,a=2", "--params", "a=3"], "a is given by both --at and --params"),
    (["grad", "x*a", "--at", "x=1", "--params", "c=3"], "--params names c, which the expression does not use"),
    (["grad", "x*a", "--at", "x=1", "--params", "a"], "--params expects name=value pairs"),
    (["hessian", "x*a", "--params", "a=3"], "add --at for the other variables"),
    (["explain", "x*a", "--at", "x=1", "--params", "a=3"], "unrecognized arguments: --params"),
    (["eval", "@/nonexistent/file"], "cannot read /nonexistent/file"),
    (["diff", "x", "--wrt", "1x"], "not a variable name"),
    (["frobnicate", "x"], "invalid choice"),
    (["grad"], "required"),
])
@pytest.mark.slow
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


# ---------------------------------------------------------------- an EXPR that starts with '-'
@pytest.mark.parametrize("args, value, grad", [
    (["grad", "-log(x)", "--at", "x=1", "--json"], -0.0, {"x": -1.0}),
    (["grad", "-x^2", "--at", "x=-1", "--json"], -1.0, {"x": 2.0}),
    (["grad", "--json", "-x", "--at", "x=1"], -1.0, {"x": -1.0}),
    (["grad", "-x", "--at", "x=1", "--json"], -1.0, {"x": -1.0}),
    (["grad", "--at", "x=-1", "-x^2", "--json"], -1.0, {"x": 2.0}),
    (["grad", "--at=x=-1", "--json", "-x*y", "--at", "y=2"], 2.0, {"x": -2.0, "y": 1.0}),
    (["grad", "--js", "--at", "x=-2", "-x"], 2.0, {"x": -1.0}),  # argparse's abbreviations still work
    (["grad", "--x", "--at", "x=3", "--json"], 3.0, {"x": 1.0}),  # -(-x)
    (["eval", "-1", "--json"], -1.0, None),
    (["eval", "-1e-3", "--json"], -1e-3, None),
    (["eval", "-2*3", "--json"], -6.0, None),
    (["eval", "--max-input", "10", "-x-1", "--at", "x=-1", "--json"], 0.0, None),
])
@pytest.mark.slow
def test_expr_may_start_with_minus(args, value, grad):
    p = run(*args)
    assert p.returncode == 0, p.stderr
    out = json.loads(p.stdout)
    assert out["value"] == value and out["expr"] in args
    if grad is not None:
        assert out["grad"] == grad


@pytest.mark.parametrize("args, stdout", [
    (["diff", "-x^3", "--wrt", "x"], "-(3*x^2)\n"),
    (["postfix", "-x+1"], "x neg 1 +\n"),
    (["stats", "-x", "--json"], '"dag_nodes": 2'),
    (["explain", "-x", "--at", "x=2"], "forward pass at x=2"),
    (["hessian", "-x^3", "--at", "x=1"], "df/dx = -3"),
    (["minimize", "-exp(-x^2)", "--from", "x=0.5"], "converged"),
    (["graph", "-o", "-", "-x"], "digraph"),
    (["eval", "-", "--at", "x=2"], "-2\n"),  # '-' alone still reads stdin
])
@pytest.mark.slow
def test_every_command_takes_an_expr_starting_with_minus(args, stdout):
    p = run(*args, stdin="-x" if "-" in args else None)
    assert p.returncode == 0, p.stderr
    assert stdout in p.stdout


def test_options_and_errors_around_a_minus_expr():
    p = run("grad", "-x", "-h")
    assert p.returncode == 0 and "--at" in p.stdout  # -h is still help
    p = run("eval", "-x+", "--at", "x=1")
    assert p.returncode == 2 and "unexpected end of input at line 1, column 4" in p.stderr
    assert p.stderr.splitlines()[1] == "  -x+"  # the text as typed: no marker left in it
    p = run("grad", "-x", "--at", "x=1", "--bogus")
    assert p.returncode == 2 and "unrecognized arguments: --bogus" in p.stderr


# ---------------------------------------------------------------- literals that underflow or overflow
def test_unknown_variable_names_an_underflowing_literal():
    p = run("eval", "x*1e-400", "--at", "x=1")
    assert p.returncode == 2
    assert p.stderr == ("symad: error: unknown variable x: the expression simplified to 0 and uses no variables "
                        "(the literal 1e-400 at column 3 underflows to 0)\n")
    p = run("grad", "x*1e-400 + y", "--at", "x=1,y=2")
    assert "unknown variable x: the expression uses y (the literal 1e-400 at column 3 underflows to 0)" in p.stderr
    p = run("eval", "-", "--at", "x=1", stdin="x*\n2e-999")
    assert "(the literal 2e-999 at line 2, column 1 underflows to 0)" in p.stderr
    p = run("eval", "x*0", "--at", "x=1")  # a zero typed as zero: nothing to add
    assert p.stderr == "symad: error: unknown variable x (the expression uses no variables)\n"


def test_overflowing_literal_is_named_in_the_warning():
    p = run("eval", "x*1e400", "--at", "x=1")
    assert p.returncode == 0 and p.stdout == "inf\n"
    assert p.stderr == "symad: warning: f = inf at x=1: the literal 1e400 at column 3 overflows to inf\n"


# ---------------------------------------------------------------- Ctrl-C
def _script() -> list[str]:
    """The interpreter itself (``python -m symad``): a wrapper (pyenv's shim is a shell script)
    would take the signal."""
    return symad_command()


def _big_expression(path: Path, terms: int, n_vars: int, squares: bool = False) -> str:
    """Write a sum of ``terms`` products of sin/exp/cos to ``path`` (``squares``: of their squared
    distances from 0.1, an objective with a minimum); returns a point for it."""
    r = random.Random(1)
    v = [f"x{i}" for i in range(n_vars)]
    terms_text = (f"sin({r.choice(v)}*{r.choice(v)})*exp({r.choice(v)}*{r.choice(v)})*cos({r.choice(v)}+{r.choice(v)})"
                  for _ in range(terms))
    path.write_text("+".join(f"({t} - 0.1)^2" if squares else t for t in terms_text))
    return ",".join(f"{name}=0.{i % 9 + 1}" for i, name in enumerate(v))


def _cpu_of_a_whole_run(args: list[str]) -> float:
    """The CPU seconds (all threads) a whole run of ``symad ARGS`` takes, from wait4's rusage."""
    p = _start(args)
    _, status, usage = os.wait4(p.pid, 0)
    p.returncode = os.waitstatus_to_exitcode(status)
    p.communicate()
    assert p.returncode == 0
    return usage.ru_utime + usage.ru_stime


def _wait_for(p: subprocess.Popen, ready) -> None:
    deadline = time.monotonic() + 120
    while p.poll() is None and time.monotonic() < deadline:
        try:
            if ready():
                return
        except OSError:  # the process has just ended
            return
        time.sleep(0.002)


def _cli_importing(p: subprocess.Popen) -> None:
    """Wait until the process maps ``_json``, which symad's command line imports (after Python's
    own start-up, which a Ctrl-C would end with Python's traceback, not symad's)."""
    maps = Path(f"/proc/{p.pid}/maps")
    if not maps.exists():
        time.sleep(0.2)
        return
    _wait_for(p, lambda: "_json" in maps.read_text())


def _cpu_seconds(p: subprocess.Popen) -> float:
    """CPU time the process has used (all its threads): how far its work has gone, whatever the
    machine's load (a wall-clock sleep is a different point of the work on a busy machine)."""
    fields = Path(f"/proc/{p.pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _after_cpu(seconds: float):
    """A wait: until the process has used ``seconds`` of CPU time."""
    return lambda p: _wait_for(p, lambda: _cpu_seconds(p) >= seconds)


def _llvm_loaded(p: subprocess.Popen) -> None:
    """Wait until the process maps llvmlite's library: it is about to compile."""
    _wait_for(p, lambda: "llvmlite" in Path(f"/proc/{p.pid}/maps").read_text())


def _default_sigint() -> None:
    # As in a terminal: a run started in the background of a script (CI's, a nohup) inherits
    # SIGINT ignored, and Python then never sees a Ctrl-C at all.
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _start(args: list[str], cache_dir: str = "") -> subprocess.Popen:
    env = dict(os.environ, SYMAD_CACHE_DIR=cache_dir)  # by default compile every time: no code from disk
    return subprocess.Popen(_script() + args, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env, preexec_fn=_default_sigint)


def _interrupted(args: list[str], wait, cache_dir: str = "", late_exit_ok: bool = False
                 ) -> tuple[int, float, str] | None:
    """Run symad, send SIGINT after ``wait(process)``: the exit status, the seconds it took to
    exit, and stderr; None if symad had done its work (printed its output) before the signal.
    ``late_exit_ok``: a run that printed its output and exited 0 took the signal as it exited
    (Python ignores SIGINT during its shutdown); otherwise that counts as a swallowed Ctrl-C."""
    p = _start(args, cache_dir)
    wait(p)
    if p.poll() is not None or select.select([p.stdout], [], [], 0)[0]:  # symad flushes its result
        p.communicate()
        return None
    p.send_signal(signal.SIGINT)
    start = time.monotonic()
    try:
        out, err = p.communicate(timeout=30)
    except subprocess.TimeoutExpired:
        p.kill()
        p.communicate()
        pytest.fail(f"symad {args[0]} still running 30 s after Ctrl-C")
    if out and (p.returncode == -signal.SIGINT or (late_exit_ok and p.returncode == 0)):
        return None  # the signal came as the interpreter exited
    return p.returncode, time.monotonic() - start, err


@pytest.mark.slow
@pytest.mark.skipif(os.name != "posix", reason="POSIX signals")
def test_ctrl_c_exits_130_without_a_traceback(tmp_path):
    """Ctrl-C during start-up (imports), then during parsing: status 130 at once, no traceback."""
    expr = tmp_path / "grad.txt"
    # 60,000 terms: over 4 s of work on a fast machine (2026), so the last signal still comes mid-run
    grad = ["grad", f"@{expr}", "--at", _big_expression(expr, 60_000, 10)]
    # Driven by the work done (CPU time, a share of a whole run's), not by sleeps: under load a sleep's
    # end is an earlier point of the work, and a faster symad ends sooner
    total = _cpu_of_a_whole_run(grad)
    for when in (_cli_importing, _after_cpu(0.2 * total), _after_cpu(0.5 * total)):
        outcome = _interrupted(grad, when)
        assert outcome is not None, "symad grad ended before the signal: make the expression bigger"
        status, seconds, err = outcome
        assert (status, err) == (130, ""), err[-2000:]
        assert seconds < 5


@pytest.mark.slow
@pytest.mark.skipif(not Path("/proc/self/task").is_dir(), reason="watches threads in /proc")
@pytest.mark.skipif(importlib.util.find_spec("llvmlite") is None, reason="llvmlite is not installed")
@pytest.mark.parametrize("disk_cache", [False, True])
def test_ctrl_c_during_a_native_compile_exits_130(tmp_path, disk_cache):
    """`minimize` of a large objective compiles native code in a thread.  A Ctrl-C late in a
    compile used to abort the process (an LLVM assertion, status 134) as the interpreter tore down
    around LLVM; with the disk cache on, it was swallowed in LLVM's object-cache callback (the run
    went on, exit 0).  (`hessian --at` compiled too, until it evaluated on tapes.)"""
    expr = tmp_path / "objective.txt"
    point = _big_expression(expr, 8_000, 10, squares=True)
    command = ["minimize", f"@{expr}", "--from", point, "--max-iter", "100"]
    # How much work (CPU seconds, all threads) a run does from loading LLVM to the end of its compile thread.
    p = _start(command)
    _llvm_loaded(p)
    start, tasks = _cpu_seconds(p), Path(f"/proc/{p.pid}/task")
    threads = len(list(tasks.iterdir()))  # the compile thread among them: it loads LLVM
    last = [start]  # the process's CPU time at the last look (it may end with its compile thread)

    def compile_done() -> bool:
        last[0] = _cpu_seconds(p)
        return len(list(tasks.iterdir())) < threads

    _wait_for(p, compile_done)
    compiling = last[0] - start
    p.communicate(timeout=300)
    assert p.returncode == 0 and compiling > 0
    interrupted = 0
    for fraction in (0.3, 0.6) if disk_cache else (0.3, 0.6, 0.8):
        cache_dir = str(tmp_path / f"cache{fraction}") if disk_cache else ""  # empty: every run compiles
        # Without the cache, the bug was an abort (134): a run that ended its work just before
        # the signal and exited 0 is no failure.  With it, exit 0 was the bug itself.
        def when(p: subprocess.Popen, f: float = fraction) -> None:
            _llvm_loaded(p)
            _after_cpu(_cpu_seconds(p) + f * compiling)(p)

        outcome = _interrupted(command, when, cache_dir, late_exit_ok=not disk_cache)
        if outcome is not None:  # None: this run compiled faster than the first
            interrupted += 1
            status, seconds, err = outcome
            assert (status, err) == (130, ""), err[-2000:]
            assert seconds < 5
    assert interrupted


def test_diff_wrt_a_vector_gives_each_entry_and_warns_of_an_absent_variable():
    r = run("diff", "sum(i = 1..3, x[i]^2)*y", "--wrt", "x,y")
    assert r.returncode == 0, r.stderr
    assert r.stdout.split("\n")[:2] == ["df/dx[1] = y*(2*x[1])", "df/dx[2] = y*(2*x[2])"]
    r = run("diff", "sum(i = 1..3, x[i]^2)", "--wrt", "x[2]")
    assert (r.returncode, r.stdout.strip()) == (0, "2*x[2]")
    r = run("diff", "x^2 + y", "--wrt", "z")
    assert (r.returncode, r.stdout.strip()) == (0, "0")
    assert "z does not appear in the expression: its derivative is 0" in r.stderr
    r = run("diff", "x^2", "--wrt", "1x")
    assert r.returncode == 2 and "is not a variable name" in r.stderr and "Traceback" not in r.stderr
