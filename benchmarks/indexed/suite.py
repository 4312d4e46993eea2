"""Sums kept as loops (issue 32), measured beside their peers in fresh processes.

    python -m benchmarks.indexed            # everything (under ten minutes); indexed.json and .md here
    python -m benchmarks.indexed --quick    # n up to 10^5, one process each: a smoke run (writes only with --out-dir)

1. Chained Rosenbrock ``n = {n}; sum(i = 1..n-1, 100*(x[i+1] - x[i]^2)^2 + (1 - x[i])^2)`` for
   n = 10^3 ... 10^7: text (or code) → the first value and gradient, from the worker's start with
   its imports; the peak memory then; the median warm call.  Peers: JAX ``jit(value_and_grad)`` of
   the vectorised NumPy form, NumPy by hand, hand-written C (``benchmarks/peers/c/rosenbrock.c``),
   CasADi SX and CasADi ``map``.  Each value and gradient is checked against NumPy by hand; a
   symad result that differs beyond rounding stops the suite (exit 1, nothing written).
2. ``x'Ax`` with a 2,000 x 2,000 data matrix, symad's ``compile(text, wrt=["x"])`` beside NumPy and JAX.
3. ``symad diff`` of the 10^6-term Rosenbrock, the command's wall time.
4. scipy L-BFGS-B on Rosenbrock, n = 10^5, from text to the optimum, symad beside JAX and NumPy
   (with one BLAS thread: L-BFGS-B's vector work only waits for a pool of them).

Every figure is the median of ``--repeats`` fresh processes (``worker.py``, through
:func:`benchmarks.harness.run_worker`), configurations taken in turn; a process that took longer
than :data:`ONE_IS_ENOUGH_S` is not repeated.  Workers use the machine's cores, as each library
does by default (the solve aside); symad's code cache is off (``SYMAD_CACHE_DIR=""``), so nothing
compiled is kept between processes.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import platform
import shutil
import statistics
import subprocess
import sys
import time
from importlib import metadata
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from benchmarks import harness  # noqa: E402
from benchmarks.indexed import report  # noqa: E402

FOLDER = Path(__file__).resolve().parent
WORKER = FOLDER / "worker.py"
SIZES = (10**3, 10**4, 10**5, 10**6, 10**7)
QUICK_SIZES = (10**3, 10**4, 10**5)
ROSEN_PEERS = ("symad", "jax", "numpy", "c", "casadi_sx", "casadi_map")
XAX_PEERS = ("symad", "numpy", "numpy_matvec", "jax")
ONE_THREAD = "_1t"  # a configuration's suffix: run with one BLAS thread
SOLVE_PEERS = ("symad", "jax", "numpy")
SOLVE_N, QUICK_SOLVE_N = 10**5, 10**4
SOLVE_REPEATS = 5  # a solve takes a second: more processes for the median cost little
# CasADi SX writes out every term: 1.8 GB and 12 s at 10^6 on this machine, so about 18 GB at 10^7.
LARGEST = {"casadi_sx": 10**6}
NEEDS = {"jax": "jax", "casadi_sx": "casadi", "casadi_map": "casadi"}
DIFF_N = 999_999
TIMEOUT_S = 300.0
ONE_IS_ENOUGH_S = 20.0


def diff_text(n: int) -> str:
    return f"sum(i=1..{n}, 100*(x[i+1]-x[i]^2)^2 + (1-x[i])^2)"


def missing(peer: str, wanted: set[str] | None = None) -> str | None:
    """Why ``peer`` cannot run here (None: it can); ``wanted``: the peers asked for, by name or family
    (``casadi`` for both of CasADi's; None: all)."""
    if wanted is not None and peer != "symad" and not {peer, peer.split("_")[0]} & wanted:
        return "not asked for"
    module = NEEDS.get(peer)
    if module and importlib.util.find_spec(module) is None:
        return f"{module} is not installed"
    if peer == "c" and shutil.which("gcc") is None:
        return "gcc is not installed"
    return None


def versions() -> dict[str, str]:
    """Installed versions of symad and the peers (without importing them), and gcc's."""
    out = {}
    for dist in ("symad", "numpy", "scipy", "jax", "jaxlib", "casadi"):
        try:
            out[dist] = metadata.version(dist)
        except metadata.PackageNotFoundError:
            pass
    if shutil.which("gcc"):
        out["gcc"] = subprocess.run(["gcc", "-dumpfullversion"], capture_output=True, text=True).stdout.strip()
    return out


class Suite:
    def __init__(self, args: argparse.Namespace):
        self.args = args
        self.wanted = set(args.peers.split(",")) if args.peers else None
        self.repeats = 1 if args.quick else args.repeats
        self.solve_repeats = 1 if args.quick else max(args.repeats, SOLVE_REPEATS)
        self.env = harness.bytecode_env(dict(os.environ))
        self.env["SYMAD_CACHE_DIR"] = ""  # no code cache: every process compiles its own code, as on a new machine
        self.timing = ["--min-time", "0.05", "--repeats", "3"] if args.quick else \
            ["--min-time", "0.2", "--repeats", "5"]

    def measure(self, task: str, runs: dict[str, list[str]], last_phase: str, repeats: int | None = None,
                envs: dict[str, dict[str, str]] | None = None) -> dict[str, dict[str, Any]]:
        """Each configuration (name → worker arguments; its environment in ``envs``, else the suite's) in
        turn, ``repeats`` times; summarised."""

        def sample(name: str) -> dict[str, Any]:
            t0 = time.perf_counter()
            r = harness.run_worker(WORKER, ["--task", task, *runs[name], *self.timing], TIMEOUT_S, last_phase,
                                   (envs or {}).get(name, self.env))
            r["wall_s"] = time.perf_counter() - t0
            print(f"{task:5} {name:24} {r.get('status'):9} {r['wall_s']:6.1f} s {r.get('error', '')[:100]}",
                  file=sys.stderr, flush=True)
            return r

        def enough(_name: str, samples: list[dict[str, Any]]) -> bool:
            return samples[-1].get("status") != "ok" or samples[-1]["wall_s"] > ONE_IS_ENOUGH_S

        samples = harness.in_turn(runs, repeats or self.repeats, sample, enough)
        return {name: summarise(s) for name, s in samples.items()}

    def rosenbrock(self) -> dict[str, dict[str, Any]]:
        out: dict[str, dict[str, Any]] = {}
        for n in QUICK_SIZES if self.args.quick else SIZES:
            runs, skipped = {}, {}
            for peer in ROSEN_PEERS:
                why = missing(peer, self.wanted) or (f"not run past n = {LARGEST[peer]:,} (memory)"
                                        if n > LARGEST.get(peer, n) else None)
                if why:
                    skipped[peer] = {"status": "skipped", "error": why}
                else:
                    runs[peer] = ["--peer", peer, "--n", str(n)]
            out[str(n)] = {**self.measure("rosen", runs, "time"), **skipped}
        return out

    def one_blas_thread(self) -> dict[str, str]:
        return {**self.env, **{var: "1" for var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")}}

    def xax(self) -> dict[str, dict[str, Any]]:
        """NumPy's forms twice: with BLAS's threads (its default) and with one, which on a shared machine
        is often the faster (a pool of threads waiting for a core costs more than it shares)."""
        runs, envs = {}, {}
        for peer in XAX_PEERS:
            if not missing(peer, self.wanted):
                runs[peer] = ["--peer", peer]
                if peer.startswith("numpy"):
                    runs[peer + ONE_THREAD], envs[peer + ONE_THREAD] = ["--peer", peer], self.one_blas_thread()
        return self.measure("xax", runs, "time", envs=envs)

    def solve(self) -> dict[str, dict[str, Any]]:
        n = QUICK_SOLVE_N if self.args.quick else SOLVE_N
        runs = {peer: ["--peer", peer, "--n", str(n)] for peer in SOLVE_PEERS if not missing(peer, self.wanted)}
        # One BLAS thread, as benchmarks/first_call does: L-BFGS-B's small vector work only waits for a thread
        # pool, and on a shared machine that wait, not the objective, set the solve's time.
        return self.measure("solve", runs, "solve", self.solve_repeats, dict.fromkeys(runs, self.one_blas_thread()))

    def command_line(self) -> dict[str, Any]:
        """``symad diff`` of the 10^6-term sum: wall time of the installed command (or ``python -m symad``)."""
        script = Path(sys.executable).with_name("symad")
        command = [str(script)] if script.is_file() else [sys.executable, "-m", "symad"]
        command += ["diff", diff_text(DIFF_N), "--wrt", "x"]
        walls, done = [], None
        for _ in range(self.repeats):
            t0 = time.perf_counter()
            done = subprocess.run(command, capture_output=True, text=True, env=self.env, cwd=ROOT, timeout=TIMEOUT_S)
            walls.append(time.perf_counter() - t0)
        assert done is not None
        print(f"diff  {done.returncode} {statistics.median(walls):.2f} s", file=sys.stderr, flush=True)
        return {"command": f"symad diff \"{diff_text(DIFF_N)}\" --wrt x", "status": "ok" if done.returncode == 0
                else "error", "wall_s": statistics.median(walls), "processes": len(walls),
                "output": done.stdout.strip()[:2000], "lines": len(done.stdout.strip().splitlines()),
                "error": done.stderr.strip()[-300:]}


SUMMED = ("import_s", "first_s", "build_s", "call_s", "call_min_s", "peak_first_mib", "peak_end_mib", "total_s",
          "solve_s", "nit", "nfev", "fun", "distance", "value", "wall_s")


def summarise(samples: list[dict[str, Any]]) -> dict[str, Any]:
    """The medians over the processes that ran to the end; the checks' largest differences."""
    ok = [s for s in samples if s.get("status") == "ok"]
    if not ok:
        first = samples[0] if samples else {}
        out = {"status": first.get("status", "missing"),
               "error": str(first.get("error") or first.get("timeout_phase") or "")[:300]}
        for key in ("check", "value_rel_diff", "grad_rel_diff"):
            if key in first:
                out[key] = first[key]
        return out
    out = {k: v for k in SUMMED if (v := harness.median_of(ok, k)) is not None}
    for key in ("value_rel_diff", "grad_rel_diff"):
        if any(key in s for s in ok):
            out[key] = max(s.get(key, 0.0) for s in ok)
    for key in ("check", "message", "success", "info"):
        if key in ok[0]:
            out[key] = ok[0][key]
    out["status"], out["processes"] = "ok", len(ok)
    return out


def mismatches(data: dict[str, Any]) -> list[str]:
    """symad's results that differ from NumPy by hand beyond rounding, described."""
    found = []
    cases = [(f"Rosenbrock n = {int(n):,}", peers.get("symad", {})) for n, peers in data["rosenbrock"].items()]
    cases.append(("x'Ax", data["xax"].get("symad", {})))
    for what, m in cases:
        if m.get("status") == "mismatch" or m.get("check") == "mismatch":
            found.append(f"{what}: value differs by {m.get('value_rel_diff')!r} (relative), the gradient by "
                         f"{m.get('grad_rel_diff')!r} (relative to its largest entry)")
    return found


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.indexed", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="n up to 10^5, one process each (writes only with --out-dir)")
    ap.add_argument("--repeats", type=int, default=3, help="fresh processes per figure, median shown (3)")
    ap.add_argument("--peers", help="comma-separated peers beside symad, by name or family (jax, numpy, c, casadi; "
                    "default: every one installed): " + ", ".join(sorted(set(ROSEN_PEERS + XAX_PEERS) - {"symad"})))
    ap.add_argument("--out-dir", type=Path, help="where indexed.md/.json go (default: this folder; none with --quick)")
    args = ap.parse_args(argv)
    suite = Suite(args)
    meta = {"command": harness.command_line("python -m benchmarks.indexed", sys.argv[1:] if argv is None else argv),
            "date": harness.now(), "machine": harness.machine(), "python": platform.python_version(),
            "revision": harness.revision(), "load_before": harness.load(), "quick": args.quick,
            "repeats": suite.repeats, "versions": versions()}
    started = time.perf_counter()
    data: dict[str, Any] = {"meta": meta, "rosenbrock": suite.rosenbrock(), "xax": suite.xax(),
                            "command_line": suite.command_line(), "solve": suite.solve()}
    meta["load_after"], meta["minutes"] = harness.load(), round((time.perf_counter() - started) / 60, 1)
    meta["solve_n"], meta["solve_repeats"] = QUICK_SOLVE_N if args.quick else SOLVE_N, suite.solve_repeats
    wrong = mismatches(data)
    if wrong:
        print("symad's values or gradients differ from NumPy by hand beyond rounding:\n  " + "\n  ".join(wrong),
              file=sys.stderr)
        return 1
    page = report.render(data)
    print(page)
    out = args.out_dir or (None if args.quick else FOLDER)
    if out is not None:
        harness.write(out, "indexed", data, page)
    return 0
