"""Text → postfix → DAG.

Lark reads ``grammar/symad.lark`` and builds its LALR(1) tables and terminal
patterns (shipped as data: :mod:`symad.frontend.tables`).  symad drives those
tables with a small loop: bottom-up parsing reduces every operand before its
operator, so emitting a token at each reduction *is* postfix order.  No parse tree and no token objects are built,
and nothing recurses, however deep the nesting.  (Lark's generic driver does
the same work through per-token objects and child lists; this loop is 2-4 times
faster, even against ``Lark.parse`` with an inlined transformer, and emits straight
into the DAG builder.)
"""

from __future__ import annotations

import math
import threading
from collections.abc import Callable, Iterable
from typing import NamedTuple

from symad.core import forksafe
from symad.core.errors import ParseError, UnknownFunctionError
from symad.core.graph import Graph
from symad.core.limits import LIMITS
from symad.core.ops import COMPARISONS, CONSTANTS, FUNCTIONS, OPS, PREC_CMP
from symad.core.term import Term
from symad.frontend.tables import tables as lalr_tables


class Token(NamedTuple):
    """One postfix token: a number, a name, an operator, a call with its arity, a definition,
    or the separator of two outputs."""

    # "number", "name", "op", "call", "define" (binds the name to the value on top), "output", or
    # "chain": a comparison continuing a chain (`a < b < c`: the one before it and this one, of b and c)
    kind: str
    text: str  # the number as typed, the name, or the op/function name
    arity: int = 0
    pos: int = 0  # offset in the source text

    def __str__(self) -> str:
        if self.kind == "op":
            return OPS[self.text].symbol if OPS[self.text].kind == "infix" else self.text
        if self.kind == "call" and self.arity != min(FUNCTIONS[self.text]):
            return f"{self.text}/{self.arity}"
        if self.kind == "define":
            return f"={self.text}"
        if self.kind == "chain":
            return f"&{OPS[self.text].symbol}"
        return self.text  # (an output separator prints as ";")


def line_column(text: str, pos: int) -> tuple[int, int]:
    """1-based line and column of offset ``pos``."""
    line = text.count("\n", 0, pos) + 1
    return line, pos - (text.rfind("\n", 0, pos) + 1) + 1


_TERMINAL_NAMES = {
    "NUMBER": "a number", "NAME": "a name", "LPAR": "'('", "RPAR": "')'", "COMMA": "','",
    "PLUS": "'+'", "MINUS": "'-'", "STAR": "'*'", "SLASH": "'/'", "POW": "'^'", "$END": "end of input",
    "SEMICOLON": "';'", "EQUAL": "'='", "CMP": "a comparison", "IF": "'if'", "THEN": "'then'",
    "ELSE": "'else'", "AND": "'and'", "OR": "'or'", "NOT": "'not'",
}

# Characters people paste from documents, and what symad's language spells them as.
_LOOKALIKES = {"−": "-", "–": "-", "×": "*", "·": "*", "÷": "/", "²": "^2", "³": "^3", "，": ",",
               "（": "(", "）": ")", "π": "pi", "√": "sqrt",
               "≤": "<=", "≥": ">=", "≠": "!=", "¬": "not", "∧": "and", "∨": "or"}

Emit = Callable[[Token], None]


