"""Huge and hostile inputs through the ``symad`` command: wall time and peak memory of each.

    python -m benchmarks.huge_inputs            # every case (many minutes); huge_inputs.json and .md here
    python -m benchmarks.huge_inputs --quick    # the cases that end in seconds; prints the table only
    python -m benchmarks.huge_inputs --only 1e6 --timeout 300

Each case is one fresh ``symad`` process (``tests/support/measure.py``); peak memory is
that process's maximum resident set size.  ``docs/reference/limits.md`` says what the
figures show.  A case that runs past ``--timeout`` is killed and shown as such.
"""

from __future__ import annotations

import argparse
import platform
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

from support.measure import Measured, run_measured  # noqa: E402

from benchmarks import harness  # noqa: E402
from benchmarks.huge_inputs import report  # noqa: E402

MB = 1_000_000


def _sum(n: int, term: str = "x") -> str:
    return "+".join([term] * n)


def cases(tmp: Path) -> list[tuple[str, str, list[str], bool]]:
    """(id, description, symad arguments, quick?) — input files are written under ``tmp``."""
    files = {
        "sum_10mb": _sum(5 * MB),                      # 10 MB: 5,000,000 terms x+x+...
        "sum_1e6": _sum(MB),                           # 2 MB: a DAG of 1,000,000 add nodes
        "sum_1e5": _sum(100_000),
        "vars_1e5": "+".join(f"x{k}" for k in range(100_000)),
        "parens_1e6": "(" * MB + "x" + ")" * MB,
        "sin_1e6": "sin(" * MB + "x" + ")" * MB,       # 5 MB, 1,000,000 nested calls
        "prod_1e6": "*".join(["x"] * MB),
        "shared_40": "t0 = x;\n" + "".join(f"t{k} = sin(t{k - 1}*t{k - 1});\n" for k in range(1, 41)) + "t40",
    }
    for name, text in files.items():
        (tmp / f"{name}.txt").write_text(text)
    f = {name: f"@{tmp / name}.txt" for name in files}
    big = ["--max-input", str(20 * MB)]
    return [
        ("10mb-default", "10 MB input, default limits", ["stats", f["sum_10mb"]], True),
        ("10mb-stdin", "10 MB input on stdin, default limits", ["eval", "-", "--at", "x=1"], True),
        ("10mb-raised", "10 MB input (5·10⁶ terms), --max-input raised: grad", ["grad", f["sum_10mb"], "--at", "x=1",
                                                                             *big], False),
        ("1e6-capped", "10⁶-node sum, --max-dag-nodes 100000", ["grad", f["sum_1e6"], "--at", "x=1",
                                                               "--max-dag-nodes", "100000"], True),
        ("1e6-stats", "10⁶-node sum: stats", ["stats", f["sum_1e6"]], False),
        ("1e6-grad", "10⁶-node sum: grad at a point", ["grad", f["sum_1e6"], "--at", "x=1"], False),
        ("1e6-prod-grad", "10⁶-factor product x*x*...: grad", ["grad", f["prod_1e6"], "--at", "x=1"], False),
        ("1e6-parens", "10⁶ nested parentheses (2 MB): eval", ["eval", f["parens_1e6"], "--at", "x=1"], True),
        ("1e6-sin-default", "10⁶ nested sin (5 MB), default limits", ["eval", f["sin_1e6"], "--at", "x=1"], True),
        ("1e6-sin-raised", "10⁶ nested sin, --max-input raised: grad", ["grad", f["sin_1e6"], "--at", "x=1", *big],
         False),
        ("1e5-grad", "10⁵-node sum: grad", ["grad", f["sum_1e5"], "--at", "x=1"], True),
        ("1e5-vars-stats", "10⁵ distinct variables: stats", ["stats", f["vars_1e5"]], True),
        ("1e5-vars-diff", "10⁵ distinct variables: diff (10⁵ partials)", ["diff", f["vars_1e5"]], True),
        ("shared-40", "40-fold nested sin(t*t): diff (shared form)", ["diff", f["shared_40"]], True),
        ("tower-9", "9^9^9^9: grad", ["grad", "9^9^9^x", "--at", "x=9"], True),
    ]


def outcome(m: Measured) -> str:
    """How a case ended: ok, the error's first line, killed at the time limit, or another exit."""
    if m.timed_out:
        return "killed at timeout"
    if m.status == 0:
        return "ok"
    if m.status == 2:
        first = m.stderr.strip().splitlines()[0] if m.stderr.strip() else ""
        return "error: " + first.replace("symad: error: ", "").split(" (raise")[0][:90]
    return f"exit {m.status}: {m.stderr.strip()[-90:]}"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.huge_inputs", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="only the cases that end in seconds (writes nothing)")
    ap.add_argument("--only", help="comma-separated case ids (substring match; writes nothing)")
    ap.add_argument("--timeout", type=float, default=900, help="seconds per case (default 900)")
    args = ap.parse_args(argv)
    meta = {"command": harness.command_line("python -m benchmarks.huge_inputs", sys.argv[1:] if argv is None else argv),
            "date": harness.now(), "python": platform.python_version(), "machine": harness.machine(),
            "revision": harness.revision(), "load_before": harness.load()}
    rows = []
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        for case_id, what, symad_args, quick in cases(tmp):
            if args.quick and not quick:
                continue
            if args.only and not any(o in case_id for o in args.only.split(",")):
                continue
            stdin = tmp / "sum_10mb.txt" if "-" in symad_args else None
            m = run_measured(symad_args, stdin=stdin, timeout=args.timeout)
            rows.append({"id": case_id, "case": what, "outcome": outcome(m), "seconds": m.seconds,
                         "peak_mb": m.peak_mb})
            print(f"{case_id}: {rows[-1]['outcome']}, {m.seconds:.1f} s, {m.peak_mb:,.0f} MB", file=sys.stderr,
                  flush=True)
    meta["load_after"] = harness.load()
    data = {"meta": meta, "cases": rows}
    page = report.render(data)
    print(page)
    if not (args.quick or args.only):
        harness.write(Path(__file__).resolve().parent, "huge_inputs", data, page)
    return 0

