"""Sparse Hessians and Jacobians from text (issue 33), measured beside their peers in fresh processes.

    python -m benchmarks.sparse             # everything (a few minutes); sparse.json and .md here
    python -m benchmarks.sparse --quick     # n up to 10^5, one process each: a smoke run (writes only with --out-dir)

1. The sparse Hessian of chained Rosenbrock ``n = {n}; sum(i = 1..n-1, 100*(x[i+1] - x[i]^2)^2 +
   (1 - x[i])^2)``: from the worker's start (imports included) to a ``scipy.sparse`` matrix at a
   point; the peak memory then; the median warm call (the matrix at a new point).
2. The sparse Jacobian of ``n = {n}; each(i = 1..n-1, x[i+1] - x[i]^2)``, the same way.

Peers: NumPy by hand (the matrix's diagonals written out: the reference every result is checked
against, entries and values), JAX (``jit`` of forward-mode products along the matrix's column
colours, three for the Hessian and two for the Jacobian, recovered by hand) and CasADi SX
(``hessian``/``jacobian`` of the vectorised form, its sparse output).  Every figure is the median
of ``--repeats`` fresh processes (``worker.py``, through :func:`benchmarks.harness.run_worker`),
configurations taken in turn; symad runs with its default caches (nothing compiled is kept
between processes).  A symad result that differs from NumPy by hand stops the suite (exit 1,
nothing written).
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import platform
import sys
import time
from importlib import metadata
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from benchmarks import harness  # noqa: E402
from benchmarks.sparse import report  # noqa: E402

FOLDER = Path(__file__).resolve().parent
WORKER = FOLDER / "worker.py"
TASKS = ("hessian", "jacobian")
SIZES = (10**4, 10**5, 10**6)
QUICK_SIZES = (10**4, 10**5)
PEERS = ("symad", "numpy", "jax", "casadi")
NEEDS = {"jax": "jax", "casadi": "casadi"}
LARGEST = {"casadi": 10**5}  # CasADi SX writes out every term: tens of seconds and GBs at 10^6
TIMEOUT_S = 300.0
ONE_IS_ENOUGH_S = 20.0


def missing(peer: str, wanted: set[str] | None) -> str | None:
    """Why ``peer`` cannot run here (None: it can)."""
    if wanted is not None and peer != "symad" and peer not in wanted:
        return "not asked for"
    module = NEEDS.get(peer)
    if module and importlib.util.find_spec(module) is None:
        return f"{module} is not installed"
    return None


def versions() -> dict[str, str]:
    out = {}
    for dist in ("symad", "numpy", "scipy", "jax", "jaxlib", "casadi"):
        try:
            out[dist] = metadata.version(dist)
        except metadata.PackageNotFoundError:
            pass
    return out


SUMMED = ("import_s", "first_s", "build_s", "call_s", "call_min_s", "peak_first_mib", "peak_end_mib", "wall_s")


def summarise(samples: list[dict[str, Any]]) -> dict[str, Any]:
    """The medians over the processes that ran to the end; the checks' largest difference."""
    ok = [s for s in samples if s.get("status") == "ok"]
    if not ok:
        first = samples[0] if samples else {}
        out = {"status": first.get("status", "missing"),
               "error": str(first.get("error") or first.get("timeout_phase") or "")[:300]}
        for key in ("check", "rel_diff", "nnz", "nnz_reference"):
            if key in first:
                out[key] = first[key]
        return out
    out = {k: v for k in SUMMED if (v := harness.median_of(ok, k)) is not None}
    out["rel_diff"] = max(s.get("rel_diff", 0.0) for s in ok)
    for key in ("check", "nnz", "nnz_reference"):
        if key in ok[0]:
            out[key] = ok[0][key]
    out["status"], out["processes"] = "ok", len(ok)
    return out


def measure(args: argparse.Namespace, env: dict[str, str]) -> dict[str, Any]:
    wanted = set(args.peers.split(",")) if args.peers else None
    repeats = 1 if args.quick else args.repeats
    timing = ["--min-time", "0.05", "--repeats", "3"] if args.quick else ["--min-time", "0.2", "--repeats", "5"]
    out: dict[str, Any] = {}
    for task in TASKS:
        out[task] = {}
        for n in QUICK_SIZES if args.quick else SIZES:
            runs, skipped = {}, {}
            for peer in PEERS:
                why = missing(peer, wanted) or (f"not run past n = {LARGEST[peer]:,} (time and memory)"
                                                if n > LARGEST.get(peer, n) else None)
                if why:
                    skipped[peer] = {"status": "skipped", "error": why}
                else:
                    runs[peer] = ["--task", task, "--peer", peer, "--n", str(n), *timing]

            def sample(name: str, runs: dict[str, list[str]] = runs, n: int = n, task: str = task) -> dict[str, Any]:
                t0 = time.perf_counter()
                r = harness.run_worker(WORKER, runs[name], TIMEOUT_S, "time", env)
                r["wall_s"] = time.perf_counter() - t0
                print(f"{task:8} n={n:<8} {name:8} {r.get('status'):9} {r['wall_s']:6.1f} s "
                      f"{str(r.get('error', ''))[:100]}", file=sys.stderr, flush=True)
                return r

            def enough(_name: str, samples: list[dict[str, Any]]) -> bool:
                return samples[-1].get("status") != "ok" or samples[-1]["wall_s"] > ONE_IS_ENOUGH_S

            samples = harness.in_turn(runs, repeats, sample, enough)
            out[task][str(n)] = {**{name: summarise(s) for name, s in samples.items()}, **skipped}
    return out


def mismatches(data: dict[str, Any]) -> list[str]:
    found = []
    for task in TASKS:
        for n, peers in data[task].items():
            m = peers.get("symad", {})
            if m.get("status") == "mismatch" or m.get("check") == "mismatch":
                found.append(f"{task} n = {int(n):,}: {m.get('nnz')} entries against {m.get('nnz_reference')}, "
                             f"values differ by {m.get('rel_diff')!r} (relative to the largest)")
    return found


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.sparse", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="n up to 10^5, one process each (writes only with --out-dir)")
    ap.add_argument("--repeats", type=int, default=3, help="fresh processes per figure, median shown (3)")
    ap.add_argument("--peers", help="comma-separated peers beside symad (default: every one installed): "
                    + ", ".join(p for p in PEERS if p != "symad"))
    ap.add_argument("--out-dir", type=Path, help="where sparse.md/.json go (default: this folder; none with --quick)")
    args = ap.parse_args(argv)
    env = harness.bytecode_env(dict(os.environ))
    env.pop("SYMAD_CACHE_DIR", None)
    meta = {"command": harness.command_line("python -m benchmarks.sparse", sys.argv[1:] if argv is None else argv),
            "date": harness.now(), "machine": harness.machine(), "python": platform.python_version(),
            "revision": harness.revision(), "load_before": harness.load(), "quick": args.quick,
            "repeats": 1 if args.quick else args.repeats, "versions": versions()}
    started = time.perf_counter()
    data: dict[str, Any] = {"meta": meta, **measure(args, env)}
    meta["load_after"], meta["minutes"] = harness.load(), round((time.perf_counter() - started) / 60, 1)
    wrong = mismatches(data)
    if wrong:
        print("symad's sparse matrices differ from NumPy by hand:\n  " + "\n  ".join(wrong), file=sys.stderr)
        return 1
    page = report.render(data)
    print(page)
    out = args.out_dir or (None if args.quick else FOLDER)
    if out is not None:
        harness.write(out, "sparse", data, page)
    return 0