class _Driver:
    """Lark's LALR(1) tables for the grammar, run by a lean shift/reduce loop."""

    def __init__(self) -> None:
        tables = lalr_tables()
        self.start, self.end, self.states = tables.start, tables.end, tables.states
        self.ignore, self.pattern, self.keywords = tables.ignore, tables.pattern, tables.keywords
        # Most reductions pass one child through (`sum: product`, ...): a token climbs through
        # several of them, each replacing the top state by a goto from the state below.  The
        # state a chain of them ends in depends only on (state below, top, lookahead): kept here.
        self.passing: dict[tuple[int, int, str], int] = {}

    def _pass_through(self, below: int, top: int, kind: str) -> int:
        """The top state after the pass-through reductions from ``top`` on ``kind``, over ``below``."""
        key = (below, top, kind)
        state = self.passing.get(key)
        if state is None:
            states, state = self.states, top
            while True:
                action = states[state].get(kind)
                if action is None or action[0] or not _passes(action[1]):  # type: ignore[arg-type]
                    break
                goto = states[below][action[1][0]][1]  # type: ignore[index]
                if goto == self.end:
                    break  # the start rule: accepting is the general loop's
                state = goto  # type: ignore[assignment]
            self.passing[key] = state
        return state

    def run(self, text: str, emit: Emit) -> None:
        """Parse ``text``, calling ``emit`` with each postfix token in order."""
        states, ignore, match, keywords = self.states, self.ignore, self.pattern.match, self.keywords
        passing, pass_through = self.passing, self._pass_through
        state_stack = [self.start]
        values: list[object] = []
        pos, n = 0, len(text)
        while True:
            if pos < n:
                m = match(text, pos)
                if m is None:
                    raise _unexpected_char(text, pos, states[state_stack[-1]])
                kind = m.lastgroup
                start, pos = pos, m.end()
                if kind in ignore:
                    continue
                value: object = (m.group(), start)
                if kind == "NAME" and keywords:
                    kind = keywords.get(value[0], kind)  # type: ignore[index]
            else:
                kind, start, value = "$END", n, None
            while True:
                top = state_stack[-1]
                if len(state_stack) > 1:
                    below = state_stack[-2]
                    climbed = passing.get((below, top, kind))  # type: ignore[arg-type]
                    if climbed is None:
                        climbed = pass_through(below, top, kind)  # type: ignore[arg-type]
                    top = state_stack[-1] = climbed
                action = states[top].get(kind)  # type: ignore[arg-type]
                if action is None:
                    raise _unexpected_token(text, kind, value, start, states[top])
                shift, arg = action
                if shift:
                    state_stack.append(arg)  # type: ignore[arg-type]
                    values.append(value)
                    break
                origin, size, name = arg  # type: ignore[misc]
                children = values[len(values) - size:] if size else []
                if size:
                    del values[len(values) - size:]
                    del state_stack[len(state_stack) - size:]
                handler = _REDUCE.get(name)
                result = handler(children, emit, text) if handler else (children[0] if children else None)
                goto = states[state_stack[-1]][origin][1]
                if kind == "$END" and goto == self.end:
                    return
                state_stack.append(goto)  # type: ignore[arg-type]
                values.append(result)


def _passes(rule: tuple[str, int, str]) -> bool:
    """Whether a reduction passes its one child through (no handler: no token, the same value)."""
    return rule[1] == 1 and rule[2] not in _REDUCE


# ---------------------------------------------------------------- reductions
# Each takes the rule's children (terminals as (text, offset); nonterminals as the
# value their own reduction returned) and emits postfix.

def _op(name: str) -> Callable[[list, Emit, str], None]:
    def reduce(children: list, emit: Emit, text: str) -> None:
        emit(Token("op", name, OPS[name].arity, 0))
    return reduce


def _number(children: list, emit: Emit, text: str) -> None:
    word, pos = children[0]
    emit(Token("number", word, 0, pos))


def _name(children: list, emit: Emit, text: str) -> None:
    word, pos = children[0]
    if word in FUNCTIONS:
        raise UnknownFunctionError(f"{word} is a function: call it as {word}(...)", text,
                                   *line_column(text, pos))
    emit(Token("name", word, 0, pos))


