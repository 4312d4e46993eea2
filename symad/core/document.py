"""symad's file format: an expression DAG as JSON, versioned, read without trusting it.

A document is a JSON object::

    {"format": "symad", "version": 1, "kind": "expression",
     "nodes": [["var", "x"], ["const", "0x1.0000000000000p+1"], ["mul", 1, 0]],
     "outputs": [2]}

``nodes`` is the node table in topological order: a variable with its name, a number
as its exact bits (``float.hex()``'s text, and only that: ``"1.5"`` is refused, not read as
hex), an operation by its op-table name with the indices of its arguments, each an earlier
node (so there can be no cycle).  ``outputs`` are the roots.  A compiled function's
document also has its ``variables``, ``params`` and ``backend``; no other key is read.

Reading validates everything before building anything: the format and version, every
key, every node's shape, op, arity and argument indices, names and numbers, and the sizes
against :data:`~symad.core.limits.LIMITS` (``max_document_chars``, ``max_nodes``).  The text
is read key by key and node by node, keeping only the checked values (a node table of a
few bytes a node), never a tree of JSON values, so memory stays within a small multiple of
the text and a key that is not the format's stops the reading where it stands.  Anything
else raises :class:`DocumentError`; no file can run code (there is no ``eval``, no pickle)
or make symad build more than the limits allow.  Nodes are rebuilt as :meth:`Graph.build`
builds them, so a document of symad's own is read back as the same DAG, node for node,
with the same bits.
"""

from __future__ import annotations

import json
from array import array
from collections.abc import Iterable, Iterator
from typing import Any

from symad.core import binders
from symad.core.dag import Graph
from symad.core.document_text import OTHER, Items, NotJSON, pairs
from symad.core.errors import LimitError, NameRuleError, SymadError
from symad.core.gcpause import without_gc
from symad.core.limits import LIMITS
from symad.core.name_rule import problem
from symad.core.names import normal
from symad.core.ops import OPS

FORMAT = "symad"
VERSION = 1
_MAX_NAME = 200
# Each kind of document, with the keys it has besides these.
_BASE = ("format", "version", "kind", "nodes", "outputs")
_FUNCTION_KEYS = ("variables", "params", "backend")
KINDS: dict[str, tuple[str, ...]] = {"expression": (), "expressions": (),
                                     "function": _FUNCTION_KEYS, "vector_function": _FUNCTION_KEYS}
KEYS = _BASE + _FUNCTION_KEYS


class DocumentError(SymadError, ValueError):
    """A file or text that is not a document symad can read."""


class DocumentNameError(DocumentError, NameRuleError):
    """A document naming a variable with a name the rule refuses (:mod:`symad.core.name_rule`)."""


class DocumentLimitError(DocumentError, LimitError):
    """A document larger than a limit allows (:data:`~symad.core.limits.LIMITS`)."""


# ---------------------------------------------------------------- writing
def to_document(graph: Graph, roots: Iterable[int], kind: str = "expression", **extra: Any) -> dict[str, Any]:
    """The document of the nodes ``roots`` need, with ``extra`` keys (plain JSON data)."""
    roots = list(roots)
    binders.refuse(graph, roots, "saving")
    order = graph.reachable(roots)
    number = {node: k for k, node in enumerate(order)}
    nodes: list[list[Any]] = []
    for n in order:
        op = graph.op[n]
        if op == "const":
            nodes.append(["const", float(graph.data[n]).hex()])  # type: ignore[arg-type]
        elif op == "var":
            why = problem(graph.data[n])
            if why is not None:  # refused now, not when the document is read back
                raise NameRuleError(f"cannot write the variable {graph.data[n]!r:.60} to a document: {why}")
            nodes.append(["var", graph.data[n]])
        else:
            nodes.append([op, *(number[a] for a in graph.args[n])])
    return {"format": FORMAT, "version": VERSION, "kind": kind, "nodes": nodes,
            "outputs": [number[r] for r in roots], **extra}


