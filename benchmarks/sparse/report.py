"""The sparse suite's page (sparse.md) from its figures (sparse.json): issue 33's targets and the tables.

    python -m benchmarks.sparse.report      # write sparse.md again from sparse.json (nothing is measured)
"""

from __future__ import annotations

import math
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from benchmarks.harness import fmt_mem, fmt_ratio, fmt_time, rerender, table

PEER_NAMES = {"symad": "symad", "numpy": "NumPy by hand", "jax": "JAX jit", "casadi": "CasADi SX"}
TASK_TITLES = {"hessian": "The sparse Hessian of chained Rosenbrock",
               "jacobian": "The sparse Jacobian of each(i = 1..n-1, x[i+1] - x[i]^2)"}
TEXTS = {"hessian": "n = {n}; sum(i = 1..n-1, 100*(x[i+1] - x[i]^2)^2 + (1 - x[i])^2)",
         "jacobian": "n = {n}; each(i = 1..n-1, x[i+1] - x[i]^2)"}
CALLS = {"hessian": "f.sparse_hessian(x)", "jacobian": "F.sparse_jacobian(x)"}
HESSIAN_FIRST_MAX_S = 1.0  # the sparse Hessian at n = 10^5 from text, in a fresh process
TARGET_N = 10**5


def size(n: int | str) -> str:
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


def targets(data: dict[str, Any]) -> list[list[str]]:
    """Issue 33's "what this must show" for sparse derivatives, each with its figure and verdict."""
    rows = []
    h = data["hessian"].get(str(TARGET_N), {}).get("symad", {})
    first = h.get("first_s") if h.get("status") == "ok" else None
    rows.append([f"the sparse Hessian of Rosenbrock, n = {size(TARGET_N)}, from text in a fresh process "
                 f"(imports included) < {HESSIAN_FIRST_MAX_S:g} s", fmt_time(first),
                 _verdict(None if first is None else first < HESSIAN_FIRST_MAX_S)])
    for task, entries in (("hessian", lambda n: 3 * n - 2), ("jacobian", lambda n: 2 * (n - 1))):
        runs = [(int(n), p.get("symad", {})) for n, p in data[task].items()]
        counted = [(n, m.get("nnz")) for n, m in runs if m.get("nnz") is not None]
        what = "tridiagonal, 3n - 2 entries" if task == "hessian" else "2(n - 1) entries"
        rows.append([f"{TASK_TITLES[task].split(' of ')[0][4:]}: {what}",
                     "; ".join(f"{size(n)}: {c:,}" for n, c in counted) or "—",
                     _verdict(None if not counted else all(c == entries(n) for n, c in counted))])
    j = data["jacobian"].get(str(TARGET_N), {}).get("symad", {})
    rows.append([f"the sparse Jacobian at n = {size(TARGET_N)} from text (its time)",
                 fmt_time(j.get("first_s")) if j.get("status") == "ok" else j.get("status", "—"), "reported"])
    checks = [p.get("symad", {}) for task in ("hessian", "jacobian") for p in data[task].values()]
    checked = [c for c in checks if c.get("check") in ("ok", "mismatch")]
    worst = max((c.get("rel_diff", 0.0) for c in checked), default=None)
    rows.append(["the same entries and values as NumPy by hand",
                 f"largest relative difference {worst:.1e}" if worst is not None else "—",
                 _verdict(None if not checked else all(c["check"] == "ok" for c in checked))])
    return rows


def slower(data: dict[str, Any]) -> list[str]:
    """Every comparison of the run where symad took longer (or held more memory) than a peer."""
    found: dict[str, list[str]] = {}
    for task in ("hessian", "jacobian"):
        for n, peers in data[task].items():
            mine = peers.get("symad", {})
            for peer, m in peers.items():
                if peer == "symad":
                    continue
                for key, what in (("first_s", "from text"), ("call_s", "a call"), ("peak_first_mib", "memory")):
                    r = ratio(mine.get(key), m.get(key))
                    if r is not None and r > 1.0:
                        found.setdefault(PEER_NAMES[peer], []).append(f"{task} {size(n)} {what} {fmt_ratio(r)}×")
    return [f"against {peer}: {', '.join(items)}" for peer, items in found.items()]


