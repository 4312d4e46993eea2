"""The one rule for what a variable's name is, checked wherever a name enters symad.

A name is an ASCII letter or ``_`` followed by letters, digits and ``_``, optionally with
a whole-number index in brackets (``x[3]``, ``x[-2]``), and is not a word of the language:
a constant (``pi e inf nan``), a function of the op table, or a keyword (``if then else
and or not sum prod``).  Such a name prints, parses back, saves, loads, pickles and
exports as itself; anything else is refused where it enters (docs/guide/language.md, "Names").

The derivative machinery names its own variables with a quote (``x'``, the direction of
``x``), which no admitted name has, so they never collide with a user's.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterator, Set

from symad.core.errors import NameRuleError
from symad.core.names import normal, split
from symad.core.ops import CONSTANTS, FUNCTIONS

_PLAIN = re.compile(r"[A-Za-z_][A-Za-z_0-9]*")
_BRACED = re.compile(r"([A-Za-z_][A-Za-z_0-9]*?)_?\{(-?\d+)\}")  # LaTeX's and SymPy's x_{1}
KEYWORDS = frozenset({"if", "then", "else", "and", "or", "not", "sum", "prod", "each"})


class _Reserved(Set):
    """The words of the language, read live from the op table (an op defined later is in)."""

    def __contains__(self, word: object) -> bool:
        return word in KEYWORDS or word in CONSTANTS or word in FUNCTIONS

    def __iter__(self) -> Iterator[str]:
        return iter(sorted(KEYWORDS | set(CONSTANTS) | set(FUNCTIONS)))

    def __len__(self) -> int:
        return len(KEYWORDS | set(CONSTANTS) | set(FUNCTIONS))


RESERVED: Set = _Reserved()


def _what(word: str) -> str:
    if word in CONSTANTS:
        return f"the constant {word}"
    if word in FUNCTIONS:
        return f"a function ({word}(...))"
    return "a keyword"


def _hint(name: str) -> str:
    """A spelling the rule admits, for the usual mistakes (``x_{1}``, ``θ``, ``my var``)."""
    m = _BRACED.fullmatch(name)
    if m:
        return f" (write {m.group(1)}_{m.group(2)} or {m.group(1)}[{m.group(2)}])"
    if len(name) == 1 and not name.isascii():
        words = unicodedata.name(name, "").split()
        if len(words) == 4 and words[0] == "GREEK" and words[2] == "LETTER":
            spelled = words[3].lower() if words[1] == "SMALL" else words[3].capitalize()
            return f" (write {spelled})"
    if "[" in name:
        return " (an index is a whole number: x[3])"
    if name.strip() and _PLAIN.fullmatch(name.strip().replace(" ", "_")):
        return f" (write {name.strip().replace(' ', '_')})"
    return ""


def problem(name: object) -> str | None:
    """Why ``name`` is not a variable's name (None if it is one).

    >>> problem("x[3]") is None, problem("_1") is None
    (True, True)
    >>> print(problem("x_{1}"))  # doctest: +NORMALIZE_WHITESPACE
    'x_{1}' is not a name: a name is an ASCII letter or _ followed by letters, digits and _,
    optionally indexed as x[3] (write x_1 or x[1])
    """
    if not isinstance(name, str):
        return f"a name is a string, not {type(name).__name__}"
    parts = split(name)
    base = parts[0] if parts else name
    if not _PLAIN.fullmatch(base):
        shown = repr(name[:60])
        return (f"{shown} is not a name: a name is an ASCII letter or _ followed by letters, digits and _, "
                f"optionally indexed as x[3]{_hint(name)}")
    if base in RESERVED:
        return f"{base!r} is {_what(base)}, a word of the language, not a variable's name"
    return None


def checked(name: object, where: str = "a variable") -> str:
    """``name`` as expressions spell it (``"x[ 3 ]"`` → ``"x[3]"``) if the rule admits it;
    otherwise :class:`~symad.core.errors.NameRuleError` saying why and where it entered.

    >>> checked("x[ 3 ]")
    'x[3]'
    >>> checked("e")
    Traceback (most recent call last):
    ...
    symad.core.errors.NameRuleError: a variable: 'e' is the constant e, a word of the language, not a variable's name
    """
    why = problem(name)
    if why is not None:
        raise NameRuleError(f"{where}: {why}")
    return normal(name)  # type: ignore[arg-type]


def checked_all(names: object, where: str) -> list[str]:
    """Each name of the sequence ``names`` :func:`checked` (a lone string is refused: it would
    read as its characters)."""
    if isinstance(names, str):
        raise NameRuleError(f"{where} is a list of names, not the string {names!r:.60}")
    try:
        items = list(names)  # type: ignore[call-overload]
    except TypeError:
        raise NameRuleError(f"{where} is a list of names, not {type(names).__name__}") from None
    return [checked(n, where) for n in items]