def dumps(document: dict[str, Any]) -> str:
    """The document as compact JSON text (one node a line, for diffs)."""
    head = {k: v for k, v in document.items() if k != "nodes"}
    body = ",\n".join(json.dumps(node, separators=(",", ":")) for node in document["nodes"])
    text = json.dumps(head, separators=(", ", ": "))
    return text[:-1] + ', "nodes": [\n' + body + "\n]}\n"


# ---------------------------------------------------------------- the checked node table
_OP_NAMES = tuple(OPS)  # a node's op code is its op's position here
_CODES = {name: code for code, name in enumerate(_OP_NAMES)}
_ARITY = bytes(OPS[name].arity for name in _OP_NAMES)


def indices() -> array:
    """An empty array for node indices: 4 bytes each within the node limit's default (8 past 2^32)."""
    return array("I" if LIMITS.max_nodes <= 0xFFFF_FFFF else "q")


class Nodes:
    """A document's node table, checked node by node as it is added: an op code a node, the
    arguments' indices in one array, the variables' names and the numbers in order."""

    __slots__ = ("codes", "args", "leaves", "_names")

    def __init__(self) -> None:
        self.codes = bytearray()
        self.args = indices()
        self.leaves: list[str | float] = []
        self._names: dict[str, str] = {}  # each admitted name once (a name used again is not checked again)

    def __len__(self) -> int:
        return len(self.codes)

    def add(self, node: list[Any]) -> None:
        """Check ``node`` (its JSON value, a list) as the next node and add it; else a DocumentError."""
        k = len(self.codes)
        op = node[0] if node else None
        code = _CODES.get(op) if type(op) is str else None
        if code is not None and _ARITY[code]:  # an operation (most nodes)
            if len(node) != _ARITY[code] + 1:
                got = len(node) - 1 if len(node) <= 4 else "more"
                raise DocumentError(f"node {k}: {op} takes {_ARITY[code]} argument(s), got {got}")
            for a in node[1:]:
                if type(a) is not int or not 0 <= a < k:
                    raise DocumentError(f"node {k}: an argument must be the index of an earlier node")
            self.args.extend(node[1:])
        elif op == "const":
            self.leaves.append(_number(k, node))
        elif op == "var":
            if len(node) != 2 or not isinstance(node[1], str) or len(node[1]) > _MAX_NAME:
                raise DocumentError(f"node {k}: a variable is [\"var\", a name such as x, theta_2 or x[3]]")
            self.leaves.append(_name(self._names, node[1], f"node {k}"))
        else:
            raise DocumentError(f"node {k} is not [op, ...]" if type(op) is not str
                                else f"node {k}: unknown operation {op[:40]!r}")
        self.codes.append(code)  # type: ignore[arg-type]

    @staticmethod
    def too_many() -> DocumentLimitError:
        """The error for a node past ``LIMITS.max_nodes``."""
        return DocumentLimitError(f"the document has more than {LIMITS.max_nodes:,} nodes, over the limit "
                                  "(raise it with {setting})", "LIMITS.max_nodes")


def _number(k: int, node: list[Any]) -> float:
    """A constant's value: exactly what ``float.hex()`` writes (so exactly the bits written)."""
    if len(node) != 2 or not isinstance(node[1], str) or len(node[1]) > 40:
        raise DocumentError(f"node {k}: a constant is [\"const\", its float.hex() text]")
    text = node[1]
    try:
        value = float.fromhex(text)  # (also reads float.hex's "inf", "-inf" and "nan")
    except ValueError:
        raise DocumentError(f"node {k}: {text!r} is not a float.hex() number{_hint(text)}") from None
    except OverflowError:
        raise DocumentError(f"node {k}: {text!r} is beyond the largest float") from None
    if value.hex() != text:  # "1.5" would be 0x1.5 (1.3125), "0x1.8p+0" another spelling of 1.5
        raise DocumentError(f"node {k}: {text!r} is not a number as float.hex() writes it"
                            f"{_hint(text) or f' (as {value.hex()!r})'}")
    return value


def _hint(text: str) -> str:
    """What a decimal number's ``float.hex()`` text is, for an error ('' if ``text`` is none)."""
    try:
        return f" (for {float(text)!r}, write {float(text).hex()!r})"
    except ValueError:
        return ""


