"""Fast from the first call (issue #15): symad and its peers from the text to the first answers.

    python -m benchmarks.first_call            # everything (about 20 min); first_call.json and .md here
    python -m benchmarks.first_call --quick    # small sizes, one process each: a smoke run
    python -m benchmarks.first_call --only solve,cli --peers symad,casadi

Sections, every measurement in a fresh process (``benchmarks/first_call/worker.py``, run through
:func:`benchmarks.harness.run_worker`, its time limits and JSON lines):

* ``solve``: time to solution, text → ``scipy.optimize.minimize(method="L-BFGS-B", jac=True)``
  converged: imports + build + solve from the process's first line, and how long the process
  took to exit after printing its result;
* ``calls``: the build and the first 1,000 ``value_and_grad`` calls at distinct points;
* ``pernode``: time per call over nodes or instructions, symad's tiers and CasADi's SX VM;
* ``steady``: symad's steady state (after ``prepare()``) against the peers suite's committed
  figures (benchmarks/peers/peers.json), measured by its worker exactly as those were, and in
  turn with the code of the commit they were measured at;
* ``cli``: ``symad grad`` against ``python -c "import lark"``, with bytecode caches;
* ``tiny``: the seed per point after warm-up, fastest call forms and the shared NumPy form.

Medians of ``--repeats`` fresh processes (3); a measurement that cannot matter for a target
(past 3x symad's figure and past a second) is not repeated.  Writes ``first_call.json`` and
``first_call.md`` (:mod:`benchmarks.first_call.report`) in ``--out-dir``, by default this folder.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import sysconfig
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from benchmarks import harness  # noqa: E402
from benchmarks.first_call import report  # noqa: E402
from benchmarks.first_call import worker as fw  # noqa: E402
from benchmarks.harness import median_of  # noqa: E402
from benchmarks.peers import adapters, workloads  # noqa: E402

FOLDER = Path(__file__).resolve().parent
WORKER = FOLDER / "worker.py"
STEADY_WORKER = ROOT / "benchmarks" / "peers" / "worker.py"  # the steady state as the peers suite measures it
SECTIONS = ("solve", "calls", "pernode", "steady", "cli", "tiny")
SOLVE_TIMEOUT_S, CALLS_TIMEOUT_S = 45.0, 30.0

# Time to solution: (workload, size) for the full run and --quick.
SOLVE_CASES = ([("rosenbrock", 100), ("rosenbrock", 1000), ("normalise", 200), ("logistic", 200),
                ("logistic", 2000)], [("rosenbrock", 10), ("logistic", 20)])  # fmt: skip
PERNODE_SIZES = ([100, 1000], [100])
TINY = ("seed", 1)


@dataclass(frozen=True)
class Config:
    """One row: a peer in one configuration."""

    peer: str
    variant: str
    label: str
    prepare: bool = False  # symad: Function.prepare() as part of the build

    @property
    def id(self) -> str:
        return self.peer + (f"[{self.variant}]" if self.variant else "") + ("+prepare" if self.prepare else "")

    @property
    def is_symad(self) -> bool:
        return self.peer == "symad"


SYMAD = Config("symad", "", "**symad** (compile and go)")
SYMAD_PREPARED = Config("symad", "", "symad compile + prepare()", prepare=True)
SOLVE_PEERS = [
    SYMAD, SYMAD_PREPARED,
    Config("casadi", "", "CasADi SX"), Config("casadi", "cse", "CasADi SX cse"),
    Config("symengine", "", "SymEngine Lambdify"), Config("symengine", "cse", "SymEngine Lambdify cse"),
    Config("jax", "", "JAX jit(value_and_grad)"), Config("sympy", "cse", "SymPy lambdify cse"),
]  # fmt: skip


def calls_peers() -> list[Config]:
    """symad, then every peer of the main suite that is not hand-written code."""
    out = [SYMAD, SYMAD_PREPARED]
    for p in adapters.peers():
        if p.name not in ("symad", "numpy", "c") and not p.reference_only:
            out.append(Config(p.name, p.variant, p.label))
    return out


def available(c: Config) -> str | None:
    match = [p for p in adapters.peers() if p.name == c.peer and p.variant == ("" if c.is_symad else c.variant)]
    return adapters.available(match[0]) if match else f"unknown peer {c.peer}"


def child_env() -> dict[str, str]:
    """The workers' environment: one BLAS thread (as benchmarks/optimize/suite.py; L-BFGS-B's
    small vector work only waits for a thread pool), and symad's default caches: programs are
    compiled in every process, the interpreter's code comes from the user's cache directory;
    bytecode caches as a user's install has them."""
    env = harness.bytecode_env(dict(os.environ))
    for var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        env[var] = "1"
    env.pop("SYMAD_CACHE_DIR", None)
    return env


