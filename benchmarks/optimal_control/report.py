"""The optimal-control suite's page (optimal_control.md) from its figures (optimal_control.json).

    python -m benchmarks.optimal_control.report      # write the page again from the figures (nothing is measured)
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from benchmarks.harness import fmt_ratio, fmt_time, rerender, table

NAMES = {"double_integrator": "double integrator", "van_der_pol": "Van der Pol, bounded control"}


def _case(case: str) -> str:
    problem, n = case.split()
    return f"{NAMES.get(problem, problem)}, N = {int(n):,}"


def _sum(m: dict[str, Any], *keys: str) -> float | None:
    values = [m.get(k) for k in keys]
    return None if any(v is None for v in values) else sum(values)  # type: ignore[arg-type]


def _ratio(a: float | None, b: float | None) -> float | None:
    return a / b if a is not None and b else None


def render(data: dict[str, Any]) -> str:
    meta, results = data["meta"], data["results"]
    out = ["# Optimal control: symad + IPOPT beside CasADi + IPOPT\n\n",
           f"`{meta['command']}` on {meta['machine']}, Python {meta['python']}, revision {meta['revision']}, "
           f"{meta['date']}; load average {meta['load_before']} before, {meta.get('load_after')} after; "
           f"{meta['repeats']} fresh processes per figure (medians), taken in turn; {meta.get('minutes')} minutes.\n\n",
           "Versions: " + ", ".join(f"{k} {v}" for k, v in meta["versions"].items()) + ".\n\n",
           "Each process goes from its first line to the optimum in hand: the imports, building the problem "
           "(symad: parsing the texts, compiling the loops and the sparse derivatives; CasADi: SX expressions "
           "built in Python and `nlpsol`'s set-up), IPOPT's solve with its default options (tol 1e-8, MUMPS). "
           "The two peers use different builds of IPOPT: symad the system's through cyipopt, CasADi the one it "
           "bundles; the iteration counts show they take the same path. **total** is the whole process "
           "(Python's own start-up aside); a ratio below 1 means symad reaches the optimum sooner.\n\n"]
    rows = []
    for case, peers in results.items():
        s, c = peers.get("symad", {}), peers.get("casadi", {})
        rows.append([_case(case), str(s.get("n_variables", "—")),
                     *(fmt_time(s.get(k)) if s.get("status") == "ok" else s.get("status", "—")
                       for k in ("import_s", "build_s", "solve_s", "total_s")),
                     *(fmt_time(c.get(k)) if c.get("status") == "ok" else c.get("status", "—")
                       for k in ("import_s", "build_s", "solve_s", "total_s")),
                     fmt_ratio(_ratio(s.get("total_s"), c.get("total_s"))),
                     fmt_ratio(_ratio(_sum(s, "build_s", "solve_s"), _sum(c, "build_s", "solve_s")))])
    out.append(table(["problem", "variables", "symad import", "symad build", "symad solve", "symad total",
                      "CasADi import", "CasADi build", "CasADi solve", "CasADi total", "total: symad / CasADi",
                      "build + solve: symad / CasADi"], rows))
    out.append("\nsymad's import includes cyipopt's, which imports `scipy.optimize` whether it is used or not; "
               "**build + solve** leaves the imports out. symad's solve includes its calls of the derivatives "
               "(the Jacobian and Hessian values, from compiled loops) inside IPOPT's iterations.\n")
    out.append("\n**The optima** (each peer's first process; the suite stops if they differ beyond 1e-6 in f, "
               "relative, or 1e-4 in the control at five times):\n\n")
    rows = []
    for case, peers in results.items():
        s, c = peers.get("symad", {}), peers.get("casadi", {})
        diff = (max(abs(a - b) for a, b in zip(s["u_at"], c["u_at"]))
                if "u_at" in s and "u_at" in c else None)
        rows.append([_case(case), repr(s.get("fun", "—")), repr(c.get("fun", "—")), str(s.get("nit", "—")),
                     str(c.get("nit", "—")), "—" if diff is None else f"{diff:.1e}"])
    out.append(table(["problem", "f symad", "f CasADi", "iterations symad", "iterations CasADi",
                      "largest difference in u"], rows))
    slower = [f"{_case(case)} ({fmt_ratio(r)}×)" for case, peers in results.items()
              if (r := _ratio(peers.get("symad", {}).get("total_s"), peers.get("casadi", {}).get("total_s")))
              and r > 1.0]
    out.append("\n**Where symad is slower**: " + ("; ".join(slower) if slower else "nowhere in this run") + ".\n")
    return "".join(out)


if __name__ == "__main__":
    sys.exit(rerender(Path(__file__).resolve().parent, "optimal_control", render))
