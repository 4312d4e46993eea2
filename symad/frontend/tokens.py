"""The postfix tokens the parser emits and the folder reads."""

from __future__ import annotations

from typing import NamedTuple

from symad.core.ops import FUNCTIONS, OPS


class Token(NamedTuple):
    """One postfix token.

    ``kind`` is one of:

    - ``number``, ``name``: a leaf (``text`` the number as typed, or the name);
    - ``op``, ``call``: an operator or a function of the ``arity`` values on top;
    - ``chain``: a comparison continuing a chain (``a < b < c``: the one before it and this one, of b and c);
    - ``define``: binds the name ``text`` to the value on top;
    - ``output``: the separator of two outputs;
    - ``index``: the variable ``text[k]``, k the whole number on top;
    - ``range``: opens a sum or product (``text`` is ``"sum i"``) over the two bounds on top;
    - ``function``: opens the body of a function (``text`` is ``"f(t,u)"``); its parameters'
      ``arity`` names were pushed just before, and are dropped;
    - ``end``: closes the innermost range or function body.
    """

    kind: str
    text: str
    arity: int = 0
    pos: int = 0  # offset in the source text

    def __str__(self) -> str:
        kind = self.kind
        if kind == "op":
            return OPS[self.text].symbol if OPS[self.text].kind == "infix" else self.text
        if kind == "call" and self.text in FUNCTIONS and self.arity != min(FUNCTIONS[self.text]):
            return f"{self.text}/{self.arity}"
        if kind == "chain":
            return f"&{OPS[self.text].symbol}"
        return _FORMS.get(kind, "{}").format(self.text)  # (an output separator prints as ";")


# How the other kinds print in postfix: `=t` binds t, `x[]` indexes x, braces hold a body.
_FORMS = {"define": "={}", "index": "{}[]", "range": "{{{}", "function": "{{{}", "end": "}}"}


def line_column(text: str, pos: int) -> tuple[int, int]:
    """1-based line and column of offset ``pos``."""
    line = text.count("\n", 0, pos) + 1
    return line, pos - (text.rfind("\n", 0, pos) + 1) + 1
