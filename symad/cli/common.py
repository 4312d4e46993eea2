"""What the commands share: reading the expression and the point, printing results and warnings."""

from __future__ import annotations

import argparse
import codecs
import errno
import json
import math
import os
import re
import stat
import sys
from collections.abc import Sequence
from typing import Any, BinaryIO

from symad.backends.interpret import node_values
from symad.backends.tape import Tape
from symad.core import document, indexed
from symad.core.dag import Graph
from symad.core.errors import LimitError, ParseError, PointError, SymadError, VariableError, check_variables, name_list
from symad.core.limits import LIMITS, input_too_long
from symad.core.printing import format_number as format_expr_number
from symad.core.printing import to_texts
from symad.expr import Expr, parse
from symad.frontend.parser import literal_notes
from symad.tools.diagnose import first_nonfinite

# How the command line spells a setting a LimitError names (see LimitError.spelled).
FLAGS = {"LIMITS.max_input_chars": "--max-input", "LIMITS.max_nodes": "--max-dag-nodes",
         "LIMITS.max_program_ops": "--max-program-ops", "LIMITS.max_document_chars": "--max-document",
         "max_nodes": "--max-nodes="}


def error_message(err: SymadError, text: str, expr: Expr | None) -> str:
    """What the command line prints for a SymadError: settings named as flags, and why a
    variable of the text is not in the expression."""
    if isinstance(err, LimitError):
        return err.spelled(lambda setting: FLAGS.get(setting, setting))
    if isinstance(err, VariableError):
        return explain_vanished(err, text, expr)
    return str(err)


def error_fields(err: SymadError) -> dict[str, Any]:
    """What a JSON error has besides its type: the message, and a syntax error's ``line``,
    ``column`` and ``expected`` (its quoted line and caret left out of the message)."""
    if isinstance(err, ParseError):
        fields: dict[str, Any] = {"message": str(err).split("\n", 1)[0], "line": err.line, "column": err.column}
        if err.expected:
            fields["expected"] = list(err.expected)
        return fields
    return {}


def report_error(as_json: bool, kind: str, message: str, fields: dict[str, Any] | None = None,
                 usage: str = "", internal: bool = False) -> None:
    """Print an error: ``symad: error: MESSAGE`` on stderr (a usage error after its usage line);
    with ``--json``, one object ``{"error": {"type": KIND, "message": ..., ...fields}}`` on stdout
    (a usage error's ``usage`` among them)."""
    if as_json:
        extra = dict(fields or {}, **({"usage": " ".join(usage.split())} if usage else {}))
        try:
            print(json.dumps({"error": {"type": kind, "message": message, **extra}}))
            sys.stdout.flush()
            return
        except OSError:  # stdout is full or closed: the error goes to stderr after all
            silence_stdout()
            if isinstance(sys.exc_info()[1], BrokenPipeError):
                return
    try:
        if usage:
            print(usage, file=sys.stderr)
        print(f"symad: {'internal error' if internal else 'error'}: {message}", file=sys.stderr)
    except OSError:  # stderr too: nowhere left to say it; the exit status does
        pass


# Why writing to stdout fails other than a closed pipe: a full disk or device (/dev/full), a
# quota, a file-size limit, an I/O error, a closed or non-blocking descriptor.
OUTPUT_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EFBIG, errno.EIO, errno.EBADF, errno.EAGAIN})


def silence_stdout() -> None:
    """After writing to stdout failed: point it at the null device, so that what is still
    buffered does not fail again when the interpreter flushes it at exit ("Exception
    ignored", status 120).  Only the process's own stdout (not a stream put in its place)."""
    if sys.stdout is None or sys.stdout is not sys.__stdout__:
        return
    try:
        null = os.open(os.devnull, os.O_WRONLY)
        os.dup2(null, sys.stdout.fileno())
        os.close(null)
    except (OSError, ValueError):
        pass


# ---------------------------------------------------------------- inputs
def read_expr(arg: str) -> str:
    """The expression text: the argument itself, stdin for '-', a file's contents for '@FILE'.

    At most one character past the input limit is read (stdin may be endless, @/dev/zero
    is); a leading byte-order mark is skipped.  In what is read from stdin or a file, ``#``
    starts a comment to the end of its line (:func:`without_comments`)."""
    return arg if arg != "-" and not arg.startswith("@") else without_comments(_read_input(arg))


