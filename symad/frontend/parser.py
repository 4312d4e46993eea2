"""Text → postfix → DAG.

Lark reads ``grammar/symad.lark`` and builds its LALR(1) tables and terminal
patterns.  symad drives those tables with a small loop: bottom-up parsing
reduces every operand before its operator, so emitting a token at each
reduction *is* postfix order.  No parse tree and no token objects are built,
and nothing recurses, however deep the nesting.  (Lark's generic driver does
the same work through per-token objects and child lists; this loop is 2-4 times
faster, even against ``Lark.parse`` with an inlined transformer, and emits straight
into the DAG builder.  It reads Lark internals: see ``lark_tables``.)
"""

from __future__ import annotations

import math
import re
import threading
from collections.abc import Callable, Iterable
from importlib import resources
from pathlib import Path
from typing import NamedTuple

import lark

from symad.core import forksafe
from symad.core.errors import ParseError, SymadError, UnknownFunctionError
from symad.core.graph import Graph
from symad.core.limits import LIMITS
from symad.core.ops import CONSTANTS, FUNCTIONS, OPS
from symad.core.term import Term


class Token(NamedTuple):
    """One postfix token: a number, a name, an operator, a call with its arity, or a definition."""

    kind: str  # "number", "name", "op", "call", or "define" (binds the name to the value on top)
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
        return self.text


def grammar_text() -> str:
    """The grammar: shipped inside the package, or read from the checkout's grammar/."""
    shipped = resources.files("symad").joinpath("grammar/symad.lark")
    if shipped.is_file():
        return shipped.read_text(encoding="utf-8")
    return (Path(__file__).resolve().parents[2] / "grammar" / "symad.lark").read_text(encoding="utf-8")


def line_column(text: str, pos: int) -> tuple[int, int]:
    """1-based line and column of offset ``pos``."""
    line = text.count("\n", 0, pos) + 1
    return line, pos - (text.rfind("\n", 0, pos) + 1) + 1


_TERMINAL_NAMES = {
    "NUMBER": "a number", "NAME": "a name", "LPAR": "'('", "RPAR": "')'", "COMMA": "','",
    "PLUS": "'+'", "MINUS": "'-'", "STAR": "'*'", "SLASH": "'/'", "POW": "'^'", "$END": "end of input",
    "SEMICOLON": "';'", "EQUAL": "'='",
}

# Characters people paste from documents, and what symad's language spells them as.
_LOOKALIKES = {"−": "-", "–": "-", "×": "*", "·": "*", "÷": "/", "²": "^2", "³": "^3", "，": ",",
               "（": "(", "）": ")", "π": "pi", "√": "sqrt"}

Emit = Callable[[Token], None]


# Lark's own `Lark.parse` (even with the transformer inlined, no tree) is 2-4x slower on
# symad's inputs, so symad reads Lark's LALR tables and terminals and runs its own loop.
# Those are Lark internals: `lark_tables` is the one place that touches them, checks their
# layout, and names the range of Lark versions it was tested with (pyproject.toml pins it).
LARK_TESTED = "1.1–1.3"


class LarkTables(NamedTuple):
    """What the lean driver takes from Lark: the LALR(1) table and one pattern for the terminals."""

    start: int  # the start state
    end: int  # the state after the start rule's goto, reached only on $END
    # states[state][terminal or rule name] = (True, next state) for a shift or goto,
    # (False, (rule name, length, callback name)) for a reduction.
    states: dict[int, dict[str, tuple[bool, object]]]
    ignore: frozenset[str]  # terminals the lexer skips
    pattern: re.Pattern[str]  # one named group per terminal, in Lark's lexer order