def _call(children: list, emit: Emit, text: str) -> None:
    (word, pos), _, arity, _ = children
    arities = FUNCTIONS.get(word)
    if arities is None:
        known = ", ".join(sorted(FUNCTIONS))
        raise UnknownFunctionError(f"unknown function {word!r} (known: {known})", text, *line_column(text, pos))
    if arity not in arities:
        least = getattr(arities, "least", None)
        want = f"{least} or more" if least is not None else " or ".join(str(a) for a in sorted(arities))
        raise UnknownFunctionError(f"{word} takes {want} argument(s), got {arity}", text,
                                   *line_column(text, pos))
    emit(Token("call", word, arity, pos))


def _compare(kind: str) -> Callable[[list, Emit, str], None]:
    def reduce(children: list, emit: Emit, text: str) -> None:
        symbol, pos = children[1]
        emit(Token(kind, COMPARISONS[symbol], 2, pos))
    return reduce


def _if(children: list, emit: Emit, text: str) -> None:
    emit(Token("call", "where", 3, children[0][1]))


def _output(children: list, emit: Emit, text: str) -> None:
    emit(Token("output", ";", 2, children[1][1]))  # after both outputs' tokens: the two stay apart


def _define(children: list, emit: Emit, text: str) -> None:
    word, pos = children[0]
    if word in FUNCTIONS or word in CONSTANTS:
        raise ParseError(f"cannot define {word}: it is a built-in name", text, *line_column(text, pos))
    emit(Token("define", word, 1, pos))


_REDUCE: dict[str, Callable[[list, Emit, str], object]] = {
    "number": _number, "name": _name, "call": _call, "define": _define, "output": _output,
    "first_arg": lambda c, e, t: 1,
    "next_arg": lambda c, e, t: c[0] + 1,
    "pos": lambda c, e, t: None,  # unary plus is the identity: no token
    "program": lambda c, e, t: None,
    "compare": _compare("op"), "chain": _compare("chain"), "where": _if,
    **{name: _op(name) for name in ("add", "sub", "mul", "div", "neg", "pow", "and", "or", "not")},
}


# ---------------------------------------------------------------- errors
def _expected(row: dict[str, tuple[bool, object]]) -> tuple[str, ...]:
    return tuple(sorted({_TERMINAL_NAMES.get(s, repr(s)) for s in row if s.isupper() or s == "$END"}))


def _unexpected_char(text: str, pos: int, row: dict) -> ParseError:
    char = text[pos]
    reason = f"unexpected character {char!r}"
    if char in _LOOKALIKES:
        reason += f" (write {_LOOKALIKES[char]!r} instead)"
    return ParseError(reason, text, *line_column(text, pos), _expected(row))


def _unexpected_token(text: str, kind: str | None, value: object, pos: int, row: dict) -> ParseError:
    if kind == "$END":
        reason = "unexpected end of input"
    else:
        word = value[0]  # type: ignore[index]
        prefix = {"NAME": "name ", "NUMBER": "number "}.get(kind or "", "")
        reason = f"unexpected {prefix}{word[:40]!r}"
    return ParseError(reason, text, *line_column(text, pos), _expected(row))


_driver: _Driver | None = None
_driver_lock = threading.Lock()
forksafe.hold_across_fork(_driver_lock)  # a fork waits for the tables being built


def _get_driver() -> _Driver:
    global _driver
    with _driver_lock:
        if _driver is None:
            _driver = _Driver()
    return _driver


def parse_postfix(text: str, emit: Emit) -> None:
    """Parse infix ``text``, calling ``emit`` with each postfix token in order."""
    if not isinstance(text, str):
        raise TypeError(f"expected a string, got {type(text).__name__}")
    LIMITS.check_input(text)
    _get_driver().run(text, emit)


def to_postfix(text: str) -> list[Token]:
    """Parse infix text into postfix tokens.

    >>> " ".join(map(str, to_postfix("(x+y)+x*(x+y)")))
    'x y + x x y + * +'
    """
    out: list[Token] = []
    parse_postfix(text, out.append)
    return out


class _Enough(Exception):
    """Ends a scan early."""