_COMMENT = re.compile(r"#[^\n]*")


def without_comments(text: str) -> str:
    r"""``text`` with each ``#`` comment (to the end of its line) removed: lines and the columns
    before a comment stay where they were, so errors point at the same places.  A symad JSON
    document (``symad save``) is returned as it is: ``#`` is no character of the language,
    but may be one of a JSON string.

    >>> without_comments("x^2   # the square\n  + y  # and y")
    'x^2   \n  + y  '
    """
    return text if _is_document(text) else _COMMENT.sub("", text)


def _is_document(text: str) -> bool:
    return text.lstrip().startswith("{")


def _read_input(arg: str) -> str:
    """The text of stdin ('-') or of a file ('@FILE')."""
    if arg == "-":
        if sys.stdin is None:
            raise SymadError("standard input is closed")
        if not hasattr(sys.stdin, "buffer"):  # a text stream put in place of stdin (tests, notebooks)
            text = sys.stdin.read(LIMITS.max_input_chars + 2).removeprefix(BOM)
            if len(text) > LIMITS.max_input_chars:
                raise input_too_long(None, LIMITS.max_input_chars)
            return text
        try:
            return _read_utf8(sys.stdin.buffer)
        except UnicodeDecodeError as err:
            raise SymadError(f"standard input is not UTF-8 text (byte {err.start})") from None
    path = arg[1:]
    try:
        # Non-blocking only for the open: a named pipe with no writer must not hang it.
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
        with open(fd, "rb") as fh:
            if hasattr(os, "O_NONBLOCK"):
                os.set_blocking(fd, True)
            text = _read_utf8(fh)
            if not text and stat.S_ISFIFO(os.fstat(fd).st_mode):
                raise SymadError(f"cannot read {path}: a named pipe with no writer")
            return text
    except OSError as err:
        raise SymadError(f"cannot read {path}: {err.strerror}") from None
    except UnicodeDecodeError:
        raise SymadError(f"cannot read {path}: not UTF-8 text") from None


def read_expression(arg: str, needs_expr: bool = True) -> tuple[str, Any]:
    """The expression given as ``arg`` (text, '-' or '@FILE'): its text, and the expression if
    the command ``needs_expr`` (else None: the command reads the text itself).

    A symad JSON document (``symad save``) is read as a document, its DAG built straight from
    it (never printed and parsed again, so the input limit is not applied to its text): the
    expression, or for a command reading several outputs the list of them.  Its text, for
    messages and ``--json``, is what the outputs print as when that is within the input limit;
    else the argument itself."""
    text = read_expr(arg)
    if not _is_document(text):
        return text, parse(text, Graph()) if needs_expr else None
    doc = document.loads(text)
    del text  # (the document's text is not kept while its DAG is built)
    if needs_expr and len(doc["outputs"]) != 1:
        raise document.DocumentError(f"the document has {len(doc['outputs'])} outputs, and this command reads one "
                                     "expression (several outputs are for symad.compile and `symad jacobian`)")
    graph = Graph()
    outputs = [Expr(graph, root) for root in document.build(doc, graph)]
    definitions, texts = to_texts(graph, [e.id for e in outputs])
    shown = "; ".join([f"{name} = {body}" for name, body in definitions] + texts)
    if len(shown) > LIMITS.max_input_chars:
        shown = arg
    return shown, outputs[0] if needs_expr else outputs


BOM = "\ufeff"
_CHUNK = 1 << 20
_CONTINUATION_BYTES = bytes(range(0x80, 0xC0))


