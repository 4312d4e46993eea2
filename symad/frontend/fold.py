"""Postfix tokens → the hash-consed DAG, with a stack.

Sums, products and calls of functions defined in the text are unrolled here: the
tokens of a range's or a function's body are recorded, then replayed once per
index value or call, with the index or the parameters bound.  Replays are
generators on an explicit work stack, so nesting never recurses in Python, and
every replayed token counts against ``LIMITS.max_nodes``.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator
from typing import NamedTuple

from symad.core import binders
from symad.core.dag import Graph
from symad.core.errors import LimitError, ParseError
from symad.core.limits import LIMITS
from symad.core.ops import CONSTANTS, FUNCTIONS, OPS, PREC_CMP
from symad.core.term import Term
from symad.core.unrolling import REDUCTIONS
from symad.frontend.tokens import Token, line_column

_LARGEST_INDEX = 2**31  # indices and bounds are whole numbers within ±this
_COMPARISONS = frozenset(name for name, spec in OPS.items() if spec.prec == PREC_CMP)  # chains read their right


def _arith(op: str, args: list[float | None]) -> float | None:
    """``op`` of known numbers, for the few ops bounds are written with (else None: not known)."""
    if None in args:
        return None
    if op == "add":
        return args[0] + args[1]  # type: ignore[operator]
    if op == "sub":
        return args[0] - args[1]  # type: ignore[operator]
    if op == "mul":
        return args[0] * args[1]  # type: ignore[operator]
    if op == "neg":
        return -args[0]  # type: ignore[operator]
    return None


class _Function(NamedTuple):
    params: tuple[str, ...]
    body: tuple[Token, ...]
    visible: int  # how many definitions precede it: the ones its body may use


class _Recording:
    """The tokens of a body being read (``opened`` by a range or function token)."""

    def __init__(self, opened: Token, bounds: tuple[int, int] = (0, 0)):
        self.opened, self.bounds = opened, bounds
        self.tokens: list[Token] = []
        self.depth = 0  # of ranges and bodies opened inside this one


class Folder:
    """Folds a stream of postfix tokens into the DAG (``push`` each, then ``result``)."""

    def __init__(self, graph: Graph, text: str = ""):
        self.graph, self.text = graph, text
        self.stack: list[int] = []
        self.defined: dict[str, int] = {}
        self.order: dict[str, int] = {}  # each definition's place: a function's body sees those before it
        self.separators: list[int] = []  # where each `;` between two outputs is
        self.right: dict[int, int] = {}  # stack depth of a comparison -> its right operand (for chains)
        self.functions: dict[str, _Function] = {}
        self.scopes: list[dict[str, int]] = [{}]  # bound names: parameters and indices
        self.frames = [0]  # where the innermost call's scopes start: a body sees only its own
        self.visible = [math.inf]  # how many definitions the body being replayed may use
        self.recording: _Recording | None = None
        self.work: list[Iterator[Token]] = []  # replays under way, innermost last
        self.indexed: set[str] = set()  # names used with an index
        self.calls: dict[tuple[str, tuple[int, ...]], int] = {}  # (function, arguments) -> its value
        self.replayed = 0
        self.loops = 0  # how many sums kept as loops enclose the body being read
        self.vectors: set[str] = set()  # names with an entry at an index of such a sum

    def error(self, message: str, tok: Token) -> ParseError:
        """A ParseError pointing at ``tok`` in the text."""
        return ParseError(message, self.text, *line_column(self.text, tok.pos))

    def push(self, tok: Token) -> None:
        """Apply one token, and the replays it starts."""
        self._apply(tok)
        work = self.work
        while work:
            step = next(work[-1], None)
            if step is None:
                work.pop()
                continue
            self.replayed += 1
            if self.replayed > LIMITS.max_nodes:
                raise self._too_long()
            self._apply(step)

    @staticmethod
    def _too_long() -> LimitError:
        return LimitError(f"unrolling sums and inlining functions would take over {LIMITS.max_nodes:,} steps "
                          "(raise the limit with {setting})", "LIMITS.max_nodes")

    def _apply(self, tok: Token) -> None:
        recording = self.recording
        if recording is not None:
            if tok.kind in ("range", "function"):
                recording.depth += 1
            elif tok.kind == "end":
                if not recording.depth:
                    self.recording = None
                    self._close(recording)
                    return
                recording.depth -= 1
            recording.tokens.append(tok)
            return
        graph, stack = self.graph, self.stack
        kind = tok.kind
        if kind == "op" and tok.arity == 2 and tok.text not in _COMPARISONS:  # most tokens: `+ - * / ^`
            right = stack.pop()
            stack[-1] = graph.make(tok.text, stack[-1], right)
        elif kind == "number":
            stack.append(graph.const(float(tok.text)))
        elif kind == "name":
            stack.append(self._lookup(tok.text))
        elif kind == "index":
            indices = stack[len(stack) - tok.arity:]
            del stack[len(stack) - tok.arity:]
            stack.append(self._indexed(tok, indices))
        elif kind == "call" and tok.text in self.functions:
            args = tuple(stack[len(stack) - tok.arity:])
            del stack[len(stack) - tok.arity:]
            known = self.calls.get((tok.text, args))
            if known is not None:  # a body sees only its parameters: same arguments, same node
                stack.append(known)
            else:
                self.work.append(self._inline(tok.text, args))
        elif kind == "range":
            high, low = stack.pop(), stack.pop()
            index = tok.text.split()[1]
            if index in self.defined or any(index in s for s in self.scopes[self.frames[-1]:]):
                raise self.error(f"the index {index} is already a name here: choose another", tok)
            self.recording = _Recording(tok, (self._whole(low, tok, "first bound"),
                                              self._whole(high, tok, "last bound")))
        elif kind == "function":
            del stack[len(stack) - tok.arity:]  # the parameters' names, read as variables
            name = tok.text.partition("(")[0]
            if name in self.defined:
                raise self.error(f"{name} is already defined", tok)
            self.recording = _Recording(tok)
        elif kind == "output":
            self.separators.append(tok.pos)
        elif kind == "chain":  # a < b < c: (a < b) and (b < c), b one node
            right = stack.pop()
            depth = len(stack) - 1
            link = graph.make(tok.text, self.right[depth], right)
            stack[depth] = graph.make("and", stack[depth], link)
            self.right[depth] = right
        elif kind == "define":
            if tok.text in self.defined or tok.text in self.functions:
                raise self.error(f"{tok.text} is defined twice", tok)
            self.defined[tok.text] = stack.pop()
            self.order[tok.text] = len(self.order)
        else:
            n = tok.arity
            args = stack[len(stack) - n:]
            del stack[len(stack) - n:]
            spec = OPS.get(tok.text)
            if spec is not None and spec.arity == n:
                stack.append(graph.make(tok.text, *args))
                if spec.prec == PREC_CMP:
                    self.right[len(stack) - 1] = args[1]
            else:
                # derived functions (log base b) build through terms' arithmetic
                stack.append(FUNCTIONS[tok.text][n](*(Term(graph, a) for a in args)).id)

    def _lookup(self, name: str) -> int:
        scopes = self.scopes
        for i in range(len(scopes) - 1, self.frames[-1] - 1, -1):
            node = scopes[i].get(name)
            if node is not None:
                return node
        node = self.defined.get(name)
        if node is not None and self.order[name] < self.visible[-1]:
            return node
        value = CONSTANTS.get(name)
        return self.graph.var(name) if value is None else self.graph.const(value)

    def _whole(self, node: int, tok: Token, what: str) -> int:
        """The whole number ``node`` must be (an index or a bound), else an error at ``tok``."""
        graph = self.graph
        value = graph.data[node] if graph.op[node] == "const" else None
        if value is None and binders.levels(graph)[node] >= 0:
            raise self.error(f"the {what} of {tok.text.split()[0]} uses the index of a sum over more than "
                             f"{binders.UNROLL_MAX_TERMS:,} terms, which stays a loop: only affine entries "
                             "x[2*i+1] and arithmetic may use it", tok)
        if value is None:
            raise self.error(f"the {what} of {tok.text.split()[0]} must be a number known as the text is read "
                             "(numbers, definitions and enclosing indices), not a variable", tok)
        if not (math.isfinite(value) and value == int(value)):  # type: ignore[arg-type]
            raise self.error(f"the {what} of {tok.text.split()[0]} must be a whole number, not {value:g}", tok)
        if abs(value) > _LARGEST_INDEX:  # type: ignore[arg-type]
            raise self.error(f"the {what} of {tok.text.split()[0]} is {value:g}, beyond ±2^31", tok)
        return int(value)  # type: ignore[arg-type]

    def _indexed(self, tok: Token, indices: list[int]) -> int:
        name = tok.text
        if name in self.defined or name in CONSTANTS or any(name in s for s in self.scopes[self.frames[-1]:]):
            raise self.error(f"{name} is a number or an expression, not an indexed variable", tok)
        self.indexed.add(name)
        graph = self.graph
        lv = binders.levels(graph)
        if len(indices) > 1 or any(graph.op[i] != "const" and lv[i] >= 0 for i in indices):
            for index in indices:
                if graph.op[index] != "const" and lv[index] < 0:
                    self._whole(index, tok, "index")  # a variable as an index: the error says so
                if binders.affine(graph, index) is None:
                    raise self.error(f"the index of {name} must be an affine expression of the loop's index "
                                     "(such as i+1 or 2*i-1)", tok)
            self.vectors.add(name)
            return binders.item(graph, graph.vector(name), *indices)
        return graph.var(f"{name}[{self._whole(indices[0], tok, 'index')}]")

    def _close(self, recording: _Recording) -> None:
        opened, body = recording.opened, tuple(recording.tokens)
        if opened.kind == "function":
            name, _, params = opened.text.partition("(")
            self.functions[name] = _Function(tuple(params[:-1].split(",")), body, len(self.defined))
            return
        low, high = recording.bounds
        reduction, index = opened.text.split()
        terms = (high - low + 1) * self._inner_terms(body)
        limit = binders.UNROLL_INSIDE_LOOP if self.loops else binders.UNROLL_MAX_TERMS
        long = terms > limit or terms * len(body) > binders.UNROLL_MAX_STEPS
        if reduction == "each" or long:  # an each is a vector: always one node
            if self.loops >= binders.MAX_NESTING:
                raise self.error(f"loops (sums and products past {binders.UNROLL_MAX_TERMS:,} terms) nest at "
                                 f"most {binders.MAX_NESTING} deep", opened)
            self.work.append(self._loop(reduction, index, low, high, body))
            return
        steps = max(0, high - low + 1) * len(body)
        if self.replayed + steps > LIMITS.max_nodes:
            raise self._too_long()
        self.work.append(self._unroll(reduction, index, low, high, body))

    def _unroll(self, reduction: str, index: str, low: int, high: int, body: tuple[Token, ...]) -> Iterator[Token]:
        """The body once per index value; the terms' sum (or product) is left on the stack."""
        graph, stack = self.graph, self.stack
        op, empty = REDUCTIONS[reduction]
        scope: dict[str, int] = {}
        self.scopes.append(scope)
        total = None
        for k in range(low, high + 1):
            scope[index] = graph.const(k)
            yield from body
            term = stack.pop()
            total = term if total is None else graph.make(op, total, term)
        self.scopes.pop()
        stack.append(graph.const(empty) if total is None else total)

    def _inner_terms(self, body: tuple[Token, ...]) -> int:
        """How many times the body's deepest nest of sums would repeat its innermost body, written out
        (1 without sums inside; a bound known only as the text is unrolled counts 1): so that a sum of
        sums is kept as a loop when together they are long, not only when one of them is."""
        known: list[float | None] = []  # the values a dry run of the tokens can know: numbers, definitions
        counts: list[int] = []  # the ranges open, innermost last
        most = 1
        graph = self.graph
        for tok in body:
            kind = tok.kind
            if kind == "number":
                known.append(float(tok.text))
            elif kind == "name":
                node = self.defined.get(tok.text)
                known.append(graph.data[node] if node is not None and graph.op[node] == "const" else None)
            elif kind == "range":
                high, low = known.pop(), known.pop()
                count = int(high - low + 1) if high is not None and low is not None else 1
                counts.append(max(count, 0))
                most = max(most, math.prod(counts))
            elif kind == "end":
                counts.pop()
                known.append(None)
            elif kind in ("op", "call", "index"):
                args = known[len(known) - tok.arity:]
                del known[len(known) - tok.arity:]
                known.append(_arith(tok.text, args) if kind == "op" else None)
            elif kind == "chain":
                known.pop()
            elif kind == "define":
                known.pop()
        return most

    def _loop(self, reduction: str, index: str, low: int, high: int, body: tuple[Token, ...]) -> Iterator[Token]:
        """The body once, its index a leaf of the DAG; the sum stays one node (:mod:`symad.core.binders`)."""
        graph, stack = self.graph, self.stack
        level = self.loops
        self.loops += 1
        self.scopes.append({index: graph.index(level)})
        yield from body
        self.scopes.pop()
        self.loops -= 1
        stack.append(binders.reduce(graph, reduction, level, low, high, stack.pop()))

    def _inline(self, name: str, args: tuple[int, ...]) -> Iterator[Token]:
        """The body of function ``name`` with its parameters bound to ``args``; its value is left
        on the stack."""
        fn = self.functions[name]
        self.scopes.append(dict(zip(fn.params, args)))
        self.frames.append(len(self.scopes) - 1)
        self.visible.append(fn.visible)
        yield from fn.body
        self.scopes.pop()
        self.frames.pop()
        self.visible.pop()
        self.calls[name, args] = self.stack[-1]

    def result(self) -> int:
        """The root node, once every token has been pushed (the text must have one output)."""
        if self.separators:
            line, column = line_column(self.text, self.separators[0])
            raise ParseError(f"expected one expression, got {len(self.separators) + 1} separated by ';' "
                             "(several outputs are for symad.compile and `symad jacobian`)", self.text, line, column)
        return self.results()[0]

    def results(self) -> list[int]:
        """The outputs' root nodes, once every token has been pushed."""
        if len(self.stack) != len(self.separators) + 1 or self.recording is not None:
            raise ParseError("malformed postfix", self.text, 1, 1)
        if self.vectors:  # x[3] beside a sum kept as a loop over x[i]: an entry of the same vector
            self.stack = binders.entries_of(self.graph, self.stack, self.vectors)
        self._each_only_as_output()
        if self.indexed:
            both = sorted(self.indexed.intersection(self.graph.variables(self.stack)))
            if both:
                raise ParseError(f"{both[0]} is used both as a variable and indexed ({both[0]}[...]): "
                                 "rename one", self.text, 1, 1)
        return list(self.stack)

    def _each_only_as_output(self) -> None:
        """An ``each`` is a vector of values: it may be a whole output, not a part of an expression."""
        graph = self.graph
        if not graph.scoped:
            return
        roots = set(self.stack)
        for node in graph.reachable(self.stack):
            if graph.op[node] == "each" and node not in roots:
                raise ParseError("each(...) is a vector of values: it can only be a whole output "
                                 "(each(i = 1..n, ...); other outputs after ';'), not part of an expression",
                                 self.text, 1, 1)


def fold(tokens: Iterable[Token], graph: Graph, text: str = "") -> int:
    """Fold postfix tokens into the DAG with a stack; returns the root's id.

    ``text`` is the source, used only to point at errors."""
    folder = Folder(graph, text)
    for tok in tokens:
        folder.push(tok)
    return folder.result()
