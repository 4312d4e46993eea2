"""The peers suite's page (peers.md) from its figures (peers.json): figures, ratios and the targets.

    python -m benchmarks.peers.report      # write peers.md again from peers.json (nothing is measured)

Every ratio is symad's figure divided by the peer's: below 1, symad is faster
(or leaner); above 1, the peer is.  "symad" is the default configuration
(``symad.compile(expr)``); the ``backend=`` rows are symad forced to one backend.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from benchmarks.harness import fmt_mem, fmt_ratio, fmt_time, rerender, table
from benchmarks.peers.workloads import title

Data = dict[str, Any]
M = dict[str, Any]

LINEAR_EXPONENT = 1.15  # a log-log slope up to this counts as linear (timer noise, allocator effects)
CHEAP_GRADIENT = 3.0
C_FACTOR = 1.5


# ============================================================================ lookups
class Results:
    """The measurements, indexed by workload key and peer id."""

    def __init__(self, data: Data):
        self.data = data
        self.meta = data["meta"]
        self.timeout = float(self.meta.get("timeout_s", 90))
        self.by: dict[tuple[str, str], M] = {(m["key"], m["peer"]): m for m in data["measurements"]}
        self.keys = list(dict.fromkeys(m["key"] for m in data["measurements"]))
        self.point_keys = [k for k in self.keys if not k.startswith("rosenbrock2d_batch")]
        self.batch_keys = [k for k in self.keys if k.startswith("rosenbrock2d_batch")]
        self.peers = self.meta["peers"]
        self.reference_only = {p["id"] for p in self.peers if p.get("reference_only")}
        self.labels = {p["id"]: p["label"] for p in self.peers}
        self.eager = {p["id"] for p in self.peers if not p.get("builds", True)}

    def get(self, key: str, peer: str) -> M | None:
        return self.by.get((key, peer))

    def competitors(self, key: str) -> list[M]:
        """The peers' measurements on ``key``: not symad, not hand-written reference code."""
        return [
            m
            for (k, p), m in self.by.items()
            if k == key and not p.startswith("symad") and p not in self.reference_only
        ]

    def builders(self, key: str) -> list[M]:
        """The competitors that build a reusable function (not eager autograd, which re-traces per call)."""
        return [m for m in self.competitors(key) if m["peer"] not in self.eager]

    def symad_variants(self, key: str) -> list[M]:
        return [m for (k, p), m in self.by.items() if k == key and p.startswith("symad[")]


def figure(m: M | None, name: str) -> float | None:
    """A figure of a measurement, or None where it was not obtained."""
    if m is None:
        return None
    if name == "build":
        return m.get("build_s")
    if name == "mem":
        return m.get("build_peak_kib")
    if name == "batch_mem":
        return m.get("batch_peak_kib") if m.get("status") == "ok" else None
    if m.get("status") != "ok":
        return None
    if name in ("vg", "v", "batch_vg", "batch_v"):
        return m.get(name, {}).get("median_s")
    if name == "vg/v":
        vg, v = m.get("vg") or m.get("batch_vg"), m.get("v") or m.get("batch_v")
        return vg["median_s"] / v["median_s"] if vg and v and v["median_s"] > 0 else None
    raise KeyError(name)


def failure(m: M | None, name: str, timeout: float) -> str:
    """What to print where a figure is missing."""
    if m is None:
        return ""
    status = m.get("status")
    if status == "timeout":
        phase = m.get("timeout_phase", "build")
        if name in ("build", "mem") and phase == "build":
            return f"> {timeout:g} s" if name == "build" else "timeout"
        return "timeout"
    return {"unavailable": "n/a", "mismatch": "≠ (mismatch)", "unchecked": "unchecked"}.get(status, status or "")


