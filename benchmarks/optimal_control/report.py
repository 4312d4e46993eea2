"""The optimal-control suite's page (optimal_control.md) from its figures (optimal_control.json).

    python -m benchmarks.optimal_control.report      # write the page again from the figures (nothing is measured)
"""

from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import Any

from benchmarks.harness import fmt_ratio, fmt_time, rerender, table

NAMES = {"double_integrator": "double integrator", "van_der_pol": "Van der Pol, bounded control"}
WHEELS = "symad-wheels"  # symad in a Python whose cyipopt is cyipopt-wheels (suite.py)
LABELS = {"symad": "symad", "casadi": "CasADi", WHEELS: "symad with cyipopt-wheels"}
OWN, IPOPTS = "defaults", "ipopt_defaults"  # the configurations (suite.py): each peer's defaults; IPOPT's for both


def _case(case: str) -> str:
    problem, n = case.split()
    return f"{NAMES.get(problem, problem)}, N = {int(n):,}"


def _sum(m: dict[str, Any], *keys: str) -> float | None:
    values = [m.get(k) for k in keys]
    return None if any(v is None for v in values) else sum(values)  # type: ignore[arg-type]


def _ratio(a: float | None, b: float | None) -> float | None:
    return a / b if a is not None and b else None


def _as_symad(results: dict[str, Any], peer: str) -> dict[str, Any]:
    """The results with ``peer``'s figures where symad's are (for the tables of another symad)."""
    return {case: {"symad": peers.get(peer, {}), "casadi": peers.get("casadi", {})} for case, peers in results.items()}


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
    return table(["problem", "options", "symad: evaluations", "symad: IPOPT's own", "CasADi: evaluations",
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


PIVOT_ORDERS = {0: "AMD", 1: "given", 2: "AMF", 3: "SCOTCH", 4: "PORD", 5: "METIS", 6: "QAMD", 7: "automatic"}
_BANNER = re.compile(r"Ipopt version (\S+), running with linear solver (.+?)\.?$")
_USED = re.compile(r"MUMPS used permuting_scaling (\d+) and pivot_order (\d+)")


def _ordering(lines: list[str]) -> str:
    """The ordering MUMPS used, by name, from IPOPT's lines ("MUMPS used ... pivot_order N")."""
    found = next((m for ln in lines if (m := _USED.search(ln))), None)
    return "—" if found is None else PIVOT_ORDERS.get(int(found[2]), f"pivot order {found[2]}")


def _builds_table(data: dict[str, Any]) -> str:
    """Each peer's IPOPT and MUMPS as IPOPT's banner names them, and the ordering MUMPS used: as it
    chose with the permuting scaling on (7) and off (0), and when asked for SCOTCH or METIS (a MUMPS
    without one uses another)."""
    timing = data.get("ipopt_timing") or {}
    lines, asked = timing.get("lines", {}), timing.get("orderings", {})
    system_mumps = data["meta"]["versions"].get("mumps (system, for cyipopt)")
    rows = []
    for peer in ("symad", WHEELS, "casadi"):
        said = lines.get(OWN, {}).get(peer)
        if not said:
            continue
        banner = next((m for ln in said if (m := _BANNER.search(ln))), None)
        solver = banner[2] if banner else "—"
        if solver == "mumps" and peer == "symad" and system_mumps:  # IPOPT 3.11 does not say MUMPS's version
            solver = f"MUMPS {system_mumps}"
        rows.append([LABELS[peer], banner[1] if banner else "—", solver,
                     *(_ordering([asked.get(peer, {}).get(name, "")])
                       for name in ("scaling 7", "scaling 0", "SCOTCH", "METIS"))])
    return table(["peer", "IPOPT", "linear solver", "ordering, scaling 7 (IPOPT's default)",
                  "ordering, scaling 0 (symad's default)", "asked for SCOTCH, used", "asked for METIS, used"], rows)


def _wheels_inside_table(configs: list[tuple[str, dict[str, Any]]]) -> str:
    rows = []
    for label, results in configs:
        for case, peers in results.items():
            w, s, c = (peers.get(p, {}) for p in (WHEELS, "symad", "casadi"))
            rows.append([_case(case), label, fmt_time(w.get("eval_s")), fmt_time(_own(w)), fmt_time(_own(s)),
                         fmt_time(_own(c)), fmt_ratio(_ratio(_own(w), _own(s))), fmt_ratio(_ratio(_own(w), _own(c)))])
    return table(["problem", "options", "cyipopt-wheels: evaluations", "cyipopt-wheels: IPOPT's own",
                  "system's IPOPT: IPOPT's own", "CasADi: IPOPT's own", "IPOPT's own: cyipopt-wheels / system's",
                  "IPOPT's own: cyipopt-wheels / CasADi"], rows)


def _options(data: dict[str, Any]) -> str:
    """IPOPT's defaults as the suite passed them to both peers (``mumps_permuting_scaling 7``)."""
    return ", ".join(f"`{k} {v}`" for k, v in (data.get(IPOPTS) or {}).get("options", {}).items())


def _labels(data: dict[str, Any]) -> dict[str, str]:
    return {OWN: "each peer's defaults", IPOPTS: f"IPOPT's defaults ({_options(data)})"}


def _configs(data: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """(label, results) of each configuration measured, each peer's defaults first."""
    labels, ipopts = _labels(data), data.get(IPOPTS)
    return [(labels[OWN], data["results"])] + ([(labels[IPOPTS], ipopts["results"])] if ipopts else [])


def _wheels(data: dict[str, Any]) -> list[str]:
    """The section of symad with cyipopt-wheels beside the same run's CasADi (if it was measured)."""
    results, ipopts = data["results"], data.get(IPOPTS)
    if not any(WHEELS in peers for peers in results.values()):
        return []
    ipopt = data["meta"]["versions"].get("ipopt (bundled by cyipopt-wheels)", "?")
    wheels = _as_symad(results, WHEELS)
    out = [f"\n## symad with cyipopt-wheels (IPOPT {ipopt} bundled)\n\n",
           "The same symad in another Python, whose cyipopt is the `cyipopt-wheels` package (`pip install "
           "cyipopt-wheels` instead of `cyipopt`: cyipopt's manylinux wheel, with its own IPOPT, MUMPS, OpenBLAS "
           "and gfortran, nothing compiled), measured in the same run, in turn with the others, beside the CasADi "
           "of the first tables. Only IPOPT's build differs from the first table's symad (the system's IPOPT, "
           "with the reference BLAS). The builds, as IPOPT names them, and the ordering of the KKT matrix MUMPS "
           "used (IPOPT's `mumps_pivot_order`; by default MUMPS chooses among the orderings it was built with), "
           "each asked for with every option explicit: MUMPS's own choice with its permuting scaling on "
           "(`mumps_permuting_scaling 7`) and off (`0`), and SCOTCH and METIS (with the scaling off):\n\n",
           _builds_table(data),
           "\nThe iterations are the same (the optima below), so what differs in the solve is IPOPT's own work "
           "per iteration, MUMPS's factorizations above all: they depend on MUMPS's version and the ordering "
           "it has, more than on IPOPT's version; and so does what symad's MUMPS default does (each build's "
           "rows in the two configurations, in the last table of this section).\n\n",
           "With each peer's defaults (symad's: MUMPS's permuting scaling off, as in the first table):\n\n",
           _times_table(wheels), f"\n**Where symad with cyipopt-wheels is slower**: {_slower(wheels)}.\n"]
    configs = _configs(data)[:1]
    if ipopts and any(WHEELS in peers for peers in ipopts["results"].values()):
        configs = _configs(data)
        wheels_ipopts = _as_symad(ipopts["results"], WHEELS)
        out += [f"\nWith IPOPT's defaults for both ({_options(data)}):\n\n", _times_table(wheels_ipopts),
                f"\n**Where symad with cyipopt-wheels is slower**: {_slower(wheels_ipopts)}.\n"]
    out += ["\nInside the solve (as in **Inside the solve** above), IPOPT's own work with each build:\n\n",
            _wheels_inside_table(configs), "\nThe optima (each peer's defaults):\n\n", _optima_table(wheels)]
    return out


def _mumps_default_table(own: dict[str, Any], ipopts: dict[str, Any]) -> str:
    """symad's solve with its own defaults and with IPOPT's, and its ratio to CasADi with each."""
    rows = []
    for case, peers in own.items():
        s, c = peers.get("symad", {}), peers.get("casadi", {})
        si, ci = (ipopts.get(case, {}).get(p, {}) for p in ("symad", "casadi"))
        rows.append([_case(case), fmt_time(s.get("solve_s")), fmt_time(si.get("solve_s")),
                     fmt_ratio(_ratio(si.get("solve_s"), s.get("solve_s"))),
                     fmt_ratio(_ratio(s.get("total_s"), c.get("total_s"))),
                     fmt_ratio(_ratio(si.get("total_s"), ci.get("total_s")))])
    return table(["problem", "symad solve, its defaults", "symad solve, IPOPT's defaults",
                  "symad solve: IPOPT's defaults / its own", "total: symad / CasADi, each peer's defaults",
                  "total: symad / CasADi, IPOPT's defaults"], rows)


def _optima_table(results: dict[str, Any]) -> str:
    rows = []
    for case, peers in results.items():
        s, c = peers.get("symad", {}), peers.get("casadi", {})
        diff = (max(abs(a - b) for a, b in zip(s["u_at"], c["u_at"]))
                if "u_at" in s and "u_at" in c else None)
        rows.append([_case(case), repr(s.get("fun", "—")), repr(c.get("fun", "—")), str(s.get("nit", "—")),
                     str(c.get("nit", "—")), "—" if diff is None else f"{diff:.1e}"])
    return table(["problem", "f symad", "f CasADi", "iterations symad", "iterations CasADi",
                  "largest difference in u"], rows)


def _slower(results: dict[str, Any]) -> str:
    slower = [f"{_case(case)} ({fmt_ratio(r)}×)" for case, peers in results.items()
              if (r := _ratio(peers.get("symad", {}).get("total_s"), peers.get("casadi", {}).get("total_s")))
              and r > 1.0]
    return "; ".join(slower) if slower else "nowhere in this run"


def render(data: dict[str, Any]) -> str:
    meta, results = data["meta"], data["results"]
    ipopts, options = data.get(IPOPTS), _options(data)
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
           "bundles; the iteration counts show they take the same path"
           + ("" if not any(WHEELS in peers for peers in results.values()) else
              " (**symad with cyipopt-wheels** below: a third build, the one cyipopt's own wheel bundles)")
           + ". **total** is the whole process "
           "(Python's own start-up aside); a ratio below 1 means symad reaches the optimum sooner. **CPU** is "
           "the process's CPU time over the same span, every thread's (less noisy than wall time on a shared "
           "machine; symad's loops may run on two threads). symad runs "
           "as installed, its code cache as by default: the machine code it compiles is kept "
           "(`~/.cache/symad`), so in the first two tables every process after a case's first loads its "
           "programs instead of compiling them; **A problem symad has not compiled before** below has "
           "each process start with none of its programs in the cache.\n\n",
           "## With each peer's defaults\n\n",
           "Each peer as a user gets it: symad's `minimize(method=\"ipopt\")` keeps IPOPT's defaults but "
           "one, MUMPS's permuting scaling off (`mumps_permuting_scaling 0`, ICNTL(6) = 0); "
           "CasADi's `nlpsol` keeps IPOPT's defaults (`mumps_permuting_scaling 7`: MUMPS chooses).\n\n",
           _times_table(results),
           "\n**build + solve** leaves the imports out. symad's solve includes its calls of the derivatives "
           "(the Jacobian and Hessian values, from compiled loops) inside IPOPT's iterations.\n\n"
           f"**Where symad is slower**: {_slower(results)}.\n"]
    if ipopts:
        out += [f"\n## With IPOPT's defaults for both: {options}\n\n",
                f"{options} passed to both peers: IPOPT's own default, so nothing changes for CasADi, while "
                "symad's default is undone (MUMPS's permuting scaling back on, as MUMPS chooses). The same "
                "optimum, the same iterations.\n\n",
                _times_table(ipopts["results"]),
                f"\n**Where symad is slower**: {_slower(ipopts['results'])}.\n\n",
                "How much of symad's lead comes from its MUMPS default: symad's solve in the two "
                "configurations, and the ratio of the totals to CasADi's in each (the system's MUMPS spends "
                "most of each of IPOPT's iterations in its permuting scaling; **IPOPT's own timing statistics** "
                "below):\n\n",
                _mumps_default_table(results, ipopts["results"])]
    cold = data.get("cold")
    if cold:
        out += ["\n## A problem symad has not compiled before\n\n",
                "symad with its own defaults (as in the first table), each process with a code cache of its "
                "own where an untimed process first solved the same problem at N + 1: the code every program "
                "shares is there, none of this N's programs (as in a first run of a new problem). Each of its "
                "programs with loops then starts on NumPy arrays (the same bits) while symad's compile worker "
                "compiles its machine code in the background, which takes over once it is ready; CasADi's "
                "figures are those of the first table.\n\n",
                _cold_table(cold, results),
                f"\n**Where symad is slower**: {_slower(_with_casadi(cold, results))}.\n"]
    configs = _configs(data)
    if any(p.get("eval_s") is not None for _, r in configs for peers in r.values() for p in peers.values()):
        out += ["\n## Inside the solve\n\n",
                "**evaluations**: the time in the problem's functions and derivatives during the solve "
                "(symad: its callbacks, `evaluation_time`; CasADi: its `t_wall_nlp_*` statistics); "
                "**IPOPT's own**: the rest of the solve, IPOPT's linear algebra (MUMPS) above all; for symad it "
                "also holds cyipopt's copy of each callback's values into IPOPT's arrays (an element at a time "
                "through Python objects, in cyipopt 1.7), which IPOPT's statistics below count among its "
                "function evaluations.\n\n",
                _inside_table(configs)]
    out.append("\n## The optima\n\n(each peer's first process with its own defaults; the suite stops if they "
               "differ beyond 1e-6 in f, relative, or 1e-4 in the control at five times, or in the iterations, "
               "in either configuration):\n\n")
    out.append(_optima_table(results))
    out += _wheels(data)
    timing = data.get("ipopt_timing")
    if timing:
        problem, n = timing["case"]
        labels = _labels(data)
        out.append(f"\n## IPOPT's own timing statistics\n\n{_case(f'{problem} {n}')}, one more process per "
                   "peer and configuration with `print_timing_statistics yes` (CPU seconds, and wall in brackets: "
                   "the machine is shared); IPOPT's banner names its version and linear solver, and MUMPS the "
                   "permuting scaling and ordering it used:\n")
        for config, peers in timing["lines"].items():
            for peer, lines in peers.items():
                out.append(f"\n{LABELS.get(peer, peer)}, {labels.get(config, config)}:\n\n```\n"
                           + "\n".join(lines) + "\n```\n")
    return "".join(out)


if __name__ == "__main__":
    sys.exit(rerender(Path(__file__).resolve().parent, "optimal_control", render))
