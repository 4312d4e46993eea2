"""Background compiles run in a worker process: they give the numbers of an in-process compile,
and a process that ends while one runs exits at once instead of waiting for it."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

import symad
from symad import Graph
from symad.native import jit, remote

pytestmark = pytest.mark.skipif(not jit.available(), reason="llvmlite is not installed")
ROOT = Path(__file__).resolve().parents[2]


def _rosenbrock(n: int) -> str:
    return "+".join(f"(1-x{i})^2 + 100*(x{i + 1}-x{i}^2)^2" for i in range(n))


def test_a_background_compile_comes_from_the_worker_and_computes_the_same_numbers():
    f = symad.parse(_rosenbrock(4), Graph()).compile()
    x = np.linspace(-1, 1, len(f.variables))
    f.value_and_grad(x)
    want = f.value_and_grad(x)  # the instructions
    tiers = f._value_grad
    assert tiers.start().wait(timeout=120)  # as the ski rental would: the pool runs it
    assert remote._proc and remote._proc[0].poll() is None  # the worker, alive
    assert tiers.program is not None and tiers.program.native is not None
    got = f.value_and_grad(x)
    assert got[0] == want[0] and got[1].tolist() == want[1].tolist()


EXIT_SCRIPT = """
import sys, numpy as np, symad
text = "+".join(f"(1-x{i})^2 + 100*(x{i+1}-x{i}^2)^2" for i in range(1500))
f = symad.compile(text)
x = np.zeros(len(f.variables))
f.value_and_grad(x); f.value_and_grad(x)
tiers = f._value_grad
while tiers.thread is None:
    f.value_and_grad(x)
print("last result", flush=True)
"""


@pytest.mark.slow
def test_a_process_does_not_wait_at_exit_for_a_compile_nobody_will_use():
    """The compile started (-O2 of some 24,000 operations: about ten seconds); the process
    ends as soon as its script does."""
    p = subprocess.Popen([sys.executable, "-c", EXIT_SCRIPT], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         text=True, cwd=ROOT)
    assert p.stdout.readline().strip() == "last result"
    started = time.perf_counter()
    p.wait(timeout=120)
    waited = time.perf_counter() - started
    assert p.returncode == 0, p.stderr.read()
    assert p.stderr.read() == ""
    assert waited < 3.0, f"exit took {waited:.1f} s after the last result"


@pytest.mark.skipif(not hasattr(os, "fork"), reason="no fork on this platform")
def test_a_forked_child_compiles_with_a_worker_of_its_own():
    f = symad.parse(_rosenbrock(3), Graph()).compile()
    x = np.linspace(-1, 1, len(f.variables))
    f.value_and_grad(x)
    f.value_and_grad(x)
    f._value_grad.start().wait(timeout=120)
    parent_worker = remote._proc[0].pid
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: a new function, compiled in the background
        code = 1
        try:
            g = symad.parse(_rosenbrock(5), Graph()).compile()
            y = np.linspace(-1, 1, len(g.variables))
            g.value_and_grad(y)
            g.value_and_grad(y)
            g._value_grad.start().wait(timeout=120)
            own = remote._proc[0].pid if remote._proc else -1
            ok = g._value_grad.program.native is not None and own not in (-1, parent_worker)
            code = 0 if ok else 2
        finally:
            os.write(w, bytes([code]))
            os._exit(0)
    os.close(w)
    status = os.read(r, 1)
    os.waitpid(pid, 0)
    assert status == b"\x00"
    assert remote._proc[0].pid == parent_worker and remote._proc[0].poll() is None