def cell(r: Results, key: str, peer: str, name: str) -> str:
    m = r.get(key, peer)
    val = figure(m, name)
    if val is None:
        text = failure(m, name, r.timeout)
        if text.startswith(">") and name == "build":
            mine = figure(r.get(key, "symad"), "build")
            if mine is not None:
                text += f" (< {fmt_ratio(mine / r.timeout)})"
        return text
    show = {
        "vg": fmt_time,
        "v": fmt_time,
        "batch_vg": fmt_time,
        "batch_v": fmt_time,
        "build": fmt_time,
        "mem": fmt_mem,
        "batch_mem": fmt_mem,
        "vg/v": lambda x: f"{x:.2g}",
    }[name]
    text = show(val)
    if name == "vg/v" or peer == "symad":
        return text
    mine = figure(r.get(key, "symad"), name)
    if mine is None or val <= 0:
        return text
    return f"{text} ({fmt_ratio(mine / val)})"


def _int(v: Any) -> str:
    return f"{v:,}" if isinstance(v, int) else "—"


def figure_table(r: Results, keys: list[str], name: str) -> str:
    rows = []
    for p in r.peers:
        cells = [cell(r, k, p["id"], name) for k in keys]
        if any(cells):
            rows.append([p["label"] if p["id"] != "symad" else "**symad**", *cells])
    return table(["", *(title(k) for k in keys)], rows)


# ============================================================================ targets
def best(ms: Iterable[M], name: str) -> tuple[M | None, float | None]:
    found = [(figure(m, name), m) for m in ms]
    found = [(v, m) for v, m in found if v is not None]
    if not found:
        return None, None
    v, m = min(found, key=lambda vm: vm[0])
    return m, v


def _row(
    target: str,
    where: str,
    mine: float | None,
    theirs: float | None,
    fmt: Any,
    ok: bool | None,
    reason: str,
    ratio: float | None = None,
    note: str = "",
) -> list[str]:
    if ratio is None and mine is not None and theirs:
        ratio = mine / theirs
    verdict = "not measured" if ok is None else ("met" if ok else "**not met**")
    measured = (
        f"{fmt(mine)} vs {fmt(theirs)}"
        if mine is not None and theirs is not None
        else (fmt(mine) if mine is not None else "—")
    )
    said = [note] if ok else [reason, note]
    return [target, where, measured, fmt_ratio(ratio), verdict, "; ".join(x for x in said if x)]


def _compiled_note(m: M | None, what: str) -> str:
    """How symad's build continues after its interpreted first call: compiled code's time or peak."""
    info = (m or {}).get("info") or {}
    if what == "time" and info.get("native_ready_s"):
        return f"first call interpreted; compiled code ready after {fmt_time(info['native_ready_s'])}"
    if what == "mem" and info.get("compiled_peak_kib") is not None:
        return f"compiling the code afterwards peaks at {fmt_mem(info['compiled_peak_kib'])}"
    return ""


def _faster_backend(r: Results, key: str, name: str, mine: float) -> str:
    m, v = best(r.symad_variants(key), name)
    if m is None or v is None or v >= mine:
        return ""
    return f"; forced `{m['peer'][6:-1]}` backend: {fmt_time(v)}"


def _symad_failed(m: M | None) -> str:
    if m is None:
        return "symad was not measured"
    if m.get("status") == "timeout":
        return f"symad did not finish its {m.get('timeout_phase', 'build')} phase within the limit"
    return f"symad: {m.get('status')}: {m.get('error', '')}"[:200]


