"""Models over data (issue #16): a loss summed over rows, symad's ``objective`` beside its peers.

    python -m benchmarks.data_sum            # everything (a few minutes); data_sum.json and .md here
    python -m benchmarks.data_sum --quick    # small sizes, one process each: a smoke run

Every figure is the median of ``--repeats`` fresh processes (``benchmarks/data_sum/worker.py``,
through :func:`benchmarks.harness.run_worker`), taken in turn.  Logistic regression with 20
features on the same arrays (float64, C order) for every peer: JAX ``jit(value_and_grad)``,
hand-written NumPy, CasADi (``map`` of the row function, summed), and
PyTorch where installed.  symad's build is timed cold (a formula never run on this machine:
a code cache holding only symad's own runtime, the instruction interpreter, which every formula
shares and which is built once a machine), warm (the code cache of an earlier run: what a script
run again sees), and on first use (an empty code cache: the runtime is built in that process).
"""

from __future__ import annotations

import argparse
import os
import platform
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from benchmarks import harness  # noqa: E402
from benchmarks.data_sum import report  # noqa: E402
from benchmarks.harness import median_of  # noqa: E402

FOLDER = Path(__file__).resolve().parent
WORKER = FOLDER / "worker.py"
# CasADi's map runs serially here: its "thread" form starts a thread per row (seconds a pass at 20,000 rows).
PEERS = [("symad", ""), ("jax", ""), ("numpy", ""), ("casadi", "serial"), ("torch", "")]
ROWS = (10_000, 100_000, 1_000_000)
TIMEOUT_S = 300.0


def label(peer: str, variant: str) -> str:
    return f"{peer} ({variant})" if variant else peer