def _name(seen: dict[str, str], name: Any, where: str, once: bool = False) -> str:
    """``name`` if the rule admits it (recorded in ``seen``, where it may be ``once`` only);
    else a DocumentError."""
    admitted = seen.get(name) if isinstance(name, str) else None
    if admitted is not None:
        if once:
            raise DocumentError(f"{where}: {name!r} is there twice")
        return admitted
    why = problem(name) if isinstance(name, str) and len(name) <= _MAX_NAME else \
        f"a name is a string of at most {_MAX_NAME} characters"
    if why is not None or name != normal(name):
        raise DocumentNameError(f"{where}: {why or f'{name!r} is not written as symad writes it'}")
    seen[name] = name
    return name


# ---------------------------------------------------------------- checking a document's values
def _format(value: Any) -> str:
    if value != FORMAT:
        raise DocumentError('not a symad document (no "format": "symad")')
    return value


def _version(value: Any) -> int:
    if type(value) is not int:
        raise DocumentError("the document has no version number")
    if value > VERSION:
        raise DocumentError(f"the document is version {value}, written by a newer symad; "
                            f"this one reads version {VERSION}: upgrade symad")
    if value < 1:
        raise DocumentError(f"the document's version {value} is not one symad ever wrote")
    return value


def _kind(value: Any) -> str:
    if not isinstance(value, str) or value not in KINDS:
        raise DocumentError(f"the document's kind must be one of {', '.join(KINDS)}, not {value!r:.40}")
    return value


def _backend(value: Any) -> str:
    if not isinstance(value, str) or len(value) > 40:
        raise DocumentError('the document\'s backend must be a backend\'s name, such as "auto"')
    return value


def _index(value: Any) -> int:
    if type(value) is not int or not 0 <= value < LIMITS.max_nodes:
        raise DocumentError("the document's outputs must be indices of its nodes")
    return value


_NO_LIST = "the document needs a list of nodes and a list of outputs"
_SCALARS = {"format": _format, "version": _version, "kind": _kind, "backend": _backend}


class _Listed:
    """A list of JSON values, offered as :class:`~symad.core.document_text.Items` offers a list
    read from text."""

    __slots__ = ("values",)

    def __init__(self, values: list[Any]) -> None:
        self.values = values

    def __repr__(self) -> str:
        return "a list"

    def scalars(self) -> Iterator[Any]:
        return iter(self.values)

    def nodes(self) -> Iterator[list[Any]]:
        return (v if isinstance(v, list) else [OTHER] for v in self.values)


def check(document: Any) -> dict[str, Any]:
    """``document`` (JSON values, as :func:`json.loads` gives them) checked: a new dict whose
    ``nodes`` is a checked :class:`Nodes` table; else a DocumentError."""
    if not isinstance(document, dict):
        raise DocumentError('not a symad document (no "format": "symad")')
    return _checked((k, _Listed(v) if isinstance(v, list) else v) for k, v in document.items())


def checked(document: dict[str, Any]) -> dict[str, Any]:
    """``document`` itself if :func:`loads` or :func:`check` gave it; else :func:`check` of it."""
    return document if isinstance(document.get("nodes"), Nodes) else check(document)


@without_gc
def _checked(pairs: Iterable[tuple[Any, Any]]) -> dict[str, Any]:
    """The document of these key-value pairs, each checked as it comes (a list's elements too)."""
    document: dict[str, Any] = {}
    for key, value in pairs:
        if key not in KEYS:
            raise DocumentError('not a symad document (no "format": "symad")' if key is OTHER else
                                f"the document has an unknown key {key!r:.60} (a document's keys are "
                                f"{', '.join(KEYS)})")
        if key in document:
            raise DocumentError(f"the document has the key {key!r} twice")
        if "kind" in document:  # (else checked at the end)
            _belongs(key, document["kind"])
        if key in _SCALARS:
            document[key] = _SCALARS[key](value)
        elif not isinstance(value, (Items, _Listed)):
            raise DocumentError(_NO_LIST if key in ("nodes", "outputs") else
                                f"the document's {key} must be a list of names")
        elif key == "nodes":
            table, most = Nodes(), LIMITS.max_nodes
            for node in value.nodes():
                if len(table) >= most:
                    raise table.too_many()
                table.add(node)
            document[key] = table
        elif key == "outputs":
            outputs = document[key] = indices()
            for k in value.scalars():
                if len(outputs) > LIMITS.max_nodes:
                    raise DocumentError("the document's outputs must be indices of its nodes")
                outputs.append(_index(k))
        else:
            seen: dict[str, str] = {}
            document[key] = tuple(_name(seen, v, f"the document's {key}", once=True) for v in value.scalars())
    return _complete(document)


