"""Discretised optimal control from text to the optimum: symad + IPOPT beside CasADi + IPOPT, fresh processes.

    python -m benchmarks.optimal_control            # everything; optimal_control.json and .md here
    python -m benchmarks.optimal_control --quick    # small N, one process each (writes only with --out-dir)
    python -m benchmarks.optimal_control --make-wheels-venv /tmp/symad-wheels   # and symad with cyipopt-wheels

The problems (:mod:`benchmarks.optimal_control.problems`): a minimum-energy double integrator with
N = 2,000 and 20,000 steps, and Van der Pol with a bounded control at the same N.  symad reads them
as text with sums and ``each`` families and solves with ``minimize(..., method="ipopt")``
(cyipopt over the system's IPOPT); CasADi builds SX expressions in Python and solves with
``nlpsol("ipopt")`` (the IPOPT CasADi bundles).  Every figure is the median of ``--repeats`` fresh
processes (``worker.py``, through :func:`benchmarks.harness.run_worker`), the configurations taken
in turn; the two peers' optima are compared (their values to 1e-6, relative, and the control at
five times to 1e-4) and so are their iterations: a difference stops the suite (exit 1, nothing
written).

Each case runs in two configurations (:data:`CONFIGS`): ``defaults``, each peer's own (symad's
``minimize(method="ipopt")`` turns MUMPS's permuting scaling off, ``mumps_permuting_scaling 0``;
CasADi's ``nlpsol`` keeps IPOPT's), and ``ipopt_defaults``, IPOPT's own defaults for both
(:data:`IPOPT_DEFAULTS`, ``mumps_permuting_scaling 7`` passed to both: nothing changes for CasADi,
symad's own default is undone), which shows how much of symad's lead comes from its MUMPS default.

symad keeps the machine code it compiles in its code cache (``~/.cache/symad``), so every process
after a case's first loads its programs instead of compiling them.  A third configuration,
``cold``, measures symad (its own defaults) on a problem it has never compiled: each process gets
a code cache of its own (``SYMAD_CACHE_DIR``), where an untimed process has first solved the same
problem at another N (the code every program shares is there, none of this N's programs).

``--wheels-python PATH`` adds a third peer, ``symad-wheels``: symad solving in that Python, whose
cyipopt is the ``cyipopt-wheels`` package (a manylinux wheel bundling IPOPT 3.14, MUMPS and
OpenBLAS), in both configurations, beside the same run's CasADi.  ``--make-wheels-venv DIR`` makes
that Python first (``python -m venv DIR``, then ``pip install -e <this checkout> cyipopt-wheels``
in it; done again, pip finds it there) and measures with it.  Never the suite's own Python:
cyipopt-wheels installs the same ``cyipopt`` package as the system-built cyipopt, and replaces it.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import platform
import re
import subprocess
import sys
import tempfile
import time
from importlib import metadata
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from benchmarks import harness  # noqa: E402
from benchmarks.optimal_control import report  # noqa: E402
from benchmarks.optimal_control.problems import PROBLEMS  # noqa: E402

FOLDER = Path(__file__).resolve().parent
WORKER = FOLDER / "worker.py"
SIZES, QUICK_SIZES = (2000, 20000), (200,)
PEERS = ("symad", "casadi")
NEEDS = {"symad": "cyipopt", "casadi": "casadi"}
WHEELS = "symad-wheels"  # symad in the Python of --wheels-python (cyipopt-wheels' IPOPT)
SYMADS = ("symad", WHEELS)  # the peers whose optimum must be CasADi's
TIMEOUT_S = 600.0
FUN_RTOL, CONTROL_ATOL = 1e-6, 1e-4
IPOPT_DEFAULTS = {"mumps_permuting_scaling": 7}  # IPOPT's default, which symad's minimize changes to 0
CONFIGS = {"defaults": {}, "ipopt_defaults": IPOPT_DEFAULTS}  # each peer's own defaults; IPOPT's for both
COLD = "cold"  # symad alone, its own defaults, a code cache without this N's programs (the module's notes)


def missing(peer: str) -> str | None:
    module = NEEDS[peer]
    return f"{module} is not installed" if importlib.util.find_spec(module) is None else None


def versions() -> dict[str, str]:
    """Installed versions (without importing them) and the system's IPOPT (pkg-config)."""
    out = {}
    for dist in ("symad", "numpy", "scipy", "cyipopt", "casadi"):
        try:
            out[dist] = metadata.version(dist)
        except metadata.PackageNotFoundError:
            pass
    try:
        out["ipopt (system, for cyipopt)"] = subprocess.run(["pkg-config", "--modversion", "ipopt"],
                                                            capture_output=True, text=True).stdout.strip()
        spec = importlib.util.find_spec("cyipopt")
        folders = list(spec.submodule_search_locations or []) if spec else []
        wrappers = [p for f in folders for p in Path(f).glob("ipopt_wrapper*.so")]
        if wrappers:  # the MUMPS it links (IPOPT 3.11's banner does not say)
            linked = subprocess.run(["ldd", str(wrappers[0])], capture_output=True, text=True).stdout
            found = re.search(r"libdmumps\S*-(\d+(?:\.\d+)*)\.so", linked)
            if found:
                out["mumps (system, for cyipopt)"] = found[1]
    except OSError:
        pass
    return out


