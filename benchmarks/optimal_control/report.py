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


def _times_table(results: dict[str, Any]) -> str:
    rows = []
    for case, peers in results.items():
        s, c = peers.get("symad", {}), peers.get("casadi", {})
        rows.append([_case(case), str(s.get("n_variables", "—")),
                     *(fmt_time(s.get(k)) if s.get("status") == "ok" else s.get("status", "—")
                       for k in ("import_s", "build_s", "solve_s", "total_s")),
                     *(fmt_time(c.get(k)) if c.get("status") == "ok" else c.get("status", "—")
                       for k in ("import_s", "build_s", "solve_s", "total_s")),
                     fmt_ratio(_ratio(s.get("total_s"), c.get("total_s"))),
                     fmt_ratio(_ratio(_sum(s, "build_s", "solve_s"), _sum(c, "build_s", "solve_s"))),
                     fmt_ratio(_ratio(s.get("cpu_s"), c.get("cpu_s")))])
    return table(["problem", "variables", "symad import", "symad build", "symad solve", "symad total",
                  "CasADi import", "CasADi build", "CasADi solve", "CasADi total", "total: symad / CasADi",
                  "build + solve: symad / CasADi", "CPU: symad / CasADi"], rows)


def _own(m: dict[str, Any]) -> float | None:
    """IPOPT's own part of a solve: the solve less the time in the problem's functions."""
    if m.get("solve_s") is None or m.get("eval_s") is None:
        return None
    return m["solve_s"] - m["eval_s"]


def _inside_table(configs: list[tuple[str, dict[str, Any]]]) -> str:
    rows = []
    for label, results in configs:
        for case, peers in results.items():
            s, c = peers.get("symad", {}), peers.get("casadi", {})
            rows.append([_case(case), label, fmt_time(s.get("eval_s")), fmt_time(_own(s)),
                         fmt_time(c.get("eval_s")), fmt_time(_own(c)), fmt_ratio(_ratio(_own(s), _own(c)))])
    return table(["problem", "IPOPT options", "symad: evaluations", "symad: IPOPT's own", "CasADi: evaluations",
                  "CasADi: IPOPT's own", "IPOPT's own: symad / CasADi"], rows)


def _with_casadi(cold: dict[str, Any], results: dict[str, Any]) -> dict[str, Any]:
    """The cold runs beside CasADi's (which has no code cache) of the same case."""
    return {case: {"symad": peers.get("symad", {}), "casadi": results.get(case, {}).get("casadi", {})}
            for case, peers in cold.items()}


def _cold_table(cold: dict[str, Any], results: dict[str, Any]) -> str:
    rows = []
    for case, peers in _with_casadi(cold, results).items():
        s, c = peers["symad"], peers["casadi"]
        ok = s.get("status") == "ok"
        rows.append([_case(case), *(fmt_time(s.get(k)) if ok else s.get("status", "—")
                                    for k in ("import_s", "build_s", "solve_s", "total_s")),
                     fmt_time(c.get("total_s")) if c.get("status") == "ok" else c.get("status", "—"),
                     fmt_ratio(_ratio(s.get("total_s"), c.get("total_s"))),
                     fmt_ratio(_ratio(s.get("cpu_s"), c.get("cpu_s")))])
    return table(["problem", "symad import", "symad build", "symad solve", "symad total", "CasADi total",
                  "total: symad / CasADi", "CPU: symad / CasADi"], rows)


def _slower(results: dict[str, Any]) -> str:
    slower = [f"{_case(case)} ({fmt_ratio(r)}×)" for case, peers in results.items()
              if (r := _ratio(peers.get("symad", {}).get("total_s"), peers.get("casadi", {}).get("total_s")))
              and r > 1.0]
    return "; ".join(slower) if slower else "nowhere in this run"


