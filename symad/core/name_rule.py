"""The one rule for what a variable's name is, checked wherever a name enters symad.

A name is an ASCII letter or ``_`` followed by letters, digits and ``_``, optionally with
a whole-number index in brackets (``x[3]``), and is not a word of the language: a
constant (``pi e inf nan``), a function of the op table, or a keyword (``if then else and
or not sum prod``).  Such a name prints, parses back, saves, loads, pickles and exports
as itself; anything else is refused where it enters (docs/language.md, "Names").
"""

from __future__ import annotations

import re

from symad.core.errors import NameRuleError
from symad.core.names import normal, split
from symad.core.ops import CONSTANTS, FUNCTIONS

_PLAIN = re.compile(r"[A-Za-z_][A-Za-z_0-9]*")
KEYWORDS = frozenset({"if", "then", "else", "and", "or", "not", "sum", "prod"})
RESERVED = KEYWORDS | frozenset(CONSTANTS) | frozenset(FUNCTIONS)


def problem(name: object) -> str | None:
    """Why ``name`` is not a variable's name (None if it is one)."""
    if not isinstance(name, str):
        return f"a name is a string, not {type(name).__name__}"
    parts = split(name)
    base = parts[0] if parts else name
    if not _PLAIN.fullmatch(base):
        shown = repr(name) if name else "an empty name"
        return (f"{shown} is not a name: a name is an ASCII letter or _ followed by letters, digits and _, "
                f"optionally indexed as x[3]")
    if base in RESERVED:
        return f"{base!r} is a word of the language (a constant, function or keyword), not a variable's name"
    return None


def checked(name: object, where: str = "a variable") -> str:
    """``name`` as expressions spell it (``"x[ 3 ]"`` → ``"x[3]"``) if the rule admits it;
    otherwise :class:`~symad.core.errors.NameRuleError` saying why and where it entered.

    >>> checked("x[ 3 ]")
    'x[3]'
    >>> checked("e")
    Traceback (most recent call last):
    ...
    symad.core.errors.NameRuleError: a variable: 'e' is a word of the language (a constant, function or keyword), not a variable's name
    """
    why = problem(name)
    if why is not None:
        raise NameRuleError(f"{where}: {why}")
    return normal(name)  # type: ignore[arg-type]
