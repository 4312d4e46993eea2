"""Saving and loading expressions and compiled functions, in symad's JSON format.

The format (:mod:`symad.core.document`) is the one serialisation: pickling an
expression or a function writes the same document.  Loading checks everything and
never runs code; a loaded function compiles again (or loads its native code from the
disk cache).

>>> import symad
>>> f = symad.compile("a*x^2 + y", wrt=["x", "y"])
>>> g = symad.loads(symad.dumps(f))
>>> g.variables, g.params, g.value_and_grad([1.0, 2.0], [3.0])
(('x', 'y'), ('a',), (5.0, array([6., 1.])))
"""

from __future__ import annotations

import importlib
import os
from typing import Any

from symad.core import document
from symad.core.dag import Graph
from symad.core.errors import SymadError
from symad.core.files import write_atomically
from symad.expr import Expr, default_graph, expressions_of
from symad.function import Function
from symad.runtime.policy import BACKENDS
from symad.vector_function import VectorFunction, function_of


def to_document(obj: Any) -> dict[str, Any]:
    """The document of an expression, a list of expressions, a Function, a VectorFunction, an
    IndexedFunction or an IndexedVectorFunction (their loops as loops, never written out)."""
    if isinstance(obj, (Expr, Function, VectorFunction)):
        return obj.to_document()
    kind = _INDEXED_KINDS.get((type(obj).__module__, type(obj).__name__))
    if kind is not None:  # compiled loops: the loops, what they differentiate, the backend
        roots = [obj.expr.id] if kind == "indexed_function" else [e.id for e in obj.exprs]
        backend = getattr(obj, "backend", "auto")  # (the same bits in every backend)
        return document.to_document(obj.graph, roots, kind, variables=list(obj.wrt), backend=backend)
    if isinstance(obj, (list, tuple)) and obj and all(isinstance(e, Expr) for e in obj):
        graph = default_graph() if len({id(e.graph) for e in obj}) > 1 else obj[0].graph
        roots = [graph.copy_from(e.graph, [e.id])[0] for e in obj]
        return document.to_document(graph, roots, "expressions")
    raise SymadError(f"symad saves expressions, lists of them and compiled functions, not {type(obj).__name__}")


def from_document(doc: dict[str, Any], graph: Graph | None = None) -> Any:
    """What a document holds (checked, unless :func:`symad.core.document.loads` read it): an
    Expr, a list of them, a Function or a VectorFunction."""
    doc = document.checked(doc)
    kind = doc["kind"]
    if kind in ("indexed_function", "indexed_vector_function"):
        return _indexed_function(doc)
    if kind in ("function", "vector_function"):
        return function_of(doc, Function if kind == "function" else VectorFunction)
    if kind == "expression" and len(doc["outputs"]) != 1:
        raise document.DocumentError("an expression document has one output")
    exprs = expressions_of(doc, graph)
    return exprs[0] if kind == "expression" else exprs


_INDEXED_KINDS = {("symad.indexed_function", "IndexedFunction"): "indexed_function",
                  ("symad.indexed_vector_function", "IndexedVectorFunction"): "indexed_vector_function"}


def _indexed_function(doc: dict[str, Any]) -> Any:
    """The IndexedFunction or IndexedVectorFunction a checked document holds, compiled again."""
    kind = doc["kind"]
    variables, backend = document.names(doc, "variables"), doc.get("backend", "auto")
    if variables is None or backend not in BACKENDS:
        raise document.DocumentError(f"an {kind} document needs its variables and a backend "
                                     f"({', '.join(BACKENDS)})")
    exprs = expressions_of(doc)
    if kind == "indexed_function":
        if len(exprs) != 1:
            raise document.DocumentError("an indexed_function document has one output")
        return importlib.import_module("symad.indexed_function").IndexedFunction(  # loaded for loops only
            exprs[0], wrt=list(variables), backend=backend)
    return importlib.import_module("symad.indexed_vector_function").IndexedVectorFunction(
        exprs, wrt=list(variables), backend=backend)


def dumps(obj: Any) -> str:
    """``obj`` as a document's JSON text."""
    return document.dumps(to_document(obj))


def loads(text: str | bytes) -> Any:
    """What the document text ``text`` holds (checked: a bad document raises DocumentError)."""
    return from_document(document.loads(text))


def save(obj: Any, path: str | os.PathLike[str]) -> None:
    """Write ``obj`` (an expression, a list of them, or a compiled function) to ``path`` as JSON."""
    write_atomically(path, dumps(obj))  # a full disk leaves the old file, never a part


def load(path: str | os.PathLike[str]) -> Any:
    """What the document at ``path`` holds (see :func:`loads`)."""
    try:
        with open(path, "rb") as fh:
            data = fh.read(document.max_chars() + 1)  # never more than one byte past the limit
            if len(data) > document.max_chars():
                raise document.too_long(max(len(data), os.fstat(fh.fileno()).st_size))
    except OSError as err:
        raise SymadError(f"cannot read {os.fspath(path)}: {err.strerror}") from None
    text = document.decoded(data)
    del data  # (the text alone is kept while the document is read)
    return loads(text)
