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

import functools
import math
import threading
from collections.abc import Callable
from typing import NamedTuple

from symad.core import forksafe
from symad.core.dag import Graph
from symad.core.errors import ParseError, UnknownFunctionError
from symad.core.gcpause import without_gc
from symad.core.limits import LIMITS
from symad.core.ops import COMPARISONS, CONSTANTS, FUNCTIONS, OPS, PREC_CMP
from symad.frontend.fold import Folder, fold
from symad.frontend.tables import tables as lalr_tables
from symad.frontend.tokens import Token, line_column

__all__ = ["Folder", "Token", "fold", "line_column", "literal_notes", "parse_into", "parse_outputs_into",
           "parse_postfix", "to_postfix"]


_TERMINAL_NAMES = {
    "NUMBER": "a number", "NAME": "a name", "LPAR": "'('", "RPAR": "')'", "COMMA": "','",
    "PLUS": "'+'", "MINUS": "'-'", "STAR": "'*'", "SLASH": "'/'", "POW": "'^'", "$END": "end of input",
    "SEMICOLON": "';'", "EQUAL": "'='", "CMP": "a comparison", "IF": "'if'", "THEN": "'then'",
    "ELSE": "'else'", "AND": "'and'", "OR": "'or'", "NOT": "'not'", "LSQB": "'['", "RSQB": "']'",
    "RANGE": "'..'",
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
        # The loop reads this copy of the table: each action tagged as a shift (or goto), a
        # pass-through reduction, an operator's reduction with its token, or another reduction
        # with its handler already looked up.
        self.actions = {state: {symbol: _tagged(shift, arg) for symbol, (shift, arg) in row.items()}
                        for state, row in self.states.items()}
        # Most reductions pass one child through (`sum: product`, ...): a token climbs through
        # several of them, each replacing the top state by a goto from the state below.  The
        # state a chain of them ends in depends only on (state below, top, lookahead): kept here.
        self.passing: dict[tuple[int, int, str], int] = {}
        # Where a reduction lands: the goto from the state below on the rule's name, then the
        # pass-through reductions from there on the lookahead (one step, not a turn of the loop).
        self.landing: dict[tuple[int, str, str], int] = {}

    def _land(self, below: int, origin: str, kind: str) -> int:
        """The top state after reducing to ``origin`` over ``below`` with lookahead ``kind``."""
        goto = self.actions[below][origin][1]
        state = goto if goto == self.end else self._pass_through(below, goto, kind)  # type: ignore[arg-type]
        self.landing[below, origin, kind] = state
        return state

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
        actions, ignore, match, keywords, end = self.actions, self.ignore, self.pattern.match, self.keywords, self.end
        passing, pass_through, landing = self.passing, self._pass_through, self.landing
        state_stack = [self.start]
        values: list[object] = []
        reductions = _Run(text)
        pos, n = 0, len(text)
        while True:
            if pos < n:
                m = match(text, pos)
                if m is None:
                    raise _unexpected_char(text, pos, self.states[state_stack[-1]])
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
                action = actions[top].get(kind)  # type: ignore[arg-type]
                if action is None:
                    raise _unexpected_token(text, kind, value, start, self.states[top])
                what, arg = action
                if what is _SHIFT:
                    state_stack.append(arg)  # type: ignore[arg-type]
                    values.append(value)
                    break
                if what is _PASS:
                    climbed = passing.get((state_stack[-2], top, kind))  # type: ignore[arg-type]
                    if climbed is None:
                        climbed = pass_through(state_stack[-2], top, kind)  # type: ignore[arg-type]
                    if climbed != top:
                        state_stack[-1] = climbed
                        continue
                if what is _EMIT:  # an operator: its token, made once; its operands' values are done
                    origin, size, token = arg  # type: ignore[misc]
                    del values[len(values) - size:]
                    del state_stack[len(state_stack) - size:]
                    emit(token)
                    result = None
                else:
                    origin, size, handler = arg  # type: ignore[misc]
                    if size == 1:
                        children = [values.pop()]
                        state_stack.pop()
                    elif size:
                        children = values[len(values) - size:]
                        del values[len(values) - size:]
                        del state_stack[len(state_stack) - size:]
                    else:
                        children = []
                    result = handler(children, emit, reductions) if handler else (children[0] if children else None)
                below = state_stack[-1]
                goto = landing.get((below, origin, kind))  # type: ignore[arg-type]
                if goto is None:
                    goto = self._land(below, origin, kind)  # type: ignore[arg-type]
                if kind == "$END" and goto == end:
                    return
                state_stack.append(goto)  # type: ignore[arg-type]
                values.append(result)


_SHIFT, _PASS, _EMIT, _REDUCE_BY = "shift", "pass", "emit", "reduce"  # the tags of the driver's actions


def _tagged(shift: bool, arg: object) -> tuple[str, object]:
    """A table action as the driver's loop reads it (see ``_Driver.actions``)."""
    if shift:
        return _SHIFT, arg
    origin, size, name = arg  # type: ignore[misc]
    handler = _REDUCE.get(name)
    token = getattr(handler, "token", None)
    if token is not None:  # an operator's reduction emits its token, nothing else
        return _EMIT, (origin, size, token)
    return (_PASS if _passes(arg) else _REDUCE_BY), (origin, size, handler)  # type: ignore[arg-type]


def _passes(rule: tuple[str, int, str]) -> bool:
    """Whether a reduction passes its one child through (no handler: no token, the same value)."""
    return rule[1] == 1 and rule[2] not in _REDUCE


# ---------------------------------------------------------------- reductions
# Each takes the rule's children (terminals as (text, offset); nonterminals as the
# value their own reduction returned), emits postfix, and returns the rule's value.

class _Run:
    """What the reductions of one parse share: the text, and the functions it defines."""

    def __init__(self, text: str):
        self.text = text
        self.functions: dict[str, int] = {}  # name -> number of parameters
        self.defining: str | None = None  # the function whose body is being read
        self.arity = 0  # its number of parameters

    def error(self, cls: type[ParseError], message: str, pos: int) -> ParseError:
        return cls(message, self.text, *line_column(self.text, pos))


class _Name(NamedTuple):
    """The value of a bare name (a function's head needs its parameters' names)."""

    word: str
    pos: int


def _op(name: str) -> Callable[[list, Emit, _Run], None]:
    token = Token("op", name, OPS[name].arity, 0)  # the same every time: tokens are immutable

    def reduce(children: list, emit: Emit, run: _Run) -> None:
        emit(token)
    reduce.token = token  # type: ignore[attr-defined]  # what the driver emits in its place
    return reduce


# A NamedTuple's constructor is a Python function: these build the same tuples without one
# (a number's and a name's reductions run once a leaf).
_new_token = functools.partial(tuple.__new__, Token)
_new_name = functools.partial(tuple.__new__, _Name)


def _number(children: list, emit: Emit, run: _Run) -> None:
    word, pos = children[0]
    emit(_new_token(("number", word, 0, pos)))


def _not_a_function(word: str, pos: int, run: _Run) -> None:
    if word in FUNCTIONS or word in run.functions or word == run.defining:
        raise run.error(UnknownFunctionError, f"{word} is a function: call it as {word}(...)", pos)


def _not_a_range(word: str, pos: int, run: _Run) -> None:
    if word in _RANGES:
        raise run.error(ParseError, f"{word} is a keyword, not a variable: it runs an index over a range, "
                        f"{word}(i = 1..n, x[i])", pos)


def _name(children: list, emit: Emit, run: _Run) -> _Name:
    word, pos = children[0]
    if word in FUNCTIONS or word in _RANGES or word in run.functions or word == run.defining:
        _not_a_function(word, pos, run)
        _not_a_range(word, pos, run)
    emit(_new_token(("name", word, 0, pos)))
    return _new_name(children[0])  # type: ignore[no-any-return]


def _call(children: list, emit: Emit, run: _Run) -> None:
    (word, pos), _, args, _ = children
    arity = len(args)
    if word == run.defining:
        raise run.error(ParseError, f"{word} calls itself: a function is inlined where it is called, "
                        "so it cannot be recursive", pos)
    if word in run.functions:
        if arity != run.functions[word]:
            raise run.error(UnknownFunctionError, f"{word} takes {run.functions[word]} argument(s), got {arity}", pos)
        emit(Token("call", word, arity, pos))
        return
    arities = FUNCTIONS.get(word)
    if arities is None:
        if word in _RANGES:
            raise run.error(UnknownFunctionError, f"{word} runs an index over a range: "
                            f"{word}(i = 1..n, x[i])", pos)
        known = ", ".join(sorted(FUNCTIONS))
        raise run.error(UnknownFunctionError, f"unknown function {word!r} (known: {known}; or define it "
                        f"before use: {word}(t) = ...;)", pos)
    if arity not in arities:
        least = getattr(arities, "least", None)
        want = f"{least} or more" if least is not None else " or ".join(str(a) for a in sorted(arities))
        raise run.error(UnknownFunctionError, f"{word} takes {want} argument(s), got {arity}", pos)
    emit(Token("call", word, arity, pos))


def _compare(kind: str) -> Callable[[list, Emit, _Run], None]:
    def reduce(children: list, emit: Emit, run: _Run) -> None:
        symbol, pos = children[1]
        emit(Token(kind, COMPARISONS[symbol], 2, pos))
    return reduce


def _if(children: list, emit: Emit, run: _Run) -> None:
    emit(Token("call", "where", 3, children[0][1]))


def _output(children: list, emit: Emit, run: _Run) -> None:
    emit(Token("output", ";", 2, children[1][1]))  # after both outputs' tokens: the two stay apart


def _definable(word: str, pos: int, run: _Run) -> None:
    if word in FUNCTIONS or word in CONSTANTS or word in _RANGES:
        raise run.error(ParseError, f"cannot define {word}: it is a built-in name", pos)
    if word in run.functions:
        raise run.error(ParseError, f"{word} is defined twice", pos)


def _define(children: list, emit: Emit, run: _Run) -> None:
    word, pos = children[0]
    _definable(word, pos, run)
    emit(Token("define", word, 1, pos))


def _function_head(children: list, emit: Emit, run: _Run) -> str:
    (word, pos), _, args, _, _ = children
    _definable(word, pos, run)
    params: list[str] = []
    for arg in args:
        if not isinstance(arg, _Name):
            raise run.error(ParseError, f"the parameters of {word} must be names: {word}(t, u) = ...", pos)
        if arg.word in params:
            raise run.error(ParseError, f"{word} names the parameter {arg.word} twice", arg.pos)
        if arg.word in CONSTANTS:
            raise run.error(ParseError, f"{arg.word} is a constant, not a parameter name", arg.pos)
        params.append(arg.word)
    run.defining, run.arity = word, len(params)
    emit(Token("function", f"{word}({','.join(params)})", len(params), pos))
    return word


def _define_function(children: list, emit: Emit, run: _Run) -> None:
    word = children[0]
    run.functions[word] = run.arity
    run.defining = None
    emit(Token("end", word, 0, children[2][1]))


def _index(children: list, emit: Emit, run: _Run) -> None:
    word, pos = children[0]
    _not_a_function(word, pos, run)
    _not_a_range(word, pos, run)
    emit(Token("index", word, len(children[2]), pos))


_RANGES = ("sum", "prod", "each")


def _range(children: list, emit: Emit, run: _Run) -> str:
    (word, pos), _, (index, ipos), *_ = children
    if word not in _RANGES:
        raise run.error(ParseError, f"only sum, prod and each run an index over a range, not {word}", pos)
    _not_a_function(index, ipos, run)
    _not_a_range(index, ipos, run)
    if index in CONSTANTS:
        raise run.error(ParseError, f"{index} is a constant, not an index's name", ipos)
    emit(Token("range", f"{word} {index}", 2, pos))
    return word


def _reduce(children: list, emit: Emit, run: _Run) -> None:
    emit(Token("end", children[0], 0, children[2][1]))


def _first_arg(children: list, emit: Emit, run: _Run) -> list:
    return [children[0]]


def _next_arg(children: list, emit: Emit, run: _Run) -> list:
    children[0].append(children[2])
    return children[0]


_REDUCE: dict[str, Callable[[list, Emit, _Run], object]] = {
    "number": _number, "name": _name, "call": _call, "define": _define, "output": _output,
    "function_head": _function_head, "define_function": _define_function,
    "index": _index, "range": _range, "reduce": _reduce,
    "first_arg": _first_arg, "next_arg": _next_arg,
    "pos": lambda c, e, r: None,  # unary plus is the identity: no token
    "program": lambda c, e, r: None,
    "compare": _compare("op"), "chain": _compare("chain"), "where": _if,
    # the grammar's operators are named as their ops (comparisons reduce through `compare`)
    **{name: _op(name) for name, spec in OPS.items() if spec.kind in ("infix", "prefix") and spec.prec != PREC_CMP},
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
        if kind == "IF" and "NAME" in row:  # an operand was expected: `1 + if c then a else b`
            reason += f": an if-expression inside an operation needs parentheses, as in {_parenthesised(text, pos)}"
            return ParseError(reason, text, *line_column(text, pos))
    return ParseError(reason, text, *line_column(text, pos), _expected(row))


def _parenthesised(text: str, pos: int) -> str:
    """The text with the if-expression at ``pos`` in parentheses (its `else` part reaching to
    the end), when that is short and one line; else the form."""
    rest = text[pos:].rstrip()
    if len(text) > 80 or "\n" in text or ";" in rest:
        return "(if c then a else b)"
    return f"{text[:pos]}({rest})"


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


@without_gc
def parse_into(text: str, graph: Graph) -> int:
    """Parse ``text`` straight into ``graph`` (postfix streamed into the fold); the root's id."""
    folder = Folder(graph, text)
    parse_postfix(text, folder.push)
    return folder.result()


@without_gc
def parse_outputs_into(text: str, graph: Graph) -> list[int]:
    """Parse ``text``, one or more expressions separated by ``;`` (after any definitions,
    which they share), into ``graph``; the outputs' root ids."""
    folder = Folder(graph, text)
    parse_postfix(text, folder.push)
    return folder.results()
