"""symad's file format: an expression DAG as JSON, versioned, read without trusting it.

A document is a JSON object::

    {"format": "symad", "version": 1, "kind": "expression",
     "nodes": [["var", "x"], ["const", "0x1.0000000000000p+1"], ["mul", 1, 0]],
     "outputs": [2], ...}

``nodes`` is the node table in topological order: a variable with its name, a number
as its exact bits (``float.hex``), an operation by its op-table name with the indices
of its arguments, each an earlier node (so there can be no cycle).  ``outputs`` are the
roots.  Other keys belong to what was saved (a compiled function's ``variables``...).

Reading validates everything before building anything: the format and version, every
node's shape, op, arity and argument indices, names and numbers, and the sizes against
:data:`~symad.core.limits.LIMITS`.  Anything else raises :class:`DocumentError`; no file
can run code (there is no ``eval``, no pickle) or make symad build more than the limits
allow.  Nodes are rebuilt as :meth:`Graph.build` builds them, so a document of symad's
own is read back as the same DAG, node for node, with the same bits.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from typing import Any

from symad.core.errors import NameRuleError, SymadError
from symad.core.graph import Graph
from symad.core.limits import LIMITS
from symad.core.name_rule import problem
from symad.core.names import normal
from symad.core.ops import OPS

FORMAT = "symad"
VERSION = 1
_MAX_NAME = 200


class DocumentError(SymadError, ValueError):
    """A file or text that is not a document symad can read."""


class DocumentNameError(DocumentError, NameRuleError):
    """A document naming a variable with a name the rule refuses (:mod:`symad.core.name_rule`)."""


def to_document(graph: Graph, roots: Iterable[int], kind: str = "expression", **extra: Any) -> dict[str, Any]:
    """The document of the nodes ``roots`` need, with ``extra`` keys (plain JSON data)."""
    roots = list(roots)
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


def max_chars() -> int:
    """The longest document text read: ample for any graph within the limits."""
    return 64 * LIMITS.max_nodes + 4 * LIMITS.max_input_chars


def loads(text: str | bytes) -> dict[str, Any]:
    """The document in ``text``, its structure checked (:func:`build` checks the nodes)."""
    limit = max_chars()
    if len(text) > limit:
        raise DocumentError(f"the document is {len(text):,} characters, more than a graph within the limits "
                            f"needs ({limit:,}); raise LIMITS.max_nodes to read it")
    try:
        document = json.loads(text)
    except RecursionError:
        raise DocumentError("not a symad document: JSON nested too deeply") from None
    except (ValueError, UnicodeDecodeError) as err:
        raise DocumentError(f"not a symad document: not JSON ({err})") from None
    return check(document)


def check(document: Any) -> dict[str, Any]:
    """``document`` itself if its outer structure is a symad document's; else a DocumentError."""
    if not isinstance(document, dict) or document.get("format") != FORMAT:
        raise DocumentError('not a symad document (no "format": "symad")')
    version = document.get("version")
    if type(version) is not int:
        raise DocumentError("the document has no version number")
    if version > VERSION:
        raise DocumentError(f"the document is version {version}, written by a newer symad; "
                            f"this one reads version {VERSION}: upgrade symad")
    if version < 1:
        raise DocumentError(f"the document's version {version} is not one symad ever wrote")
    nodes, outputs = document.get("nodes"), document.get("outputs")
    if not isinstance(nodes, list) or not isinstance(outputs, list):
        raise DocumentError("the document needs a list of nodes and a list of outputs")
    if len(nodes) > LIMITS.max_nodes:
        raise DocumentError(f"the document has {len(nodes):,} nodes, over the limit of {LIMITS.max_nodes:,} "
                            "(LIMITS.max_nodes)")
    if not outputs or not all(type(k) is int and 0 <= k < len(nodes) for k in outputs):
        raise DocumentError("the document's outputs must be indices of its nodes")
    return document


def build(document: dict[str, Any], graph: Graph) -> list[int]:
    """Build a checked document's nodes in ``graph``; its outputs' nodes there."""
    built: list[int] = []
    for k, node in enumerate(document["nodes"]):
        built.append(_node(graph, node, k, built))
    return [built[k] for k in document["outputs"]]


def _node(graph: Graph, node: Any, k: int, built: Sequence[int]) -> int:
    if not isinstance(node, list) or not node or not isinstance(node[0], str):
        raise DocumentError(f"node {k} is not [op, ...]")
    op = node[0]
    if op == "const":
        if len(node) != 2 or not isinstance(node[1], str) or len(node[1]) > 40:
            raise DocumentError(f"node {k}: a constant is [\"const\", its float.hex() text]")
        try:
            return graph.const(float.fromhex(node[1]))  # (also reads float.hex's "inf" and "nan")
        except ValueError:
            raise DocumentError(f"node {k}: {node[1]!r} is not a float.hex() number") from None
    if op == "var":
        if len(node) != 2 or not isinstance(node[1], str) or len(node[1]) > _MAX_NAME:
            raise DocumentError(f"node {k}: a variable is [\"var\", a name such as x, theta_2 or x[3]]")
        why = problem(node[1])
        if why is not None or node[1] != normal(node[1]):
            raise DocumentNameError(f"node {k}: {why or f'{node[1]!r} is not written as symad writes it'}")
        return graph.var(node[1])
    spec = OPS.get(op)
    if spec is None or spec.kind == "leaf":
        raise DocumentError(f"node {k}: unknown operation {op[:40]!r}")
    args = node[1:]
    if len(args) != spec.arity:
        raise DocumentError(f"node {k}: {op} takes {spec.arity} argument(s), got {len(args)}")
    if not all(type(a) is int and 0 <= a < k for a in args):
        raise DocumentError(f"node {k}: an argument must be the index of an earlier node")
    return graph.make(op, *(built[a] for a in args))


def names(document: dict[str, Any], key: str) -> tuple[str, ...] | None:
    """The list of names under ``key`` (None if absent), checked."""
    value = document.get(key)
    if value is None:
        return None
    if not isinstance(value, list) or len(value) > LIMITS.max_nodes:
        raise DocumentError(f"the document's {key} must be a list of names")
    for v in value:
        why = problem(v) if isinstance(v, str) and len(v) <= _MAX_NAME else "a name is a string of at most 200 characters"
        if why is not None or v != normal(v):
            raise DocumentNameError(f"the document's {key}: {why or f'{v!r} is not written as symad writes it'}")
    return tuple(value)