class Suite:
    def __init__(self, args: argparse.Namespace):
        self.args = args
        self.quick = args.quick
        self.repeats = 1 if args.quick else args.repeats
        self.wanted = set(args.peers.split(",")) | {"symad"} if args.peers else None
        self.env = child_env()
        self.solve_timeout = args.timeout or SOLVE_TIMEOUT_S
        self.calls_timeout = args.timeout or CALLS_TIMEOUT_S

    def configs(self, configs: list[Config]) -> list[Config]:
        return [c for c in configs if self.wanted is None or c.peer in self.wanted]

    # ------------------------------------------------------------------ measurements, repeated
    def _wargs(self, task: str, c: Config, workload: str, size: int, extra: list[str] | None) -> list[str]:
        wargs = ["--task", task, "--peer", c.peer, "--workload", workload, "--size", str(size), *(extra or [])]
        if c.variant:
            wargs += ["--variant", c.variant]
        if c.prepare:
            wargs.append("--prepare")
        return wargs

    def _sample(self, task: str, wargs: list[str], timeout: float) -> dict[str, Any]:
        r = harness.run_worker(WORKER, wargs, timeout, last_phase=fw.PHASES[task][-1], env=self.env)
        if r["status"] == "ok" and "done_at" in r:
            r["exit_s"] = max(r["exited_at"] - r["done_at"], 0.0)
        return r

    def measure(self, task: str, c: Config, workload: str, size: int, timeout: float,
                extra: list[str] | None = None) -> dict[str, Any]:
        """``--repeats`` fresh processes of the worker, one after the other."""
        return self.rounds(task, [c], workload, size, timeout, "", self.repeats, extra)[0]

    def rounds(self, task: str, configs: list[Config], workload: str, size: int, timeout: float, figure: str,
               repeats: int, extra: list[str] | None = None, skip: dict[str, str] | None = None
               ) -> list[dict[str, Any]]:
        """Every config once, then again in turn (so a burst of load on the shared machine falls
        on all of them alike) until each has ``repeats`` samples; a config whose first ``figure``
        is past a second and past ``report.REPEAT_WITHIN`` times symad's is not repeated: it cannot
        matter for a target.  ``skip``: config id -> why it is not run (a timeout at a smaller size)."""
        key = f"{workload}/{size}"
        ms = [{"peer": c.id, "label": c.label, "workload": workload, "size": size, "key": key} for c in configs]
        runnable: list[int] = []
        for i, c in enumerate(configs):
            why = available(c)
            if why:
                ms[i].update(status="unavailable", error=why)
            elif skip and c.id in skip:
                ms[i].update(status="timeout", skipped=True, note=skip[c.id])
            else:
                runnable.append(i)
        mine: list[float] = []  # symad's first figure

        def sample(i: int) -> dict[str, Any]:
            return self._sample(task, self._wargs(task, configs[i], workload, size, extra), timeout)

        def stop(i: int, rs: list[dict[str, Any]]) -> bool:
            if not any(r["status"] == "ok" for r in rs):
                return True  # failed at once (a later sample that fails: the others stand)
            value = rs[-1].get(figure) if len(rs) == 1 else None
            if not isinstance(value, (int, float)):
                return False
            if configs[i] == SYMAD:
                mine.append(value)
                return False
            return bool(mine) and value > 1.0 and value > report.REPEAT_WITHIN * mine[0]  # one sample says enough

        for i, rs in harness.in_turn(runnable, repeats, sample, stop).items():
            ok = [r for r in rs if r["status"] == "ok"]
            if ok:
                ms[i].update(status="ok", samples=[{k: v for k, v in r.items()
                                                    if k not in ("phases", "status", "traceback")} for r in ok])
            else:
                r = rs[0]
                phase = r.get("error_phase") or fw.phase_after(task, r.get("phases", []))
                ms[i].update(status=r["status"], phase=phase, error=r.get("error", ""),
                             traceback=r.get("traceback", ""))
        for m in ms:
            _progress(task, m, figure)
        return ms

    # ------------------------------------------------------------------ sections
    def _family_rounds(self, task: str, configs: list[Config], cases: list[tuple[str, int]], timeout: float,
                       repeats: int, extra: list[str] | None = None) -> list[dict[str, Any]]:
        """:meth:`rounds` on each case; a config past the time limit is not run at larger sizes of the family."""
        out: list[dict[str, Any]] = []
        failed: dict[str, dict[str, str]] = {}  # family -> config id -> why
        for workload, size in cases:
            ms = self.rounds(task, configs, workload, size, timeout, "total_s", repeats, extra,
                             failed.get(workload))
            for m in ms:
                if m["status"] == "timeout" and not m.get("skipped"):
                    failed.setdefault(workload, {})[m["peer"]] = f"not run: past {timeout:g} s at size {size}"
            out += ms
        return out

    def solve(self) -> list[dict[str, Any]]:
        repeats = 1 if self.quick else self.args.solve_repeats
        return self._family_rounds("solve", self.configs(SOLVE_PEERS), SOLVE_CASES[1 if self.quick else 0],
                                   self.solve_timeout, repeats)

    def calls(self) -> list[dict[str, Any]]:
        cases = [(w.name, w.size) for w in workloads.workloads(self.quick) if not w.batch]
        return self._family_rounds("calls", self.configs(calls_peers()), cases, self.calls_timeout, self.repeats,
                                   ["--calls", str(100 if self.quick else 1000)])

    def pernode(self) -> list[dict[str, Any]]:
        out = []
        timing = ["--min-time", "0.002", "--repeats", "3"] if self.quick else ["--min-time", "0.02", "--repeats", "9"]
        for n in PERNODE_SIZES[1 if self.quick else 0]:
            for c in self.configs([Config("symad", "", "symad"), Config("casadi", "", "CasADi SX")]):
                out.append(self.measure("pernode", c, "rosenbrock", n, self.calls_timeout * 4, timing))
        return out

    def tiny(self) -> list[dict[str, Any]]:
        """symad and SymPy in the same processes (their timing loops taking turns); one record each."""
        timing = ["--min-time", "0.002", "--repeats", "3"] if self.quick else ["--min-time", "0.05", "--repeats", "15"]
        sympy = Config("sympy", "cse", "SymPy lambdify cse")
        with_sympy = bool(self.configs([sympy])) and available(sympy) is None
        if with_sympy:
            timing += ["--with", "sympy", "--variant", "cse"]
        m = self.measure("tiny", Config("symad", "", "symad"), *TINY, self.calls_timeout, timing)
        out = []
        for c in [Config("symad", "", "symad"), *([sympy] if self.configs([sympy]) else [])]:
            part = {k: v for k, v in m.items() if k != "samples"} | {"peer": c.id, "label": c.label}
            if c.peer == "sympy" and not with_sympy:
                part.update(status="unavailable", error=available(sympy))
            elif m.get("samples"):
                part["samples"] = [{"rows": s["rows"].get(c.id, {})} for s in m["samples"]]
            out.append(part)
        return out

    def steady(self) -> dict[str, Any]:
        """symad after prepare(), by the peers suite's worker (its method and repetitions), against the
        committed figures; and, in turn with it, the code of the commit those were measured at
        (``git archive``: a same-run comparison, which the machine's drift does not move)."""
        baseline_path = self.args.baseline
        try:
            base = json.loads(Path(baseline_path).read_text())
        except (OSError, ValueError) as err:
            return {"baseline": str(baseline_path), "error": f"no baseline: {err}", "rows": []}
        meta = base.get("meta", {})
        committed = {m["key"]: m for m in base["measurements"] if m["peer"] == "symad" and "vg" in m}
        rows = []
        repeats, min_time = ("3", "0.002") if self.quick else ("15", "0.02")
        keys = [w.key for w in workloads.workloads(self.quick) if not w.batch]
        tmp = tempfile.TemporaryDirectory(prefix="symad-steady-")
        revision = str(meta.get("revision") or "").split(" ")[0]
        old_worker = None if self.quick else _checkout(revision, Path(tmp.name) / "then")
        versions = {"now": STEADY_WORKER, **({"then": old_worker} if old_worker else {})}
        for key in keys:
            family, size = key.split("/")
            wargs = ["--peer", "symad", "--workload", family, "--size", size, "--repeats", repeats,
                     "--min-time", min_time, "--write-ref", str(Path(tmp.name) / "ref.npz")]  # (so it times)
            runs = harness.in_turn(versions, self.repeats, lambda v, wargs=wargs, limit=self.calls_timeout * 4:
                                   harness.run_worker(versions[v], wargs, limit))
            samples = {v: [{"vg_s": r["vg"]["median_s"], "v_s": r["v"]["median_s"]} for r in rs
                           if r["status"] in ("ok", "unchecked") and "vg" in r] for v, rs in runs.items()}
            was = committed.get(key)
            row = {"key": key, "samples": samples["now"], "vg_s": median_of(samples["now"], "vg_s"),
                   "v_s": median_of(samples["now"], "v_s"),
                   "committed_vg_s": was["vg"]["median_s"] if was else None,
                   "committed_v_s": was["v"]["median_s"] if was else None}
            if old_worker:
                row.update(then_samples=samples["then"], then_vg_s=median_of(samples["then"], "vg_s"),
                           then_v_s=median_of(samples["then"], "v_s"))
            print(f"steady {key}: {row['vg_s']} vs {row['committed_vg_s']} (that code now: {row.get('then_vg_s')})",
                  file=sys.stderr, flush=True)
            rows.append(row)
        tmp.cleanup()
        return {"baseline": _relative(Path(baseline_path)), "baseline_date": meta.get("date"),
                "baseline_revision": meta.get("revision"), "baseline_load": [meta.get("load_before"),
                                                                             meta.get("load_after")],
                "then_revision": revision if old_worker else None, "rows": rows}

    def cli(self) -> dict[str, Any]:
        """Wall time of the command line against importing Lark, with bytecode caches as users have them."""
        script = shutil.which("symad", path=sysconfig.get_path("scripts"))
        symad_cmd = [script] if script else [sys.executable, "-m", "symad"]
        cmds = {"symad": [*symad_cmd, "grad", "(x+y)+x*(x+y)", "--at", "x=1,y=2"],
                "lark": [sys.executable, "-c", "import lark"]}
        runs = 3 if self.quick else 7
        times: dict[str, list[float]] = {k: [] for k in cmds}
        outputs: dict[str, str] = {}
        with tempfile.TemporaryDirectory(prefix="symad-pyc-") as pyc:
            env = dict(self.env)
            env.pop("PYTHONDONTWRITEBYTECODE", None)
            env["PYTHONPYCACHEPREFIX"] = pyc  # .pyc files written (once, by the warm-up) and read from here
            for k in range(runs + 1):
                for name, cmd in cmds.items():
                    t0 = time.perf_counter()
                    done = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=str(ROOT), timeout=60)
                    dt = time.perf_counter() - t0
                    if done.returncode != 0:
                        return {"error": f"{name}: exit {done.returncode}: {done.stderr[-300:]}", "commands": cmds}
                    outputs[name] = done.stdout
                    if k:  # run 0 writes the bytecode caches
                        times[name].append(dt)
        return {"commands": {k: " ".join(_short(a) for a in v) for k, v in cmds.items()},
                "samples": times, "median_s": {k: statistics.median(v) for k, v in times.items()},
                "output": outputs.get("symad", "")[:200], "console_script": bool(script)}


