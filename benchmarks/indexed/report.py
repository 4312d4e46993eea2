"""The indexed suite's page (indexed.md) from its figures (indexed.json): issue 32's targets and the tables.

    python -m benchmarks.indexed.report      # write indexed.md again from indexed.json (nothing is measured)
"""

from __future__ import annotations

import math
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from benchmarks.harness import fmt_mem, fmt_ratio, fmt_time, rerender, table

PEER_NAMES = {"symad": "symad", "jax": "JAX jit", "numpy": "NumPy by hand", "c": "hand-written C",
              "casadi_sx": "CasADi SX", "casadi_map": "CasADi map", "numpy_matvec": "NumPy, two products"}
XAX_NAMES = {"symad": "symad", "numpy": "NumPy `x @ A @ x`, `(A + A.T) @ x`",
             "numpy_1t": "NumPy `x @ A @ x`, `(A + A.T) @ x`, one BLAS thread",
             "numpy_matvec": "NumPy `A @ x` once, `x @ A`",
             "numpy_matvec_1t": "NumPy `A @ x` once, `x @ A`, one BLAS thread",
             "jax": "JAX jit"}
FIRST_RATIO_MAX = 1.0  # text → first value and gradient no slower than JAX's first call
FIRST_GROWTH_MAX = 2.0  # ... and within 2x from n = 10^4 to 10^6
CALL_C_MAX = 1.5  # a warm call within 1.5x of hand-written C
XAX_CALL_MAX, XAX_BUILD_MAX_S = 1.5, 0.5
DIFF_MAX_S = 1.0


def size(n: int | str) -> str:
    """10^k for a power of ten, else the number with separators."""
    n = int(n)
    k = round(math.log10(n)) if n > 0 else 0
    return f"10^{k}" if 10**k == n else f"{n:,}"


def ratio(a: float | None, b: float | None) -> float | None:
    return a / b if a is not None and b else None


def _cell(m: dict[str, Any], key: str, fmt: Callable[[float | None], str]) -> str:
    if m.get("status") == "ok":
        return fmt(m.get(key))
    if m.get("status") == "skipped":
        return "not run"
    return m.get("status", "—")


def _verdict(met: bool | None) -> str:
    return "not measured" if met is None else "met" if met else "**not met**"


def _ratios(data: dict[str, Any], key: str, peer: str) -> dict[str, float | None]:
    """symad's ``key`` over ``peer``'s at each n of the Rosenbrock runs."""
    return {n: ratio(p.get("symad", {}).get(key), p.get(peer, {}).get(key)) for n, p in data["rosenbrock"].items()}


def _all_within(ratios: dict[str, float | None], limit: float) -> bool | None:
    values = list(ratios.values())
    return None if not values or any(r is None for r in values) else all(r <= limit for r in values)  # type: ignore


def _by_size(ratios: dict[str, float | None]) -> str:
    return "; ".join(f"{size(n)}: {fmt_ratio(r)}" for n, r in ratios.items())


