"""Source code of an expression with sums kept as loops: real loops, in C99 or plain Python.

The exported function reads what :class:`symad.indexed_function.IndexedFunction` reads: one flat
array of the variables (each vector whole, in :attr:`~symad.indexed_function.IndexedFunction.variables`
order), and each vector of several indices (data) as an array of its own, row by row.  A loop's
body is its op lowerings read back as source (:mod:`symad.tools.exporters.straight_line`), an
entry ``x[a*i + b]`` an array read at the clamped position (as symad's evaluators read: only a
guarded term reads past an end), a ``sum`` added in symad's canonical order
(:func:`symad.backends.arrays.blocked_sum`: blocks of :data:`~symad.schedule.loop_nest.BLOCK`
terms, each in two lanes by the parity of the offset, the blocks' sums as NumPy's pairwise sum
adds them), a ``prod`` multiplied in its own (:func:`symad.backends.arrays.blocked_prod`), the
gradient's ``each`` written entry by entry: the bits are symad's.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from symad.ad.gather import indexed_gradient
from symad.core import binders
from symad.core.dag import BINDERS, Graph, natural_key
from symad.core.errors import SymadError
from symad.core.ops import Inline
from symad.schedule.loop_nest import BLOCK, INNER_LANES
from symad.schedule.lowering import PRIMITIVES, lower
from symad.tools.exporters.straight_line import C, Dialect, Translator, c_name, literal

_C_HELPERS = {
    "symad_clamp": "static long symad_clamp(long k, long n) { return k < 0 ? 0 : k >= n ? n - 1 : k; }",
    # NumPy's pairwise sum of a contiguous array (the order the blocks' sums of a sum are added in)
    "symad_pairwise": """static double symad_pairwise(const double *v, long n)
{
    if (n < 8) {
        double t = 0.0;
        for (long j = 0; j < n; ++j) t = t + v[j];
        return t;
    }
    if (n <= 128) {
        double r[8];
        long j = 8;
        for (int q = 0; q < 8; ++q) r[q] = v[q];
        for (; j < n - n % 8; j += 8)
            for (int q = 0; q < 8; ++q) r[q] = r[q] + v[j + q];
        double t = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]));
        for (; j < n; ++j) t = t + v[j];
        return t;
    }
    long half = n / 2;
    half -= half % 8;
    return symad_pairwise(v, half) + symad_pairwise(v + half, n - half);
}""",
    # the blocks' products of a prod, as a tree of adjacent pairs (an odd one out passed up); v is overwritten
    "symad_pair_products": """static double symad_pair_products(double *v, long n)
{
    while (n > 1) {
        long k = 0;
        for (; 2 * k + 1 < n; ++k) v[k] = v[2 * k] * v[2 * k + 1];
        if (n % 2) v[k] = v[n - 1];
        n = (n + 1) / 2;
    }
    return v[0];
}""",
}
_PY_HELPERS = {
    "_clamp": "def _clamp(k, n):\n    return 0 if k < 0 else n - 1 if k >= n else k",
    "_pairwise": """def _pairwise(v, lo, n):  # NumPy's pairwise sum of v[lo:lo+n]
    if n < 8:
        t = 0.0
        for j in range(lo, lo + n):
            t = t + v[j]
        return t
    if n <= 128:
        r = v[lo:lo + 8]
        j = 8
        while j < n - n % 8:
            r = [r[q] + v[lo + j + q] for q in range(8)]
            j += 8
        t = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]))
        for j in range(lo + j, lo + n):
            t = t + v[j]
        return t
    half = n // 2
    half -= half % 8
    return _pairwise(v, lo, half) + _pairwise(v, lo + half, n - half)""",
    "_pair_products": """def _pair_products(v):  # a prod's blocks: a tree of adjacent pairs
    while len(v) > 1:
        v = [v[k] * v[k + 1] if k + 1 < len(v) else v[k] for k in range(0, len(v), 2)]
    return v[0]""",
}


@dataclass
class Layout:
    """What the exported function reads and writes: the flat input ``x`` (each differentiated
    variable or vector at an offset), the data arrays, and the outputs' nodes."""

    graph: Graph
    root: int
    wrt: list[str]  # in the flat array's order
    spans: dict[str, list[tuple[int, int]]]
    offsets: dict[str, int]
    size: int
    data: list[str]  # vectors of several indices, each an input array of its own
    partials: list[int] = field(default_factory=list)  # with the gradient: one node per name of wrt

    def labels(self) -> list[str]:
        """``x[1..n]`` for a vector, the name of a scalar, in the flat array's order."""
        return [f"{n}[{self.spans[n][0][0]}..{self.spans[n][0][1]}]" if n in self.spans else n for n in self.wrt]

    def shape(self, name: str) -> str:
        return " x ".join(f"{high - low + 1}" for low, high in self.spans[name])