WHEELS_VERSIONS = """
import importlib.metadata as m, json, sys
from symad.optimize.ipopt import cyipopt_module
wrapper = cyipopt_module()
print(json.dumps({"cyipopt-wheels": m.version("cyipopt-wheels"), "numpy": m.version("numpy"),
                  "ipopt": ".".join(map(str, wrapper.IPOPT_VERSION)), "wrapper": wrapper.__file__,
                  "python": sys.version.split()[0]}))
"""


def wheels_versions(python: str, env: dict[str, str]) -> dict[str, str]:
    """What the Python of ``--wheels-python`` has: cyipopt-wheels' version and its IPOPT's (from the
    compiled wrapper symad loads there); a RuntimeError saying what is wrong if it lacks either."""
    try:
        run = subprocess.run([python, "-c", WHEELS_VERSIONS], capture_output=True, text=True, cwd=str(ROOT), env=env,
                             timeout=120)
    except OSError as exc:
        raise RuntimeError(f"--wheels-python {python}: {exc}") from None
    if run.returncode != 0:
        said = (run.stderr.strip().splitlines() or ["(nothing)"])[-1]
        raise RuntimeError(f"--wheels-python {python} cannot run symad with cyipopt-wheels: {said} "
                           "(make one with --make-wheels-venv DIR)")
    found = json.loads(run.stdout.strip().splitlines()[-1])
    return {f"cyipopt-wheels (in {python})": found["cyipopt-wheels"],
            "ipopt (bundled by cyipopt-wheels)": found["ipopt"], f"python (in {python})": found["python"],
            f"numpy (in {python})": found["numpy"]}


def make_wheels_venv(folder: Path) -> str:
    """A venv in ``folder`` with this checkout (editable) and cyipopt-wheels; its Python.  Made by
    ``python -m venv`` and its own pip: nothing changes in the Python that runs the suite."""
    python = folder / "bin" / "python"
    if not python.exists():
        subprocess.run([sys.executable, "-m", "venv", str(folder)], check=True)
    subprocess.run([str(python), "-m", "pip", "install", "-q", "-e", str(ROOT), "cyipopt-wheels"], check=True)
    return str(python)


def measure(runs: dict[str, list[str]], repeats: int, env: dict[str, str]) -> dict[str, dict[str, Any]]:
    def sample(name: str) -> dict[str, Any]:
        if name.endswith(f" {COLD}"):
            with tempfile.TemporaryDirectory(prefix="symad-cold-") as folder:
                return cold_sample(name, runs[name], {**env, "SYMAD_CACHE_DIR": folder})
        t0 = time.perf_counter()
        r = harness.run_worker(WORKER, runs[name], TIMEOUT_S, "solve", env)
        r["wall_s"] = time.perf_counter() - t0
        print(f"{name:40} {r.get('status'):9} {r['wall_s']:6.1f} s {r.get('error', '')[:100]}", file=sys.stderr,
              flush=True)
        return r

    samples = harness.in_turn(runs, repeats, sample, lambda _n, s: s[-1].get("status") != "ok")
    return {name: summarise(s) for name, s in samples.items()}


def cold_sample(name: str, args: list[str], env: dict[str, str]) -> dict[str, Any]:
    """One process solving a problem whose programs its code cache lacks: an untimed process solves
    it at N + 1 first (the code shared by every program is then in the cache, none of N's)."""
    n = int(args[args.index("--n") + 1])
    warm = [*args[:args.index("--n")], "--n", str(n + 1)]
    first = harness.run_worker(WORKER, warm, TIMEOUT_S, "solve", env)
    if first.get("status") != "ok":
        return first
    t0 = time.perf_counter()
    r = harness.run_worker(WORKER, args, TIMEOUT_S, "solve", env)
    r["wall_s"] = time.perf_counter() - t0
    print(f"{name:40} {r.get('status'):9} {r['wall_s']:6.1f} s {r.get('error', '')[:100]}", file=sys.stderr,
          flush=True)
    return r


SUMMED = ("import_s", "build_s", "solve_s", "total_s", "eval_s", "cpu_s", "wall_s")


