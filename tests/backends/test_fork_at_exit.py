"""A process that forks in an exit hook after compiling exits: no lock a fork waits for is held
across exit (the exit-time abandonment of background compiles held the compile lock for ever,
so every fork at exit hung).  Each case runs in a subprocess whose timeout fails the test."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from symad.native import jit

pytestmark = [pytest.mark.skipif(not hasattr(os, "fork"), reason="no fork on this platform"),
              pytest.mark.skipif(not jit.available(), reason="llvmlite is not installed")]
ROOT = Path(__file__).resolve().parents[2]
HANG = 60  # seconds: only a hang takes this long (each case takes about a second)

SCRIPT = textwrap.dedent("""
    import atexit, math, os, subprocess, sys
    how, ending, order = sys.argv[1:4]

    def fork_at_exit():
        if how == "fork":
            pid = os.fork()
            if pid == 0:
                os._exit(0)
            os.waitpid(pid, 0)
        elif how == "compile":  # (after symad's exit hooks: a compile takes the lock they took)
            import symad
            assert symad.compile("x*y + sin(x)", backend="native").value(x=1, y=2) == 2 + math.sin(1)
        elif how == "subprocess":
            subprocess.run([sys.executable, "-c", "pass"], preexec_fn=lambda: None, check=True)
        else:
            import multiprocessing
            with multiprocessing.get_context("fork").Pool(2) as pool:
                assert pool.map(abs, [-1, -2]) == [1, 2]
        print("forked at exit", flush=True)

    if order == "before":  # registered before symad's own exit hooks: runs after them
        atexit.register(fork_at_exit)
    import numpy as np, symad
    if order == "after":
        atexit.register(fork_at_exit)
    f = symad.parse("sin(x)*y + exp(x*y)").compile()
    assert f.value(x=1, y=2) == symad.parse("sin(x)*y + exp(x*y)").compile(backend="native").value(x=1, y=2)
    if ending == "compiling":  # a background compile still running as the script ends
        n = 1500
        g = symad.compile("+".join(f"(1-x{i})^2 + 100*(x{i+1}-x{i}^2)^2" for i in range(n)))
        x = np.zeros(len(g.variables))
        g.value_and_grad(x)
        g._value_grad.start()
    print("script done", flush=True)
    if ending == "sys.exit":
        sys.exit(3)
    if ending == "exception":
        raise ValueError("the script failed")
    if ending == "ctrl-c":
        raise KeyboardInterrupt
""")
STATUS = {"normal": (0,), "compiling": (0,), "sys.exit": (3,), "exception": (1,),
          "ctrl-c": (130, -signal.SIGINT)}


def _run(how: str, ending: str, order: str) -> subprocess.CompletedProcess[str]:
    try:
        return subprocess.run([sys.executable, "-c", SCRIPT, how, ending, order], capture_output=True,
                              text=True, timeout=HANG, cwd=ROOT)
    except subprocess.TimeoutExpired as err:
        pytest.fail(f"hung at exit ({how} in an exit hook, {ending} exit): {err.stdout!r}")


@pytest.mark.parametrize("order", ["before", "after"])
@pytest.mark.parametrize("ending", ["normal", "sys.exit", "exception", "ctrl-c", "compiling"])
def test_a_fork_in_an_exit_hook_does_not_hang(ending, order):
    p = _run("fork", ending, order)
    assert p.returncode in STATUS[ending], (p.returncode, p.stdout, p.stderr)
    assert p.stdout.startswith("script done\n"), p.stdout
    if ending != "ctrl-c":  # (a script ended by Ctrl-C may end before later exit hooks run)
        assert p.stdout.endswith("forked at exit\n"), (p.stdout, p.stderr)


@pytest.mark.parametrize("how", ["subprocess", "fork pool", "compile"])
def test_a_subprocess_a_fork_pool_or_a_compile_at_exit_does_not_hang(how):
    p = _run(how, "normal", "before")
    assert p.returncode == 0, p.stderr
    assert p.stdout == "script done\nforked at exit\n", (p.stdout, p.stderr)