def targets(r: Results) -> list[list[str]]:
    rows: list[list[str]] = []
    # --- per point: at least as fast as the fastest peer
    for key in r.point_keys:
        sm = r.get(key, "symad")
        mine = figure(sm, "vg")
        bm, theirs = best(r.competitors(key), "vg")
        if mine is None:
            rows.append(
                _row(
                    "per point ≤ fastest peer",
                    title(key),
                    None,
                    theirs,
                    fmt_time,
                    False if sm else None,
                    _symad_failed(sm),
                )
            )
            continue
        if bm is None:
            rows.append(_row("per point ≤ fastest peer", title(key), mine, None, fmt_time, None, ""))
            continue
        ok = mine <= theirs
        reason = f"{bm['label']} is faster ({fmt_time(theirs)} vs {fmt_time(mine)})" + _faster_backend(
            r, key, "vg", mine
        )
        rows.append(
            _row(
                "per point ≤ fastest peer",
                f"{title(key)} (vs {bm['label']})",
                mine,
                theirs,
                fmt_time,
                ok,
                reason,
            )
        )
    # --- per point: within 1.5× of hand-written C
    for key in r.point_keys:
        cm = r.get(key, "c")
        if not key.startswith("rosenbrock/") or cm is None or key in ("rosenbrock/10",):
            continue
        mine, theirs = figure(r.get(key, "symad"), "vg"), figure(cm, "vg")
        ok = None if mine is None or theirs is None else mine <= C_FACTOR * theirs
        reason = f"{mine / theirs:.3g}× the hand-written C" + _faster_backend(r, key, "vg", mine) if ok is False else ""
        rows.append(_row(f"per point ≤ {C_FACTOR}× hand-written C", title(key), mine, theirs, fmt_time, ok, reason))
    # --- batch: at least as fast as the fastest peer
    for key in r.batch_keys:
        sm = r.get(key, "symad")
        mine = figure(sm, "batch_vg")
        bm, theirs = best(r.competitors(key), "batch_vg")
        ok = None if mine is None or theirs is None else mine <= theirs
        reason = ""
        if ok is False and bm is not None:
            reason = f"{bm['label']} is faster ({fmt_time(theirs)} vs {fmt_time(mine)})" + _faster_backend(
                r, key, "batch_vg", mine
            )
        cmv = figure(r.get(key, "c"), "batch_vg")
        if cmv is not None and mine is not None:
            reason += f" (hand-written C: {fmt_time(cmv)}, ratio {fmt_ratio(mine / cmv)})"
        where = f"{title(key)} (vs {bm['label']})" if bm else title(key)
        rows.append(_row("batch ≤ fastest peer", where, mine, theirs, fmt_time, ok, reason.strip()))
    # --- build: faster than every peer
    for key in r.keys:
        sm = r.get(key, "symad")
        mine = figure(sm, "build")
        comps = [m for m in r.builders(key) if m.get("status") != "unavailable"]
        bm, theirs = best(comps, "build")
        timeouts = [m for m in comps if figure(m, "build") is None and m.get("status") == "timeout"]
        if mine is None:
            rows.append(
                _row(
                    "build < every peer that builds",
                    title(key),
                    None,
                    theirs,
                    fmt_time,
                    False if sm else None,
                    _symad_failed(sm),
                )
            )
            continue
        if bm is None:
            ok = bool(timeouts) and mine < r.timeout or None
            rows.append(
                _row(
                    "build < every peer that builds",
                    f"{title(key)} (every peer timed out)" if timeouts else title(key),
                    mine,
                    r.timeout if timeouts else None,
                    fmt_time,
                    ok,
                    "",
                )
            )
            continue
        ok = mine < theirs
        parse = (sm.get("info") or {}).get("parse_s")
        reason = f"{bm['label']} builds in {fmt_time(theirs)}, symad in {fmt_time(mine)}"
        if parse is not None:
            reason += f" (parsing the text: {fmt_time(parse)})"
        if sm.get("native_compile_s"):
            reason += (f"; of symad's build, {fmt_time(sm['native_compile_s'])} is LLVM compiling the native "
                       "code that the first batch waits for (a process's first compile includes LLVM's "
                       "one-time set-up)")
        rows.append(
            _row(
                "build < every peer that builds",
                f"{title(key)} (vs {bm['label']})",
                mine,
                theirs,
                fmt_time,
                ok,
                reason,
                note=_compiled_note(sm, "time"),
            )
        )
    # --- the cheap-gradient principle
    for key in r.keys:
        sm = r.get(key, "symad")
        ratio = figure(sm, "vg/v")
        ok = None if ratio is None else ratio <= CHEAP_GRADIENT
        name = "batch_vg" if key in r.batch_keys else "vg"
        vg = figure(sm, name)
        rows.append(
            [
                f"value+gradient ≤ {CHEAP_GRADIENT:g}× value",
                title(key),
                f"{fmt_time(vg)} vs {fmt_time(vg / ratio)}" if ratio else "—",
                fmt_ratio(ratio),
                "not measured" if ok is None else ("met" if ok else "**not met**"),
                "" if ok or ok is None else "the gradient program costs more than 3 value programs",
            ]
        )
    # --- memory: below CasADi's on the largest workloads
    largest: dict[str, str] = {}
    for key in r.point_keys:
        family, size = key.split("/")
        if family != "seed" and (family not in largest or int(size) > int(largest[family].split("/")[1])):
            largest[family] = key
    for key in largest.values():
        mine = figure(r.get(key, "symad"), "mem")
        cas = [m for m in (r.get(key, "casadi"), r.get(key, "casadi[cse]")) if m is not None]
        cm, theirs = best(cas, "mem")
        ok = None if mine is None or theirs is None else mine < theirs
        reason = (
            f"symad's build peaks at {fmt_mem(mine)}, {cm['label']}'s at {fmt_mem(theirs)}"
            if ok is False and cm
            else ""
        )
        rows.append(_row("peak build memory < CasADi's", title(key), mine, theirs, fmt_mem, ok, reason,
                         note=_compiled_note(r.get(key, "symad"), "mem")))
    # --- linear build time, per scaling family
    for family, points in scaling_families(r.data.get("scaling", [])).items():
        where = SCALING_TITLES.get(family, family)
        exp, lo, hi, note = scaling_exponent(points)
        if exp is None:
            rows.append(["build time linear in size", where, "—", "—", "not measured", note])
            continue
        reaches = hi >= 0.9e6
        ok = exp <= LINEAR_EXPONENT and reaches
        why = []
        if exp > LINEAR_EXPONENT:
            why.append(f"build time grows as nodes^{exp:.2f}")
        if not reaches:
            why.append(f"the largest size built has {hi:,} nodes" + (f"; {note}" if note else ""))
        verdict = "met" if ok else "**not met**"
        measured = f"{lo:,} … {hi:,} nodes: exponent {exp:.2f}"
        rows.append(["build time linear in size", where, measured, "—", verdict, "; ".join(why)])
    return rows


