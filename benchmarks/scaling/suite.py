"""How symad's costs grow with the size of a problem (issue 30): each figure from a fresh process.

    python -m benchmarks.scaling            # up to 10^6 variables (several minutes); scaling.json and .md here
    python -m benchmarks.scaling --quick    # small sizes: a smoke run, nothing written unless --out-dir

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
import platform
import random
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

from support.measure import python_measured, run_measured  # noqa: E402

from benchmarks import harness  # noqa: E402
from benchmarks.scaling import report  # noqa: E402

FOLDER = Path(__file__).resolve().parent

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


def main(argv: list[str] | None = None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="small sizes only (a smoke run)")
    ap.add_argument("--out-dir", type=Path, help="where scaling.md/.json go (default this folder; none with --quick)")
    args = ap.parse_args(argv)
    sizes = (1_000, 10_000) if args.quick else (1_000, 10_000, 100_000, 1_000_000)
    terms = (1_000, 2_000) if args.quick else (4_000, 8_000, 16_000, 32_000, 64_000)
    result = {"when": harness.now(),
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
    text = report.render(result)
    out = args.out_dir or (None if args.quick else FOLDER)
    if out is not None:
        harness.write(out, "scaling", result, text)
    print(text)
    return result