def _checkout(revision: str, where: Path) -> Path | None:
    """symad/, benchmarks/ and grammar/ of ``revision`` in ``where`` (read from git, nothing in the
    checkout changes); that revision's peers worker (benchmarks/peers/worker.py, or
    benchmarks/worker.py before the suites had folders), or None."""
    import io
    import tarfile

    if not revision:
        return None
    try:
        done = subprocess.run(["git", "archive", "--format=tar", revision, "symad", "benchmarks", "grammar"],
                              cwd=ROOT, capture_output=True, timeout=60)
    except (OSError, subprocess.SubprocessError):
        return None
    if done.returncode != 0:
        return None
    where.mkdir(parents=True, exist_ok=True)
    with tarfile.open(fileobj=io.BytesIO(done.stdout)) as tar:
        tar.extractall(where, filter="data")
    for worker in (where / "benchmarks" / "peers" / "worker.py", where / "benchmarks" / "worker.py"):
        if worker.exists():
            return worker
    return None


def _short(arg: str) -> str:
    """An argument as a shell would take it, paths shortened to their last part."""
    if arg == sys.executable or arg.startswith("/"):
        arg = Path(arg).name
    if arg.startswith("python"):
        arg = "python"
    return f'"{arg}"' if any(ch in arg for ch in " ()*+") else arg