def summarise(samples: list[dict[str, Any]]) -> dict[str, Any]:
    """Medians of the times over the processes that ran to the end; the solution of the first."""
    ok = [s for s in samples if s.get("status") == "ok"]
    if not ok:
        first = samples[0] if samples else {}
        return {"status": first.get("status", "missing"),
                "error": str(first.get("error") or first.get("timeout_phase") or "")[:300]}
    out = {k: v for k in SUMMED if (v := harness.median_of(ok, k)) is not None}
    for key in ("fun", "nit", "success", "message", "n_variables", "violation", "u_at"):
        if key in ok[0]:
            out[key] = ok[0][key]
    out["status"], out["processes"] = "ok", len(ok)
    return out


TIMING_CASE = ("van_der_pol", 2000)
TIMING_LINES = ("This is Ipopt", "MUMPS used", "Number of Iterations", "OverallAlgorithm", "ComputeSearchDirection",
                "LinearSystemSymbolicFactorization", "LinearSystemBackSolve", "Function Evaluations")
TIMING_LEVEL = 6  # IPOPT's print_level: the lowest at which it says the ordering MUMPS used ("MUMPS used ...")


# The ordering each peer's MUMPS uses, every option explicit (not any peer's defaults): MUMPS's own
# choice with the permuting scaling on (7, IPOPT's default) and off (0, symad's), and whether it has
# SCOTCH and METIS (IPOPT's mumps_pivot_order 3 and 5; asked with the scaling off, symad's default).
ORDERINGS_ASKED = {"scaling 7": {"mumps_permuting_scaling": 7, "mumps_pivot_order": 7},
                   "scaling 0": {"mumps_permuting_scaling": 0, "mumps_pivot_order": 7},
                   "SCOTCH": {"mumps_permuting_scaling": 0, "mumps_pivot_order": 3},
                   "METIS": {"mumps_permuting_scaling": 0, "mumps_pivot_order": 5}}


def _pythons(wheels: str | None) -> dict[str, str]:
    pythons = {peer: sys.executable for peer in PEERS if not missing(peer)}
    if wheels:
        pythons[WHEELS] = wheels
    return pythons


def _said(python: str, peer: str, options: dict[str, Any], env: dict[str, str]) -> list[str]:
    """IPOPT's lines of interest (:data:`TIMING_LINES`) from one solve of :data:`TIMING_CASE`."""
    problem, n = TIMING_CASE
    flags = [f for k, v in {**options, "print_level": TIMING_LEVEL}.items() for f in ("--option", f"{k}={v}")]
    run = subprocess.run([python, str(WORKER), "--peer", "symad" if peer == WHEELS else peer, "--problem", problem,
                          "--n", str(n), *flags], capture_output=True, text=True, cwd=str(ROOT), env=env,
                         timeout=TIMEOUT_S)
    said = [ln.rstrip() for ln in run.stdout.splitlines() if ln.strip().startswith(TIMING_LINES)]
    return said or [f"(no statistics: exit {run.returncode}) {run.stderr[-300:]}"]


def ipopt_timing(env: dict[str, str], wheels: str | None = None) -> dict[str, dict[str, list[str]]]:
    """IPOPT's own account of one solve (its version and linear solver, the scaling and ordering MUMPS
    used, ``print_timing_statistics``: CPU and wall seconds by task) for each peer and configuration,
    from one more process each (``symad-wheels`` too, in the Python ``wheels``, if given)."""
    out: dict[str, dict[str, list[str]]] = {}
    for config, options in CONFIGS.items():
        for peer, python in _pythons(wheels).items():
            out.setdefault(config, {})[peer] = _said(python, peer, {**options, "print_timing_statistics": "yes"}, env)
    return out


def orderings(env: dict[str, str], wheels: str | None = None) -> dict[str, dict[str, str]]:
    """The line "MUMPS used ..." of each peer's IPOPT with each option set of :data:`ORDERINGS_ASKED`
    (a MUMPS built without the ordering asked for falls back to another)."""
    out: dict[str, dict[str, str]] = {}
    for name, options in ORDERINGS_ASKED.items():
        for peer, python in _pythons(wheels).items():
            said = _said(python, peer, options, env)
            out.setdefault(peer, {})[name] = next((ln for ln in said if ln.startswith("MUMPS used")), said[-1])
    return out


