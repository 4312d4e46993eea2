"""symad's file format: an expression DAG as JSON, versioned, read without trusting it.

A document is a JSON object::

    {"format": "symad", "version": 1, "kind": "expression",
     "nodes": [["var", "x"], ["const", "0x1.0000000000000p+1"], ["mul", 1, 0]],
     "outputs": [2]}

``nodes`` is the node table in topological order: a variable with its name, a number
as its exact bits (``float.hex()``'s text, and only that: ``"1.5"`` is refused, not read as
hex), an operation by its op-table name with the indices of its arguments, each an earlier
node (so there can be no cycle).  ``outputs`` are the roots.  A compiled function's
document also has its ``variables``, ``params`` and ``backend``; no other key is read.  A
compiled function with loops (``kind: "indexed_function"``, or ``"indexed_vector_function"``
for several outputs) has its ``variables`` (what it differentiates, a vector by its base name)
and ``backend``; the other names are its data.

A sum kept as a loop is saved as the loop (version 2 of the format; a document without
loops is written as version 1, which every symad reads)::

    ["index", 0]                      the index of the loop at nesting level 0 (the outermost)
    ["vector", "x"]                   an indexed variable (or data) as a whole
    ["item", v, i1, i2...]            its entry x[i1, i2...], v a vector, each index affine
    ["sum", level, first, last, body] (or "prod", "each") the loop of body over the index
                                      of level running from first to last

A loop's captures are not written: they are found again as it is rebuilt, as is its level when
its body does not use the loops around it.  Reading checks a body uses no index deeper than its
loop's, an output no index at all, a vector only as an entry's first argument and an ``each``
(a vector of values) only as an output.

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
from symad.core.dag import BINDERS, SCOPED, Graph
from symad.core.document_text import OTHER, Items, NotJSON, pairs
from symad.core.errors import LimitError, NameRuleError, SymadError
from symad.core.gcpause import without_gc
from symad.core.limits import LIMITS
from symad.core.name_rule import problem
from symad.core.names import normal, split
from symad.core.ops import OPS

FORMAT = "symad"
VERSION = 2  # the newest version this symad reads
LOOPS_VERSION = 2  # the first with loops; a document without them is written as version 1
_LARGEST_BOUND = 2**31  # a loop's first and last index are whole numbers within ±this, as in the text
_MAX_INDICES = 16  # of an entry
_MAX_NAME = 200
# Each kind of document, with the keys it has besides these.
_BASE = ("format", "version", "kind", "nodes", "outputs")
_FUNCTION_KEYS = ("variables", "params", "backend")
KINDS: dict[str, tuple[str, ...]] = {"expression": (), "expressions": (),
                                     "function": _FUNCTION_KEYS, "vector_function": _FUNCTION_KEYS,
                                     "indexed_function": ("variables", "backend"),
                                     "indexed_vector_function": ("variables", "backend")}
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
    order = graph.reachable(roots)
    number = {node: k for k, node in enumerate(order)}
    nodes: list[list[Any]] = []
    scoped = False
    for n in order:
        op, data = graph.op[n], graph.data[n]
        if op == "const":
            nodes.append(["const", float(data).hex()])  # type: ignore[arg-type]
        elif op == "var" or op == "vector":
            why = problem(data)
            if why is not None:  # refused now, not when the document is read back
                raise NameRuleError(f"cannot write the variable {data!r:.60} to a document: {why}")
            nodes.append([op, data])
        elif op == "index":
            nodes.append(["index", data])
        elif op in BINDERS:  # the range and the body; the captures are found again on reading
            nodes.append([op, *data, number[graph.args[n][0]]])  # type: ignore[misc]
        else:
            nodes.append([op, *(number[a] for a in graph.args[n])])
        scoped = scoped or op in SCOPED
    return {"format": FORMAT, "version": LOOPS_VERSION if scoped else 1, "kind": kind, "nodes": nodes,
            "outputs": [number[r] for r in roots], **extra}


def dumps(document: dict[str, Any]) -> str:
    """The document as compact JSON text (one node a line, for diffs)."""
    head = {k: v for k, v in document.items() if k != "nodes"}
    body = ",\n".join(json.dumps(node, separators=(",", ":")) for node in document["nodes"])
    text = json.dumps(head, separators=(", ", ": "))
    return text[:-1] + ', "nodes": [\n' + body + "\n]}\n"


# ---------------------------------------------------------------- the checked node table
_LOOP_NODES = ("index", "vector", "item", *sorted(BINDERS))
_OP_NAMES = (*OPS, *_LOOP_NODES)  # a node's op code is its op's position here
_CODES = {name: code for code, name in enumerate(_OP_NAMES)}
_ARITY = bytes([OPS[name].arity for name in OPS] + [0] * len(_LOOP_NODES))  # (the loops' nodes: checked apart)
_FIRST_LOOP_NODE = len(OPS)
_VECTOR, _ITEM, _EACH = _CODES["vector"], _CODES["item"], _CODES["each"]


def indices() -> array:
    """An empty array for node indices: 4 bytes each within the node limit's default (8 past 2^32)."""
    return array("I" if LIMITS.max_nodes <= 0xFFFF_FFFF else "q")