def _relative(path: Path) -> str:
    try:
        return str(path.resolve().relative_to(ROOT))
    except ValueError:
        return str(path)


def _progress(task: str, m: dict[str, Any], figure: str = "") -> None:
    s = m.get("samples") or []
    val = median_of(s, figure) if figure else None
    shown = f"{figure} {val:.4g} s ×{len(s)}" if val is not None else ""
    why = m.get("note") or m.get("error") or ""
    print(f"{task:<8} {m['key']:<16} {m['peer']:<22} {m['status']:<11} {shown} {why}"[:220], file=sys.stderr,
          flush=True)


# ============================================================================ driver
def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.first_call", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="small sizes, one process each (a smoke run)")
    ap.add_argument("--only", help="comma-separated sections: " + ", ".join(SECTIONS))
    ap.add_argument("--peers", help="comma-separated peer names (symad always runs), e.g. symad,casadi")
    ap.add_argument("--repeats", type=int, default=3, help="fresh processes per measurement, median shown (3)")
    ap.add_argument("--solve-repeats", type=int, default=5,
                    help="fresh processes per time-to-solution measurement (5): its totals share a noisy "
                         "NumPy and SciPy import")
    ap.add_argument("--timeout", type=float, help=f"seconds per phase ({SOLVE_TIMEOUT_S:g} for a solve, "
                    f"{CALLS_TIMEOUT_S:g} for the calls)")
    ap.add_argument("--baseline", type=Path, default=STEADY_WORKER.parent / "peers.json",
                    help="the steady-state figures to compare with (benchmarks/peers/peers.json)")
    ap.add_argument("--out-dir", type=Path, default=FOLDER, help="where first_call.md/.json go (this folder)")
    ap.add_argument("--update", action="store_true",
                    help="keep the sections not run (see --only) from the first_call.json in --out-dir")
    args = ap.parse_args(argv)
    args.update = args.out_dir / "first_call.json" if args.update else None
    data = run_suite(args, harness.command_line("python -m benchmarks.first_call",
                                                argv if argv is not None else sys.argv[1:]))
    write(data, args.out_dir)
    return 0


