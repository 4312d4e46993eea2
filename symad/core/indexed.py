"""Points and name lists where a base name ``x`` stands for the indexed variables ``x[k]``."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from symad.core.errors import PointError
from symad.core.names import compact, expand_names, groups, normal, split

__all__ = ["as_floats", "compact", "expand_names", "expand_point", "groups", "normal", "split"]


def as_floats(value: Any, name: str | None = None, names: Sequence[str] = (), what: str = "the point") -> Any:
    """``value`` (a number, a sequence, an array) as a float64 array; a PointError naming the
    variable (``name``, or ``names`` along the last axis) and what is wrong where a value is
    complex, None, not a number or too large for a float (NumPy would drop the imaginary part
    with a warning, read None as nan, or raise OverflowError)."""
    import numpy as np

    kind = type(value)
    if kind is float or (kind is np.ndarray and value.dtype.char == "d"):  # the common cases, at once
        return np.asarray(value, dtype=np.float64)
    try:
        arr = value if kind is np.ndarray else np.asarray(value)
    except (TypeError, ValueError, OverflowError):
        raise PointError(f"{_subject(name, what)} is not numbers: {value!r:.60}") from None
    kind = arr.dtype.kind
    if kind in "fiub":  # the common case: one check of the dtype
        return arr.astype(np.float64, copy=False)
    if kind == "c":
        imaginary = np.flatnonzero(arr.imag)
        k = int(imaginary[0]) if imaginary.size else 0
        raise PointError(f"{_subject(_named(arr, k, name, names), what)} is complex "
                         f"({_complex(arr.reshape(-1)[k])}): symad computes with real numbers")
    if kind != "O":  # text, dates...: as NumPy reads them
        try:
            return np.asarray(arr, dtype=np.float64)
        except (TypeError, ValueError):
            raise PointError(f"{_subject(name, what)} is not a number: {value!r:.60}") from None
    flat = arr.reshape(-1)
    out = np.empty(flat.shape)
    for k, item in enumerate(flat):
        why = None
        if item is None:
            why = "is None (give nan for a missing value)"
        elif isinstance(item, complex) or np.iscomplexobj(item):
            why = f"is complex ({_complex(item)}): symad computes with real numbers"
        else:
            try:
                out[k] = float(item)
            except OverflowError:
                digits = str(item)
                why = f"is too large for a float ({digits[:12]}..., {len(digits)} digits)"
            except (TypeError, ValueError):
                why = f"is not a number: {item!r:.60}"
        if why is not None:
            raise PointError(f"{_subject(_named(arr, k, name, names), what)} {why}")
    return out.reshape(arr.shape)


def _named(arr: Any, k: int, name: str | None, names: Sequence[str]) -> str | None:
    """The variable whose value is element ``k`` of ``arr`` (flat), if known."""
    if name is not None or not names:
        return name
    n = arr.shape[-1] if arr.ndim else 1
    return names[k % n] if n == len(names) else None


def _complex(value: Any) -> str:
    return str(complex(value)).strip("()")


def _subject(name: str | None, what: str) -> str:
    return f"value for {name}" if name is not None else what


def expand_point(expected: Sequence[str], given: Mapping[str, Any]) -> dict[str, Any]:
    """``given`` with each base name of indexed variables in ``expected`` (``"x": [1, 2, 3]``)
    spread over them (``x[1]``, ``x[2]``, ``x[3]``, in order; a single number sets them all);
    other names as they are."""
    by_base = groups(expected)
    if not by_base:
        return dict(given)
    known = set(expected)  # (a list's `in` made a point of n entries cost n^2)
    out: dict[str, Any] = {}
    for name, value in given.items():
        members = by_base.get(name) if name not in known else None
        if members is None:
            out[normal(name) if isinstance(name, str) else name] = value
            continue
        import numpy as np

        values = as_floats(value, None, members, f"value for {name}")
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