def targets(data: dict[str, Any]) -> list[list[str]]:
    """Issue 32's "what this must show", each with its measured ratio and verdict."""
    rows = []
    first = _ratios(data, "first_s", "jax")
    rows.append([f"text → first value and gradient ≤ JAX's first call ({FIRST_RATIO_MAX:g}×), every n",
                 "symad / JAX, by n: " + _by_size(first), _verdict(_all_within(first, FIRST_RATIO_MAX))])
    ros = data["rosenbrock"]
    lo, hi = ros.get(str(10**4), {}).get("symad", {}), ros.get(str(10**6), {}).get("symad", {})
    growth = ratio(hi.get("first_s"), lo.get("first_s"))
    rows.append([f"… within {FIRST_GROWTH_MAX:g}× from n = 10^4 to 10^6",
                 f"symad at 10^6 / at 10^4: {fmt_ratio(growth)}",
                 _verdict(None if growth is None else growth <= FIRST_GROWTH_MAX)])
    call_jax, call_c = _ratios(data, "call_s", "jax"), _ratios(data, "call_s", "c")
    rows.append(["a warm call ≤ JAX's, every n", "symad / JAX: " + _by_size(call_jax),
                 _verdict(_all_within(call_jax, 1.0))])
    rows.append([f"a warm call within {CALL_C_MAX:g}× of hand-written C, every n", "symad / C: " + _by_size(call_c),
                 _verdict(_all_within(call_c, CALL_C_MAX))])
    mem = _ratios(data, "peak_first_mib", "jax")
    rows.append(["peak memory ≤ JAX's", "symad / JAX: " + _by_size(mem), _verdict(_all_within(mem, 1.0))])
    checks = [p.get("symad", {}) for p in ros.values()] + [data["xax"].get("symad", {})]
    checked = [c for c in checks if c.get("check") in ("ok", "mismatch")]
    worst = max((max(c.get("value_rel_diff", 0.0), c.get("grad_rel_diff", 0.0)) for c in checked), default=None)
    rows.append(["values and gradients equal NumPy by hand's to rounding",
                 f"largest relative difference {worst:.1e}" if worst is not None else "—",
                 _verdict(None if not checked else all(c["check"] == "ok" for c in checked))])
    x = data["xax"]
    s = x.get("symad", {})
    numpy_calls = [m["call_s"] for name, m in x.items() if name in ("numpy", "numpy_1t") and m.get("call_s")]
    vs = ratio(s.get("call_s"), min(numpy_calls, default=None))
    rows.append([f"x'Ax: a call within {XAX_CALL_MAX:g}× of NumPy's `x @ A @ x`, `(A + A.T) @ x`",
                 f"symad / NumPy (the faster of its thread settings): {fmt_ratio(vs)}",
                 _verdict(None if vs is None else vs <= XAX_CALL_MAX)])
    b = s.get("build_s")
    rows.append([f"x'Ax: build and first call < {XAX_BUILD_MAX_S:g} s", fmt_time(b),
                 _verdict(None if b is None else b < XAX_BUILD_MAX_S)])
    cli = data["command_line"]
    w = cli.get("wall_s") if cli.get("status") == "ok" else None
    rows.append([f"`symad diff` of the 10^6-term sum < {DIFF_MAX_S:g} s", fmt_time(w),
                 _verdict(None if w is None else w < DIFF_MAX_S)])
    sym, jax = data["solve"].get("symad", {}), data["solve"].get("jax", {})
    solved = ratio(sym.get("total_s"), jax.get("total_s"))
    rows.append([f"L-BFGS-B, n = {size(data['meta']['solve_n'])}, text → optimum ≤ JAX",
                 f"symad / JAX: {fmt_ratio(solved)}", _verdict(None if solved is None else solved <= 1.0)])
    return rows


def slower(data: dict[str, Any]) -> list[str]:
    """Every comparison in the run where symad took longer (or held more memory) than a peer, by peer."""
    found: dict[str, list[str]] = {}

    def note(peer: str, what: str, mine: float | None, theirs: float | None) -> None:
        r = ratio(mine, theirs)
        if r is not None and r > 1.0:
            found.setdefault(peer, []).append(f"{what} {fmt_ratio(r)}×")

    for key, what in (("first_s", "first gradient"), ("call_s", "a call"), ("peak_first_mib", "memory")):
        for n, peers in data["rosenbrock"].items():
            for peer, m in peers.items():
                if peer != "symad":
                    note(PEER_NAMES[peer], f"Rosenbrock {size(n)} {what}", peers["symad"].get(key), m.get(key))
    for section, key, what in (("xax", "build_s", "x'Ax build and first call"), ("xax", "call_s", "x'Ax a call"),
                               ("solve", "total_s", "L-BFGS-B text → optimum")):
        peers = data[section]
        for peer, m in peers.items():
            if peer != "symad":
                name = XAX_NAMES[peer] if section == "xax" else PEER_NAMES[peer]
                note(name, what, peers.get("symad", {}).get(key), m.get(key))
    return [f"against {peer}: {', '.join(items)}" for peer, items in found.items()]


def _rosen_table(data: dict[str, Any], key: str, fmt: Callable[[float | None], str],
                 versus: tuple[str, ...]) -> str:
    peers = list(next(iter(data["rosenbrock"].values())))
    rows = []
    for n, p in data["rosenbrock"].items():
        cells = [_cell(p.get(peer, {}), key, fmt) for peer in peers]
        rows.append([size(n), *cells, *(fmt_ratio(ratio(p.get("symad", {}).get(key), p.get(v, {}).get(key)))
                                         for v in versus)])
    return table(["n", *(PEER_NAMES[p] for p in peers), *(f"symad / {PEER_NAMES[v]}" for v in versus)], rows)