def run_suite(args: argparse.Namespace, command: str) -> dict[str, Any]:
    """Measure the sections asked for; the data first_call.json holds."""
    only = set(args.only.split(",")) if args.only else set(SECTIONS)
    unknown = only - set(SECTIONS)
    if unknown:
        raise SystemExit(f"unknown section(s): {', '.join(sorted(unknown))}")
    suite = Suite(args)
    started = time.time()
    meta: dict[str, Any] = {
        "command": command,
        "date": harness.now(),
        "quick": args.quick, "repeats": suite.repeats, "python": platform.python_version(),
        "machine": harness.machine(), "versions": adapters.versions(), "revision": harness.revision(),
        "load_before": harness.load(), "solve_timeout_s": suite.solve_timeout, "calls_timeout_s": suite.calls_timeout,
        "solve_repeats": 1 if args.quick else args.solve_repeats,
    }  # fmt: skip
    data: dict[str, Any] = {"meta": meta, "runs": {}}
    earlier = getattr(args, "update", None)
    if earlier:  # the sections not run now, as an earlier run measured them
        try:
            old = json.loads(Path(earlier).read_text())
        except (OSError, ValueError):
            old = {}
        for name in SECTIONS:
            if name not in only and name in old:
                data[name] = old[name]
                data["runs"][name] = old.get("runs", {}).get(name) or _run_of(old.get("meta", {}))
    steps: list[tuple[str, Callable[[], Any]]] = [
        ("cli", suite.cli), ("tiny", suite.tiny), ("pernode", suite.pernode), ("steady", suite.steady),
        ("calls", suite.calls), ("solve", suite.solve),
    ]  # fmt: skip
    for name, step in steps:
        if name in only:
            load, t0 = harness.load(), time.time()
            data[name] = step()
            data["runs"][name] = {"command": command, "date": meta["date"], "revision": harness.revision(),
                                  "load_before": load,
                                  "load_after": harness.load(), "wall_s": round(time.time() - t0, 1)}
    meta["load_after"] = harness.load()
    meta["revision_after"] = harness.revision()
    meta["wall_s"] = time.time() - started
    data["targets"] = report.targets(data)
    return data


def _run_of(meta: dict[str, Any]) -> dict[str, Any]:
    return {k: meta.get(k) for k in ("command", "date", "revision", "load_before", "load_after")}


def write(data: dict[str, Any], out_dir: Path) -> None:
    """first_call.json and first_call.md in ``out_dir``."""
    harness.write(out_dir, "first_call", data, report.render(data))

