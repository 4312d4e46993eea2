"""Where writing a sum out pays: the same text compiled as a loop and written out, in fresh processes.

    python -m benchmarks.indexed.unrolling              # unrolling.json here, a table on stdout
    python -m benchmarks.indexed.unrolling --quick      # n = 10, 100, 1000, one process each
    python -m benchmarks.indexed.unrolling --report     # the table of the committed unrolling.json

For each body (Rosenbrock, a short ``x[i]^2``, a long one of a dozen functions) and each n, a worker
(this module with ``--worker``) forces the sum to stay a loop (``UNROLL_MAX_TERMS = 1``) or to be
written out (both limits lifted), then measures from ``symad.compile(text)`` (imports aside): the
first value and gradient; the mean call over the first second of a hot loop after it (what a short
solve sees, written-out code still tiering up); the median call in a later window (at two seconds:
the steady state, or as near as a short run gets).  Configurations are taken in turn, each the median
of ``--repeats`` processes.  What :data:`symad.core.binders.UNROLL_MAX_TERMS` and
``UNROLL_MAX_STEPS`` are set from.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
FIGURES = Path(__file__).resolve().parent / "unrolling.json"
BODIES = {
    "rosenbrock": "n = {n}; sum(i = 1..n-1, 100*(x[i+1] - x[i]^2)^2 + (1 - x[i])^2)",
    "short": "n = {n}; sum(i = 1..n, x[i]^2)",
    "long": ("n = {n}; sum(i = 1..n-2, exp(sin(x[i])*x[i+1]) + log(1 + x[i+2]^2) + sqrt(1 + (x[i] - x[i+2])^2)"
             "*cos(x[i+1]) + tanh(x[i]*x[i+2]) + atan(x[i+1] - x[i]) + x[i]^4/(1 + x[i+1]^2))"),
}
SIZES = (10, 30, 100, 300, 1000, 3000, 10_000)
QUICK_SIZES = (10, 100, 1000)
MODES = ("loop", "out")
FIRST_WINDOW_S = 1.0
STEADY_AT_S = 2.0
TIMEOUT_S = 120.0


def worker(body: str, n: int, mode: str) -> dict[str, Any]:
    """One configuration in this process."""
    import numpy as np

    import symad
    from symad.core import binders

    if mode == "loop":
        binders.UNROLL_MAX_TERMS = 1
    else:
        binders.UNROLL_MAX_TERMS, binders.UNROLL_MAX_STEPS = 10**9, 10**12
    base, wave = 1 + 0.1 * np.sin(np.arange(n)), np.cos(np.arange(n))
    points = [base + 0.01 * k * wave for k in range(1, 65)]
    started = time.perf_counter()
    f = symad.compile(BODIES[body].format(n=n))
    vg = f.value_and_grad
    vg(points[0])
    first = time.perf_counter()
    calls, now = 0, first
    while now - first < FIRST_WINDOW_S:
        for k in range(32):
            vg(points[k])
        calls += 32
        now = time.perf_counter()
    in_first = (now - first) / calls
    while time.perf_counter() - first < STEADY_AT_S:
        for k in range(32):
            vg(points[k])
    batches = []
    inner = max(32, int(0.05 / max(in_first, 1e-7)))
    for _ in range(5):
        t = time.perf_counter()
        for k in range(inner):
            vg(points[k & 63])
        batches.append((time.perf_counter() - t) / inner)
    return {"first_s": first - started, "first_second_call_s": in_first, "steady_call_s": statistics.median(batches),
            "kind": type(f).__name__}


def run(body: str, n: int, mode: str) -> dict[str, Any]:
    """One configuration in a fresh process."""
    try:
        done = subprocess.run([sys.executable, "-m", "benchmarks.indexed.unrolling", "--worker", body, str(n), mode],
                              capture_output=True, text=True, timeout=TIMEOUT_S, cwd=str(ROOT))
    except subprocess.TimeoutExpired:
        return {"error": f"over {TIMEOUT_S:.0f} s"}
    if done.returncode:
        return {"error": done.stderr.strip().splitlines()[-1] if done.stderr.strip() else "failed"}
    return json.loads(done.stdout.strip().splitlines()[-1])


def measure(sizes: tuple[int, ...], repeats: int) -> dict[str, Any]:
    configs = [(b, n, m) for b in BODIES for n in sizes for m in MODES]
    samples: dict[tuple[str, int, str], list[dict[str, Any]]] = {c: [] for c in configs}
    for _ in range(repeats):
        for c in configs:
            if samples[c] and "error" in samples[c][-1]:
                continue
            samples[c].append(run(*c))
            print(c, samples[c][-1], file=sys.stderr, flush=True)
    rows = []
    for (b, n, m), got in samples.items():
        ok = [s for s in got if "error" not in s]
        row: dict[str, Any] = {"body": b, "n": n, "mode": m, "processes": len(ok)}
        if ok:
            for key in ("first_s", "first_second_call_s", "steady_call_s"):
                row[key] = statistics.median(s[key] for s in ok)
        else:
            row["error"] = got[-1]["error"]
        rows.append(row)
    return {"sizes": list(sizes), "repeats": repeats, "rows": rows}


def table(data: dict[str, Any]) -> str:
    """Per body and n: loop / written-out for each figure (above 1: writing out is faster)."""
    by = {(r["body"], r["n"], r["mode"]): r for r in data["rows"]}
    out = ["| body | n | first: loop, written out, ratio | first second: loop, out, ratio "
           "| steady: loop, out, ratio |", "|---|---|---|---|---|"]
    for b in BODIES:
        for n in data["sizes"]:
            loop, written = by.get((b, n, "loop"), {}), by.get((b, n, "out"), {})
            cells = []
            for key in ("first_s", "first_second_call_s", "steady_call_s"):
                a, w = loop.get(key), written.get(key)
                if a is None or w is None:
                    cells.append(f"{_us(a)}, {_us(w) if w is not None else written.get('error', '-')}, -")
                else:
                    cells.append(f"{_us(a)}, {_us(w)}, {a / w:.2f}")
            out.append(f"| {b} | {n} | " + " | ".join(cells) + " |")
    return "\n".join(out)


def _us(s: float | None) -> str:
    if s is None:
        return "-"
    return f"{s * 1e3:.1f} ms" if s >= 1e-3 else f"{s * 1e6:.2f} us"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.indexed.unrolling", description=__doc__.split("\n")[0])
    parser.add_argument("--worker", nargs=3, metavar=("BODY", "N", "MODE"))
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--report", action="store_true")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args(argv)
    if args.worker:
        body, n, mode = args.worker
        print(json.dumps(worker(body, int(n), mode)))
        return 0
    if args.report:
        print(table(json.loads(FIGURES.read_text(encoding="utf-8"))))
        return 0
    sizes = QUICK_SIZES if args.quick else SIZES
    data = measure(sizes, 1 if args.quick else args.repeats)
    data["run"] = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    if not args.quick:
        FIGURES.write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")
    print(table(data))
    return 0


if __name__ == "__main__":
    sys.exit(main())