def _table(runs: dict[str, Any], key: str, fmt: Callable[[float | None], str]) -> str:
    peers = list(PEER_NAMES)
    rows = []
    for n, p in runs.items():
        cells = [_cell(p.get(peer, {}), key, fmt) for peer in peers]
        mine = p.get("symad", {}).get(key)
        rows.append([size(n), *cells, *(fmt_ratio(ratio(mine, p.get(v, {}).get(key))) for v in peers[1:])])
    return table(["n", *(PEER_NAMES[p] for p in peers), *(f"symad / {PEER_NAMES[v]}" for v in peers[1:])], rows)


def _task(data: dict[str, Any], task: str, number: int) -> str:
    runs = data[task]
    out = [f"\n## {number}. {TASK_TITLES[task]}\n\n",
           f"symad: `{CALLS[task].split('.')[0]} = symad.compile(\"{TEXTS[task]}\")`, then `{CALLS[task]}` (a "
           "`scipy.sparse.csr_matrix`); NumPy by hand: the matrix's diagonals written out (`scipy.sparse.diags`); "
           "JAX: `jit` of forward-mode products along the columns' colours (`vmap` of `jvp`, "
           + ("over `grad`, three colours" if task == "hessian" else "two colours")
           + "), the entries recovered by hand into `diags`; CasADi SX: `Function` of `"
           + ("hessian" if task == "hessian" else "jacobian")
           + "` of the vectorised form, its sparse output converted to SciPy. \"not run\": not installed, not "
           "asked for, or past the size the peer's time and memory allow.\n\n",
           "**From text to the first matrix**: from the worker's start (Python's start-up aside) through the "
           "imports (NumPy and `scipy.sparse` for every peer), the build and the first matrix at "
           "x = 1 + 0.1 sin(k). A ratio below 1 means symad has its matrix sooner than the peer.\n\n",
           _table(runs, "first_s", fmt_time),
           "\n**A warm call**: the matrix at a new point each call, the median of timing loops. A ratio below 1 "
           "means symad's call is the faster.\n\n",
           _table(runs, "call_s", fmt_time),
           "\n**Peak memory at the first matrix**: the process's maximum resident set (ru_maxrss), the "
           "interpreter and the imports included.\n\n",
           _table(runs, "peak_first_mib", lambda m: fmt_mem(None if m is None else m * 1024)),
           "\n**Check**: symad's matrix against NumPy by hand's, its explicit zeros aside: the number of entries "
           "and the largest difference relative to the largest entry (within 1e-12).\n\n"]
    rows = []
    for n, p in runs.items():
        m = p.get("symad", {})
        nnz = m.get("nnz")
        rows.append([size(n), m.get("check", m.get("status", "—")), f"{nnz:,}" if nnz is not None else "—",
                     f"{m.get('rel_diff', float('nan')):.1e}"])
    out.append(table(["n", "symad's check", "entries", "largest difference"], rows))
    return "".join(out)


def render(data: dict[str, Any]) -> str:
    """The page."""
    m = data["meta"]
    vers = ", ".join(f"{k} {v}" for k, v in m.get("versions", {}).items())
    out = ["# Sparse derivatives\n\n",
           f"Generated by `{m['command']}`; do not edit by hand. The figures behind it: "
           "[sparse.json](sparse.json). Every figure is the median of "
           f"{m['repeats']} fresh process(es), configurations taken in turn (a process longer than 20 s is not "
           "repeated); read the ratios, measured in the same run, rather than single times. symad runs with its "
           "defaults: no code cache, so every process compiles its own loops.\n\n",
           f"- run: {m['date']}; machine: {m['machine']}; Python {m['python']}; symad at commit {m['revision']}"
           + (" (**quick run**)" if m.get("quick") else "") + "\n",
           f"- versions: {vers}\n",
           f"- load average (1, 5, 15 min) before: {', '.join(map(str, m.get('load_before', [])))}; after: "
           f"{', '.join(map(str, m.get('load_after', [])))}; the run took {m.get('minutes', 0)} min\n",
           "\n## Targets (issue 33)\n\n",
           table(["target", "measured", "verdict"], targets(data))]
    behind = slower(data)
    out.append("\n**Where symad is slower** (symad / peer, above 1, every comparison of the run): "
               + ("; ".join(behind) if behind else "nowhere in this run") + ".\n")
    out += [_task(data, "hessian", 1), _task(data, "jacobian", 2)]
    return "".join(out)


if __name__ == "__main__":
    sys.exit(rerender(Path(__file__).parent, "sparse", render))
