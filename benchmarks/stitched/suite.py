"""Native code at the instruction VM's build cost (issue 36): the copy-and-patch tier against its peers.

    python -m benchmarks.stitched            # everything; stitched.json and stitched.md here
    python -m benchmarks.stitched --quick    # small sizes, one process each: a smoke run

Every measurement runs in a fresh process (``benchmarks/stitched/worker.py``, through
:func:`benchmarks.harness.run_worker`, in the first-call suite's environment: one BLAS thread,
symad's default caches); configurations alternate within a repeat, and a figure is the median
of ``--repeats`` processes:

* ``codegen``: stitching a random program's value and gradient, 10^3 to 10^6 operations,
  against building the instruction VM's program and compiling -O0 code (LLVM's fast
  instruction selection), whole and in chunks (two cores would each compile half of them);
* ``percall``: a call of the stitched code, -O2 code, -O0 code and the instructions, in turn
  in one process: Rosenbrock n = 100 and 1000 written out, normalise n = 200, a random program
  of 10^5 operations;
* ``hotloop``: the first 0.3 s of a loop of ``value_and_grad`` after ``compile()``
  (Rosenbrock n = 1000 written out), against SymEngine's LLVM code after its build;
* ``solve``: text to the L-BFGS-B optimum, Rosenbrock n = 1000 written out, symad against
  CasADi (the first-call suite's worker, :mod:`benchmarks.first_call.worker`);
* ``solveparts``: the same solve timed by parts: the first evaluation, the peer's function over
  the others, and scipy's own work (its wrapper and L-BFGS-B).
"""

from __future__ import annotations

import argparse
import importlib.util
import platform
import statistics
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from benchmarks import harness  # noqa: E402
from benchmarks.first_call.suite import child_env  # noqa: E402
from benchmarks.stitched import report  # noqa: E402

FOLDER = Path(__file__).resolve().parent
WORKER = FOLDER / "worker.py"
SOLVE_WORKER = ROOT / "benchmarks" / "first_call" / "worker.py"
CODEGEN_SIZES = ([1000, 10_000, 100_000, 1_000_000], [1000, 10_000])
PERCALL = ([("rosenbrock", 100), ("rosenbrock", 1000), ("normalise", 200), ("random", 100_000)],
           [("rosenbrock", 100), ("normalise", 20)])
HOT_N = (1000, 100)
SOLVE_N = (1000, 100)


def _median(samples: list[dict[str, Any]], key: str) -> float | None:
    values = [s[key] for s in samples if isinstance(s.get(key), (int, float))]
    return statistics.median(values) if values else None


def _run(args: list[str], timeout: float, script: Path = WORKER, last: str = "time") -> dict[str, Any]:
    # one BLAS thread (L-BFGS-B's vector work only waits for a pool) and symad's default caches
    r = harness.run_worker(script, args, timeout, last_phase=last, env=child_env())
    r.pop("stderr", None) if r.get("status") == "ok" else None
    return r


def codegen(quick: bool, repeats: int) -> list[dict[str, Any]]:
    rows = []
    for size in CODEGEN_SIZES[quick]:
        samples = [_run(["--task", "codegen", "--size", str(size)], 600, last="codegen") for _ in range(repeats)]
        row = {"size": size, "samples": samples}
        for key in ("ops", "first_stitch_s", "first_stitch_cpu_s", "stitch_s", "stitch_cpu_s", "vm_s", "vm_cpu_s",
                    "o0_s", "o0_chunked_s", "code_bytes"):
            row[key] = _median(samples, key)
        rows.append(row)
        print(f"codegen {size}: {row}", file=sys.stderr)
    return rows


def percall(quick: bool, repeats: int) -> list[dict[str, Any]]:
    rows = []
    for name, size in PERCALL[quick]:
        n = 1 if size >= 100_000 else repeats  # the -O2 compile of 10^5 operations takes minutes
        samples = [_run(["--task", "percall", "--workload", name, "--size", str(size)], 1200, last="percall")
                   for _ in range(n)]
        row: dict[str, Any] = {"workload": name, "size": size, "samples": samples}
        for key in ("ops", "stencils_load_s", "stitch_build_s", "o2_compile_s", "o0_compile_s", "stitched_call_s",
                    "o2_call_s", "o0_call_s", "vm_call_s", "stitched_alone_s", "o2_alone_s", "libm_s",
                    "libm_calls"):
            row[key] = _median(samples, key)
        rows.append(row)
        print(f"percall {name} {size}: {row}", file=sys.stderr)
    return rows


