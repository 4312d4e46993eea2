"""The hash-consed expression DAG: a flat node table where children precede parents.

A node is an integer id into parallel lists (``op``, ``args``, ``data``).  Building
a node that already exists returns the existing id, so structural equality *is*
id equality.  Nodes are keyed by the ids of their children, never by text, and
constants by their exact bits (``float.hex``), so ``0.0`` and ``-0.0`` differ.
Because a child is always built before its parent, ascending id order is a
topological order and every pass below is a plain loop.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Iterable

import numpy as np

from .errors import SymadError
from .limits import LIMITS
from .ops import OPS
from .simplify import RULES


class Graph:
    """An interning table of expression nodes."""

    __slots__ = ("op", "args", "data", "_index", "_lock")

    def __init__(self) -> None:
        self.op: list[str] = []
        self.args: list[tuple[int, ...]] = []
        self.data: list[float | str | None] = []  # a constant's value or a variable's name
        self._index: dict[tuple, int] = {}
        # Adding a node is check-then-append: a background compile (which builds the
        # gradient) and the caller's thread may both add nodes.  Lookups need no lock.
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self.op)

    # ------------------------------------------------------------------ building
    def _intern(self, key: tuple, op: str, args: tuple[int, ...], data: float | str | None) -> int:
        node = self._index.get(key)
        if node is not None:
            return node
        with self._lock:
            node = self._index.get(key)
            if node is None:
                node = len(self.op)
                if node >= LIMITS.max_nodes:
                    raise LIMITS.nodes_exceeded()
                self.op.append(op)
                self.args.append(args)
                self.data.append(data)
                self._index[key] = node
        return node

    def const(self, value: float) -> int:
        """The node of a number (keyed by its exact bits)."""
        value = float(value)
        return self._intern(("const", value.hex()), "const", (), value)

    def var(self, name: str) -> int:
        """The node of a variable."""
        return self._intern(("var", name), "var", (), name)

    def make(self, op: str, *args: int) -> int:
        """The node ``op(*args)``, after constant folding and the rewrites of :mod:`symad.simplify`."""
        spec = _MAKE.get(op)
        if spec is None:
            raise SymadError(f"unknown operation {op!r}")
        arity, commutative, py, np_fn, rule = spec
        if len(args) != arity:
            raise SymadError(f"{op} takes {arity} argument(s), got {len(args)}")
        ops = self.op
        if commutative:
            a, b = args
            ca, cb = ops[a] == "const", ops[b] == "const"
            # Canonical order: by id, except that numbers come last in sums and
            # first elsewhere, as people write them: `x + 2`, `2*x`.
            if ca != cb:
                swap = ca if op == "add" else cb
            else:
                swap = b < a
            if swap:
                args = (b, a)
        node = self._index.get((op, args))
        if node is not None:  # built before: rewrites are deterministic, so reuse it
            return node
        if all(ops[a] == "const" for a in args):
            folded = self._fold(py, np_fn, args)
            if folded is not None:
                return self.const(folded)
        if rule is not None:
            node = rule(self, args)
            if node is not None:
                return node
        return self._intern((op, args), op, args, None)

    def _fold(self, py, np_fn, args: tuple[int, ...]) -> float | None:
        values = [self.data[a] for a in args]
        try:
            result = float(py(*values))
        except (ArithmeticError, ValueError):
            with np.errstate(all="ignore"):
                result = float(np_fn(*(np.float64(v) for v in values)))
        # Keep `1/0`, `log(-1)`, `9^9^9` as nodes: folding them into inf/nan would
        # hide from the user *where* the non-finite value came from.
        if math.isfinite(result) or not all(math.isfinite(v) for v in values):  # type: ignore[arg-type]
            return result
        return None

    # ------------------------------------------------------------------ queries
    def is_const(self, node: int, value: float | None = None) -> bool:
        """Whether ``node`` is a constant (equal to ``value`` when given)."""
        return self.op[node] == "const" and (value is None or self.data[node] == value)

    def reachable(self, roots: Iterable[int]) -> list[int]:
        """Every node the roots depend on, in ascending (topological) order."""
        seen: set[int] = set()
        stack = [r for r in roots]
        args = self.args
        while stack:
            node = stack.pop()
            if node in seen:
                continue
            seen.add(node)
            stack.extend(a for a in args[node] if a not in seen)
        return sorted(seen)

    def variables(self, roots: Iterable[int]) -> list[str]:
        """Names of the variables the roots depend on, in natural order (x2 before x10)."""
        names = [self.data[n] for n in self.reachable(roots) if self.op[n] == "var"]
        return sorted(names, key=natural_key)  # type: ignore[arg-type]

    def depth(self, root: int) -> int:
        """Length of the longest path from ``root`` down to a leaf (a leaf has depth 0)."""
        depth: dict[int, int] = {}
        for node in self.reachable([root]):
            depth[node] = 1 + max((depth[a] for a in self.args[node]), default=-1)
        return depth[root]

    def tree_size(self, root: int) -> int | float:
        """How many nodes the expression would have as a tree (shared nodes counted per use).

        Exact up to 2**53; beyond, a float (inf past 1e308), so that heavy sharing
        never makes this exponentially slow.
        """
        size: dict[int, int | float] = {}
        for node in self.reachable([root]):
            s = 1 + sum(size[a] for a in self.args[node])
            size[node] = float(s) if s > _EXACT else s
        return size[root]


_EXACT = 2**53
# Per op, what `make` needs, looked up once: arity, commutative, evaluators, rewrite rule.
_MAKE = {name: (spec.arity, spec.commutative, spec.py, spec.np, RULES.get(name))
         for name, spec in OPS.items() if spec.kind != "leaf"}


def natural_key(name: str) -> tuple:
    """Sort key that orders embedded numbers numerically: x2 < x10 < y."""
    key: list = []
    digits = ""
    for ch in name + "\0":
        if ch.isdigit():
            digits += ch
            continue
        if digits:
            key.append((1, int(digits), digits))
            digits = ""
        if ch != "\0":
            key.append((0, ch, ""))
    return tuple(key)
