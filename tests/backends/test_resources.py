"""Functions and objectives created in a loop (a hyper-parameter search, a bootstrap) leave
nothing behind: a bounded number of compile threads, dropped objects freed, a bounded disk
cache, and an exit that waits for no queued work.  They piled up: after 20 s, 5,133 compile
threads, ~22 KB per dropped objective, 7,246 cache files never evicted, 54 s to exit, and
"can't start new thread" as a traceback.  The full 20 s probe: python -m benchmarks.resources."""

from __future__ import annotations

import gc
import json
import os
import subprocess
import sys
import textwrap
import threading
import weakref
from pathlib import Path

import pytest

from symad.native import jit
from symad.runtime import background

pytestmark = pytest.mark.skipif(not jit.available(), reason="llvmlite is not installed")
ROOT = Path(__file__).resolve().parents[2]
HANG = 240  # seconds: only a hang takes this long

LOOP = textwrap.dedent("""
    import atexit, gc, json, os, sys, threading, time, weakref
    seconds = float(sys.argv[1])
    at_end = {}
    # registered before symad's exit hooks, so it runs after them: the compiles exit waited for
    atexit.register(lambda: print(json.dumps({"compiles at exit": jit.compile_stats()["compiles"]
                                                                    - at_end["compiles"]}), flush=True))
    import numpy as np, symad
    from symad.objectives import row_sums
    from symad.runtime import tiering
    from symad.native import jit
    rng = np.random.default_rng(0)
    x = rng.normal(size=200)
    y = 2 * x + 1 + rng.normal(size=200)
    made, threads, tasks = 0, 0, 0
    built = weakref.WeakSet()  # each dropped objective's sums and function's tiers
    started = time.perf_counter()
    while time.perf_counter() - started < seconds or made < 50:
        obj = symad.objective(f"(a*x + b - y)^2 + {made + 1}e-6*a^2", {"x": x, "y": y})
        for _ in range(3):
            obj.value_and_grad([1.0, 0.5])
        f = symad.parse(f"sin(x*{made + 1})*y + exp(x*y)/(1+x^2) + 100*(y-x^2)^2").compile()
        for _ in range(3):
            f.value_and_grad(np.array([1.0, 2.0]))
        built.update(o for o in gc.get_referents(*gc.get_referents(obj, f))
                     if isinstance(o, (row_sums.RowSums, tiering.TieredProgram)))
        del obj, f
        made += 1
        threads = max(threads, threading.active_count())
        tasks = max(tasks, len(os.listdir("/proc/self/task")))
    gc.collect()
    at_end.update(jit.compile_stats())
    print(json.dumps({"made": made, "threads": threads, "tasks": tasks, "alive": len(built)}), flush=True)
""")


def test_objectives_and_functions_in_a_loop_leave_nothing_behind(tmp_path):
    folder = tmp_path / "cache"
    bound_mb = 0.05
    env = dict(os.environ, SYMAD_CACHE_DIR=str(folder), SYMAD_CACHE_MAX_MB=str(bound_mb))
    p = subprocess.run([sys.executable, "-c", LOOP, "3"], capture_output=True, text=True, timeout=HANG,
                       cwd=ROOT, env=env)
    assert p.returncode == 0 and p.stderr == "", p.stderr
    lines = p.stdout.splitlines()
    loop, ending = json.loads(lines[0]), json.loads(lines[1])
    assert loop["made"] >= 50
    # one compile thread per object before; now the pool's, whatever the count (plus the main
    # thread, and native threads of NumPy's BLAS)
    assert loop["threads"] <= 1 + background.POOL_THREADS, loop
    assert loop["tasks"] <= 1 + background.POOL_THREADS + (os.cpu_count() or 1) + 2, loop
    # a dropped object's queued compile holds it weakly: all freed but those compiling now
    assert loop["alive"] <= background.POOL_THREADS, loop
    # exit ran none of the queued work (a compile under way may just finish)
    assert ending["compiles at exit"] <= background.POOL_THREADS, ending
    entries = list(folder.glob("*.o"))
    assert sum(e.stat().st_size for e in entries) <= bound_mb * 1e6, len(entries)


NO_THREADS = textwrap.dedent("""
    import threading
    import numpy as np, symad

    def refuse(self):
        raise RuntimeError("can't start new thread")

    threading.Thread.start = refuse  # as when a process has run out of threads
    x = np.linspace(-1, 1, 100)
    for k in range(3):
        obj = symad.objective(f"(a*x + b - {k})^2", {"x": x})
        for _ in range(3):
            v, g = obj.value_and_grad([1.0, 0.5])
        obj.prepare()  # the optimised loop: its queued compile runs here
        text = "+".join(f"(1-x{i})^2 + 100*(x{i+1}-x{i}^2)^2" for i in range(20 + k))
        f = symad.compile(text)
        point = np.linspace(-1, 1, len(f.variables))
        want = symad.compile(text, backend="python").value_and_grad(point)
        for _ in range(200):
            got = f.value_and_grad(point)
        f.prepare()
        got = f.value_and_grad(point)
        assert got[0] == want[0] and got[1].tolist() == want[1].tolist()
        rows = np.random.default_rng(k).uniform(-1, 1, (25_000, len(f.variables)))
        values, _ = f.value_and_grad(rows)  # a large batch: its parts would run in threads
        assert values.tolist() == symad.compile(text, backend="python").value_and_grad(rows)[0].tolist()
    print("ok")
""")


def test_no_thread_that_cannot_start_ever_surfaces():
    """Every thread start fails ("can't start new thread"): background compiles wait, compiles
    a caller waits for run in its thread, batches run in one part; no traceback."""
    p = subprocess.run([sys.executable, "-c", NO_THREADS], capture_output=True, text=True, timeout=HANG,
                       cwd=ROOT)
    assert p.returncode == 0 and p.stdout == "ok\n", p.stdout + p.stderr
    assert p.stderr == ""


class Owner:
    def __init__(self, gate: threading.Event | None = None):
        self.gate, self.ran_in = gate, None

    def work(self) -> None:
        self.ran_in = threading.current_thread()
        if self.gate is not None:
            assert self.gate.wait(HANG)


def test_the_pool_skips_a_dropped_owners_work_and_a_join_runs_queued_work_itself():
    gate = threading.Event()
    busy = [Owner(gate) for _ in range(background.POOL_THREADS)]
    running = [background.submit(owner.work) for owner in busy]  # every pool thread held
    dropped, joined = Owner(), Owner()
    skipped = background.submit(dropped.work)
    mine = background.submit(joined.work)
    ref = weakref.ref(dropped)
    del dropped
    gc.collect()
    assert ref() is None  # the queue held it weakly
    mine.join()  # not started: runs here
    assert joined.ran_in is threading.current_thread()
    gate.set()
    for task in running:
        assert task.wait(HANG)
    assert skipped.wait(HANG) and not skipped.is_alive()
    assert all(owner.ran_in is not threading.current_thread() for owner in busy)
    assert background.pool_threads() <= background.POOL_THREADS