SCALING_TITLES = {
    "scaling": "chained Rosenbrock, n variables",
    "scaling_sum": "sum of m terms over 100 variables",
}


def scaling_families(points: list[M]) -> dict[str, list[M]]:
    out: dict[str, list[M]] = {}
    for p in points:
        out.setdefault(p.get("family", "scaling"), []).append(p)
    return out


def scaling_exponent(points: list[M]) -> tuple[float | None, int, int, str]:
    """Least-squares slope of log(build time) against log(DAG nodes) over the sizes that built."""
    ok = [
        (p["info"]["dag_nodes"], p["build_s"])
        for p in points
        if p.get("status") == "ok" and p.get("build_s") and p.get("info", {}).get("dag_nodes")
    ]
    failed = [p for p in points if p.get("status") != "ok"]
    note = ""
    if failed:
        f = failed[0]
        note = f"n={f['n']:,}: {f.get('status')}" + (f" in {f['timeout_phase']}" if f.get("timeout_phase") else "")
    if len(ok) < 2:
        return None, 0, 0, note or "fewer than two sizes built"
    xs, ys = [math.log(n) for n, _ in ok], [math.log(t) for _, t in ok]
    mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
    slope = sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True)) / sum((x - mx) ** 2 for x in xs)
    return slope, ok[0][0], ok[-1][0], note


# ============================================================================ the page
def render(data: Data) -> str:
    """The page."""
    r = Results(data)
    targets_table = table(["target", "workload", "symad vs best", "ratio", "verdict", "reason (unmet), notes"],
                          targets(r))
    return "".join([_header(r), "\n## Targets (issue #8)\n\n", targets_table, _per_point(r), _batch(r), _build(r),
                    _sizes(r), _scaling(r), _not_measured(r), _method(r)])


