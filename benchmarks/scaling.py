"""How symad's costs grow with the size of a problem (issue 30): each figure from a fresh process.

    python -m benchmarks.scaling            # up to 10^6 variables (several minutes); docs/scaling.{md,json}
    python -m benchmarks.scaling --quick    # small sizes: a smoke run, nothing written unless --out

- **Build**: text → the first value and gradient, in a fresh process (import included), for
  n variables written as an indexed sum ``sum(i = 1..n, (x[i] - i)^2)`` and written out term by
  term ``(v0 - 0)^2 + (v1 - 1)^2 + ...``; wall time and peak memory (VmHWM).  Every path from text
  to a callable must be linear: the last column is the exponent of the growth from the previous
  size (1 is linear).
- **hessian --at** and **explain --at** through the ``symad`` command on sums of ``terms`` random
  terms in 10 variables: wall time and peak memory by size, and the memory a term adds.
"""

from __future__ import annotations

import argparse
import datetime
import json
import math
import platform
import random
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from support.measure import python_measured, run_measured  # noqa: E402

TIMEOUT_S = 900.0
_BUILD = """
import time
start = time.perf_counter()
import symad
from symad.core.limits import override
n, form = {n}, {form!r}
text = ("sum(i = 1..{{n}}, (x[i] - i)^2)".format(n=n) if form == "sum"
        else "+".join(f"(v{{i}} - {{i}})^2" for i in range(n)))
with override(max_input_chars=50 * len(text) + 1000, max_nodes=100_000_000, max_program_ops=100_000_000):
    f = symad.compile(text, variables=["x"] if form == "sum" else None, background=False)
    value, grad = f.value_and_grad([0.5] * n)
assert len(grad) == n and grad[-1] != 0
print(time.perf_counter() - start)
"""


def build_row(n: int, form: str) -> dict:
    m = python_measured(_BUILD.format(n=n, form=form), timeout=TIMEOUT_S)
    ok = m.status == 0 and not m.timed_out
    return {"n": n, "form": form, "ok": ok, "seconds": float(m.stdout.split()[-1]) if ok else None,
            "peak_mb": m.peak_mb, "error": None if ok else ("timeout" if m.timed_out else m.stderr[-300:])}


def _terms_file(tmp: Path, terms: int) -> str:
    r = random.Random(terms)
    names = [f"x{i}" for i in range(10)]
    text = "+".join(f"sin({r.choice(names)}*{r.choice(names)})*exp({r.choice(names)}*{r.choice(names)})"
                    f"*cos({r.choice(names)}+{r.choice(names)})" for _ in range(terms))
    path = tmp / f"terms{terms}.txt"
    path.write_text(text)
    return f"@{path}"


def command_row(command: str, terms: int, tmp: Path) -> dict:
    point = ",".join(f"x{i}=0.{i + 1}" for i in range(10))
    m = run_measured([command, _terms_file(tmp, terms), "--at", point], timeout=TIMEOUT_S)
    ok = m.status == 0 and not m.timed_out
    return {"command": command, "terms": terms, "ok": ok, "seconds": m.seconds, "peak_mb": m.peak_mb,
            "error": None if ok else ("timeout" if m.timed_out else m.stderr[-300:])}


def exponent(rows: list[dict], size: str, value: str) -> list[float | None]:
    """log(value ratio) / log(size ratio) from each row to the next (None for the first)."""
    out: list[float | None] = [None]
    for a, b in zip(rows, rows[1:]):
        if a["ok"] and b["ok"] and a[value] and b[value]:
            out.append(math.log(b[value] / a[value]) / math.log(b[size] / a[size]))
        else:
            out.append(None)
    return out


def markdown(result: dict) -> str:
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


def main(argv: list[str] | None = None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="small sizes only (a smoke run)")
    ap.add_argument("--out", type=Path, help="where to write .md and .json (default docs/scaling; none with --quick)")
    args = ap.parse_args(argv)
    sizes = (1_000, 10_000) if args.quick else (1_000, 10_000, 100_000, 1_000_000)
    terms = (1_000, 2_000) if args.quick else (4_000, 8_000, 16_000, 32_000, 64_000)
    result = {"when": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC"),
              "machine": f"{platform.machine()}, {platform.system()} {platform.release()}",
              "python": platform.python_version(), "build": [], "commands": []}
    for form in ("sum", "written out"):
        for n in sizes:
            row = build_row(n, "sum" if form == "sum" else "out")
            row["form"] = form
            result["build"].append(row)
            print(form, n, row["seconds"], row["peak_mb"], flush=True)
    with tempfile.TemporaryDirectory() as tmp:
        for command in ("hessian", "explain"):
            for t in terms:
                row = command_row(command, t, Path(tmp))
                result["commands"].append(row)
                print(command, t, row["seconds"], row["peak_mb"], flush=True)
    text = markdown(result)
    out = args.out or (None if args.quick else ROOT / "docs" / "scaling")
    if out is not None:
        out.with_suffix(".md").write_text(text)
        out.with_suffix(".json").write_text(json.dumps(result, indent=1) + "\n")
    print(text)
    return result


if __name__ == "__main__":
    main()
