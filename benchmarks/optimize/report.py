"""The optimisers suite's page (optimize.md) from its figures (optimize.json).

    python -m benchmarks.optimize.report      # write optimize.md again from optimize.json (nothing is measured)
"""

from __future__ import annotations

import sys
from pathlib import Path

from benchmarks.harness import rerender, table

HEADER = ["problem", "optimizer", "derivatives", "iterations", "objective calls", "Hessian / H·p calls",
          "time (median)", "time ÷ FD L-BFGS-B", "final f", "‖x − 1‖∞"]


def render(data: dict) -> str:
    """The page."""
    meta = data["meta"]
    env = (f"Python {meta['python']}, NumPy {meta['numpy']}, SciPy {meta['scipy']}, symad {meta['symad']}, "
           f"{meta['cpus']} CPUs, BLAS threads 1; median of {meta['repeat']} runs.")
    return "\n".join(["# Optimization benchmark: exact derivatives vs finite differences", "",
                      f"Made by `{meta['command']}` (`python -m benchmarks.optimize` runs it again). "
                      "Start (-1.2, 1, -1.2, 1, ...); scipy's default tolerances; \"objective calls\" counts "
                      "calls of the value+gradient function (exact) or of the value (finite differences, "
                      "which spend n+1 calls per gradient).", "", env, "", table(HEADER, data["rows"]).rstrip("\n"),
                      "", *(f"- {note}" for note in data["notes"]), ""])


if __name__ == "__main__":
    sys.exit(rerender(Path(__file__).parent, "optimize", render))
