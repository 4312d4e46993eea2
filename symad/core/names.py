"""Names of indexed variables (``x[1]``, ``x[2]``, ...).

A variable ``x[k]`` is an ordinary variable whose name carries its index; the
expression's variables sort naturally (``x[2]`` before ``x[10]``).  Where a point
or a list of names is given, the base name ``x`` stands for every ``x[k]`` the
expression uses, in that order.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

_INDEXED = re.compile(r"([A-Za-z_][A-Za-z_0-9]*)\[\s*(-?\d+)\s*\]")


def split(name: str) -> tuple[str, int] | None:
    """``"x[3]"`` → ``("x", 3)``; None for a name without an index."""
    m = _INDEXED.fullmatch(name)
    return (m.group(1), int(m.group(2))) if m else None


def normal(name: str) -> str:
    """The name as the expression spells it: ``"x[ 3 ]"`` → ``"x[3]"``."""
    parts = split(name.strip())
    return f"{parts[0]}[{parts[1]}]" if parts else name.strip()


def groups(names: Iterable[str]) -> dict[str, list[str]]:
    """The indexed names among ``names`` by base name, each list in the given order."""
    out: dict[str, list[str]] = {}
    for name in names:
        parts = split(name)
        if parts:
            out.setdefault(parts[0], []).append(name)
    return out


def compact(names: Sequence[str]) -> list[str]:
    """Runs of three or more consecutive indices written as one range.

    >>> compact(["a", "x[1]", "x[2]", "x[3]", "x[5]", "y"])
    ['a', 'x[1..3]', 'x[5]', 'y']
    """
    out: list[str] = []
    i = 0
    while i < len(names):
        parts = split(names[i])
        j = i + 1
        if parts:
            while j < len(names) and split(names[j]) == (parts[0], parts[1] + j - i):
                j += 1
        if j - i >= 3:
            out.append(f"{parts[0]}[{parts[1]}..{parts[1] + j - i - 1}]")  # type: ignore[index]
        else:
            out.extend(names[i:j])
        i = j
    return out


def expand_names(listed: Sequence[str], used: Sequence[str]) -> list[str]:
    """``listed`` with each base name of indexed variables in ``used`` replaced by them all."""
    by_base = groups(used)
    out: list[str] = []
    for name in listed:
        out.extend(by_base[name] if name in by_base and name not in used else [normal(name)])
    return out