def _rosenbrock(data: dict[str, Any]) -> str:
    out = ["\n## 1. Chained Rosenbrock, n = 10^3 … 10^7\n\n",
           "`n = {n}; sum(i = 1..n-1, 100*(x[i+1] - x[i]^2)^2 + (1 - x[i])^2)`, compiled by `symad.compile(text)`; "
           "JAX `jit(value_and_grad)` of `sum(100*(x[1:] - x[:-1]**2)**2 + (1 - x[:-1])**2)` with 64-bit floats; "
           "NumPy with the gradient written by hand; hand-written C (`benchmarks/peers/c/rosenbrock.c`, "
           "`gcc -O3 -march=native`, through ctypes); CasADi SX of the same vectorised form (written out, n "
           "scalar nodes) and CasADi `map` of one SX term over the n - 1 pairs, each with `Function.buffer`, "
           "CasADi's fastest call. \"not run\": not installed, not asked for, or past the size the peer's memory "
           "allows (the figures say which).\n\n",
           "**Text → first value and gradient**: from the worker's start (Python's start-up aside) through the "
           "imports, the build (C: gcc; JAX: trace and XLA compile at the first call) and the first call, at "
           "x = 1 + 0.1 sin(k). A ratio below 1 means symad reaches its first gradient sooner than the peer.\n\n",
           _rosen_table(data, "first_s", fmt_time, ("jax", "c")),
           "\n**A warm call**: value and gradient at a new point each call (JAX on its own arrays, waiting for "
           "the result), the median of timing loops. A ratio below 1 means symad's call is the faster; symad / "
           "C is the distance from the hand-written floor. symad shares a long loop among the machine's cores "
           "(JAX's XLA code may too); the C and NumPy run on one.\n\n",
           _rosen_table(data, "call_s", fmt_time, ("jax", "c", "numpy")),
           "\n**Peak memory at the first gradient**: the process's maximum resident set (ru_maxrss), the "
           "interpreter and the imports included. A ratio below 1 means symad's process held less than the "
           "peer's.\n\n",
           _rosen_table(data, "peak_first_mib", lambda m: fmt_mem(None if m is None else m * 1024), ("jax",)),
           "\n**Check**: each result at x = 1 + 0.1 sin(k) against NumPy by hand: the value's difference "
           "relative to the sum of the (positive) terms, within n × eps (rounding's bound for any order of "
           "addition), the gradient's relative to its largest entry, within 1e-12; and whether symad kept the "
           "sum as a loop or wrote it out (short sums, where that pays).\n\n"]
    rows = []
    for n, p in data["rosenbrock"].items():
        m = p.get("symad", {})
        rows.append([size(n), m.get("info", {}).get("form", "—"), m.get("check", m.get("status", "—")),
                     f"{m.get('value_rel_diff', float('nan')):.1e}", f"{m.get('grad_rel_diff', float('nan')):.1e}"])
    out.append(table(["n", "symad compiled the sum", "symad's check", "value", "gradient"], rows))
    return "".join(out)


def _xax(data: dict[str, Any]) -> str:
    out = ["\n## 2. x'Ax with a 2,000 × 2,000 data matrix\n\n",
           "`n = 2000; sum(i = 1..n, x[i]*sum(j = 1..n, A[i,j]*x[j]))`, `symad.compile(text, wrt=[\"x\"])`, "
           "`value_and_grad({\"x\": x, \"A\": A})`, the matrix given at each call; NumPy as the issue writes it "
           "and with two matrix-vector products (no A + A.T formed), each with BLAS's threads (its default) and "
           "with one; JAX `jit(value_and_grad)` of `x @ A @ x`, A an argument. Build and first call: the matrix "
           "in hand, imports aside. A ratio above 1 means symad is slower than that peer.\n\n"]
    x = data["xax"]
    s = x.get("symad", {})
    rows = []
    for peer, m in x.items():
        mine = [fmt_ratio(ratio(s.get(k), m.get(k))) if peer != "symad" else "" for k in ("build_s", "call_s")]
        rows.append([XAX_NAMES[peer], _cell(m, "import_s", fmt_time), _cell(m, "build_s", fmt_time),
                     _cell(m, "call_s", fmt_time), *mine])
    out.append(table(["", "imports", "build and first call", "a call", "symad / it (build)", "symad / it (call)"],
                     rows))
    return "".join(out)