def _header(r: Results) -> str:
    """The title, where and when the figures were measured, and how to read them."""
    meta = r.meta
    out: list[str] = []
    add = out.append
    add("# Benchmarks\n\n")
    add(
        "Generated by `" + meta["command"].strip() + "` (`python -m benchmarks.peers` regenerates this page and "
        "[peers.json](peers.json); the peers install with `pip install '.[bench]'`). "
        "Do not edit by hand. The first call, data, scaling and other suites: "
        "[docs/reports.md](../../docs/reports.md).\n\n"
    )
    add(
        f"- run: {meta['date']}, {meta.get('wall_s', 0) / 60:.0f} min; machine: {meta['machine']}; "
        f"Python {meta['python']}\n"
    )
    loads = meta.get("load_before"), meta.get("load_after")
    if all(loads):
        add(
            f"- load average (1, 5, 15 min) before: {', '.join(map(str, loads[0]))}; after: "
            f"{', '.join(map(str, loads[1]))}. On a 2-core machine shared with other work, single figures "
            "move by tens of percent between runs; the ratios within one run are what count.\n"
        )
    if meta.get("revision"):
        add(f"- symad at commit {meta['revision']}\n")
    vers = meta.get("versions", {})
    add("- versions: " + ", ".join(f"{k} {v}" for k, v in vers.items()) + "\n")
    if meta.get("quick"):
        add("- **quick run**: small sizes and few repetitions, a smoke test of the harness, not a measurement.\n")
    add(
        "\n**How to read.** Each cell is a figure and, in parentheses, **symad's figure divided by that "
        "peer's**: below 1 symad is faster (or leaner), above 1 the peer is. *symad* is the default "
        "(`symad.compile(expr)`); `symad backend=…` rows force one backend. "
        f"`> {r.timeout:g} s` is a build that did not finish within the time limit (the ratio is then an "
        "upper bound); *timeout* a later phase past the limit; *n/a* a peer not installed; "
        "*≠* results that differ from symad's (never timed). Hand-written code (C, NumPy) is shown for "
        "orientation; the C is not counted as a peer in the targets. The build target counts the peers "
        "that build a reusable function (SymPy, SymEngine, CasADi, JAX): eager PyTorch and HIPS "
        "autograd re-record their tape at every call, so their *build* is one parse and one call.\n"
    )
    return "".join(out)


def _per_point(r: Results) -> str:
    """Value and gradient at one point, the value alone, and the gradient's cost."""
    meta = r.meta
    out: list[str] = []
    add = out.append
    if r.point_keys:
        add("\n## Value and gradient at one new point\n\n")
        add(
            "Median time of one `value_and_grad(p)` call (the point a 1-D float64 array, the result "
            "`(float, array)`, as `scipy.optimize.minimize(..., jac=True)` uses it), over "
            f"{meta['repeats']} timing loops that cycle through 32 distinct points.\n\n"
        )
        add(figure_table(r, r.point_keys, "vg"))
        add("\n### Value alone\n\n")
        add(figure_table(r, r.point_keys, "v"))
        add("\n### Cost of the gradient: time(value and gradient) / time(value)\n\n")
        add(figure_table(r, r.keys, "vg/v"))
    return "".join(out)


def _batch(r: Results) -> str:
    """The batch workloads: a table each."""
    meta = r.meta
    out: list[str] = []
    add = out.append
    if r.batch_keys:
        add("\n## Batch: Rosenbrock 2-D, value and gradient at every point in one call\n\n")
        add(
            f"Median of {meta.get('batch_repeats', 7)} calls on an array of shape (N, 2) "
            "returning values (N,) and "
            "gradients (N, 2); peak memory is the rise of VmHWM during the calls.\n\n"
        )
        for key in r.batch_keys:
            rows = []
            for p in r.peers:
                m = r.get(key, p["id"])
                if m is None:
                    continue
                rows.append(
                    [
                        p["label"] if p["id"] != "symad" else "**symad**",
                        cell(r, key, p["id"], "batch_vg"),
                        cell(r, key, p["id"], "batch_v"),
                        cell(r, key, p["id"], "vg/v"),
                        cell(r, key, p["id"], "batch_mem"),
                        cell(r, key, p["id"], "build"),
                    ]
                )
            add(f"**{title(key)}**\n\n")
            add(table(["", "value+gradient", "value", "vg/v", "peak memory", "build (to first batch)"], rows))
    return "".join(out)