def checked_layout(expr, name: str, grad: bool, hessian: bool, variables: Sequence[str] | None,  # noqa: ANN001
                   name_problem: Callable[[str], str | None], language: str) -> Layout:
    """:func:`layout` of an export (the function ``name``, in ``language``), refusing what the
    exports of loops do not write: a Hessian, another order of the variables, data whose names
    cannot be parameters (``name_problem``: why not, or None)."""
    if hessian:
        raise SymadError("--hessian of an expression with sums kept as loops is not exported (its Hessian is "
                         "n x n): export --grad, or use IndexedFunction.hessp in Python")
    at = layout(expr, grad)
    if variables is not None and list(variables) != at.wrt:
        raise SymadError(f"an expression with loops is exported over {', '.join(at.wrt)} in this order")
    for data in at.data:
        problem = name_problem(data)
        if problem or data in ("x", "grad", name):
            raise SymadError(f"the data {data} cannot be a {language} parameter's name: {problem or 'taken'}; "
                             "rename it")
    return at


def layout(expr, grad: bool) -> Layout:  # noqa: ANN001 (an Expr)
    """The layout of ``expr`` (with loops) and, with ``grad``, its indexed gradient's nodes."""
    graph = expr.graph
    vectors = {graph.data[n] for n in graph.reachable([expr.id]) if graph.op[n] == "vector"}
    (root,) = binders.entries_of(graph, [expr.id], vectors)
    if graph.op[root] == "each":
        raise SymadError("each(...) is a vector of values: the exports write one value (and its gradient); "
                         "export a scalar expression, such as a sum")
    spans = binders.index_span(graph, [root])
    scalars = {graph.data[n]: n for n in graph.reachable([root]) if graph.op[n] == "var"}
    names = sorted([*scalars, *spans], key=natural_key)  # type: ignore[list-item]
    wrt = [n for n in names if len(spans.get(n, ((0, 0),))) == 1]
    offsets, at = {}, 0
    for n in wrt:
        offsets[n] = at
        at += spans[n][0][1] - spans[n][0][0] + 1 if n in spans else 1
    out = Layout(graph, root, wrt, spans, offsets, at, [n for n in names if n not in wrt])
    if grad:
        partials, by_vector = indexed_gradient(graph, root)
        out.partials = [by_vector[n].node if n in spans else partials[scalars[n]] for n in wrt]  # type: ignore[index]
    return out