def _command_line(data: dict[str, Any]) -> str:
    c = data["command_line"]
    wall = fmt_time(c.get("wall_s")) if c["status"] == "ok" else c["status"]
    out = ["\n## 3. The indexed gradient on the command line\n\n",
           f"`{c['command']}`: wall time of the command in a fresh process, start-up included "
           f"(median of {c.get('processes', 0)}): **{wall}**, "
           f"{c.get('lines', 0)} line(s) printed:\n\n"]
    out.append("```\n" + (c.get("output") or c.get("error") or "") + "\n```\n")
    return "".join(out)


def _solve(data: dict[str, Any]) -> str:
    n = data["meta"]["solve_n"]
    out = [f"\n## 4. scipy L-BFGS-B on Rosenbrock, n = {size(n)}, text → optimum\n\n",
           "`minimize(f, x0, jac=True, method=\"L-BFGS-B\", options={\"gtol\": 1e-8, \"maxiter\": 10000, "
           "\"maxfun\": 100000})` from x0 = 1 + 0.1 sin(k) for every peer, timed from the worker's start (imports, "
           "build, solve), with one BLAS thread (SciPy's L-BFGS-B only waits for a pool of them). A ratio above 1 "
           f"means symad reached the optimum later than the peer; L-BFGS-B's own work on {size(n)} numbers a step "
           f"is the same for all. Median of {data['meta'].get('solve_repeats', data['meta']['repeats'])} "
           "process(es).\n\n"]
    sol = data["solve"]
    sym = sol.get("symad", {})
    rows = []
    for peer, m in sol.items():
        if m.get("status") != "ok":
            rows.append([PEER_NAMES[peer], m.get("status", "—"), "", "", "", "", "", ""])
            continue
        rows.append([PEER_NAMES[peer], fmt_time(m.get("total_s")), fmt_time(m.get("import_s")),
                     fmt_time(m.get("solve_s")), f"{m.get('nit', 0):.0f} / {m.get('nfev', 0):.0f}",
                     f"{m.get('fun', float('nan')):.3e}", f"{m.get('distance', float('nan')):.1e}",
                     "" if peer == "symad" else fmt_ratio(ratio(sym.get("total_s"), m.get("total_s")))])
    out.append(table(["", "text → optimum", "imports", "build and solve", "iterations / evaluations", "final f",
                      "max |x - 1|", "symad / it"], rows))
    return "".join(out)


def render(data: dict[str, Any]) -> str:
    """The page."""
    m = data["meta"]
    vers = ", ".join(f"{k} {v}" for k, v in m.get("versions", {}).items())
    out = ["# Sums kept as loops\n\n",
           f"Generated by `{m['command']}`; do not edit by hand. The figures behind it: "
           "[indexed.json](indexed.json). Every figure is the median of "
           f"{m['repeats']} fresh process(es), configurations taken in turn (a process longer than 20 s is not "
           "repeated); read the ratios, measured in the same run, rather than single times. symad runs with its "
           "code cache off (`SYMAD_CACHE_DIR=\"\"`), so every process compiles its own loops; every library "
           "uses the machine's cores as it does by default.\n\n",
           f"- run: {m['date']}; machine: {m['machine']}; Python {m['python']}; symad at commit {m['revision']}"
           + (" (**quick run**)" if m.get("quick") else "") + "\n",
           f"- versions: {vers}\n",
           f"- load average (1, 5, 15 min) before: {', '.join(map(str, m.get('load_before', [])))}; after: "
           f"{', '.join(map(str, m.get('load_after', [])))}; the run took {m.get('minutes', 0)} min\n",
           "\n## Targets (issue 32)\n\n",
           table(["target", "measured", "verdict"], targets(data))]
    behind = slower(data)
    out.append("\n**Where symad is slower** (symad / peer, above 1, every comparison of the run): "
               + ("; ".join(behind) if behind else "nowhere in this run") + ".\n")
    out += [_rosenbrock(data), _xax(data), _command_line(data), _solve(data)]
    return "".join(out)


if __name__ == "__main__":
    sys.exit(rerender(Path(__file__).parent, "indexed", render))
