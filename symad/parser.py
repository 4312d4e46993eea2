"""Text → postfix (Lark LALR, emitted as the parser reduces) → DAG (a stack fold).

Bottom-up parsing reduces every operand before its operator, so appending a
token at each reduction *is* postfix order: no parse tree is built and nothing
recurses, however deep the nesting.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

import lark

from .errors import ParseError, UnknownFunctionError
from .graph import Graph
from .limits import LIMITS
from .ops import CONSTANTS, FUNCTIONS, OPS


@dataclass(frozen=True)
class Token:
    """One postfix token: a number, a name, an operator, or a call with its arity."""

    kind: str  # "number", "name", "op", "call", or "define" (binds the name to the value on top)
    text: str  # the number as typed, the name, or the op/function name
    arity: int = 0
    line: int = 1
    column: int = 1

    def __str__(self) -> str:
        if self.kind == "op":
            return OPS[self.text].symbol if OPS[self.text].kind == "infix" else self.text
        if self.kind == "call" and self.arity != _default_arity(self.text):
            return f"{self.text}/{self.arity}"
        if self.kind == "define":
            return f"={self.text}"
        return self.text


def _default_arity(name: str) -> int:
    return min(FUNCTIONS[name])


def grammar_text() -> str:
    """The grammar: shipped inside the package, or read from the checkout's grammar/."""
    shipped = resources.files("symad").joinpath("grammar/symad.lark")
    if shipped.is_file():
        return shipped.read_text(encoding="utf-8")
    return (Path(__file__).resolve().parent.parent / "grammar" / "symad.lark").read_text(encoding="utf-8")


class _Emitter(lark.Transformer):
    """Parser callbacks, one per grammar alias: each appends its postfix token."""

    def __init__(self) -> None:
        super().__init__()
        self.out: list[Token] = []
        self.text = ""

    def _op(self, name: str, where: lark.Token | None = None) -> None:
        line, col = (where.line, where.column) if where is not None else (1, 1)
        self.out.append(Token("op", name, OPS[name].arity, line, col))

    def number(self, children: list) -> None:
        tok = children[0]
        self.out.append(Token("number", str(tok), 0, tok.line, tok.column))

    def name(self, children: list) -> None:
        tok = children[0]
        if str(tok) in FUNCTIONS:
            raise UnknownFunctionError(f"{tok} is a function: call it as {tok}(...)", self.text,
                                       tok.line, tok.column)
        self.out.append(Token("name", str(tok), 0, tok.line, tok.column))

    def args(self, children: list) -> int:
        return len(children)

    def define(self, children: list) -> None:
        tok = children[0]
        name = str(tok)
        if name in FUNCTIONS or name in CONSTANTS:
            raise ParseError(f"cannot define {name}: it is a built-in name", self.text, tok.line, tok.column)
        self.out.append(Token("define", name, 1, tok.line, tok.column))

    def program(self, children: list) -> None:
        pass

    def call(self, children: list) -> None:
        tok, arity = children
        name = str(tok)
        arities = FUNCTIONS.get(name)
        if arities is None:
            known = ", ".join(sorted(FUNCTIONS))
            raise UnknownFunctionError(f"unknown function {name!r} (known: {known})", self.text,
                                       tok.line, tok.column)
        if arity not in arities:
            want = " or ".join(str(a) for a in sorted(arities))
            raise UnknownFunctionError(f"{name} takes {want} argument(s), got {arity}", self.text,
                                       tok.line, tok.column)
        self.out.append(Token("call", name, arity, tok.line, tok.column))

    def add(self, c: list) -> None: self._op("add")
    def sub(self, c: list) -> None: self._op("sub")
    def mul(self, c: list) -> None: self._op("mul")
    def div(self, c: list) -> None: self._op("div")
    def neg(self, c: list) -> None: self._op("neg")
    def pos(self, c: list) -> None: pass  # unary plus is the identity: no token
    def pow(self, c: list) -> None: self._op("pow", c[1])