def _read_utf8(stream: BinaryIO) -> str:
    """Decode UTF-8 from ``stream`` until its end or one character past the input limit (for a
    symad JSON document, the document limit: ``LIMITS.max_document_chars``).

    Raises UnicodeDecodeError with ``start`` counted from the stream's first byte."""
    limit, is_doc = LIMITS.max_input_chars, None
    decoder = codecs.getincrementaldecoder("utf-8")()
    parts: list[str] = []
    chars = consumed = 0
    while chars <= limit:
        # A byte decodes to at most one character: never more than limit + 1 in all.
        data = stream.read(min(_CHUNK, limit + 1 - chars))
        pending = len(decoder.getstate()[0])
        try:
            text = decoder.decode(data, final=not data)
        except UnicodeDecodeError as err:
            err.start += consumed - pending
            raise
        if not parts and text.startswith(BOM):
            text = text[1:]
        if is_doc is None and text.strip():
            is_doc = _is_document(text)
            limit = document.max_chars() if is_doc else limit
        parts.append(text)
        chars += len(text)
        consumed += len(data)
        if not data:
            return "".join(parts)
    left = _chars_left(stream, decoder.getstate()[0])
    if is_doc:
        raise document.too_long(None if left is None else chars + left)
    raise input_too_long(None if left is None else chars + left, LIMITS.max_input_chars)


def _chars_left(stream: BinaryIO, pending: bytes) -> int | None:
    """How many characters are left in a regular file of modest size (None: unknown).

    Counts the bytes that start a character, so reads without decoding."""
    try:
        info = os.fstat(stream.fileno())
    except (OSError, ValueError, AttributeError):
        return None
    if not stat.S_ISREG(info.st_mode) or info.st_size > 64 << 20:
        return None
    left = len(pending.translate(None, _CONTINUATION_BYTES))
    while data := stream.read(_CHUNK):
        left += len(data.translate(None, _CONTINUATION_BYTES))
    return left


def _split_top_level(text: str) -> list[str]:
    parts, depth, start = [], 0, 0
    for i, ch in enumerate(text):
        depth += ch in "(["
        depth -= ch in ")]"
        if ch == "," and depth == 0:
            parts.append(text[start:i])
            start = i + 1
    parts.append(text[start:])
    return [p.strip() for p in parts if p.strip()]


def parse_point(specs: Sequence[str], flag: str = "--at") -> dict[str, Any]:
    """``['x=1,y=pi/2']`` → ``{'x': 1.0, 'y': 1.5707963267948966}`` (``flag`` names the option in errors).

    ``x[2]=1`` gives one indexed variable; ``x=[1, 2, 3]`` a list, for every ``x[k]`` in order."""
    point: dict[str, Any] = {}
    for spec in specs:
        for item in _split_top_level(spec):
            name, eq, text = item.partition("=")
            name = indexed.normal(name)
            if not eq or not name:
                raise PointError(f"{flag} expects name=value pairs, got {item!r}")
            if name in point:
                raise PointError(f"{flag} gives {name} twice")
            text = text.strip()
            if text.startswith("[") and text.endswith("]"):
                point[name] = [_number(name, t) for t in _split_top_level(text[1:-1])]
            else:
                point[name] = _number(name, text)
    return point


_PLAIN_NUMBER = re.compile(r"[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?")


def _number(name: str, text: str) -> float:
    """The number ``text`` (an expression without variables) given for ``name``."""
    text = text.strip()
    if _PLAIN_NUMBER.fullmatch(text):  # a plain literal (a vector's many entries): read as the language reads it
        return float(text)
    try:
        value = parse(text, Graph())
    except SymadError:
        raise PointError(f"value for {name} is not a number: {text.strip()!r}") from None
    if value.variables:
        raise PointError(f"value for {name} is not a number: {text.strip()!r}")
    return node_values(value.graph, [value.id], {})[value.id]


def point_of(specs: Sequence[str], variables: Sequence[str]) -> dict[str, float]:
    """The ``--at`` point for exactly ``variables``, in their order (a VariableError if it
    misses or adds one)."""
    return _exactly(parse_point(specs), variables)


def _exactly(point: dict[str, float], variables: Sequence[str]) -> dict[str, float]:
    """``point`` over exactly ``variables``, in their order (a VariableError if it misses or adds one)."""
    point = indexed.expand_point(variables, point)
    check_variables(tuple(variables), point)
    return {v: point[v] for v in variables}


def add_params_option(parser: argparse.ArgumentParser, what: str) -> None:
    """``--params``: variables held at values and not differentiated (``what`` they are left out of)."""
    parser.add_argument("--params", action="append", default=[], metavar="a=2,b=1",
                        help=f"parameters: variables held at these values, {what} (repeatable)")