class LoopWriter:
    """Source lines of a :class:`Layout`'s value and gradient in one dialect (C or Python)."""

    def __init__(self, where: Layout, dialect: Dialect, grad: str = "grad"):
        self.at, self.d, self.grad = where, dialect, grad
        self.c = dialect is C
        self.tr = Translator(dialect)
        self.graph = where.graph
        self.lines: list[str] = []
        self.used: set[str] = set()  # this module's helpers called
        self.serial = itertools.count()
        self.names: dict[int, str] = {}
        self.ranges: dict[int, tuple[int, int]] = {}  # each open loop's level -> its index's range

    # ------------------------------------------------------------------ the function's body
    def body(self) -> tuple[list[str], str]:
        """The lines computing the value and writing the gradient (if any); the value's name."""
        g, at = self.graph, self.at
        outputs = [at.root, *at.partials]
        lv = binders.levels(g)
        for n in g.reachable(outputs):
            if g.op[n] == "var":
                self.names[n] = f"x[{at.offsets[g.data[n]]}]"  # type: ignore[index]
        everything = g.reachable(outputs)
        top = [n for n in everything if lv[n] < 0]
        for n in top:
            if g.op[n] == "item":
                self.names[n] = self._entry(n)
        self._scope([n for n in top if g.op[n] not in ("index", "item", "vector")], 1, set(outputs[1:]))
        for name, node in zip(at.wrt, at.partials):
            if name in at.spans:
                continue
            where = f"{self.grad}[{at.offsets[name]}]"
            self._line(1, f"if ({self.grad}) {where} = {self.names[node]};" if self.c
                       else f"{where} = {self.names[node]}")
        return self.lines, self.names[at.root]

    def helpers(self) -> list[str]:
        """The definitions of the helpers the lines call."""
        mine = _C_HELPERS if self.c else _PY_HELPERS
        return [*(self.d.helpers[h] for h in sorted(self.tr.used)), *(mine[h] for h in sorted(self.used))]

    def _line(self, depth: int, text: str) -> None:
        self.lines.append("    " * depth + text)

    def _scope(self, order: Sequence[int], depth: int, gradient_rows: set[int] = frozenset()) -> None:  # type: ignore[assignment]
        """The steps of one scope (the top level or a loop's body) at indentation ``depth``."""
        g = self.graph
        steps, consts, _ = lower(g, order)
        for node, value in consts.items():
            self.names[node] = literal(value, self.d.double)
        self.tr.nonzero.update(self.names[n] for n, v in consts.items() if v != 0.0)
        scope = next(self.serial)
        for node, op, args in steps:
            if op in BINDERS:
                self._loop(node, depth, node in gradient_rows)
                continue
            r = f"v{node}" if node < len(g.op) else f"w{scope}_{node}"
            vals = [self.names[a] for a in args]
            lowering = PRIMITIVES[op].llvm
            if isinstance(lowering, Inline):
                self.tr.args = {f"a{j}": v for j, v in enumerate(vals)}
                template = lowering.template.format(*(f"%a{j}" for j in range(len(vals))), r=f"%{r}", t=f"%{r}_t")
                for ir in template.split("\n"):
                    self._line(depth, self.tr.line(ir))
            else:
                self._line(depth, self.tr.declare(r, self.tr.call(c_name(lowering.symbol), vals)))
            self.names[node] = r

    # ------------------------------------------------------------------ loops
    def _loop(self, node: int, depth: int, gradient_row: bool) -> None:
        g = self.graph
        op = g.op[node]
        level, low, high = g.data[node]  # type: ignore[misc]
        body = g.args[node][0]
        if op == "each" and not gradient_row:
            raise SymadError("each(...) inside an expression is not exported")
        i = f"i{level}"
        lvs = binders.levels(g)
        inside = [n for n in binders.scope_nodes(g, body, lambda n: lvs[n] >= level)
                  if lvs[n] >= level or g.op[n] == "const"]
        index = g.index(level)
        self.names[index] = f"(double){i}" if self.c else f"float({i})"
        self.ranges[level] = (low, high)
        if op == "each":  # a vector's partials, written where the gradient holds them
            name = next(w for w, p in zip(self.at.wrt, self.at.partials) if p == node)
            start = self.at.offsets[name] - self.at.spans[name][0][0]
            self._line(depth, f"if ({self.grad}) {{" if self.c else f"if {self.grad} is not None:")
            self._open(depth + 1, i, str(low), str(high))
            value = self._body(inside, body, level, depth + 2)
            where = f"{self.grad}[{_affine_text({level: 1}, start)}]"
            self._line(depth + 2, f"{where} = {value};" if self.c else f"{where} = {value}")
            if self.c:
                self._line(depth + 1, "}")
                self._line(depth, "}")
            return
        self._sum(node, inside, body, level, low, high, depth)

    def _open(self, depth: int, i: str, first: str, last: str) -> None:
        self._line(depth, f"for (long {i} = {first}; {i} <= {last}; ++{i}) {{" if self.c
                   else f"for {i} in range({first}, {last} + 1):")

    def _body(self, inside: list[int], body: int, level: int, depth: int) -> str:
        """The body's lines at one index; its value's name."""
        g = self.graph
        needed = _needed(g, body, set(inside))
        for n in inside:
            if g.op[n] == "item":
                self.names[n] = self._entry(n)
        self._scope([n for n in inside if n in needed and g.op[n] not in ("index", "item", "vector")], depth)
        return self.names[body]

    def _sum(self, node: int, inside: list[int], body: int, level: int, low: int, high: int, depth: int) -> None:
        """A sum in the canonical order: blocks; in a block, lanes by the offset modulo their number
        (two at the top level, :data:`~symad.schedule.loop_nest.INNER_LANES` inside a loop), added
        as a tree of adjacent pairs; the blocks' sums pairwise.  A prod in its own
        (:func:`symad.backends.arrays.blocked_prod`): one lane from 1.0, the blocks' products as a
        tree of adjacent pairs."""
        c, line = self.c, self._line
        u, i = f"u{node}", f"i{level}"
        product = self.graph.op[node] == "prod"
        lanes = 1 if product else 2 if level == 0 else INNER_LANES
        operator, empty = ("*", "1.0") if product else ("+", "0.0")
        count = high - low + 1
        blocks = -(-count // BLOCK)
        if c:
            line(depth, f"double {u};")
            line(depth, "{")
            if blocks > 1:
                line(depth + 1, f"double *{u}b = malloc({blocks} * sizeof(double));" if blocks > 4096
                     else f"double {u}b[{blocks}];")
        elif blocks > 1:
            line(depth, f"{u}b = [0.0] * {blocks}")
        d = depth + 1 if c else depth
        line(d, f"for (long {u}q = 0; {u}q < {blocks}; ++{u}q) {{" if c else f"for {u}q in range({blocks}):")
        first = f"{low} + {u}q * {BLOCK}"
        line(d + 1, f"const long {u}f = {first}, {u}l = {u}f + {BLOCK - 1} < {high} ? {u}f + {BLOCK - 1} : {high};"
             if c else f"{u}f = {first}; {u}l = min({u}f + {BLOCK - 1}, {high})")
        line(d + 1, f"double {u}s[{lanes}] = {{{empty}}};" if c else f"{u}s = [{empty}] * {lanes}")
        self._open(d + 1, i, f"{u}f", f"{u}l")
        value = self._body(inside, body, level, d + 2)
        lane = f"({i} - {u}f) & {lanes - 1}" if lanes > 1 else "0"
        step = f"{u}s[{lane}] = {u}s[{lane}] {operator} {value}"
        line(d + 2, f"{step};" if c else step)
        if c:
            line(d + 1, "}")
        parts = [f"{u}s[{k}]" for k in range(lanes)]
        while len(parts) > 1:
            parts = [f"({parts[k]} + {parts[k + 1]})" for k in range(0, len(parts), 2)]
        total = parts[0][1:-1] if lanes > 1 else parts[0]
        target = f"{u}b[{u}q]" if blocks > 1 else u
        line(d + 1, f"{target} = {total};" if c else f"{target} = {total}")
        if c:
            line(d, "}")
        if blocks > 1:
            helper = ("symad_pair_products" if c else "_pair_products") if product else \
                ("symad_pairwise" if c else "_pairwise")
            self.used.add(helper)
            line(d, f"{u} = {helper}({u}b, {blocks});" if c else
                 f"{u} = {helper}({u}b)" if product else f"{u} = {helper}({u}b, 0, {blocks})")
            if c and blocks > 4096:
                line(d, f"free({u}b);")
        if c:
            line(depth, "}")
        self.names[node] = u

    def _entry(self, node: int) -> str:
        """An entry ``x[a*i + b, ...]`` read from its array, at the clamped position where the loops'
        ranges take it past an end."""
        g, at = self.graph, self.at
        vector, *indices = g.args[node]
        name: str = g.data[vector]  # type: ignore[assignment]
        dims = at.spans[name]
        position = ""
        for d, (index, (low, high)) in enumerate(zip(indices, dims)):
            coef, const = binders.affine(g, index)  # type: ignore[misc]
            shift = const - low
            text = _affine_text(coef, shift)
            least = most = shift
            for level, c in coef.items():
                a, b = (c * bound for bound in self.ranges[level])
                least, most = least + min(a, b), most + max(a, b)
            if not coef:
                text = str(min(max(shift, 0), high - low))
            elif least >= 0 and most <= high - low:  # always inside the vector
                pass
            else:
                self.used.add("symad_clamp" if self.c else "_clamp")
                text = f"{'symad_clamp' if self.c else '_clamp'}({text}, {high - low + 1})"
            if d:
                position = f"({position})*{high - low + 1} + {text}"
            else:
                position = text
        if name in at.offsets:
            offset = at.offsets[name]
            return f"x[{offset} + {position}]" if offset else f"x[{position}]"
        return f"{name}[{position}]"


def _affine_text(coef: dict[int, int], shift: int) -> str:
    """``2*i0 + i1 - 3``: an affine expression of the loops' indices."""
    text = ""
    for level, c in sorted(coef.items()):
        term = f"i{level}" if abs(c) == 1 else f"{abs(c)}*i{level}"
        text = (f"-{term}" if c < 0 else term) if not text else f"{text} {'-' if c < 0 else '+'} {term}"
    if shift:
        text = f"{text} {'-' if shift < 0 else '+'} {abs(shift)}" if text else str(shift)
    return text or "0"


def _needed(graph: Graph, body: int, inside: set[int]) -> set[int]:
    """The nodes of a body its value needs: an entry's index is read as an array position, not
    computed as a number."""
    op_of, args_of = graph.op, graph.args
    seen: set[int] = set()
    stack = [body]
    while stack:
        node = stack.pop()
        if node in seen or node not in inside:
            continue
        seen.add(node)
        if op_of[node] == "item":
            continue
        stack.extend(args_of[node][1:] if op_of[node] in BINDERS else args_of[node])
    return seen