# A peer's other call forms, measured beside its shared one: the worker's arguments.
FORMS = {"symad.minimize": ["--peer", "symad", "--variant", "minimize"],
         "symad.minimize l-bfgs-b": ["--peer", "symad", "--variant", "minimize-lbfgsb"]}


def _alternated(task: str, peer_pool: list[str], n: int, args: list[str], keys: tuple[str, ...], repeats: int,
                script: Path = WORKER) -> list[dict[str, Any]]:
    """``task`` for symad and each installed peer of ``peer_pool`` in turn, ``repeats`` fresh processes
    each; per peer its samples and the median of each of ``keys``."""
    peers = ["symad"] + [p for p in peer_pool if p in FORMS or importlib.util.find_spec(p)]
    rows: dict[str, list[dict[str, Any]]] = {p: [] for p in peers}
    for _ in range(repeats):
        for peer in peers:  # alternating
            rows[peer].append(_run(["--task", task, *FORMS.get(peer, ["--peer", peer]), *args, "--size", str(n)], 600,
                                   script=script, last=task))
    out = []
    for peer, samples in rows.items():
        out.append({"peer": peer, "n": n, "samples": samples, **{k: _median(samples, k) for k in keys}})
        print(f"{task} {peer}: {out[-1]}", file=sys.stderr)
    return out


def hotloop(quick: bool, repeats: int) -> list[dict[str, Any]]:
    return _alternated("hotloop", ["symengine"], HOT_N[quick], [],
                       ("build_s", "calls", "median_s", "last_third_median_s"), repeats)


def solve(quick: bool, repeats: int) -> list[dict[str, Any]]:
    return _alternated("solve", ["symad.minimize", "symad.minimize l-bfgs-b", "casadi"], SOLVE_N[quick],
                       ["--workload", "rosenbrock"],
                       ("total_s", "build_s", "solve_s", "import_s", "nfev"), repeats, script=SOLVE_WORKER)


def solveparts(quick: bool, repeats: int) -> list[dict[str, Any]]:
    return _alternated("solveparts", ["casadi"], SOLVE_N[quick], ["--workload", "rosenbrock"],
                       ("solve_s", "first_eval_s", "in_fun_s", "scipy_s", "nfev", "per_eval_fun_s",
                        "per_eval_scipy_s"), repeats)


def versions() -> dict[str, str]:
    found = {}
    for name in ("llvmlite", "numpy", "scipy", "symengine", "casadi"):
        try:
            found[name] = __import__(name).__version__
        except Exception:  # noqa: BLE001 - not installed
            pass
    return found


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.stitched", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="small sizes, one process each (writes only with --out-dir)")
    ap.add_argument("--repeats", type=int, default=3, help="fresh processes per figure, median shown (3)")
    ap.add_argument("--only", help="comma-separated sections: codegen,percall,hotloop,solve,solveparts")
    ap.add_argument("--out-dir", type=Path, help="where stitched.md/.json go (default: this folder; none with --quick)")
    args = ap.parse_args(argv)
    repeats = 1 if args.quick else args.repeats
    sections = args.only.split(",") if args.only else ["codegen", "percall", "hotloop", "solve", "solveparts"]
    meta = {"command": harness.command_line("python -m benchmarks.stitched", sys.argv[1:] if argv is None else argv),
            "date": harness.now(), "machine": harness.machine(), "python": platform.python_version(),
            "revision": harness.revision(), "load_before": harness.load(), "quick": args.quick,
            "repeats": repeats, "versions": versions()}
    started = time.perf_counter()
    data: dict[str, Any] = {"meta": meta}
    for section in sections:
        data[section] = {"codegen": codegen, "percall": percall, "hotloop": hotloop, "solve": solve,
                         "solveparts": solveparts}[section](args.quick, repeats)
    meta["load_after"], meta["minutes"] = harness.load(), round((time.perf_counter() - started) / 60, 1)
    page = report.render(data)
    print(page)
    out = args.out_dir or (None if args.quick else FOLDER)
    if out is not None:
        harness.write(out, "stitched", data, page)
    return 0
