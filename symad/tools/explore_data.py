"""The page's data: numbers as ``symad explain`` shows them (and their exact digits), the sweep's
rows with their terms and running sums, and the picture's layout attributes.

Shared by :mod:`symad.tools.explore` (expressions without loops) and
:mod:`symad.tools.explore_loops` (with loops).
"""

from __future__ import annotations

from typing import Any

from symad.core.printing import format_number
from symad.tools import viz
from symad.tools.explanation import Explanation

_LARGE_LAYOUT = {"splines": "line", "nslimit": "0.2", "nslimit1": "0.2", "mclimit": "0.1"}


def shown(value: float) -> str:
    """A number as ``symad explain`` prints it: 6 significant digits.

    >>> shown(2.0), shown(1/3), shown(float("nan"))
    ('2', '0.333333', 'nan')
    """
    return format_number(float(f"{value:.6g}"), named_constants=False) if value == value else "nan"


def number(value: float) -> str:
    """A number for the page: the text shown, then ``|`` and its exact digits (``repr``) unless the
    text shown is exact."""
    text, exact = shown(value), repr(float(value))
    return text if text == exact or value == value and float(text) == value else f"{text}|{exact}"


def rows_layout_attrs(rankdir: str, count: int) -> dict[str, str]:
    """The picture's Graphviz attributes for ``count`` drawn nodes (room beside nodes for their numbers)."""
    large = count > viz.LARGE
    return {"rankdir": rankdir, "fontname": "Helvetica", "nodesep": "0.8" if large else "1.1", "ranksep": "0.45",
            "newrank": "true", "bgcolor": "transparent", **(_LARGE_LAYOUT if large else {})}


def sweep_data(steps: Explanation) -> list[dict[str, Any]]:
    """The sweep's rows for the page: each adjoint and its terms, with the running sums."""
    adjoint = {row.name: row.derivative for row in steps.sweep}
    out = []
    for row in steps.sweep:
        terms, running = [], 0.0
        for t in row.terms:
            running = running + t.contribution
            term = {"from": t.source, "local": t.local, "p": number(t.local_value),
                    "c": number(t.contribution)}
            if number(t.factor) != number(adjoint[t.source] or 0.0):  # (else the page reads it there)
                term["f"] = number(t.factor)
            if len(row.terms) > 1:
                term["sum"] = number(running)
            if t.blocked:
                term["blocked"] = True
            terms.append(term)
        out.append({"z": row.name, "d": number(row.derivative or 0.0), "seed": row.seed, "terms": terms})
    return out