def lark_tables(lk: lark.Lark, start: str = "start") -> LarkTables:
    """Extract what the driver needs from a ``Lark(..., parser="lalr")``, checking the layout.

    Any other layout (a Lark outside ``LARK_TESTED`` that moved or renamed something) raises
    ``SymadError`` saying so, rather than an AttributeError deep in the parser."""

    def layout_error(what: str) -> SymadError:
        return SymadError(f"symad's parser needs lark's LALR table layout of lark {LARK_TESTED} "
                          f"(found lark {getattr(lark, '__version__', '?')}: {what}): pin lark or report this")

    def need(ok: object, what: str) -> None:
        if not ok:
            raise layout_error(what)

    try:
        try:
            table = lk.parser.parser.parser.parse_table
        except AttributeError:
            raise layout_error("no parse table at Lark.parser.parser.parser.parse_table") from None
        for attr in ("states", "start_states", "end_states"):
            need(isinstance(getattr(table, attr, None), dict), f"parse_table.{attr} is not a dict")
        need(isinstance(table.start_states.get(start), int) and isinstance(table.end_states.get(start), int),
             f"no integer start/end state for {start!r}")
        states: dict[int, dict[str, tuple[bool, object]]] = {}
        reduced: set[str] = set()  # rule names: the symbols that are goto targets, not terminals
        for state, actions in table.states.items():
            need(isinstance(state, int) and isinstance(actions, dict), "states are not int -> dict")
            row: dict[str, tuple[bool, object]] = {}
            for symbol, entry in actions.items():
                need(isinstance(symbol, str) and isinstance(entry, tuple) and len(entry) == 2,
                     "an action is not a (action, argument) pair keyed by symbol name")
                action, arg = entry
                kind = getattr(action, "name", None)
                if kind == "Shift":
                    need(isinstance(arg, int), "a Shift's argument is not a state number")
                    row[str(symbol)] = (True, arg)
                elif kind == "Reduce":
                    origin = getattr(getattr(arg, "origin", None), "name", None)
                    expansion = getattr(arg, "expansion", None)
                    alias = getattr(arg, "alias", 0)  # 0: missing (Lark's is None or a name)
                    need(isinstance(origin, str) and isinstance(expansion, (list, tuple))
                         and (alias is None or isinstance(alias, str)),
                         "a Reduce's rule lacks origin.name, expansion or alias")
                    reduced.add(str(origin))
                    row[str(symbol)] = (False, (str(origin), len(expansion), str(alias or origin)))
                else:
                    raise layout_error(f"an action is {action!r}, not Shift or Reduce")
            states[state] = row
        need(table.end_states[start] in states and table.start_states[start] in states, "start/end state not in table")

        terminals = list(lk.terminals)
        for t in terminals:
            pattern = getattr(t, "pattern", None)
            need(isinstance(getattr(t, "name", None), str) and isinstance(getattr(t, "priority", None), int)
                 and isinstance(getattr(pattern, "max_width", None), int)
                 and isinstance(getattr(pattern, "value", None), str) and callable(getattr(pattern, "to_regexp", None)),
                 "a terminal lacks name, priority, pattern.max_width, pattern.value or pattern.to_regexp")
        # Ordered as Lark's lexer orders them.
        terminals.sort(key=lambda t: (-t.priority, -t.pattern.max_width, -len(t.pattern.value), t.name))
        # ASCII: `\d` must not accept other scripts' digits, which float() would read.
        pattern = re.compile("|".join(f"(?P<{t.name}>{t.pattern.to_regexp()})" for t in terminals), re.ASCII)
        # Plain str keys throughout: Lark's names are str subclasses compared in Python code.
        ignore = frozenset(str(t) for t in lk.ignore_tokens)
        lexed = set(pattern.groupindex)
        symbols = {symbol for row in states.values() for symbol in row}
        need(symbols - reduced - {"$END"} <= lexed, "the table shifts terminals the lexer does not know")
        need(ignore <= lexed, "ignored terminals the lexer does not know")
        need(all(any(states[s].get(name, (False,))[0] for s in states) for name in reduced),
             "a rule the table reduces has no goto")
    except SymadError:
        raise
    except (AttributeError, KeyError, TypeError, ValueError, re.error) as exc:
        raise layout_error(f"{type(exc).__name__}: {exc}") from exc
    return LarkTables(table.start_states[start], table.end_states[start], states, ignore, pattern)


class _Driver:
    """Lark's LALR(1) tables for the grammar, run by a lean shift/reduce loop."""

    def __init__(self) -> None:
        tables = lark_tables(lark.Lark(grammar_text(), parser="lalr"))
        self.start, self.end, self.states = tables.start, tables.end, tables.states
        self.ignore, self.pattern = tables.ignore, tables.pattern

    def run(self, text: str, emit: Emit) -> None:
        """Parse ``text``, calling ``emit`` with each postfix token in order."""
        states, ignore, match = self.states, self.ignore, self.pattern.match
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
            else:
                kind, start, value = "$END", n, None
            while True:
                action = states[state_stack[-1]].get(kind)  # type: ignore[arg-type]
                if action is None:
                    raise _unexpected_token(text, kind, value, start, states[state_stack[-1]])
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
        want = " or ".join(str(a) for a in sorted(arities))
        raise UnknownFunctionError(f"{word} takes {want} argument(s), got {arity}", text,
                                   *line_column(text, pos))
    emit(Token("call", word, arity, pos))


def _define(children: list, emit: Emit, text: str) -> None:
    word, pos = children[0]
    if word in FUNCTIONS or word in CONSTANTS:
        raise ParseError(f"cannot define {word}: it is a built-in name", text, *line_column(text, pos))
    emit(Token("define", word, 1, pos))


_REDUCE: dict[str, Callable[[list, Emit, str], object]] = {
    "number": _number, "name": _name, "call": _call, "define": _define,
    "first_arg": lambda c, e, t: 1,
    "next_arg": lambda c, e, t: c[0] + 1,
    "pos": lambda c, e, t: None,  # unary plus is the identity: no token
    "program": lambda c, e, t: None,
    **{name: _op(name) for name in ("add", "sub", "mul", "div", "neg", "pow")},
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
            else:
                # derived functions (log base b) build through terms' arithmetic
                stack.append(FUNCTIONS[tok.text][n](*(Term(graph, a) for a in args)).id)

    def result(self) -> int:
        """The root node, once every token has been pushed."""
        if len(self.stack) != 1:
            raise ParseError("malformed postfix", self.text, 1, 1)
        return self.stack[0]


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
