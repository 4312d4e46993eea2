"""The statistics suite's page, ``statistics.md``, rendered from ``statistics.json``:
``python -m benchmarks.statistics.report`` writes it again (nothing is measured)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from benchmarks.harness import fmt_ratio, fmt_time, rerender, table  # noqa: E402

FOLDER = Path(__file__).resolve().parent


def _ratio(a: float | None, b: float | None) -> float | None:
    return a / b if a is not None and b else None


def render(data: dict[str, Any]) -> str:
    """The page: what is measured, each peer's medians, symad's ratio to JAX's, provenance."""
    s, j = data["peers"]["symad"], data["peers"]["jax"]
    first, call = _ratio(s["first_call_s"], j["first_call_s"]), _ratio(s["call_s"], j["call_s"])
    rows = [[peer, fmt_time(p["first_call_s"]), fmt_time(p["call_s"]), ", ".join(map(str, p["status"]))]
            for peer, p in data["peers"].items()]
    target = "met" if call is not None and call <= 1.0 else "not met"
    closed = data["peers"].get("jax-closed")
    lines = [
        "# Statistics: the negative binomial log-likelihood",
        "",
        f"The negative log-likelihood of a negative binomial regression over {data['n']:,} rows (mean",
        "exp(b0 + b1·x1 + b2·x2), size exp(a): `lgamma(y + r) − lgamma(r) − lgamma(y + 1) + …`) and its",
        "gradient: symad's `objective(...).value_and_grad` (native code) beside JAX's",
        "`jit(value_and_grad)` with `jax.scipy.special.gammaln`: `jax` takes the data as arguments,",
        "`jax-closed` closes over them (constants of its code, which XLA may fold). symad computes",
        "a row's terms of the data alone (`lgamma(y + 1)`) once, at its first call, and those of the",
        "point alone (`lgamma(r)`) once a call. Each peer runs in fresh processes, taken",
        f"in turn, {data['repeats']} times; medians. The first call is timed from the worker's first line",
        "(imports and build included, the data's generation not); a call is a warm call's median.",
        "Each is checked against NumPy and scipy.special written out by hand (relative 1e-9).",
        "",
        table(["peer", "first call", "a call", "runs"], rows).rstrip("\n"),
        "",
        f"symad / JAX: first call {fmt_ratio(first)}, a call {fmt_ratio(call)} (target: a call no slower: {target})"
        + (f"; symad / JAX closed over: first call {fmt_ratio(_ratio(s['first_call_s'], closed['first_call_s']))}, "
           f"a call {fmt_ratio(_ratio(s['call_s'], closed['call_s']))}." if closed else "."),
        "",
        f"Machine: {data['machine']}; load average {data['load']}; revision {data['revision']}; {data['date']}.",
        f"Command: `{data['command']}`.",
        "",
    ]
    return "\n".join(lines)


def main() -> int:
    return rerender(FOLDER, "statistics", render)


if __name__ == "__main__":
    sys.exit(main())