class Nodes:
    """A document's node table, checked node by node as it is added: an op code a node, the
    arguments' indices in one array, the variables' names and the numbers in order."""

    __slots__ = ("codes", "args", "leaves", "scoped", "_names")

    def __init__(self) -> None:
        self.codes = bytearray()
        self.args = indices()
        self.leaves: list[Any] = []  # names, numbers, and a loop node's data (level, entry's index count, range)
        self.scoped = False  # whether a node of a loop is here (then only a version 2 document is read)
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
            if self.scoped:
                self._values(k, node[1:])
            self.args.extend(node[1:])
        elif op == "const":
            self.leaves.append(_number(k, node))
        elif op == "var":
            if len(node) != 2 or not isinstance(node[1], str) or len(node[1]) > _MAX_NAME:
                raise DocumentError(f"node {k}: a variable is [\"var\", a name such as x, theta_2 or x[3]]")
            self.leaves.append(_name(self._names, node[1], f"node {k}"))
        elif code is not None and code >= _FIRST_LOOP_NODE:
            self.scoped = True
            self._add_loop_node(k, op, node)
        else:
            raise DocumentError(f"node {k} is not [op, ...]" if type(op) is not str
                                else f"node {k}: unknown operation {op[:40]!r}")
        self.codes.append(code)  # type: ignore[arg-type]

    def _add_loop_node(self, k: int, op: str, node: list[Any]) -> None:
        """Check and add an index, a vector, an entry or a loop (see the module's docstring)."""
        if op == "index":
            if len(node) != 2 or not _whole(node[1], 0, binders.MAX_NESTING):
                raise DocumentError(f'node {k}: an index is ["index", its nesting level, 0 to {binders.MAX_NESTING}]')
            self.leaves.append(node[1])
        elif op == "vector":
            if len(node) != 2 or not isinstance(node[1], str) or len(node[1]) > _MAX_NAME:
                raise DocumentError(f'node {k}: a vector is ["vector", a name such as x or theta_2]')
            name = _name(self._names, node[1], f"node {k}")
            if split(name) is not None:
                raise DocumentError(f"node {k}: a vector is named without an index ({split(name)[0]}, not {name})")
            self.leaves.append(name)
        elif op == "item":
            if not 3 <= len(node) <= 2 + _MAX_INDICES:
                raise DocumentError(f'node {k}: an entry is ["item", a vector, 1 to {_MAX_INDICES} indices]')
            self._arguments(k, node[1:])
            if self.codes[node[1]] != _VECTOR:
                raise DocumentError(f"node {k}: an entry's first argument must be a vector")
            self._values(k, node[2:])
            self.leaves.append(len(node) - 2)
            self.args.extend(node[1:])
        else:
            # (a node read from text ends at the first value no node has: its numbers are checked first)
            level, low, high, body = (*node[1:5], None, None, None, None)[:4]
            if not _whole(level, 0, binders.MAX_NESTING):
                raise DocumentError(f"node {k}: the level of a {op} is a whole number from 0 to {binders.MAX_NESTING}")
            if not (_whole(low, -_LARGEST_BOUND, _LARGEST_BOUND) and _whole(high, -_LARGEST_BOUND, _LARGEST_BOUND)):
                raise DocumentError(f"node {k}: the first and last index of a {op} are whole numbers within ±2^31")
            if len(node) != 5:
                raise DocumentError(f'node {k}: a {op} is ["{op}", its level, first index, last index, body]')
            self._arguments(k, [body])
            self._values(k, [body])
            self.leaves.append((level, low, high))
            self.args.append(body)

    @staticmethod
    def _arguments(k: int, args: list[Any]) -> None:
        for a in args:
            if type(a) is not int or not 0 <= a < k:
                raise DocumentError(f"node {k}: an argument must be the index of an earlier node")

    def _values(self, k: int, args: list[int]) -> None:
        """Check that the arguments ``args`` (earlier nodes) are values: a vector is read only
        through its entries, and an each is a vector of values, only an output."""
        codes = self.codes
        for a in args:
            if codes[a] == _VECTOR or codes[a] == _EACH:
                what = "a vector is used only through its entries (x[i])" if codes[a] == _VECTOR else \
                    "an each (a vector of values) can only be an output"
                raise DocumentError(f"node {k}: its argument {a} is not a number: {what}")

    @staticmethod
    def too_many() -> DocumentLimitError:
        """The error for a node past ``LIMITS.max_nodes``."""
        return DocumentLimitError(f"the document has more than {LIMITS.max_nodes:,} nodes, over the limit "
                                  "(raise it with {setting})", "LIMITS.max_nodes")


