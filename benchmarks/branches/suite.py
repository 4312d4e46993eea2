"""Per-point cost of branches and stable functions, against the same expressions without them
(issue #17: "a branch costs a select, not a slowdown"; target: within 1.5x).

    python -m benchmarks.branches            # writes branches.json and branches.md here
    python -m benchmarks.branches --quick    # small n, few repeats, prints only

Each pair is one expression written with the new operations and the same computation written
without them (both arms computed and added, or the naive formula), over n variables.  Both are
compiled once to native code (``prepare()``), then timed in the same process, alternating, as
``value_and_grad`` at a single point and over a batch of 10,000 points (time per point); each
number is the median over fresh processes (a process's placement of code and data moves some
pairs by 20%).

Code generation for selects differs with the CPU (masked moves with AVX-512, blends without:
see ``symad.native.codegen.blend_selects``); on an x86-64 machine with AVX-512 the pairs
are measured twice: as compiled for it, and as compiled for a CPU without AVX-512 (LLVM's
``haswell``: AVX2 and FMA), which runs on the same machine.
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

import symad  # noqa: E402
from benchmarks import harness  # noqa: E402
from benchmarks.branches import report  # noqa: E402
from symad.native import cache, codegen  # noqa: E402
from symad.native import jit as native  # noqa: E402


def _sum(n: int, term: str) -> str:
    return " + ".join("(" + term.format(a=f"x{i}", b=f"x{i + 1}") + ")" for i in range(1, n))


# (name, with the new operations, the same work without them)
PAIRS = [
    ("where: select between two arms",
     "where({a} > {b}, sqrt({a}^2 + 1), log(1 + {b}^2))", "sqrt({a}^2 + 1) + log(1 + {b}^2)"),
    ("if-then-else with a chained condition",
     "if 0 < {a} < {b} then {a}*{b} else {a} - {b}", "{a}*{b} + ({a} - {b})"),
    ("softplus vs log(1 + exp)", "softplus({a}*{b})", "log(1 + exp({a}*{b}))"),
    ("sigmoid vs 1/(1 + exp(-z))", "sigmoid({a} - {b})", "1/(1 + exp(-({a} - {b})))"),
    ("logaddexp vs log(exp + exp)", "logaddexp({a}, {b})", "log(exp({a}) + exp({b}))"),
]


def _per_point(call, x, repeats: int, number: int) -> float:
    best = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        for _ in range(number):
            call(x)
        best.append((time.perf_counter() - t0) / number)
    return statistics.median(best)


def measure(n: int, repeats: int, batch: int) -> list[dict]:
    rng = np.random.default_rng(1)
    rows = []
    for name, new, old in PAIRS:
        fns = []
        for form in (new, old):
            fn = symad.compile(_sum(n, form), [f"x{i}" for i in range(1, n + 1)], backend="native")
            fn.prepare()
            fns.append(fn)
        point = rng.uniform(-2, 2, n)
        points = rng.uniform(-2, 2, (batch, n))
        v_new, g_new = fns[0].value_and_grad(point)
        assert np.isfinite(v_new) and np.isfinite(g_new).all(), name
        single, many = [[], []], [[], []]
        for _ in range(5):  # alternate, so both see the same machine
            for k, fn in enumerate(fns):
                single[k].append(_per_point(fn.value_and_grad, point, repeats, 2000))
                many[k].append(_per_point(fn.value_and_grad, points, repeats, 3) / batch)
        s_new, s_old = min(single[0]), min(single[1])
        b_new, b_old = min(many[0]), min(many[1])
        rows.append({"pair": name, "with": new.format(a="x1", b="x2"), "without": old.format(a="x1", b="x2"),
                     "n": n, "point_with_ns": s_new * 1e9, "point_without_ns": s_old * 1e9,
                     "point_ratio": s_new / s_old, "batch_with_ns": b_new * 1e9, "batch_without_ns": b_old * 1e9,
                     "batch_ratio": b_new / b_old})
    return rows


def for_cpu_without_avx512() -> None:
    """From now on, compile for LLVM's ``haswell`` (AVX2, FMA; no AVX-512), selects as blends."""
    native.clear_cache()
    cache.set_cache_dir("")  # nothing compiled for another CPU is kept under this machine's name
    codegen.host_cpu = lambda: ("haswell", "")  # and so codegen.host_avx512() is False


def _median_rows(runs: list[list[dict]]) -> list[dict]:
    """Each number of each pair, the median over the runs (fresh processes)."""
    rows = []
    for same in zip(*runs):
        row = dict(same[0])
        for key, value in row.items():
            if isinstance(value, float):
                row[key] = statistics.median(r[key] for r in same)
        row["processes"] = len(same)
        rows.append(row)
    return rows


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="small sizes, one process, print only")
    parser.add_argument("--n", type=int, default=50, help="variables (default 50)")
    parser.add_argument("--processes", type=int, default=3,
                        help="fresh processes per code generation, whose median is reported (default 3)")
    parser.add_argument("--worker", choices=("host", "avx2"), help=argparse.SUPPRESS)  # one process's run
    args = parser.parse_args(argv)
    n, repeats, batch = (5, 2, 200) if args.quick else (args.n, 7, 10_000)
    if args.worker:
        if args.worker == "avx2":
            for_cpu_without_avx512()
        print(json.dumps(measure(n, repeats, batch)))
        return
    targets = {"host": "Compiled for this machine"}
    if codegen.x86() and codegen.host_avx512():
        targets["host"] += " (AVX-512: selects are masked moves)"
        targets["avx2"] = "Compiled for a CPU without AVX-512 (haswell: AVX2; selects are blends), on the same machine"
    processes = 1 if args.quick else args.processes
    tables = {}
    for target, title in targets.items():
        command = [sys.executable, "-m", "benchmarks.branches", "--worker", target, "--n", str(n)]
        runs = [json.loads(subprocess.run(command + (["--quick"] if args.quick else []), cwd=ROOT, check=True,
                                          capture_output=True, text=True).stdout) for _ in range(processes)]
        tables[title] = _median_rows(runs)
    data = {"meta": {"machine": platform.machine(), "python": platform.python_version(), "system": platform.system()},
            "tables": tables}
    page = report.render(data)
    print(page)
    if not args.quick:
        harness.write(Path(__file__).resolve().parent, "branches", data, page)

