"""A symad document's JSON text read one value at a time, never as a tree of JSON values.

:func:`pairs` yields the top-level object's keys in order, each with its value: a number or a
string read whole, or for a list an :class:`Items` whose elements are read only as the caller
asks for them (:meth:`Items.scalars`, or :meth:`Items.nodes` for node lists).  The caller checks
each key and value as it comes (:mod:`symad.core.document`) and stops the reading by raising:
a key it does not know is refused before its value is read, and what is kept is only what
the caller keeps.  A value of another shape than a number, a string, a list of them or a
node (an object, ``true``, a list inside a list...) is :data:`OTHER`, and the reading stops
there, at its first character, since every document value it could be is refused.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from json.decoder import scanstring
from typing import Any

from symad.core.errors import SymadError


class _Other:
    """A JSON value of a shape no document value has."""

    def __repr__(self) -> str:
        return "another JSON value"


OTHER: Any = _Other()
HUGE = 1 << 64  # an integer of more digits than any index or version has

_SPACE = re.compile(r"[ \t\n\r]*")
_INT = re.compile(r"-?(?:0|[1-9][0-9]*)(?![0-9.eE])")  # a JSON integer (not the start of a fraction)
# No node has more elements: an entry of 16 indices, ["item", vector, i1, ..., i16].
MOST_ELEMENTS = 18
# The nodes symad writes, matched whole: an operation with its integers (argument indices, and a
# loop's level and range, which may be negative), a leaf with its text.
_S = r"[ \t\n\r]*"
_INTEGER = r"-?(?:0|[1-9][0-9]{0,17})"
_OP_NODE = re.compile(rf'\[{_S}"([a-z0-9_]{{1,16}})"((?:{_S},{_S}{_INTEGER}){{0,{MOST_ELEMENTS - 1}}}){_S}\]')
_LEAF_NODE = re.compile(rf'\[{_S}"(var|const|vector)"{_S},{_S}"([^"\\\x00-\x1f]*)"{_S}\]')
# Either, with the "," or "]" after it.
_NODE_AND_NEXT = re.compile(rf"(?:{_OP_NODE.pattern}|{_LEAF_NODE.pattern}){_S}([,\]]){_S}")


class NotJSON(SymadError, ValueError):
    """The text is not JSON (or ends early); :mod:`symad.core.document` says so as a DocumentError."""


class Reader:
    """The text and the position reached in it."""

    __slots__ = ("text", "pos")

    def __init__(self, text: str) -> None:
        self.text, self.pos = text, 0

    def fail(self, what: str) -> NotJSON:
        """The error for ``what`` was expected (or found) at the current position."""
        line = self.text.count("\n", 0, self.pos) + 1
        column = self.pos - (self.text.rfind("\n", 0, self.pos) + 1) + 1
        return NotJSON(f"{what} at line {line}, column {column}")

    def skip(self) -> str:
        """The next character after white space ('' at the end; then a NotJSON, as the text ends early)."""
        self.pos = _SPACE.match(self.text, self.pos).end()  # type: ignore[union-attr]
        if self.pos >= len(self.text):
            raise self.fail("the text ends early")
        return self.text[self.pos]

    def scalar(self) -> Any:
        """The string or integer here (a huge integer as :data:`HUGE`), else :data:`OTHER`, not read."""
        if self.skip() == '"':
            try:
                value, self.pos = scanstring(self.text, self.pos + 1)
            except ValueError as err:  # json.JSONDecodeError: an unterminated string, a bad escape
                raise self.fail(f"a bad string ({str(err).split(':')[0]})") from None
            return value
        m = _INT.match(self.text, self.pos)
        if m is None:
            return OTHER
        self.pos = m.end()
        return int(m[0]) if len(m[0]) <= 18 else HUGE

    def value(self) -> Any:
        """The value here: a scalar, or the :class:`Items` of a list (read as they are asked for)."""
        if self.skip() == "[":
            return Items(self)
        return self.scalar()

    def elements(self) -> Iterator[None]:
        """Stops at each element of the list here, for the caller to read it."""
        self.pos += 1  # the "["
        if self.skip() == "]":
            self.pos += 1
            return
        while True:
            yield
            following = self.skip()
            self.pos += 1
            if following == "]":
                return
            if following != ",":
                self.pos -= 1
                raise self.fail("',' or ']' expected")
            self.skip()

    def node(self) -> list[Any]:
        """The node here as a list (a symad-written node at once; else element by element, up to
        the first that no node has); ``[OTHER]`` if it is no list."""
        if (m := _OP_NODE.match(self.text, self.pos)) is not None:
            self.pos = m.end()
            return [m[1], *map(int, m[2].split(",")[1:])]
        if (m := _LEAF_NODE.match(self.text, self.pos)) is not None:
            self.pos = m.end()
            return [m[1], m[2]]
        if self.skip() != "[":
            return [OTHER]
        items: list[Any] = []
        for _ in self.elements():
            items.append(self.scalar())
            if items[-1] is OTHER or len(items) > MOST_ELEMENTS:  # no node has more: the caller refuses it
                return items
        return items


class Items:
    """A list's elements, read as they are iterated (once)."""

    __slots__ = ("reader",)

    def __init__(self, reader: Reader) -> None:
        self.reader = reader

    def __repr__(self) -> str:
        return "a list"

    def scalars(self) -> Iterator[Any]:
        """Each element as :meth:`Reader.scalar` reads it."""
        for _ in self.reader.elements():
            yield self.reader.scalar()

    def nodes(self) -> Iterator[list[Any]]:
        """Each element as :meth:`Reader.node` reads it (a node symad writes and the separator
        after it, with one match: most of the time of reading a large document is here)."""
        r = self.reader
        text, match = r.text, _NODE_AND_NEXT.match
        r.pos += 1  # the "["
        if r.skip() == "]":
            r.pos += 1
            return
        while True:
            if (m := match(text, r.pos)) is not None:
                r.pos = m.end()
                yield [m[1], *map(int, m[2].split(",")[1:])] if m[1] is not None else [m[3], m[4]]
                following = m[5]
            else:
                r.skip()
                yield r.node()
                following = r.skip()
                r.pos += 1
            if following == "]":
                return
            if following != ",":
                r.pos -= 1
                raise r.fail("',' or ']' expected")


def pairs(text: str) -> Iterator[tuple[Any, Any]]:
    """The top-level object's ``(key, value)`` pairs in order (each value as :meth:`Reader.value`
    gives it; iterate a list's :class:`Items` before asking for the next pair), then a check that
    nothing follows it.  A NotJSON if the text is not JSON so far; ``(OTHER, OTHER)`` if it is
    no object."""
    r = Reader(text)
    if r.skip() != "{":
        yield OTHER, OTHER
        return
    r.pos += 1
    if r.skip() != "}":
        while True:
            if r.skip() != '"':
                raise r.fail("a key (a string) expected")
            key = r.scalar()
            if r.skip() != ":":
                raise r.fail("':' expected")
            r.pos += 1
            yield key, r.value()
            following = r.skip()
            if following == "}":
                break
            if following != ",":
                raise r.fail("',' or '}' expected")
            r.pos += 1
    r.pos = _SPACE.match(r.text, r.pos + 1).end()  # type: ignore[union-attr]
    if r.pos != len(r.text):
        raise r.fail("text after the document")
