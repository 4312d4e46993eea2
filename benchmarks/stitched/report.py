"""The copy-and-patch suite's page (stitched.md) from its figures (stitched.json): the targets, and a
table per section.

    python -m benchmarks.stitched.report      # write stitched.md again from stitched.json (nothing is measured)
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from benchmarks.harness import fmt_ratio, fmt_time, rerender, table

CODEGEN_MS_PER_1000 = 1.0
# Linear: a size's time per 1,000 operations (CPU) at most this times the size below's (a decade
# smaller); a fixed cost a program makes smaller sizes dearer per operation, never larger ones.
CODEGEN_GROWTH = 1.25
STITCHED_VS_O2, STITCHED_VS_VM = 2.0, 5.0
SOLVE_VS_CASADI = 0.3


def _verdict(ok: bool | None) -> str:
    return "not measured" if ok is None else ("met" if ok else "**not met**")


def _ratio(a: float | None, b: float | None) -> float | None:
    return a / b if a is not None and b else None


def render(data: dict[str, Any]) -> str:
    meta = data["meta"]
    out = ["# Copy-and-patch: native code at the instruction VM's build cost\n",
           f"`{meta['command']}` at {meta['revision']}, {meta['date']}, on {meta['machine']}, Python {meta['python']} "
           f"({', '.join(f'{k} {v}' for k, v in meta['versions'].items())}); "
           f"{meta['repeats']} fresh process(es) a figure, medians; load {meta['load_before']} before, "
           f"{meta.get('load_after')} after; {meta.get('minutes')} min.\n"]
    targets: list[list[str]] = []
    sections: list[str] = []
    if "codegen" in data:
        rows, worst, worst_cpu = [], None, None
        for r in data["codegen"]:
            thousands = (r["ops"] or 0) / 1000
            per, per_cpu = _ratio(r["stitch_s"], thousands), _ratio(r.get("stitch_cpu_s"), thousands)
            worst = per if worst is None or (per is not None and per > worst) else worst
            worst_cpu = per_cpu if worst_cpu is None or (per_cpu is not None and per_cpu > worst_cpu) else worst_cpu
            rows.append([f"{r['ops'] or r['size']:,.0f}", fmt_time(r["stitch_s"]), fmt_time(r.get("stitch_cpu_s")),
                         fmt_time(per), fmt_time(per_cpu), fmt_time(r["vm_s"]), fmt_time(r.get("vm_cpu_s")),
                         fmt_time(r.get("o0_s")), fmt_time(r.get("o0_chunked_s")),
                         fmt_time(r["o0_chunked_s"] / 2 if r.get("o0_chunked_s") else None),
                         f"{(r['code_bytes'] or 0) / max(1, r['ops'] or 1):.1f} B"])
        shown = f"worst {fmt_time(worst)} wall, {fmt_time(worst_cpu)} CPU" if worst is not None else "—"
        first = [r.get("first_stitch_s") for r in data["codegen"] if r.get("first_stitch_s") is not None]
        targets.append(["code generation under 1 ms per 1,000 operations, 10^3 to 10^6 (CPU; wall beside it)",
                        shown, _verdict(None if worst_cpu is None else worst_cpu < CODEGEN_MS_PER_1000 * 1e-3)])
        per_cpu = [_ratio(r.get("stitch_cpu_s"), (r["ops"] or 0) / 1000) for r in data["codegen"]]
        steps = [b / a for a, b in zip(per_cpu, per_cpu[1:]) if a and b]
        targets.append([f"code generation linear: per 1,000 operations (CPU) at most {CODEGEN_GROWTH}x the "
                        "size a decade below's", "growth " + ", ".join(f"{g:.2f}x" for g in steps) if steps else "—",
                        _verdict(None if not steps else max(steps) <= CODEGEN_GROWTH)])
        sections.append("## Code generation\n\nA random program's value and gradient (stencils loaded): stitched "
                        "code, the instruction VM's program, and -O0 code (LLVM's fast instruction selection) whole, "
                        "in chunks of 1,000 operations, and that time halved: the best two cores could do with the "
                        "chunks shared among them (a bound: no worker's start-up or transfer counted).  "
                        "Wall-clock time, and the process's CPU time (the machine is shared: the wall clock "
                        "counts waiting for a core)."
                        + (f"  A process's first stitch (a program of 300 terms), which loads the stencils (their "
                           f"tables, as the first process to parse their object code kept them in the code cache), "
                           f"took {fmt_time(min(first))} to {fmt_time(max(first))}." if first else "")
                        + "\n\n"
                        + table(["operations", "stitch", "stitch CPU", "per 1,000 ops", "per 1,000 ops CPU",
                                 "VM build", "VM build CPU", "-O0 compile", "-O0 in chunks",
                                 "-O0 chunks on 2 cores (ideal)", "code / op"], rows))
    if "percall" in data:
        rows, ok_o2, ok_vm, ok_alone = [], True, True, True
        for r in data["percall"]:
            r = {**r, **_best(r)}
            vs_o2 = _ratio(r["stitched_call_s"], r["o2_call_s"])
            vs_vm = _ratio(r["vm_call_s"], r["stitched_call_s"])
            ok_o2 = ok_o2 and vs_o2 is not None and vs_o2 <= STITCHED_VS_O2
            ok_vm = ok_vm and vs_vm is not None and vs_vm >= STITCHED_VS_VM
            alone = _ratio(r.get("stitched_alone_s"), r.get("o2_alone_s"))
            ok_alone = ok_alone and alone is not None and alone <= STITCHED_VS_O2
            rows.append([f"{r['workload']} {r['size']:,}", f"{r['ops'] or 0:,.0f}", fmt_time(r["stitched_call_s"]),
                         fmt_time(r["o2_call_s"]), fmt_time(r["o0_call_s"]), fmt_time(r["vm_call_s"]),
                         fmt_ratio(vs_o2), fmt_ratio(vs_vm), fmt_time(r.get("stitched_alone_s")),
                         fmt_time(r.get("o2_alone_s")), fmt_ratio(alone),
                         fmt_time(r["stitch_build_s"]), fmt_time(r["o0_compile_s"]), fmt_time(r["o2_compile_s"])])
        floor = ""
        for r in data["percall"]:
            libm, vm, calls = r.get("libm_s"), r.get("vm_call_s"), r.get("libm_calls")
            if libm and vm and calls and r.get("ops"):
                floor = (f"  The {r['workload']} program's {calls:,.0f} C library calls alone, as a program of their "
                         f"own (the same functions, as many, on arguments like its own, summed; stitched code), "
                         f"take {fmt_time(libm)} a call ({fmt_ratio(libm / (vm / 5))}x a fifth of the "
                         f"instructions' call, {fmt_time(vm / 5)}), before any of its other "
                         f"{r['ops'] - calls:,.0f} operations: any native code of it that gives the C library's "
                         "bits spends about that on the calls alone.")
        targets.append(["a call within 2x of -O2 code", "see below", _verdict(ok_o2)])
        targets.append(["a call at least 5x faster than the instructions", "see below", _verdict(ok_vm)])
        targets.append(["(the code alone, no call's entry: within 2x of -O2 code)", "see below", _verdict(ok_alone)])
        sections.append("## A call\n\nOne process per repeat; the tiers in turn in it, each timed over many calls "
                        "of `call(x, rest)` (value and gradient), seven times; a tier's figure is its fastest of "
                        "the seven (the machine is shared: a slower block is one the process waited through), "
                        "the median of that over the processes.  Every tier's `call` is a builtin function of "
                        "CPython's fast calling convention (no ctypes conversion), so a call is its code and the "
                        "same entry's few dozen nanoseconds.  The code alone is timed too: a batch of points "
                        "through each tier's batch "
                        "entry, no Python call a point (fastest of seven batches, median over the processes); the "
                        "processor overlaps a point's last dependent operations (a written-out sum is a chain of "
                        "additions, each waiting for the one before) with the next point's first ones, so this is "
                        "the code's throughput, not one call's latency.  The random program calls the C library "
                        "(sin, cos, exp, tanh, cosh) about once every fifteen operations, the same calls in every "
                        "tier, which bounds how much faster than the instructions any native code of it can be.  "
                        "Stitched code runs the regular parts of a program four steps at a time (packs of vector "
                        "stencils, as LLVM's SLP vectoriser packs -O2 code; -O2 code uses this machine's widest "
                        "vectors): a written-out Rosenbrock or normalisation mostly in packs, the random program "
                        "step by step." + floor + "\n\n"
                        + table(["workload", "operations", "stitched", "-O2", "-O0", "instructions",
                                 "stitched / -O2", "instructions / stitched", "stitched code alone",
                                 "-O2 code alone", "alone: stitched / -O2", "stitch", "-O0 compile",
                                 "-O2 compile"], rows))
    if "hotloop" in data:
        by = {r["peer"]: r for r in data["hotloop"]}
        s, e = by.get("symad"), by.get("symengine")
        ok = None if not (s and e and s["median_s"] and e["median_s"]) else s["median_s"] <= e["median_s"]
        targets.append(["first 0.3 s after compile(): a call no slower than SymEngine's LLVM code",
                        f"{fmt_time(s and s['median_s'])} vs {fmt_time(e and e['median_s'])}", _verdict(ok)])
        rows = [[r["peer"], fmt_time(r["build_s"]), f"{r['calls'] or 0:.0f}", fmt_time(r["median_s"]),
                 fmt_time(r["last_third_median_s"])] for r in data["hotloop"]]
        sections.append(f"## The first 0.3 s of a hot loop\n\nRosenbrock n = {data['hotloop'][0]['n']:,} written "
                        "out.  symad: the 0.3 s after its first call (`compile()` and that call, which builds the "
                        "gradient, the schedule and the code, timed apart as the build); SymEngine: its steady "
                        "state, after its build (`Lambdify`, LLVM) and 200 calls of warm-up.\n\n"
                        + table(["peer", "build (+ first call)", "calls in the window", "a call (median)",
                                 "a call (last third)"], rows))
    if "solve" in data:
        by = {r["peer"]: r for r in data["solve"]}
        s, c, own = by.get("symad"), by.get("casadi"), by.get("symad.minimize")
        r = _ratio(s and s["total_s"], c and c["total_s"])
        r_own = _ratio(own and own["total_s"], c and c["total_s"])
        best = min((x for x in (r, r_own) if x is not None), default=None)
        shown = (fmt_ratio(r) if r_own is None
                 else f"{fmt_ratio(r_own)} (symad.minimize); {fmt_ratio(r)} (scipy's minimize)")
        targets.append(["time to solution at most 0.3x CasADi's (Rosenbrock n = 1000)", shown,
                        _verdict(None if best is None else best <= SOLVE_VS_CASADI)])
        form = {"symad": "symad, scipy.optimize.minimize(method=\"L-BFGS-B\")",
                "symad.minimize": "symad, symad.minimize(text, x0, method=\"l-bfgs\")",
                "symad.minimize l-bfgs-b": "symad, symad.minimize(text, x0, method=\"l-bfgs-b\")",
                "casadi": "CasADi, scipy.optimize.minimize(method=\"L-BFGS-B\")"}
        rows = [[form.get(x["peer"], x["peer"]), fmt_time(x["total_s"]), fmt_time(x["import_s"]),
                 fmt_time(x["build_s"]), fmt_time(x["solve_s"]), f"{x['nfev'] or 0:.0f}"] for x in data["solve"]]
        bound = ""
        if own and c and own["solve_s"] and c["total_s"] and own["solve_s"] > SOLVE_VS_CASADI * c["total_s"]:
            bound = (f"\n0.3x CasADi's total is {fmt_time(SOLVE_VS_CASADI * c['total_s'])}, less than the solve of "
                     f"symad's own form alone ({fmt_time(own['solve_s'])}).\n")
        elif s and c and s["import_s"] and c["total_s"] and s["import_s"] > SOLVE_VS_CASADI * c["total_s"]:
            bound = (f"\n0.3x CasADi's total is {fmt_time(SOLVE_VS_CASADI * c['total_s'])}, less than the imports "
                     f"alone of symad's row through scipy's `minimize` ({fmt_time(s['import_s'])}: NumPy and SciPy's "
                     "`minimize` as a user's script imports them, and symad); that solve is mostly L-BFGS-B's own "
                     "work, the same for both peers (the same evaluations).\n")
        own_note = ("" if own is None else
                    " `symad.minimize` is symad's own form: `l-bfgs`, L-BFGS-B's iteration for a problem without "
                    "bounds (the quasi-Newton direction by the two-loop recursion, Moré-Thuente's line search with "
                    "L-BFGS-B's constants), in machine code between the calls of symad's compiled value and gradient, "
                    "no Python run per evaluation but a short loop; and `l-bfgs-b`, scipy's L-BFGS-B routine driven "
                    "by symad's driver (no `import scipy.optimize`), to show what each part gives.  Both stop at a "
                    "gradient 2-norm of 1e-8, stricter than the shared form's `gtol` 1e-8 on the largest entry and "
                    "`ftol`; every peer's BLAS on one thread (`OPENBLAS_NUM_THREADS=1`).")
        sections.append(f"## Time to solution\n\nText to the L-BFGS-B optimum, Rosenbrock n = "
                        f"{data['solve'][0]['n']:,} written out (the first-call suite's worker).{own_note}\n\n"
                        + table(["peer", "total", "imports", "build", "solve", "evaluations"], rows) + bound)
    if "solveparts" in data:
        rows = [[x["peer"], fmt_time(x["solve_s"]), fmt_time(x["first_eval_s"]), fmt_time(x["in_fun_s"]),
                 fmt_time(x["scipy_s"]), fmt_time(x["per_eval_fun_s"]), fmt_time(x["per_eval_scipy_s"]),
                 f"{x['nfev'] or 0:.0f}"] for x in data["solveparts"]]
        sections.append("## Where the solve's time goes\n\nThe same solve, each evaluation timed inside the "
                        "function scipy calls: the first (symad builds its gradient and code in it), the "
                        "function over the others, and the rest of the solve: scipy's own work (its Python "
                        "wrapper around the function and L-BFGS-B itself), which no peer's code changes.\n\n"
                        + table(["peer", "solve", "first evaluation", "function, other evaluations", "scipy's own",
                                 "function, an evaluation", "scipy's own, an evaluation", "evaluations"], rows))
    choice = _choice(data)
    if choice:
        sections.insert(0, choice)
    out.append("## Targets\n\n" + table(["target", "measured", "verdict"], targets))
    out += sections
    return "\n".join(out)


def _best(row: dict[str, Any]) -> dict[str, float | None]:
    """A per-call row's tiers by their fastest block (``<tier>_best_s``), median over processes."""
    samples = row.get("samples") or []
    found = {}
    for tier in ("stitched", "o2", "o0", "vm"):
        values = sorted(s[f"{tier}_best_s"] for s in samples if isinstance(s.get(f"{tier}_best_s"), float))
        found[f"{tier}_call_s"] = values[len(values) // 2] if values else row.get(f"{tier}_call_s")
    for tier in ("stitched", "o2"):
        values = sorted(s[f"{tier}_alone_s"] for s in samples if isinstance(s.get(f"{tier}_alone_s"), float))
        found[f"{tier}_alone_s"] = values[len(values) // 2] if values else row.get(f"{tier}_alone_s")
    return found


def _choice(data: dict[str, Any]) -> str:
    """The alternatives compared: stitched code against -O0 code compiled in chunks on two cores,
    time to the first native call and a call's time, from this run's figures."""
    build = [(r["ops"], r["stitch_s"], r["o0_chunked_s"] / 2) for r in data.get("codegen", [])
             if r.get("o0_chunked_s") and r.get("stitch_s")]
    calls = [_ratio(b["stitched_call_s"], b["o0_call_s"]) for b in map(_best, data.get("percall", []))]
    calls = [c for c in calls if c is not None]
    if not build or not calls:
        return ""
    faster = [o0 / st for _, st, o0 in build]
    return ("## Stitched code or -O0 code in chunks on two cores\n\n"
            f"To the first native call, stitching took {min(faster):.3g} to {max(faster):.3g} times less time than "
            "-O0 code compiled in chunks of 1,000 operations with the chunks shared by two cores (the compile time "
            f"halved: a bound no worker reaches), from {min(b[0] for b in build):,.0f} to "
            f"{max(b[0] for b in build):,.0f} operations; a call of stitched code took {min(calls):.2g} to "
            f"{max(calls):.2g} times a call of -O0 code.  LLVM's instruction selection and register allocation "
            "cost time for every instruction of every program; stitching copies instructions selected and "
            "allocated once a machine, so the stitched tier serves large programs, and -O2 code replaces it "
            "once its calls have paid for that compile.\n")


if __name__ == "__main__":
    sys.exit(rerender(Path(__file__).resolve().parent, "stitched", render))