def _build(r: Results) -> str:
    """Text to the first value and gradient: time and peak memory."""
    out: list[str] = []
    add = out.append
    add("\n## Build: text to the first value and gradient\n\n")
    add(
        "Wall time from the expression text to the first result of the value-and-gradient callable "
        "(parsing, differentiating, generating and compiling code, and the first call; imports and "
        "Lark's one-time grammar load excluded). Every peer reads the text through symad's parser "
        "(`symad.to_postfix`) and a mechanical translation, so it pays the same parse. A build under 2 s "
        "is timed in several fresh processes (`--build-repeats`, 3 by default) and the median shown, "
        "with its peak memory: a build of milliseconds can take several times longer when the shared "
        "machine stalls a page fault.\n\n"
    )
    add(figure_table(r, r.keys, "build"))
    ready = [(k, (r.get(k, "symad") or {}).get("info", {}).get("native_ready_s")) for k in r.keys]
    if any(v for _, v in ready):
        add(
            "\nsymad (`auto`) answers the first call by interpreting the expression's DAG (`symad/backends/tape.py`: "
            "no gradient expression, no code) and compiles once the function is called again. Text to "
            "compiled code for both programs (value+gradient, and value; the default's background `-O2` "
            "included), as the benchmark then forces it with `Function.prepare()`: "
            + "; ".join(f"{title(k)} {fmt_time(v)}" for k, v in ready if v)
            + ".\n"
        )
    add("\n### Peak memory of the build\n\n")
    add(
        "The rise of VmHWM (`/proc/self/status`) over the build, in a fresh process whose peak was reset "
        "just before it, so imports are not counted.\n\n"
    )
    add(figure_table(r, r.keys, "mem"))
    peaks = [(k, (r.get(k, "symad") or {}).get("info", {}).get("compiled_peak_kib")) for k in r.keys]
    if any(v is not None for _, v in peaks):
        add(
            "\nsymad's peak up to compiled code for both programs (the figure above is to the first, "
            "interpreted, result): " + "; ".join(f"{title(k)} {fmt_mem(v)}" for k, v in peaks if v is not None)
            + ".\n"
        )
    return "".join(out)


def _sizes(r: Results) -> str:
    """Each workload's text, tree, DAG and gradient sizes, and CasADi's instruction counts."""
    out: list[str] = []
    add = out.append
    add("\n## Sizes\n\n")
    rows = []
    for key in r.keys:
        sm = r.get(key, "symad") or {}
        info = sm.get("info", {})
        cas = (r.get(key, "casadi") or {}).get("info", {})
        casc = (r.get(key, "casadi[cse]") or {}).get("info", {})
        rows.append(
            [
                title(key),
                f"{sm.get('text_chars', 0):,}",
                f"{info.get('tree_nodes', '—'):,}" if isinstance(info.get("tree_nodes"), int) else "—",
                _int(info.get("dag_nodes")),
                _int(info.get("gradient_nodes")),
                _int(cas.get("instructions_vg")),
                _int(casc.get("instructions_vg")),
            ]
        )
    add(
        table(
            [
                "workload",
                "text (chars)",
                "symad tree nodes",
                "symad DAG nodes",
                "gradient adds",
                "CasADi instructions (v+g)",
                "CasADi cse instructions",
            ],
            rows,
        )
    )
    return "".join(out)


