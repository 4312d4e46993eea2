"""What ``symad minimize``'s command line gives (bounds, IPOPT's options) and how a run shows
itself (numbers for JSON, durations, a progress bar on a terminal)."""

from __future__ import annotations

import argparse
import math
import sys
import time
from typing import Any

from symad.cli.common import format_number, parse_point
from symad.core import indexed
from symad.core.errors import PointError, SymadError
from symad.optimize.methods import METHODS, SECOND_ORDER
from symad.optimize.result import OptimizeResult


def ipopt_options(specs: list[str]) -> dict[str, int | float | str]:
    """``['mu_strategy=adaptive', 'max_cpu_time=5']`` → ``{'mu_strategy': 'adaptive', 'max_cpu_time': 5}``:
    a value that reads as an integer is one, else as a number, else it is text (IPOPT checks the type)."""
    out: dict[str, int | float | str] = {}
    for spec in specs:
        name, eq, value = (s.strip() for s in spec.partition("="))
        if not (eq and name and value):
            raise SymadError(f"--option expects NAME=VALUE, got {spec.strip()!r:.60}")
        for kind in (int, float):
            try:
                out[name] = kind(value)
                break
            except ValueError:
                continue
        else:
            out[name] = value
    return out


def parse_bounds(specs: list[str]) -> dict[str, tuple[float | None, float | None]]:
    """``['x=-2:2,y=0:']`` → ``{'x': (-2.0, 2.0), 'y': (0.0, None)}``."""
    bounds: dict[str, tuple[float | None, float | None]] = {}
    for spec in specs:
        for item in spec.split(","):
            name, eq, rng = item.partition("=")
            lo, colon, hi = rng.partition(":")
            name = indexed.normal(name)
            if not (eq and colon and name):
                raise PointError(f"--bounds expects name=lo:hi, got {item.strip()!r}")
            if name in bounds:
                raise PointError(f"--bounds gives {name} twice")
            ends = [parse_point([f"{name}={t}"])[name] if t.strip() else None for t in (lo, hi)]
            bounds[name] = (ends[0], ends[1])
    return bounds


def json_number(v: float) -> float | str:
    """A number for JSON: inf and nan as text (JSON has neither)."""
    v = float(v)
    return v if math.isfinite(v) else format_number(v)


def duration(seconds: float) -> str:
    """``12.3 ms`` or ``4.56 s``."""
    return f"{seconds * 1e3:.3g} ms" if seconds < 1 else f"{seconds:.3g} s"


class ProgressBar:
    """A tqdm progress bar fed by the optimiser's callback (only on a terminal)."""

    def __init__(self, tqdm: Any, total: int | None, method: str):
        self.bar = tqdm(total=total, desc=method, unit="it", file=sys.stderr, leave=False,
                        dynamic_ncols=True)
        self.shown = 0.0

    def __call__(self, r: OptimizeResult) -> None:
        self.bar.update(1)
        now = time.monotonic()
        if now - self.shown > 0.2:  # formatting every iteration would cost more than the step
            self.shown = now
            grad = getattr(r, "grad_norm", None)  # (scipy's methods report no gradient norm)
            self.bar.set_postfix_str(f"f={r.fun:.6g}" + ("" if grad is None else f" |grad|={grad:.2g}"),
                                     refresh=False)

    def close(self) -> None:
        self.bar.close()


def progress_bar(args: argparse.Namespace, method: str) -> ProgressBar | None:
    """A progress bar when stderr is a terminal, else None."""
    if not sys.stderr.isatty():
        return None
    from tqdm import tqdm

    total = args.max_iter or (100_000 if method == "l-bfgs-b" or (method in METHODS and method not in SECOND_ORDER)
                              else 3000 if method == "ipopt" else 1000)
    return ProgressBar(tqdm, total, method)