_TERMINAL_NAMES = {
    "NUMBER": "a number", "NAME": "a name", "LPAR": "'('", "RPAR": "')'", "COMMA": "','",
    "PLUS": "'+'", "MINUS": "'-'", "STAR": "'*'", "SLASH": "'/'", "POW": "'^'", "$END": "end of input",
    "SEMICOLON": "';'", "EQUAL": "'='",
}

# Characters people paste from documents, and what symad's language spells them as.
_LOOKALIKES = {"−": "-", "–": "-", "×": "*", "·": "*", "÷": "/", "²": "^2", "³": "^3", "，": ",",
               "（": "(", "）": ")", "π": "pi", "√": "sqrt"}


class _Parser:
    def __init__(self) -> None:
        self._emitter = _Emitter()
        self._lark = lark.Lark(grammar_text(), parser="lalr", transformer=self._emitter,
                               propagate_positions=False, maybe_placeholders=False)
        self._lock = threading.Lock()

    def postfix(self, text: str) -> list[Token]:
        with self._lock:
            self._emitter.out = []
            self._emitter.text = text
            try:
                self._lark.parse(text)
            except lark.exceptions.UnexpectedInput as err:
                raise _syntax_error(err, text) from None
            return self._emitter.out


def _syntax_error(err: lark.exceptions.UnexpectedInput, text: str) -> ParseError:
    expected = getattr(err, "expected", None) or getattr(err, "allowed", None) or ()
    names = tuple(sorted({_TERMINAL_NAMES.get(t, repr(t)) for t in expected}))
    line, column = getattr(err, "line", 1), getattr(err, "column", 1)
    if isinstance(err, lark.exceptions.UnexpectedCharacters):
        char = text[err.pos_in_stream]
        reason = f"unexpected character {char!r}"
        if char in _LOOKALIKES:
            reason += f" (write {_LOOKALIKES[char]!r} instead)"
    elif isinstance(err, lark.exceptions.UnexpectedEOF) or getattr(err, "token", None) in (None, "$END") \
            or getattr(err.token, "type", "") == "$END":
        reason = "unexpected end of input"
        lines = text.splitlines() or [""]
        line, column = len(lines), len(lines[-1]) + 1
    else:
        tok = err.token
        kind = {"NAME": "name ", "NUMBER": "number "}.get(tok.type, "")
        reason = f"unexpected {kind}{str(tok)[:40]!r}"
    if line is None or line < 1:
        line, column = 1, 1
    return ParseError(reason, text, line, column, names)


_parser: _Parser | None = None


def to_postfix(text: str) -> list[Token]:
    """Parse infix text into postfix tokens.

    >>> " ".join(map(str, to_postfix("(x+y)+x*(x+y)")))
    'x y + x x y + * +'
    """
    global _parser
    if _parser is None:
        _parser = _Parser()
    if not isinstance(text, str):
        raise TypeError(f"expected a string, got {type(text).__name__}")
    LIMITS.check_input(text)
    return _parser.postfix(text)


def fold(tokens: list[Token], graph: Graph, text: str = "") -> int:
    """Fold postfix tokens into the DAG with a stack; returns the root's id.

    ``text`` is the source, used only to point at errors."""
    from .expr import Expr  # derived functions (log base b) build through Expr

    stack: list[int] = []
    defined: dict[str, int] = {}
    for tok in tokens:
        if tok.kind == "number":
            stack.append(graph.const(float(tok.text)))
        elif tok.kind == "name":
            node = defined.get(tok.text)
            if node is None:
                value = CONSTANTS.get(tok.text)
                node = graph.var(tok.text) if value is None else graph.const(value)
            stack.append(node)
        elif tok.kind == "define":
            if tok.text in defined:
                raise ParseError(f"{tok.text} is defined twice", text, tok.line, tok.column)
            defined[tok.text] = stack.pop()
        else:
            n = tok.arity
            args = stack[len(stack) - n:]
            del stack[len(stack) - n:]
            spec = OPS.get(tok.text)
            if spec is not None and spec.arity == n:
                stack.append(graph.make(tok.text, *args))
            else:
                built = FUNCTIONS[tok.text][n](*(Expr(graph, a) for a in args))
                stack.append(built.id)
    if len(stack) != 1:
        raise ParseError("malformed postfix", "", 1, 1)
    return stack[0]