def point_and_params(args: Any, variables: Sequence[str]) -> tuple[dict[str, float], dict[str, float]]:
    """The ``--at`` point over the variables that are not ``--params``, and the parameters'
    values (``--params``), each in the expression's order."""
    params = indexed.expand_point(variables, parse_point(getattr(args, "params", []), "--params"))
    unknown = [k for k in params if k not in variables]
    if unknown:
        raise VariableError(f"--params names {', '.join(unknown)}, which the expression does not use "
                            f"(it uses {name_list(variables) or 'no variables'})", tuple(unknown))
    point = indexed.expand_point(variables, parse_point(args.at))
    both = [k for k in point if k in params]
    if both:
        raise VariableError(f"{name_list(both)} is given by both --at and --params: give it once")
    return _exactly(point, [v for v in variables if v not in params]), {v: params[v] for v in variables if v in params}


def tape_of(expr: Expr) -> Tape:
    """The expression's tape over its variables, in order: one point's value and gradient
    with nothing compiled (what a Function's first call runs)."""
    return Tape(expr.graph, expr.id, [expr.graph.var(v) for v in expr.variables])


# ---------------------------------------------------------------- outputs
def format_number(v: float) -> str:
    """A result for people: shortest round-trip digits, no named constants (3.14..., not pi)."""
    return format_expr_number(v, named_constants=False)


def json_number(v: float) -> float | str:
    """A number for JSON: itself if finite, else its text ("inf", "-inf", "nan")."""
    return v if math.isfinite(v) else format_number(v)


def nonfinite_warnings(outputs: dict[str, tuple[float, Expr]], point: dict[str, float],
                       text: str = "") -> list[str]:
    """One line per non-finite output, naming the subexpression where it first went wrong
    (or, given the expression's ``text``, a number literal that overflows to inf)."""
    where = f" at {format_point(point)}" if point else ""
    lines, overflows = [], None
    for label, (value, expr) in outputs.items():
        if not math.isfinite(value):
            cause = first_nonfinite(expr.graph, expr.id, point)
            if cause is None and text:
                if overflows is None:
                    overflows = "; ".join(n for n in literal_notes(text) if n.endswith("inf"))
                cause = overflows
            lines.append(f"{label} = {format_number(value)}{where}" + (f": {cause}" if cause else ""))
    return lines


def explain_vanished(err: VariableError, text: str, expr: Expr | None) -> str:
    """A VariableError's message, plus why a variable in the text is not in the expression
    when a number literal underflowed to 0 (or overflowed): ``x*1e-400`` is ``0``."""
    message = str(err)
    if not isinstance(expr, Expr) or not any(re.search(rf"\b{re.escape(name)}\b", text) for name in err.unknown):
        return message
    notes = literal_notes(text)
    if not notes:
        return message
    if expr.variables:
        what = f"the expression uses {name_list(expr.variables)}"
    else:
        value = node_values(expr.graph, [expr.id], {})[expr.id]
        what = f"the expression simplified to {format_number(value)} and uses no variables"
    return f"unknown variable {', '.join(err.unknown)}: {what} ({'; '.join(notes)})"


def format_point(point: dict[str, float]) -> str:
    """``x=1,y=2``."""
    return ",".join(f"{k}={format_number(v)}" for k, v in point.items())


def emit(args: argparse.Namespace, obj: dict[str, Any], lines: list[str], warnings: list[str]) -> None:
    """Print `obj` as one JSON object with --json, else `lines`; warnings go to stderr (or into the JSON)."""
    if args.json:
        if warnings:
            obj["warnings"] = warnings
        print(json.dumps(obj))
    else:
        print("\n".join(lines))
        for w in warnings:
            print(f"symad: warning: {w}", file=sys.stderr)
    sys.stdout.flush()  # the result is out before any exit work (and before a late Ctrl-C)


def table(rows: list[tuple[str, str]]) -> list[str]:
    """``name = value`` lines, the names padded to one width."""
    width = max((len(k) for k, _ in rows), default=0)
    return [f"{k.ljust(width)} = {v}" for k, v in rows]


