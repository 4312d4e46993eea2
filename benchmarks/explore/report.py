"""The Markdown page of :mod:`benchmarks.explore.suite`'s figures."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from benchmarks.harness import fmt_time, rerender, table

UP_TO_1000 = ("seed", "chain-20", "chain-166-full", "chain-200")  # the cases of at most about 1,000 nodes


def render(data: dict[str, Any]) -> str:
    meta, rows, targets = data["meta"], data["cases"], data["targets"]
    small = [r for r in rows if r["id"] in UP_TO_1000]
    size_ok = all(r["bytes"] < targets["bytes"] for r in small)
    open_ok = all(r["open_s"] < targets["open_s"] for r in small)
    verdict = {True: "met", False: "**not met**"}
    out = [
        "# The page of the sweep: size and opening time\n",
        f"`{meta['command']}` at {meta['revision']}, {meta['date']}, on {meta['machine']}, Python {meta['python']}, "
        f"{meta['chromium']}; {meta['repeats']} opening(s) of each page, medians; load {meta['load_before']} before, "
        f"{meta['load_after']} after.\n",
        "Each page is written by `symad graph EXPR --at ... -o page.html` in a fresh process (Python's start-up "
        "included), then opened in Chromium (Playwright, a new browser context each time, every request but the "
        "page's own refused): **open** is from the request to the page's script marking it ready (the SVG drawn, "
        "the steps built, the first step shown); **to the last step** is the End key to the last step shown. "
        "No other tool writes such a page, so there is no peer.\n",
        "## Targets\n",
        table(["target", "measured (pages of up to about 1,000 nodes)", "verdict"], [
            ["a single file under 1 MB", ", ".join(f"{r['bytes'] / 1e6:.2f} MB" for r in small), verdict[size_ok]],
            ["opens in under 2 s", ", ".join(fmt_time(r["open_s"]) for r in small), verdict[open_ok]],
        ]),
        "## Every page\n",
        table(["page", "size", "written (symad graph, a fresh process)", "nodes drawn", "open (median)",
               "open (slowest)", "to the last step"],
              [[r["what"], f"{r['bytes'] / 1e6:.2f} MB", fmt_time(r["write_s"]), str(r["drawn_nodes"]),
                fmt_time(r["open_s"]), fmt_time(r["open_max_s"]), fmt_time(r["end_s"])] for r in rows]),
        "Past 150 nodes drawn (`--max-nodes`), the page collapses subgraphs into boxes and says so; the page "
        "of 1,000 nodes drawn in full is the largest the targets ask for. Most of the writing time of the large "
        "pages is Graphviz's layout (`dot`).\n",
    ]
    return "\n".join(out)


if __name__ == "__main__":
    sys.exit(rerender(Path(__file__).parent, "explore", render))