def _whole(value: Any, low: int, high: int) -> bool:
    """Whether ``value`` is a JSON integer from ``low`` to ``high``."""
    return type(value) is int and low <= value <= high


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
                if len(outputs) >= LIMITS.max_nodes:
                    raise DocumentLimitError(f"the document has more than {LIMITS.max_nodes:,} outputs, over the "
                                             "limit of nodes (raise it with {setting})", "LIMITS.max_nodes")
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
    if nodes.scoped and document["version"] < LOOPS_VERSION:
        raise DocumentError(f"the document is version {document['version']}, which has no loops (index, vector, "
                            f"item, {', '.join(sorted(BINDERS))} nodes): they came in version {LOOPS_VERSION}")
    if nodes.scoped and any(nodes.codes[k] == _VECTOR for k in outputs):
        raise DocumentError("an output of the document is a vector: a vector is used only through its entries")
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
    for k, code in enumerate(table.codes):
        op = _OP_NAMES[code]
        if op == "var":
            built.append(graph.var(next(leaves)))
        elif op == "const":
            built.append(graph.const(next(leaves)))
        elif code < _FIRST_LOOP_NODE:
            n = _ARITY[code]
            built.append(graph.make(op, *[built[a] for a in args[at:at + n]]))
            at += n
        elif op == "index":
            built.append(graph.index(next(leaves)))
        elif op == "vector":
            built.append(graph.vector(next(leaves)))
        elif code == _ITEM:
            n = next(leaves) + 1
            built.append(_entry(graph, k, [built[a] for a in args[at:at + n]]))
            at += n
        else:
            built.append(_loop(graph, k, op, next(leaves), built[args[at]]))
            at += 1
    outputs = [built[k] for k in document["outputs"]]
    if table.scoped:
        _check_scopes(graph, outputs)
    return outputs


def _check_scopes(graph: Graph, outputs: list[int]) -> None:
    """Refuse outputs with an index outside any loop, or a name both a vector and a variable."""
    if any(binders.levels(graph)[n] >= 0 for n in outputs):
        raise DocumentError("an output of the document uses an index outside any loop")
    vectors = set(binders.vectors(graph, outputs))
    for name in graph.variables(outputs):
        base = (split(name) or (name,))[0]
        if base in vectors:
            raise DocumentError(f"the document's {name} is a variable and {base} a vector: an entry of a vector "
                                f'is ["item", the vector, its index]')


def _entry(graph: Graph, k: int, args: list[int]) -> int:
    """Node ``k``, the entry ``vector[indices]`` (``args``), its indices affine."""
    try:
        return binders.item(graph, *args)
    except SymadError:
        raise DocumentError(f"node {k}: an entry's index must be an affine expression of indices "
                            "(such as i + 1 or 2*i - 1)") from None


def _loop(graph: Graph, k: int, op: str, scope: tuple[int, int, int], body: int) -> int:
    """Node ``k``, the loop ``op`` of ``body`` over ``scope``, ``(level, first, last)``."""
    level = scope[0]
    deepest = binders.levels(graph)[body]
    if deepest > level:
        raise DocumentError(f"node {k}: the body of the {op} at level {level} uses the index of level {deepest}, "
                            "which no loop around it binds")
    return binders.reduce(graph, op, *scope, body)