class Suite:
    def __init__(self, args: argparse.Namespace):
        self.args = args
        self.repeats = 1 if args.quick else args.repeats
        self.rows = (2_000, 20_000) if args.quick else ROWS
        self.fit_rows = 20_000 if args.quick else 100_000
        self.warm_cache = tempfile.mkdtemp(prefix="symad-bench-cache-")
        self.base_env = harness.bytecode_env(dict(os.environ))  # every peer uses the machine's cores, as by default
        self.runtime = tempfile.mkdtemp(prefix="symad-runtime-")  # the interpreter's code alone
        subprocess.run([sys.executable, "-c", "from symad.native import jit; jit.interpreter()"],
                       env={**self.base_env, "SYMAD_CACHE_DIR": self.runtime}, cwd=ROOT, check=True, timeout=TIMEOUT_S)

    def sample(self, wargs: list[str], env: dict[str, str] | None = None) -> dict[str, Any]:
        task = wargs[wargs.index("--task") + 1]
        return harness.run_worker(WORKER, wargs, TIMEOUT_S, last_phase=PHASES[task], env=env)

    def env(self, cache: str) -> dict[str, str]:
        """The environment of a process whose code cache is ``cache``: "warm" (an earlier run's),
        "cold" (symad's runtime alone) or "empty"."""
        env = dict(self.base_env)
        if cache == "warm":
            env["SYMAD_CACHE_DIR"] = self.warm_cache
        else:
            env["SYMAD_CACHE_DIR"] = folder = tempfile.mkdtemp(prefix=f"symad-{cache}-")
            if cache == "cold":
                for entry in Path(self.runtime).iterdir():
                    shutil.copy2(entry, folder)
        return env

    def configs_run(self, task: str, configs: list[tuple[str, str, list[str], str]]) -> dict[str, list]:
        """Every configuration once, then again (a burst of load falls on all alike); one that is
        unavailable or failed, once."""
        runs = {name: (wargs, cache) for name, _peer, wargs, cache in configs}

        def sample(name: str) -> dict[str, Any]:
            wargs, cache = runs[name]
            r = self.sample(["--task", task, *wargs], self.env(cache))
            print(f"{task:7} {name:32} {r.get('status'):9} {r.get('pass_s', r.get('solve_s', ''))!s:.8}"
                  f" {r.get('error', '')[:100]}", file=sys.stderr, flush=True)
            return r

        return harness.in_turn(runs, self.repeats, sample, lambda _, rs: rs[-1].get("status") not in ("ok", None))

    def passes(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        # the warm cache: filled by a run before any is timed, as a script run earlier did
        self.sample(["--task", "pass", "--peer", "symad", "--rows", "100", "--passes", "1", "--min-time", "0"],
                    self.env("warm"))
        for rows in self.rows:
            configs = []
            for peer, variant in PEERS:
                wargs = ["--peer", peer, "--rows", str(rows)] + (["--variant", variant] if variant else [])
                if peer == "symad":
                    configs.append(("symad (cold)", peer, wargs, "cold"))
                    configs.append(("symad (warm)", peer, wargs, "warm"))
                    configs.append(("symad (first use)", peer, wargs, "empty"))
                else:
                    configs.append((label(peer, variant), peer, wargs, "warm"))
            out[str(rows)] = self.configs_run("pass", configs)
        return out

    def fits(self) -> dict[str, Any]:
        configs = [("symad (cold)", "symad", ["--peer", "symad", "--rows", str(self.fit_rows)], "cold"),
                   ("symad (warm)", "symad", ["--peer", "symad", "--rows", str(self.fit_rows)], "warm"),
                   ("jax", "jax", ["--peer", "jax", "--rows", str(self.fit_rows)], "warm"),
                   ("numpy", "numpy", ["--peer", "numpy", "--rows", str(self.fit_rows)], "warm")]
        return self.configs_run("fit", configs)

    def inline(self) -> dict[str, Any]:
        rows = 200 if self.args.quick else 1000
        common = ["--rows", str(rows), "--features", "10"]
        configs = [("objective()", "symad", ["--task", "fit", "--peer", "symad", *common], "warm"),
                   ("compile() of the text with the data", "symad", ["--task", "inline", "--peer", "symad", *common],
                    "warm"),
                   ("… and prepare()", "symad", ["--task", "inline", "--peer", "symad", "--variant", "prepare",
                                                 *common], "warm")]
        samples: dict[str, list] = {}
        for name, _peer, wargs, cache in configs:
            r = self.sample(wargs, self.env(cache))
            samples[name] = [r]
            print(f"inline  {name:32} {r.get('status')} {r.get('build_s', '')!s:.8} {r.get('error', '')[:100]}",
                  file=sys.stderr, flush=True)
        return samples


PHASES = {"pass": "steady", "fit": "solve", "inline": "solve"}


def summarise(samples: list[dict[str, Any]]) -> dict[str, Any]:
    ok = [s for s in samples if s.get("status") == "ok"]
    if not ok:
        first = samples[0] if samples else {}
        return {"status": first.get("status", "missing"), "error": first.get("error", "")[:200]}
    keys = ("build_s", "first_s", "optimised_s", "pass_s", "memory_mb", "data_mb", "solve_s", "nit", "nfev", "fun",
            "value")
    medians = {k: median_of(ok, k) for k in keys}
    out = {k: v for k, v in medians.items() if v is not None}
    out["processes"] = len(ok)
    out["status"] = "ok"
    if "x" in ok[0]:
        out["x"] = ok[0]["x"]
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="small sizes, one process each (a smoke run)")
    ap.add_argument("--repeats", type=int, default=3, help="fresh processes per figure, median shown (3)")
    ap.add_argument("--out-dir", type=Path, default=FOLDER, help="where data_sum.md/.json go (this folder)")
    args = ap.parse_args(argv)
    suite = Suite(args)
    load_before = harness.load()
    passes = {r: {n: summarise(s) for n, s in ss.items()} for r, ss in suite.passes().items()}
    fits = {n: summarise(s) for n, s in suite.fits().items()}
    inline = {n: summarise(s) for n, s in suite.inline().items()}
    data = {"meta": {"command": "python -m benchmarks.data_sum" + (" --quick" if args.quick else ""),
                     "date": harness.now(), "machine": f"{harness.machine()}, Python {platform.python_version()}",
                     "commit": harness.revision(), "quick": args.quick, "repeats": suite.repeats,
                     "load_before": load_before, "load_after": harness.load()},
            "passes": passes, "fits": fits, "inline": inline, "fit_rows": suite.fit_rows,
            "inline_rows": 200 if args.quick else 1000}
    data["targets"] = report.targets(data)
    harness.write(args.out_dir, "data_sum", data, report.render(data))
    return 0

