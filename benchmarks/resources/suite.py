"""Objectives and functions created in a loop (issue 30 §1): what a long search leaves behind.

    python -m benchmarks.resources                  # 20 s of the loop, the default cache bound
    python -m benchmarks.resources --seconds 5 --max-mb 0.1 --json

A fresh process creates, calls three times and drops one objective over 200 rows and one
function per iteration (each a different program, as a hyper-parameter search makes; the
function in a graph of its own, as the default graph's growth is bounded apart), with its
disk cache in a temporary directory.  It reports how many were made, the most live
threads (Python's and the kernel's, /proc/self/task), resident memory added per dropped pair
after the first third of the run, the cache's files and bytes at exit, and the time from the
loop's end to the process's end.  Before the pool and the cache bound (20 s): 5,133 threads,
~22 KB a dropped objective, 7,246 files (30 MB) and 54 s to exit.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PROBE = textwrap.dedent("""
    import json, os, sys, threading, time
    import numpy as np, symad

    def rss():
        for line in open("/proc/self/status"):
            if line.startswith("VmRSS"):
                return int(line.split()[1]) * 1024

    seconds = float(sys.argv[1])
    rng = np.random.default_rng(0)
    x = rng.normal(size=200)
    y = 2 * x + 1 + rng.normal(size=200)
    made, threads, tasks, marks = 0, 0, 0, []
    started = time.perf_counter()
    while time.perf_counter() - started < seconds:
        obj = symad.objective(f"(a*x + b - y)^2 + {made + 1}e-6*a^2", {"x": x, "y": y})
        for _ in range(3):
            obj.value_and_grad([1.0, 0.5])
        f = symad.parse(f"sin(x*{made + 1})*y + exp(x*y)/(1+x^2) + 100*(y-x^2)^2", symad.Graph()).compile()
        for _ in range(3):
            f.value_and_grad(np.array([1.0, 2.0]))
        del obj, f
        made += 1
        threads = max(threads, threading.active_count())
        tasks = max(tasks, len(os.listdir("/proc/self/task")))
        if not marks and time.perf_counter() - started > seconds / 3:
            marks.append((made, rss()))
    marks.append((made, rss()))
    (n0, r0), (n1, r1) = marks
    print(json.dumps({"made": made, "threads": threads, "native_threads": tasks,
                      "kb_per_dropped_pair": (r1 - r0) / 1024 / max(1, n1 - n0)}), flush=True)
""")


def measure(seconds: float, max_mb: float | None) -> dict:
    """One run of the probe in a fresh process, with its own cache directory."""
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "cache"
        env = dict(os.environ, SYMAD_CACHE_DIR=str(folder))
        if max_mb is not None:
            env["SYMAD_CACHE_MAX_MB"] = str(max_mb)
        child = subprocess.Popen([sys.executable, "-c", PROBE, str(seconds)], stdout=subprocess.PIPE, text=True,
                                 cwd=ROOT, env=env)
        result = json.loads(child.stdout.readline())
        ended = time.perf_counter()
        child.wait(timeout=600)
        result["exit_s"] = time.perf_counter() - ended
        result["status"] = child.returncode
        entries = list(folder.glob("*.o"))
        result["cache_files"] = len(entries)
        result["cache_mb"] = sum(e.stat().st_size for e in entries) / 1e6
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seconds", type=float, default=20.0, help="how long the loop runs (default 20)")
    parser.add_argument("--max-mb", type=float, default=None, help="SYMAD_CACHE_MAX_MB (default: symad's)")
    parser.add_argument("--json", action="store_true", help="print the measurements as JSON")
    args = parser.parse_args()
    result = measure(args.seconds, args.max_mb)
    if args.json:
        print(json.dumps(result))
        return
    print(f"{result['made']} objectives and functions in {args.seconds:g} s")
    print(f"most live threads       {result['threads']} (kernel: {result['native_threads']})")
    print(f"memory per dropped pair {result['kb_per_dropped_pair']:.1f} KB")
    print(f"disk cache at exit      {result['cache_files']} files, {result['cache_mb']:.2f} MB")
    print(f"exit after the loop     {result['exit_s']:.2f} s (status {result['status']})")

