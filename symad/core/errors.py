"""symad's one error hierarchy: every error a user can cause is a SymadError."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from symad.core.names import compact


class SymadError(Exception):
    """Base class of every error symad raises on bad input."""


class ParseError(SymadError, ValueError):
    """The text is not a valid expression; knows where (1-based line and column)."""

    def __init__(self, message: str, text: str = "", line: int = 1, column: int = 1,
                 expected: tuple[str, ...] = ()):
        self.reason = message
        self.text = text
        self.line = line
        self.column = column
        self.expected = expected
        super().__init__(self._render())

    def _render(self) -> str:
        head = f"{self.reason} at line {self.line}, column {self.column}"
        if self.expected:
            head += "; expected " + _or_list(self.expected)
        lines = self.text.split("\n")  # the same line breaks as the reported line numbers
        if not self.text or self.line > len(lines):
            return head
        # Control characters (tabs, carriage returns, NUL) show as '?' so the caret stays aligned.
        src = "".join(ch if ch.isprintable() else "?" for ch in lines[self.line - 1])
        col = self.column - 1
        # Show a window around long lines so the caret stays on screen.
        start = max(0, col - 60)
        snippet = src[start:start + 120]
        prefix = "..." if start else ""
        suffix = "..." if start + 120 < len(src) else ""
        caret = " " * (len(prefix) + col - start) + "^"
        return f"{head}\n  {prefix}{snippet}{suffix}\n  {caret}"


class UnknownFunctionError(ParseError):
    """A call names a function symad does not know, or with the wrong number of arguments."""


class VariableError(SymadError, KeyError):
    """A point misses a variable the expression uses, or names one it does not.

    ``unknown``: the names given that the expression does not use (when that is the error).
    """

    def __init__(self, message: str, unknown: tuple[str, ...] = ()):
        super().__init__(message)
        self.unknown = unknown

    def __str__(self) -> str:  # KeyError would quote the message
        return str(self.args[0])


class NameRuleError(SymadError, ValueError):
    """A name that is not a variable's name (``names.checked``: the one rule, docs/guide/language.md)."""


class PointError(SymadError, ValueError):
    """A point's value is not a number, or an array of the wrong shape."""


class LimitError(SymadError):
    """Input exceeds a documented resource limit.

    ``message`` may name the setting that raises the limit as ``{setting}``: the message
    spells it for Python (``LIMITS.max_nodes`` becomes ``symad.core.limits.LIMITS.max_nodes``,
    a parameter ``max_nodes`` becomes ``max_nodes=``), and :meth:`spelled` lets a caller
    spell it its own way (the command line names its flag).
    """

    def __init__(self, message: str, setting: str | None = None):
        self.template, self.setting = message, setting
        super().__init__(self.spelled(_python_spelling))

    def spelled(self, spell: Callable[[str], str]) -> str:
        """The message with the setting spelled by ``spell``."""
        return self.template.format(setting=spell(self.setting)) if self.setting else self.template


def _python_spelling(setting: str) -> str:
    return f"symad.core.limits.{setting}" if setting.startswith("LIMITS.") else f"{setting}="


def _or_list(items: tuple[str, ...]) -> str:
    items = tuple(items)
    if len(items) == 1:
        return items[0]
    return ", ".join(items[:-1]) + " or " + items[-1]


def name_list(names: list[str] | tuple[str, ...], most: int = 8) -> str:
    """``a, b, c`` for a few names; the first and last ones around a count for many.

    >>> name_list(["x1", "x2"])
    'x1, x2'
    >>> name_list([f"x{i}" for i in range(1, 1001)])
    'x1, x2, x3, x4, x5, x6, x7, …, x1000 (1,000 names)'
    """
    names = compact(list(names))
    if len(names) <= most:
        return ", ".join(names)
    return ", ".join(names[: most - 1]) + f", …, {names[-1]} ({len(names):,} names)"


def check_variables(expected: tuple[str, ...], given: Mapping[str, Any]) -> None:
    """Raise VariableError if ``given`` misses or adds variables."""
    missing = [v for v in expected if v not in given]
    known = set(expected)
    extra = [v for v in given if v not in known]
    if not (missing or extra):
        return
    uses = name_list(expected) if expected else "no variables"
    if missing:
        raise VariableError(f"missing value for variable {name_list(missing)} (the expression uses {uses})")
    if extra:
        raise VariableError(f"unknown variable {', '.join(extra)} (the expression uses {uses})", tuple(extra))