def render(data: dict[str, Any]) -> str:
    meta, results = data["meta"], data["results"]
    same = data.get("same_options")
    options = ", ".join(f"`{k} {v}`" for k, v in (same or {}).get("options", {}).items())
    out = ["# Optimal control: symad + IPOPT beside CasADi + IPOPT\n\n",
           f"`{meta['command']}` on {meta['machine']}, Python {meta['python']}, revision {meta['revision']}, "
           f"{meta['date']}; load average {meta['load_before']} before, {meta.get('load_after')} after; "
           f"{meta['repeats']} fresh processes per figure (medians), taken in turn; {meta.get('minutes')} minutes.\n\n",
           "Versions: " + ", ".join(f"{k} {v}" for k, v in meta["versions"].items()) + ".\n\n",
           "Each process goes from its first line to the optimum in hand: the imports (symad's: "
           "`symad.optimize` and cyipopt's compiled wrapper, which `minimize(method=\"ipopt\")` loads without "
           "cyipopt's scipy interface), building the problem "
           "(symad: parsing the texts, compiling the loops and the sparse derivatives; CasADi: SX expressions "
           "built in Python and `nlpsol`'s set-up), IPOPT's solve (tol 1e-8, MUMPS). "
           "The two peers use different builds of IPOPT: symad the system's through cyipopt, CasADi the one it "
           "bundles; the iteration counts show they take the same path. **total** is the whole process "
           "(Python's own start-up aside); a ratio below 1 means symad reaches the optimum sooner. **CPU** is "
           "the process's CPU time over the same span, every thread's (less noisy than wall time on a shared "
           "machine; symad's loops may run on two threads). symad runs "
           "as installed, its code cache as by default: the machine code it compiles is kept "
           "(`~/.cache/symad`), so in the first two tables every process after a case's first loads its "
           "programs instead of compiling them; **A problem symad has not compiled before** below has "
           "each process start with none of its programs in the cache.\n\n",
           "## With IPOPT's default options\n\n", _times_table(results),
           "\n**build + solve** leaves the imports out. symad's solve includes its calls of the derivatives "
           "(the Jacobian and Hessian values, from compiled loops) inside IPOPT's iterations.\n\n"
           f"**Where symad is slower**: {_slower(results)}.\n"]
    if same:
        out += [f"\n## With the same option set for both: {options}\n\n",
                "MUMPS's permuting scaling off (ICNTL(6) = 0) for both peers, everything else IPOPT's defaults: "
                "the system's MUMPS spends most of each of IPOPT's iterations in it, the MUMPS CasADi bundles "
                "little (the table below). The same optimum, the same iterations.\n\n",
                _times_table(same["results"]),
                f"\n**Where symad is slower**: {_slower(same['results'])}.\n"]
    cold = data.get("cold")
    if cold:
        out += ["\n## A problem symad has not compiled before\n\n",
                "symad with IPOPT's defaults, each process with a code cache of its own where an untimed "
                "process first solved the same problem at N + 1: the code every program shares is there, none "
                "of this N's programs, so its build compiles them all (as a first run of a new problem "
                "does); CasADi's figures are those of the first table.\n\n",
                _cold_table(cold, results),
                f"\n**Where symad is slower**: {_slower(_with_casadi(cold, results))}.\n"]
    configs = [("defaults", results)] + ([(options, same["results"])] if same else [])
    if any(p.get("eval_s") is not None for _, r in configs for peers in r.values() for p in peers.values()):
        out += ["\n## Inside the solve\n\n",
                "**evaluations**: the time in the problem's functions and derivatives during the solve "
                "(symad: its callbacks, `evaluation_time`; CasADi: its `t_wall_nlp_*` statistics); "
                "**IPOPT's own**: the rest of the solve, IPOPT's linear algebra (MUMPS) above all; for symad it "
                "also holds cyipopt's copy of each callback's values into IPOPT's arrays (an element at a time "
                "through Python objects, in cyipopt 1.7), which IPOPT's statistics below count among its "
                "function evaluations.\n\n",
                _inside_table(configs)]
    out.append("\n## The optima\n\n(each peer's first process with IPOPT's defaults; the suite stops if they "
               "differ beyond 1e-6 in f, relative, or 1e-4 in the control at five times, with either option "
               "set):\n\n")
    rows = []
    for case, peers in results.items():
        s, c = peers.get("symad", {}), peers.get("casadi", {})
        diff = (max(abs(a - b) for a, b in zip(s["u_at"], c["u_at"]))
                if "u_at" in s and "u_at" in c else None)
        rows.append([_case(case), repr(s.get("fun", "—")), repr(c.get("fun", "—")), str(s.get("nit", "—")),
                     str(c.get("nit", "—")), "—" if diff is None else f"{diff:.1e}"])
    out.append(table(["problem", "f symad", "f CasADi", "iterations symad", "iterations CasADi",
                      "largest difference in u"], rows))
    timing = data.get("ipopt_timing")
    if timing:
        problem, n = timing["case"]
        out.append(f"\n## IPOPT's own timing statistics\n\n{_case(f'{problem} {n}')}, one more process per "
                   "peer and option set with `print_timing_statistics yes` (CPU seconds, and wall in brackets: "
                   "the machine is shared); IPOPT's banner names its version and linear solver:\n")
        for config, peers in timing["lines"].items():
            label = "IPOPT's defaults" if config == "defaults" else options
            for peer, lines in peers.items():
                out.append(f"\n{'symad' if peer == 'symad' else 'CasADi'}, {label}:\n\n```\n"
                           + "\n".join(lines) + "\n```\n")
    return "".join(out)


if __name__ == "__main__":
    sys.exit(rerender(Path(__file__).resolve().parent, "optimal_control", render))
