"""The page of the sweep: its size, the time to write it, and the time a browser takes to open it.

    python -m benchmarks.explore            # every case; explore.json and explore.md here
    python -m benchmarks.explore --quick    # the small cases, one repeat; prints the page only

Each page is written by the installed ``symad graph EXPR --at ... -o page.html`` in a fresh
process (the time a user waits for the file, Python's start-up included).  It is then opened
``--repeats`` times in Debian's ``chromium`` driven by Playwright, each time in a new browser
context (no cache shared between openings), every request other than the page itself refused:
the time from the request of the page to the page's script marking it ready (``body[data-ready]``:
the SVG drawn, the steps built, the first step shown), medians.  Then the last step is reached
with the End key, and that time is measured too.  Issue targets: a page of up to 1,000 nodes under
1 MB, and open in under 2 s.  There is no peer: no other tool writes such a page.
"""

from __future__ import annotations

import argparse
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

from support.offline_page import URL, offline_context  # noqa: E402

from benchmarks import harness  # noqa: E402
from benchmarks.explore import report  # noqa: E402

SIZE_TARGET = 1_000_000
OPEN_TARGET_S = 2.0


def chain(n: int) -> str:
    """An expression of about ``5 n`` DAG nodes, each term a few nodes of its own."""
    return " + ".join(f"sin({k}*x + y)*x" for k in range(1, n + 1))


def cases() -> list[dict]:
    """(id, what, expression text, extra arguments, quick?)."""
    at = ["--at", "x=0.5,y=0.25"]
    return [
        {"id": "seed", "what": "the seed (x+y)+x*(x+y), 5 nodes", "text": "(x+y)+x*(x+y)",
         "args": ["--at", "x=1,y=2"], "nodes": 5, "quick": True},
        {"id": "chain-20", "what": "about 100 nodes, drawn in full", "text": chain(20), "args": at,
         "quick": True},
        {"id": "chain-166-full", "what": "about 1,000 nodes, drawn in full (--max-nodes 1000)", "text": chain(166),
         "args": [*at, "--max-nodes", "1000"], "quick": False},
        {"id": "chain-200", "what": "about 1,000 nodes, the default (past 150 drawn, subgraphs collapse)",
         "text": chain(200), "args": at, "quick": True},
        {"id": "chain-2000", "what": "about 10,000 nodes, the default", "text": chain(2000), "args": at,
         "quick": False},
        {"id": "loop", "what": "a sum over 20,000 terms kept as a loop (one box)",
         "text": "y*sum(i=1..20000, (x[i+1]-x[i])^2) + y^2", "args": ["--at", "x=0.5,y=2"], "quick": True},
    ]


def write_page(case: dict, folder: Path) -> tuple[Path, float]:
    """The page written by the ``symad`` command in a fresh process, and the process's wall time."""
    source = folder / f"{case['id']}.txt"
    source.write_text(case["text"], encoding="utf-8")
    out = folder / f"{case['id']}.html"
    cmd = [sys.executable, "-m", "symad", "graph", f"@{source}", *case["args"], "-o", str(out)]
    start = time.perf_counter()
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    seconds = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"{case['id']}: symad graph failed: {done.stderr.strip()[-500:]}")
    return out, seconds


def open_times(browser, html: str, repeats: int) -> dict:
    """Median seconds to the page ready and to its last step, over ``repeats`` new contexts."""
    ready, to_end, refused, nodes = [], [], [], None
    for _ in range(repeats):
        context = offline_context(browser, html, refused)
        page = context.new_page()
        start = time.perf_counter()
        page.goto(URL)
        page.wait_for_selector("body[data-ready]", timeout=120_000)
        ready.append(time.perf_counter() - start)
        start = time.perf_counter()
        page.keyboard.press("End")
        page.wait_for_selector('#sx-step[data-phase="result"]', timeout=120_000)
        to_end.append(time.perf_counter() - start)
        nodes = page.evaluate("document.querySelectorAll('#sx-svg g.node').length")
        context.close()
    if refused:
        raise SystemExit(f"the page asked the network for {refused[:3]}")
    return {"open_s": statistics.median(ready), "open_max_s": max(ready), "end_s": statistics.median(to_end),
            "drawn_nodes": nodes}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.explore", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="the small cases, one opening each (writes nothing)")
    ap.add_argument("--repeats", type=int, default=5, help="openings of each page (default 5)")
    args = ap.parse_args(argv)
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if chromium is None:
        print("Debian's chromium is not installed: apt-get install chromium", file=sys.stderr)
        return 2
    from playwright.sync_api import sync_playwright

    repeats = 1 if args.quick else args.repeats
    meta = {"command": harness.command_line("python -m benchmarks.explore", sys.argv[1:] if argv is None else argv),
            "date": harness.now(), "python": platform.python_version(), "machine": harness.machine(),
            "revision": harness.revision(), "load_before": harness.load(), "repeats": repeats,
            "chromium": subprocess.run([chromium, "--version"], capture_output=True, text=True).stdout.strip()}
    rows = []
    with tempfile.TemporaryDirectory() as tmp, sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium,
                                    args=["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"])
        for case in cases():
            if args.quick and not case["quick"]:
                continue
            path, written = write_page(case, Path(tmp))
            html = path.read_text(encoding="utf-8")
            row = {"id": case["id"], "what": case["what"], "write_s": written, "bytes": len(html.encode("utf-8")),
                   **open_times(browser, html, repeats)}
            rows.append(row)
            print(f"{case['id']}: {row['bytes'] / 1e6:.2f} MB, written in {written:.2f} s, "
                  f"opened in {row['open_s']:.2f} s", file=sys.stderr, flush=True)
        browser.close()
    meta["load_after"] = harness.load()
    data = {"meta": meta, "targets": {"bytes": SIZE_TARGET, "open_s": OPEN_TARGET_S}, "cases": rows}
    page = report.render(data)
    print(page)
    if not args.quick:
        harness.write(Path(__file__).resolve().parent, "explore", data, page)
    return 0
