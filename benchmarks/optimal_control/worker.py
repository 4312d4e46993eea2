"""One solve of the optimal-control suite in a fresh process, run by :mod:`benchmarks.optimal_control.suite`.

``--peer symad``: ``symad.optimize.minimize(text, method="ipopt", constraints=[... each(...) ...])``;
``--peer casadi``: CasADi SX built in Python, ``nlpsol("ipopt")`` (CasADi's own IPOPT), called once.
Both from this script's first line: the imports, building the problem (parsing, compiling or
code generation), the solve.  Prints one JSON line per phase (:func:`benchmarks.harness.emit`):
``import_s``, ``build_s`` (the problem ready: for symad, minimize's ``setup_time``), ``solve_s``,
``total_s`` (from the first line to the solution in hand), ``eval_s`` (the part of the solve spent
in the problem's functions and derivatives, IPOPT's own work being the rest: symad's
``evaluation_time``, CasADi's ``t_wall_nlp_*`` statistics), ``cpu_s`` (the process's CPU seconds over
the same span as ``total_s``, every thread's: on a shared machine, less noisy than wall time), ``fun``,
``nit``, ``success``, and the solution's control at a few times (``u_at``), which the suite compares between peers.
``--option NAME=VALUE`` (repeatable) sets an IPOPT option for either peer.  ``--python PATH``
runs the solve in that Python instead (another venv: cyipopt-wheels' IPOPT): this process becomes
it (``os.execv``, the same process id and pipes) before anything is timed, with the same arguments.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import traceback
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from benchmarks.harness import emit, without_option  # noqa: E402
from benchmarks.optimal_control.problems import casadi_problem, symad_problem  # noqa: E402

T_START = time.perf_counter()  # the benchmark's own machinery is loaded: every later import is a peer's cost
CPU_START = time.process_time()
SAMPLES = 5  # the control at this many evenly spaced steps, for the comparison of solutions


def controls(u: list[float]) -> list[float]:
    n = len(u)
    return [float(u[round(k * (n - 1) / (SAMPLES - 1))]) for k in range(SAMPLES)]


def run_symad(problem: str, n: int, options: dict[str, Any]) -> None:
    from symad.optimize import minimize
    from symad.optimize.ipopt import cyipopt_module

    cyipopt_module()  # what minimize(method="ipopt") imports at its first call: an import, timed so

    t_import = time.perf_counter()
    emit(phase="import", import_s=t_import - T_START)
    s = symad_problem(problem, n)
    r = minimize(s["fun"], s["x0"], method="ipopt", constraints=s["constraints"], bounds=s["bounds"],
                 options=options or None)
    done = time.perf_counter()
    emit(phase="solve", build_s=r.setup_time, solve_s=r.time, total_s=done - T_START, eval_s=r.evaluation_time,
         cpu_s=time.process_time() - CPU_START,
         fun=r.fun, nit=r.nit,
         success=bool(r.success), message=r.message, n_variables=len(r.x), violation=r.constraints["violation"],
         u_at=controls(list(r.point["u"])))


def run_casadi(problem: str, n: int, options: dict[str, Any]) -> None:
    import casadi as ca

    t_import = time.perf_counter()
    emit(phase="import", import_s=t_import - T_START)
    c = casadi_problem(problem, n)
    solver = ca.nlpsol("solver", "ipopt", c["nlp"], {"ipopt.print_level": 0, "print_time": 0, "ipopt.sb": "yes",
                                                     **{f"ipopt.{k}": v for k, v in options.items()}})
    t_build = time.perf_counter()
    out = solver(x0=c["x0"], lbx=c["lbx"], ubx=c["ubx"], lbg=c["lbg"], ubg=c["ubg"])
    done = time.perf_counter()
    stats = solver.stats()
    x = out["x"].full().ravel()
    evaluations = sum(v for k, v in stats.items() if k.startswith("t_wall_nlp_"))
    emit(phase="solve", build_s=t_build - t_import, solve_s=done - t_build, total_s=done - T_START, eval_s=evaluations,
         cpu_s=time.process_time() - CPU_START,
         fun=float(out["f"]), nit=int(stats["iter_count"]), success=bool(stats["success"]),
         message=str(stats["return_status"]), n_variables=len(x), u_at=controls(list(x[-n:])))


PEERS = {"symad": run_symad, "casadi": run_casadi}


def option(text: str) -> tuple[str, Any]:
    """``NAME=VALUE``: the value an int, else a float, else the string."""
    name, _, value = text.partition("=")
    for kind in (int, float):
        try:
            return name, kind(value)
        except ValueError:
            pass
    return name, value


def without_python(argv: list[str]) -> list[str]:
    """The arguments less ``--python PATH`` (or ``--python=PATH``)."""
    return without_option(argv, "--python")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--peer", choices=sorted(PEERS), required=True)
    ap.add_argument("--problem", required=True)
    ap.add_argument("--n", type=int, required=True)
    ap.add_argument("--option", type=option, action="append", default=[], help="an IPOPT option, NAME=VALUE")
    ap.add_argument("--python", help="run in this Python instead (it replaces this process)")
    args = ap.parse_args(argv)
    if args.python:
        os.execv(args.python, [args.python, str(Path(__file__).resolve()), *without_python(
            sys.argv[1:] if argv is None else argv)])
    try:
        PEERS[args.peer](args.problem, args.n, dict(args.option))
    except Exception as exc:  # reported as the worker's last line: the suite records it and goes on
        emit(error=f"{type(exc).__name__}: {exc}"[:500], traceback=traceback.format_exc()[-2000:])
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