def disagreements(results: dict[str, Any]) -> list[str]:
    """Where symad's optimum (with either IPOPT) differs from CasADi's beyond the tolerances, or its
    iterations from CasADi's."""
    found = []
    for case, peers in results.items():
        c = peers.get("casadi", {})
        for name in SYMADS:
            s = peers.get(name, {})
            if s.get("status") != "ok" or c.get("status") != "ok":
                continue
            if not (s.get("success") and c.get("success")):
                found.append(f"{case}: success {name} {s.get('success')}, CasADi {c.get('success')}")
            if abs(s["fun"] - c["fun"]) > FUN_RTOL * max(1.0, abs(c["fun"])):
                found.append(f"{case}: f {name} {s['fun']!r}, CasADi {c['fun']!r}")
            if max(abs(a - b) for a, b in zip(s["u_at"], c["u_at"])) > CONTROL_ATOL:
                found.append(f"{case}: u {name} {s['u_at']}, CasADi {c['u_at']}")
            if s.get("nit") != c.get("nit"):
                found.append(f"{case}: iterations {name} {s.get('nit')}, CasADi {c.get('nit')}")
    return found


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.optimal_control", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="N = 200, one process each (writes only with --out-dir)")
    ap.add_argument("--repeats", type=int, default=5, help="fresh processes per figure, median shown (5)")
    ap.add_argument("--out-dir", type=Path, help="where optimal_control.md/.json go (default: this folder)")
    wheels = ap.add_mutually_exclusive_group()
    wheels.add_argument("--wheels-python", metavar="PATH",
                        help="also measure symad in this Python, which has cyipopt-wheels (its bundled IPOPT)")
    wheels.add_argument("--make-wheels-venv", type=Path, metavar="DIR",
                        help="make DIR a venv with this checkout and cyipopt-wheels, and measure with it too")
    args = ap.parse_args(argv)
    repeats = 1 if args.quick else args.repeats
    env = harness.bytecode_env(dict(os.environ))
    env.pop("SYMAD_CACHE_DIR", None)
    python = make_wheels_venv(args.make_wheels_venv) if args.make_wheels_venv else args.wheels_python
    try:
        found = wheels_versions(python, env) if python else {}
    except RuntimeError as exc:
        print(exc, file=sys.stderr)
        return 2
    meta = {"command": harness.command_line("python -m benchmarks.optimal_control",
                                            sys.argv[1:] if argv is None else argv),
            "date": harness.now(), "machine": harness.machine(), "python": platform.python_version(),
            "revision": harness.revision(), "load_before": harness.load(), "quick": args.quick,
            "repeats": repeats, "versions": {**versions(), **found}}
    started = time.perf_counter()
    runs, skipped = {}, {}
    for config, options in CONFIGS.items():
        flags = [f for k, v in options.items() for f in ("--option", f"{k}={v}")]
        for problem in PROBLEMS:
            for n in QUICK_SIZES if args.quick else SIZES:
                for peer in PEERS:
                    name = f"{problem} {n} {peer} {config}"
                    why = missing(peer)
                    if why:
                        skipped[name] = {"status": "skipped", "error": why}
                    else:
                        runs[name] = ["--peer", peer, "--problem", problem, "--n", str(n), *flags]
                if python:  # the worker becomes that Python before anything is timed
                    runs[f"{problem} {n} {WHEELS} {config}"] = ["--peer", "symad", "--problem", problem, "--n",
                                                                str(n), *flags, "--python", python]
    for problem in PROBLEMS:
        for n in QUICK_SIZES if args.quick else SIZES:
            name = f"{problem} {n} symad {COLD}"
            if missing("symad"):
                skipped[name] = {"status": "skipped", "error": missing("symad")}
            else:
                runs[name] = ["--peer", "symad", "--problem", problem, "--n", str(n)]
    measured = {**measure(runs, repeats, env), **skipped}
    grouped: dict[str, dict[str, dict[str, Any]]] = {config: {} for config in (*CONFIGS, COLD)}
    for name, m in measured.items():
        problem, n, peer, config = name.split()
        grouped[config].setdefault(f"{problem} {n}", {})[peer] = m
    results = grouped["defaults"]
    timing = ipopt_timing(env, python)
    meta["load_after"], meta["minutes"] = harness.load(), round((time.perf_counter() - started) / 60, 1)
    data = {"meta": meta, "results": results,
            "ipopt_defaults": {"options": IPOPT_DEFAULTS, "results": grouped["ipopt_defaults"]},
            "cold": grouped[COLD],
            "ipopt_timing": {"case": list(TIMING_CASE), "lines": timing, "orderings": orderings(env, python)}}
    cold = {case: {"symad": peers.get("symad", {}), "casadi": results.get(case, {}).get("casadi", {})}
            for case, peers in grouped[COLD].items()}
    wrong = (disagreements(results) + [f"({IPOPT_DEFAULTS}) {w}" for w in disagreements(grouped["ipopt_defaults"])]
             + [f"(cold) {w}" for w in disagreements(cold)])
    if wrong:
        print("symad's optimum differs from CasADi's:\n  " + "\n  ".join(wrong), file=sys.stderr)
        return 1
    page = report.render(data)
    print(page)
    out = args.out_dir or (None if args.quick else FOLDER)
    if out is not None:
        harness.write(out, "optimal_control", data, page)
    return 0