def _belongs(key: str, kind: str) -> None:
    if key not in _BASE and key not in KINDS[kind]:
        raise DocumentError(f"the document's kind, {kind}, has no key {key!r} (a compiled function's has)")


def _complete(document: dict[str, Any]) -> dict[str, Any]:
    """The checks of a document whose every value is checked: the keys it must have, and none
    its kind has not; the outputs within the nodes."""
    _format(document.get("format"))
    _version(document.get("version"))
    kind = _kind(document.get("kind"))
    for key in document:
        _belongs(key, kind)
    nodes, outputs = document.get("nodes"), document.get("outputs")
    if nodes is None or outputs is None:
        raise DocumentError(_NO_LIST)
    if not outputs or max(outputs) >= len(nodes):
        raise DocumentError("the document's outputs must be indices of its nodes")
    return document


def names(document: dict[str, Any], key: str) -> tuple[str, ...] | None:
    """The names under ``key`` of a checked document (None if absent)."""
    value = checked(document).get(key)
    return None if value is None else tuple(value)


# ---------------------------------------------------------------- reading text
def max_chars() -> int:
    """The longest document text read (``LIMITS.max_document_chars``; by default what a graph
    within ``LIMITS.max_nodes`` needs)."""
    return LIMITS.document_chars()


def too_long(chars: int | None) -> DocumentLimitError:
    """The error for a document of ``chars`` characters (None: not counted), over the limit."""
    size = f"is {chars:,} characters," if chars is not None else "is"
    return DocumentLimitError(f"the document {size} over the limit of {max_chars():,} characters "
                              "(raise it with {setting})", "LIMITS.max_document_chars")


def loads(text: str | bytes) -> dict[str, Any]:
    """The document in ``text``, every key, value and node checked as it is read (a
    DocumentError at the first thing wrong), its nodes as a :class:`Nodes` table for :func:`build`."""
    if len(text) > max_chars():
        raise too_long(len(text))
    if isinstance(text, (bytes, bytearray)):
        text = decoded(text)
    try:
        return _checked(pairs(text.removeprefix("\ufeff")))
    except NotJSON as err:
        raise DocumentError(f"not a symad document: not JSON ({err})") from None


def decoded(data: bytes | bytearray) -> str:
    """A document's bytes as text (UTF-8, or the UTF-16 or -32 that JSON allows)."""
    try:
        return data.decode(json.detect_encoding(data))
    except (UnicodeDecodeError, LookupError):
        raise DocumentError("not a symad document: not UTF-8 text") from None


# ---------------------------------------------------------------- building
@without_gc
def build(document: dict[str, Any], graph: Graph) -> list[int]:
    """Build a document's nodes in ``graph`` (checking it first unless :func:`loads` or
    :func:`check` did); its outputs' nodes there."""
    document = checked(document)
    table: Nodes = document["nodes"]
    built: list[int] = []
    leaves: Iterator[Any] = iter(table.leaves)
    args, at = table.args, 0
    for code in table.codes:
        op = _OP_NAMES[code]
        if op == "var":
            built.append(graph.var(next(leaves)))
        elif op == "const":
            built.append(graph.const(next(leaves)))
        else:
            n = _ARITY[code]
            built.append(graph.make(op, *[built[a] for a in args[at:at + n]]))
            at += n
    return [built[k] for k in document["outputs"]]
