"""Models over data (issue #16): a loss summed over rows, symad's ``objective`` beside its peers.

    python -m benchmarks.data_sum            # everything (a few minutes); docs/data_sum.{md,json}
    python -m benchmarks.data_sum --quick    # small sizes, one process each: a smoke run

Every figure is the median of ``--repeats`` fresh processes (``benchmarks/data_sum_worker.py``,
through :func:`benchmarks.run.run_worker`), taken in turn.  Logistic regression with 20
features on the same arrays (float64, C order) for every peer: JAX ``jit(value_and_grad)``,
hand-written NumPy, CasADi (``map`` of the row function, summed), and
PyTorch where installed.  symad's build is timed cold (a formula never run on this machine:
a code cache holding only symad's own runtime, the instruction interpreter, which every formula
shares and which is built once a machine), warm (the code cache of an earlier run: what a script
run again sees), and on first use (an empty code cache: the runtime is built in that process).
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks import report, run  # noqa: E402
from benchmarks.first_call import median_of  # noqa: E402

# CasADi's map runs serially here: its "thread" form starts a thread per row (seconds a pass at 20,000 rows).
PEERS = [("symad", ""), ("jax", ""), ("numpy", ""), ("casadi", "serial"), ("torch", "")]
ROWS = (10_000, 100_000, 1_000_000)
BUILD_TARGET_S = 0.05
TIMEOUT_S = 300.0


fmt_s = report.fmt_time  # the benchmark pages' one time format


def label(peer: str, variant: str) -> str:
    return f"{peer} ({variant})" if variant else peer


class Suite:
    def __init__(self, args: argparse.Namespace):
        self.args = args
        self.repeats = 1 if args.quick else args.repeats
        self.rows = (2_000, 20_000) if args.quick else ROWS
        self.fit_rows = 20_000 if args.quick else 100_000
        self.warm_cache = tempfile.mkdtemp(prefix="symad-bench-cache-")
        self.base_env = run.bytecode_env(dict(os.environ))  # every peer uses the machine's cores, as by default
        self.runtime = tempfile.mkdtemp(prefix="symad-runtime-")  # the interpreter's code alone
        subprocess.run([sys.executable, "-c", "from symad.native import jit; jit.interpreter()"],
                       env={**self.base_env, "SYMAD_CACHE_DIR": self.runtime}, cwd=ROOT, check=True, timeout=TIMEOUT_S)

    def sample(self, wargs: list[str], env: dict[str, str] | None = None) -> dict[str, Any]:
        task = wargs[wargs.index("--task") + 1]
        return run.run_worker(wargs, TIMEOUT_S, last_phase=PHASES[task], script="data_sum_worker.py", env=env)

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
        """Every configuration once, then again (a burst of load falls on all alike)."""
        samples: dict[str, list] = {name: [] for name, *_ in configs}
        for _ in range(self.repeats):
            for name, _peer, wargs, cache in configs:
                if samples[name] and samples[name][-1].get("status") not in ("ok", None):
                    continue  # unavailable or failed: once is enough
                r = self.sample(["--task", task, *wargs], self.env(cache))
                samples[name].append(r)
                status = r.get("status")
                print(f"{task:7} {name:32} {status:9} {r.get('pass_s', r.get('solve_s', ''))!s:.8}"
                      f" {r.get('error', '')[:100]}", file=sys.stderr, flush=True)
        return samples

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


def _plus(m: dict[str, Any], *keys: str) -> float | None:
    values = [m.get(k) for k in keys]
    return None if any(v is None for v in values) else sum(values)


def targets(data: dict[str, Any]) -> list[list[str]]:
    rows_out = []
    passes, fits, inline = data["passes"], data["fits"], data["inline"]

    def row(target: str, workload: str, versus: str, ratio: float | None, met: bool | None, notes: str) -> None:
        verdict = "not measured" if met is None else "met" if met else "**not met**"
        rows_out.append([target, workload, versus, "—" if ratio is None else f"{ratio:.3g}", verdict, notes])

    for rows, peers in passes.items():
        cold, warm = peers.get("symad (cold)", {}), peers.get("symad (warm)", {})
        empty = peers.get("symad (first use)", {})
        b = cold.get("build_s")
        row(f"build ≤ {BUILD_TARGET_S * 1e3:g} ms, independent of the rows", f"{int(rows):,} rows × 20",
            f"{fmt_s(b)} (cold)", None, None if b is None else b <= BUILD_TARGET_S,
            f"cold: first result after {fmt_s(_plus(cold, 'build_s', 'first_s'))}, the optimised loop ready "
            f"after {fmt_s(cold.get('optimised_s'))}; warm (code cache of an earlier run): build "
            f"{fmt_s(warm.get('build_s'))}; first use of symad on a machine (its runtime built): build "
            f"{fmt_s(empty.get('build_s'))}")
    big = str(max(int(r) for r in passes))
    peers = passes[big]
    mine = peers.get("symad (warm)", {}).get("pass_s")
    jax = peers.get("jax", {}).get("pass_s")
    others = ", ".join(f"{name} {fmt_s(p.get('pass_s'))}" for name, p in peers.items()
                       if not name.startswith("symad") and p.get("pass_s"))
    row("one value+gradient pass ≤ JAX jit(value_and_grad)", f"{int(big):,} rows × 20",
        f"{fmt_s(mine)} vs {fmt_s(jax)}", None if not (mine and jax) else mine / jax,
        None if not (mine and jax) else mine <= jax, f"in the same run: {others}")
    mems = {int(r): p.get("symad (warm)", {}).get("memory_mb") for r, p in passes.items()}
    datas = {int(r): p.get("symad (warm)", {}).get("data_mb") for r, p in passes.items()}
    if all(v is not None for v in mems.values()) and len(mems) > 1:
        lo, hi = min(mems), max(mems)
        growth = mems[hi] - mems[lo]
        row("memory beyond the data O(1) in the rows", f"{lo:,} → {hi:,} rows",
            f"{mems[lo]:.1f} MB → {mems[hi]:.1f} MB", None, growth < 0.02 * (datas[hi] or 1),
            f"peak memory during the build and the passes beyond that held before; the data: {datas[hi]:.0f} MB")
    s, j = fits.get("symad (cold)", {}), fits.get("jax", {})  # a first run: neither has code kept from before
    if s.get("status") == "ok" and j.get("status") == "ok":
        st, jt = s["build_s"] + s["solve_s"], j["build_s"] + j["solve_s"]
        dx = max(abs(a - b) for a, b in zip(s["x"], j["x"]))
        row("scipy L-BFGS-B fit, text → optimum ≤ JAX", f"{data['fit_rows']:,} rows × 20",
            f"{fmt_s(st)} vs {fmt_s(jt)}", st / jt, st <= jt and dx < 1e-5,
            f"build + solve, symad cold (a script's first run); coefficients differ by at most {dx:.1e}; "
            f"iterations {s.get('nit'):.0f} vs {j.get('nit'):.0f}; symad warm (run again): "
            f"{fmt_s(_plus(fits.get('symad (warm)', {}), 'build_s', 'solve_s'))}")
    after, before = inline.get("objective()", {}), inline.get("compile() of the text with the data", {})
    prepared = inline.get("… and prepare()", {})
    if after.get("status") == "ok":
        total = after["build_s"] + after["solve_s"]

        def total_of(m: dict[str, Any]) -> str:
            if m.get("status") != "ok":
                return m.get("status", "—")
            return f"{fmt_s(m['build_s'] + m['solve_s'])} (build {fmt_s(m['build_s'])})"

        row("the 1,000-row model: milliseconds", f"{data['inline_rows']:,} rows × 10, data in the text before",
            fmt_s(total), None, total < 1.0,
            f"build {fmt_s(after['build_s'])} + solve {fmt_s(after['solve_s'])}; before: compile() "
            f"{total_of(before)}, with prepare() {total_of(prepared)}")
    return rows_out


def render(data: dict[str, Any]) -> str:
    m = data["meta"]
    out = [f"# Models over data\n\nGenerated by `{m['command']}`; do not edit by hand. The figures behind it: "
           "[data_sum.json](data_sum.json). Issue #16's targets; they also appear in "
           "[benchmarks.md](benchmarks.md).\n\n",
           f"- run: {m['date']}; machine: {m['machine']}; symad at commit {m['commit']}"
           + (" (**quick run**)" if m.get("quick") else "") + "\n",
           f"- load average before: {m['load_before']}; after: {m['load_after']}\n\n",
           "## Targets (issue #16)\n\n",
           report.table(["target", "workload", "symad vs best", "ratio", "verdict", "notes"], data["targets"]),
           "\n## One pass over the rows\n\nLogistic regression, 20 features, the loss summed over every row: "
           "the build (the arrays in hand → a compiled value-and-gradient callable; symad's `objective(...)."
           "prepare(optimised=False)`, what its first call waits for; the peers' first call, which compiles), "
           "the first pass, their sum (the first result), when symad's optimised loop was ready (from the start of "
           "the build; until then symad's instruction interpreter runs the loop, the same bits), then the median "
           "of steady passes; memory: the peak during the build and the passes beyond what the process held "
           "before (Linux's VmHWM, reset first). Cold: a formula never run on this machine (the code cache holds "
           "only symad's runtime, the instruction interpreter every formula shares, built once a machine); warm: "
           "the code cache of an earlier run (a script run again); first use: an empty code cache (symad's "
           "first run on a machine builds its runtime). Median of "
           f"{m['repeats']} fresh processes.\n\n"]
    for rows, peers in data["passes"].items():
        out.append(f"**{int(rows):,} rows**\n\n")
        lines = []
        for name, p in peers.items():
            if p.get("status") != "ok":
                lines.append([name, p.get("status", ""), "", "", "", "", "", p.get("error", "")[:80]])
                continue
            lines.append([name, fmt_s(p.get("build_s")), fmt_s(p.get("first_s")),
                          fmt_s(_plus(p, "build_s", "first_s")),
                          fmt_s(p["optimised_s"]) if "optimised_s" in p else "",
                          fmt_s(p.get("pass_s")), f"{p.get('memory_mb', 0):.1f} MB",
                          f"{p.get('value', float('nan')):.10g}"])
        out.append(report.table(["", "build", "first pass", "first result", "optimised loop", "pass", "memory",
                                 "value at w = 0.01"], lines) + "\n")
    out.append(f"\n## Fit: scipy L-BFGS-B to the optimum\n\n{data['fit_rows']:,} rows × 20 features, from zeros, "
               f"`options={{'gtol': 1e-8}}`.\n\n")
    lines = []
    for name, f in data["fits"].items():
        if f.get("status") != "ok":
            lines.append([name, f.get("status", ""), "", "", "", ""])
            continue
        lines.append([name, fmt_s(f["build_s"] + f["solve_s"]), fmt_s(f["build_s"]), fmt_s(f["solve_s"]),
                      f"{f['nit']:.0f} / {f['nfev']:.0f}", f"{f['fun']:.12g}"])
    out.append(report.table(["", "total", "build", "solve", "iterations / evaluations", "final f"], lines))
    out.append(f"\n## Before and after: {data['inline_rows']:,} rows in the text\n\n"
               "Before `objective`, data went into the text, one term per row (10 features: "
               f"{data['inline_rows']:,} terms), and `compile()` built a DAG of them all.\n\n")
    lines = []
    for name, f in data["inline"].items():
        if f.get("status") != "ok":
            lines.append([name, f.get("status", ""), "", "", f.get("error", "")[:80]])
            continue
        lines.append([name, fmt_s(f["build_s"] + f["solve_s"]), fmt_s(f["build_s"]), fmt_s(f["solve_s"]),
                      f"{f['fun']:.12g}"])
    out.append(report.table(["", "total", "build", "solve", "final f"], lines))
    return "".join(out)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="small sizes, one process each (a smoke run)")
    ap.add_argument("--repeats", type=int, default=3, help="fresh processes per figure, median shown (3)")
    ap.add_argument("--out-dir", type=Path, default=ROOT / "docs")
    args = ap.parse_args(argv)
    suite = Suite(args)
    load_before = [round(x, 2) for x in os.getloadavg()]
    passes = {r: {n: summarise(s) for n, s in ss.items()} for r, ss in suite.passes().items()}
    fits = {n: summarise(s) for n, s in suite.fits().items()}
    inline = {n: summarise(s) for n, s in suite.inline().items()}
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True,
                            text=True).stdout.strip()
    data = {"meta": {"command": "python -m benchmarks.data_sum" + (" --quick" if args.quick else ""),
                     "date": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC"),
                     "machine": f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores, "
                                f"Python {platform.python_version()}",
                     "commit": commit, "quick": args.quick, "repeats": suite.repeats,
                     "load_before": load_before, "load_after": [round(x, 2) for x in os.getloadavg()]},
            "passes": passes, "fits": fits, "inline": inline, "fit_rows": suite.fit_rows,
            "inline_rows": 200 if args.quick else 1000}
    data["targets"] = targets(data)
    args.out_dir.mkdir(parents=True, exist_ok=True)
    (args.out_dir / "data_sum.json").write_text(json.dumps(data, indent=1, default=str) + "\n")
    (args.out_dir / "data_sum.md").write_text(render(data))
    if (args.out_dir / "benchmarks.json").exists():
        (args.out_dir / "benchmarks.md").write_text(report.render_beside(args.out_dir))
    print(f"wrote {args.out_dir / 'data_sum.md'} and data_sum.json", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