def _scaling(r: Results) -> str:
    """symad's build time by size, and its growth exponent."""
    data = r.data
    out: list[str] = []
    add = out.append
    scaling = data.get("scaling", [])
    if scaling:
        add("\n## Scaling of symad's build\n\n")
        add(
            "Text to the first value and gradient (default backend), each size in a fresh process, "
            "for two generated families: chained Rosenbrock (n variables, about 9 nodes per variable) "
            "and a sum of m distinct terms `(x_a+k)*x_b` over 100 variables (about 4 nodes per term). "
            "The input-length guard (`symad.core.limits`) is raised for these texts.\n\n"
        )
        rows = []
        for family, points in scaling_families(scaling).items():
            for p in points:
                info = p.get("info", {})
                nodes = info.get("dag_nodes")
                per = fmt_time(p["build_s"] / nodes) if nodes and p.get("build_s") else "—"
                status = "" if p.get("status") == "ok" else (p.get("note") or p.get("error") or p.get("status", ""))
                if p.get("status") == "timeout" and not p.get("note"):
                    status = f"timeout in {p.get('timeout_phase', 'build')}"
                rows.append([
                    SCALING_TITLES.get(family, family), f"{p['n']:,}", f"{p['text_chars']:,}",
                    f"{nodes:,}" if nodes else "—", fmt_time(p.get("parse_s")),
                    fmt_time(p.get("compile_first_s")), fmt_time(p.get("build_s")), per,
                    fmt_mem(p.get("build_peak_kib")), str(status)[:160],
                ])  # fmt: skip
        header = ["family", "size", "text (chars)", "DAG nodes", "parse", "compile + first call", "build",
                  "per node", "peak memory", ""]  # fmt: skip
        add(table(header, rows))
        for family, points in scaling_families(scaling).items():
            exp, lo, hi, _ = scaling_exponent(points)
            if exp is not None:
                add(f"\n{SCALING_TITLES.get(family, family)}: build time grows as nodes^{exp:.2f} "
                    f"from {lo:,} to {hi:,} nodes (1.00 is linear).\n")  # fmt: skip
    return "".join(out)


def _not_measured(r: Results) -> str:
    """What failed, timed out or differed, and why."""
    data = r.data
    out: list[str] = []
    add = out.append
    problems = [m for m in data["measurements"] if m.get("status") not in ("ok",)]
    if problems:
        add("\n## Not measured\n\n")
        rows = []
        for m in problems:
            why = (
                m.get("note")
                or m.get("error")
                or (f"phase '{m.get('timeout_phase')}' past {r.timeout:g} s" if m.get("status") == "timeout" else "")
            )
            if m.get("status") == "mismatch":
                why = f"largest relative difference from symad {m.get('max_rel_err'):.3g}"
            rows.append([title(m["key"]), m["label"], m["status"], str(why).replace("|", "\\|")[:220]])
        add(table(["workload", "peer", "status", "why"], rows))
    return "".join(out)


def _method(r: Results) -> str:
    """How the figures are measured."""
    out: list[str] = []
    add = out.append
    add("\n## Method\n\n")
    add(
        "- Each measurement (one peer, one workload, one size) runs in its own fresh process "
        "(`benchmarks/peers/worker.py`), which reports JSON lines as its phases end; each phase after the imports "
        f"has {r.timeout:g} s.\n"
        "- Every peer receives the same text, parsed by `symad.to_postfix` and folded with a stack into the "
        "peer's own objects (`benchmarks/peers/translate.py`; `^` is power, `log(x, b)` is `log(x)/log(b)`; "
        "nothing is `eval`'d), and the same points (uniform in [0.5, 1.5)). Its values and gradients are "
        "compared with symad's (relative 1e-9) before anything is timed.\n"
        "- SymPy: `diff` + `lambdify` (`math` module for points, `numpy` for batches), with and without "
        "`cse=True`. SymEngine: `Lambdify` with its LLVM backend, with and without `cse`. CasADi: an SX "
        "graph, `Function` of value and `gradient`, with and without the `cse` option, called per point through "
        "`Function.buffer` (its low-overhead call) and over batches through `Function.map`. "
        "JAX (float64): `jit(value_and_grad)`, `jit(vmap(value_and_grad))` for batches. "
        "PyTorch: eager autograd, the tape recorded at every call. HIPS autograd: `value_and_grad`, "
        "`make_vjp` for batches.\n"
        "- Per-point times subtract the bare loop's cost; 32 distinct points are cycled so no call repeats "
        "the previous point.\n"
        "- symad's native code may compile in the background after the first evaluation (tiered "
        "building); the per-call timing waits until it is ready.\n"
    )
    return "".join(out)


if __name__ == "__main__":
    sys.exit(rerender(Path(__file__).parent, "peers", render))