def literal_notes(text: str, most: int = 3) -> list[str]:
    """Number literals in ``text`` whose float is not the number typed: ones that underflow
    to 0 (their digits are not all zero) or overflow to inf; at most ``most`` of them.

    >>> literal_notes("x*1e-400 + 1e400*y + 0e-999")
    ['the literal 1e-400 at column 3 underflows to 0', 'the literal 1e400 at column 12 overflows to inf']
    """
    notes: list[str] = []

    def check(tok: Token) -> None:
        if tok.kind != "number":
            return
        value = float(tok.text)
        if value == 0.0 and tok.text.lower().partition("e")[0].strip("0.") != "":
            what = "underflows to 0"
        elif math.isinf(value):
            what = "overflows to inf"
        else:
            return
        line, column = line_column(text, tok.pos)
        where = f"line {line}, column {column}" if "\n" in text else f"column {column}"
        notes.append(f"the literal {tok.text} at {where} {what}")
        if len(notes) == most:
            raise _Enough

    try:
        parse_postfix(text, check)
    except _Enough:
        pass
    return notes


class Folder:
    """Folds a stream of postfix tokens into the DAG with a stack (``push`` each, then ``result``)."""

    def __init__(self, graph: Graph, text: str = ""):
        self.graph, self.text = graph, text
        self.stack: list[int] = []
        self.defined: dict[str, int] = {}
        self.separators: list[int] = []  # where each `;` between two outputs is
        self.right: dict[int, int] = {}  # stack depth of a comparison -> its right operand (for chains)

    def push(self, tok: Token) -> None:
        """Apply one token to the stack."""
        graph, stack = self.graph, self.stack
        kind = tok.kind
        if kind == "number":
            stack.append(graph.const(float(tok.text)))
        elif kind == "name":
            node = self.defined.get(tok.text)
            if node is None:
                value = CONSTANTS.get(tok.text)
                node = graph.var(tok.text) if value is None else graph.const(value)
            stack.append(node)
        elif kind == "output":
            self.separators.append(tok.pos)
        elif kind == "chain":  # a < b < c: (a < b) and (b < c), b one node
            right = stack.pop()
            depth = len(stack) - 1
            link = graph.make(tok.text, self.right[depth], right)
            stack[depth] = graph.make("and", stack[depth], link)
            self.right[depth] = right
        elif kind == "define":
            if tok.text in self.defined:
                raise ParseError(f"{tok.text} is defined twice", self.text, *line_column(self.text, tok.pos))
            self.defined[tok.text] = stack.pop()
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

    def result(self) -> int:
        """The root node, once every token has been pushed (the text must have one output)."""
        if self.separators:
            line, column = line_column(self.text, self.separators[0])
            raise ParseError(f"expected one expression, got {len(self.separators) + 1} separated by ';' "
                             "(several outputs are for symad.compile and `symad jacobian`)", self.text, line, column)
        return self.results()[0]

    def results(self) -> list[int]:
        """The outputs' root nodes, once every token has been pushed."""
        if len(self.stack) != len(self.separators) + 1:
            raise ParseError("malformed postfix", self.text, 1, 1)
        return list(self.stack)


def fold(tokens: Iterable[Token], graph: Graph, text: str = "") -> int:
    """Fold postfix tokens into the DAG with a stack; returns the root's id.

    ``text`` is the source, used only to point at errors."""
    folder = Folder(graph, text)
    for tok in tokens:
        folder.push(tok)
    return folder.result()


def parse_into(text: str, graph: Graph) -> int:
    """Parse ``text`` straight into ``graph`` (postfix streamed into the fold); the root's id."""
    folder = Folder(graph, text)
    parse_postfix(text, folder.push)
    return folder.result()


def parse_outputs_into(text: str, graph: Graph) -> list[int]:
    """Parse ``text``, one or more expressions separated by ``;`` (after any definitions,
    which they share), into ``graph``; the outputs' root ids."""
    folder = Folder(graph, text)
    parse_postfix(text, folder.push)
    return folder.results()
