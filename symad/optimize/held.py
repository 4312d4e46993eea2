"""Values held in a problem written with loops (``fixed=``, ``params=``, ``--fix``): whole names.

A held name is a scalar, or a vector given whole (an array) or by one number (every entry); it is
no variable of the problem, and each piece (the objective, a constraint, a family) that reads it
gets it as data at each call.  A vector's array covers the indices its pieces read together, from
the smallest any of them reads to the largest (as the problem's variables do); each piece gets its
own range of it.  An entry (``x[3]``) is held by its bounds instead.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from symad.core.errors import PointError, VariableError
from symad.expr import Expr
from symad.indexed_function import IndexedInputs

Span = list[tuple[int, int]]  # a vector's first and last index along each of its dimensions


def reads(expr: Expr) -> IndexedInputs:
    """What a piece with loops reads: its variables (``wrt``) and its vectors' spans; nothing compiled."""
    return IndexedInputs(expr.graph, [expr.id], None, "auto")


class Held:
    """The held values over pieces that read them (``readers``: :func:`reads` of each piece with
    loops; ``written``: the variables of the written-out pieces, where a held name is substituted)."""

    def __init__(self, values: Mapping[str, Any], readers: Sequence[IndexedInputs], whose: str = "the problem",
                 written: Sequence[str] = ()):
        entries = [k for k in values if "[" in k]
        if entries:
            raise VariableError(f"a problem with loops holds whole names (fixed, params): an entry such as "
                                f"{entries[0]} is held by its bounds, bounds={{{entries[0]!r}: (v, v)}}",
                                tuple(entries))
        names = sorted({*(w for r in readers for w in r.wrt), *written})
        unknown = [k for k in values if k not in names]
        if unknown:
            raise VariableError(f"{', '.join(unknown)} held (fixed or params) is not a variable of {whose} (it has "
                                f"{', '.join(names)})", tuple(unknown))
        self.spans: dict[str, Span] = {}
        for r in readers:
            for name, dims in r.spans.items():
                if name in values:
                    known = self.spans.get(name, dims)
                    self.spans[name] = [(min(a, c), max(b, d)) for (a, b), (c, d) in zip(known, dims)]
        self.values = {name: self._whole(name, value) for name, value in values.items()}

    def __bool__(self) -> bool:
        return bool(self.values)

    def _whole(self, name: str, value: Any) -> Any:
        span = self.spans.get(name)
        if span is None:
            return float(value)
        shape = tuple(hi - lo + 1 for lo, hi in span)
        given = np.asarray(value, dtype=float)
        if given.ndim == 0:
            return np.full(shape, float(given))
        if given.shape != shape:
            covers = ", ".join(f"{lo}..{hi}" for lo, hi in span)
            raise PointError(f"{name} is held with shape {given.shape}: its pieces read {name}[{covers}], "
                             f"shape {shape} (or give one number for every entry)")
        return given

    def names_in(self, reader: IndexedInputs) -> list[str]:
        """The held names a piece reads."""
        return [name for name in self.values if name in reader.wrt]

    def entries(self, labels: Sequence[str]) -> dict[str, float]:
        """The held values of a written-out piece's variables (``a``; ``x[3]``, an entry of a held
        vector, read from its array), to substitute."""
        out = {}
        for label in labels:
            base, _, rest = label.partition("[")
            if label in self.values and not isinstance(self.values[label], np.ndarray):
                out[label] = self.values[label]
            elif rest and len(self.spans.get(base, ())) == 1 and rest[:-1].lstrip("-").isdigit():
                (first, last), = self.spans[base]
                k = int(rest[:-1])
                if not first <= k <= last:
                    raise VariableError(f"{label} is outside the held {base}[{first}..{last}]", (label,))
                out[label] = float(self.values[base][k - first])
        return out

    def data_for(self, reader: IndexedInputs) -> dict[str, Any]:
        """The held values a piece reads, a vector cut to the piece's own range."""
        out = {}
        for name in self.names_in(reader):
            value, span = self.values[name], reader.spans.get(name)
            if span is not None:
                value = value[tuple(slice(lo - first, hi - first + 1)
                                    for (lo, hi), (first, _) in zip(span, self.spans[name]))]
            out[name] = value
        return out
