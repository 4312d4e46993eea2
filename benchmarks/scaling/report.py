"""The scaling suite's page (scaling.md) from its figures (scaling.json).

    python -m benchmarks.scaling.report      # write scaling.md again from scaling.json (nothing is measured)
"""

from __future__ import annotations

import math
import sys
from pathlib import Path

from benchmarks.harness import rerender


def exponent(rows: list[dict], size: str, value: str) -> list[float | None]:
    """log(value ratio) / log(size ratio) from each row to the next (None for the first)."""
    out: list[float | None] = [None]
    for a, b in zip(rows, rows[1:]):
        if a["ok"] and b["ok"] and a[value] and b[value]:
            out.append(math.log(b[value] / a[value]) / math.log(b[size] / a[size]))
        else:
            out.append(None)
    return out


def render(result: dict) -> str:
    """The page."""
    lines = ["# How costs grow with size", "",
             f"- run: {result['when']}; machine: {result['machine']}; Python {result['python']}",
             "- written by `python -m benchmarks.scaling`; every figure from a fresh process "
             "(wall time includes Python's start-up and imports)", "",
             "## Text to the first value and gradient, by number of variables", "",
             "| form | n | time | µs a variable | peak memory | growth exponent (time) |", "|---|---|---|---|---|---|"]
    for form in ("sum", "written out"):
        rows = [r for r in result["build"] if r["form"] == form]
        for r, k in zip(rows, exponent(rows, "n", "seconds")):
            if r["ok"]:
                lines.append(f"| {form} | {r['n']:,} | {r['seconds']:.2f} s | {1e6 * r['seconds'] / r['n']:.1f} | "
                             f"{r['peak_mb']:.0f} MB | {'' if k is None else f'{k:.2f}'} |")
            else:
                lines.append(f"| {form} | {r['n']:,} | failed: {r['error']} | | | |")
    for command in ("hessian", "explain"):
        rows = [r for r in result["commands"] if r["command"] == command]
        lines += ["", f"## `symad {command} @FILE --at ...`, by number of terms (10 variables)", "",
                  "| terms | time | growth exponent (time) | peak memory | memory a term adds (from the size before) |",
                  "|---|---|---|---|---|"]
        for a, r, k in zip([None, *rows], rows, exponent(rows, "terms", "seconds")):
            if not r["ok"]:
                lines.append(f"| {r['terms']:,} | failed: {r['error']} | | | |")
                continue
            added = "" if a is None or not a["ok"] else \
                f"{1024 * (r['peak_mb'] - a['peak_mb']) / (r['terms'] - a['terms']):.1f} KiB"
            lines.append(f"| {r['terms']:,} | {r['seconds']:.2f} s | {'' if k is None else f'{k:.2f}'} | "
                         f"{r['peak_mb']:.0f} MB | {added} |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    sys.exit(rerender(Path(__file__).parent, "scaling", render))
