"""Points and name lists where a base name ``x`` stands for the indexed variables ``x[k]``."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from symad.core.errors import PointError
from symad.core.names import compact, expand_names, groups, normal, split

__all__ = ["compact", "expand_names", "expand_point", "groups", "normal", "split"]


def expand_point(expected: Sequence[str], given: Mapping[str, Any]) -> dict[str, Any]:
    """``given`` with each base name of indexed variables in ``expected`` (``"x": [1, 2, 3]``)
    spread over them (``x[1]``, ``x[2]``, ``x[3]``, in order; a single number sets them all);
    other names as they are."""
    by_base = groups(expected)
    if not by_base:
        return dict(given)
    out: dict[str, Any] = {}
    for name, value in given.items():
        members = by_base.get(name) if name not in expected else None
        if members is None:
            out[normal(name) if isinstance(name, str) else name] = value
            continue
        import numpy as np

        try:
            values = np.asarray(value, dtype=float)
        except (TypeError, ValueError):
            raise PointError(f"value for {name} is not numbers: {value!r:.60}") from None
        if values.ndim == 0:  # one number for them all
            values = np.full(len(members), float(values))
        if values.shape[-1] != len(members):
            raise PointError(f"{name} stands for {len(members)} indexed variable(s) ({', '.join(compact(members))}): "
                             f"give one number or {len(members)} (along the last axis), got shape {values.shape}")
        for i, member in enumerate(members):
            if member in given:
                raise PointError(f"{member} is given twice: as itself and in {name}")
            out[member] = values[..., i] if values.ndim > 1 else float(values[i])
    return out
