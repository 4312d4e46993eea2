"""The ``symad`` command: gradients, values, derivatives, postfix and sizes of expressions."""

from __future__ import annotations

import argparse
import codecs
import importlib
import json
import math
import os
import re
import stat
import sys
import textwrap
from collections.abc import Sequence
from typing import Any, BinaryIO

from . import __version__, background, compiler
from .errors import LimitError, PointError, SymadError, VariableError, name_list
from .expr import Expr, check_variables, parse
from .graph import Graph
from .limits import LIMITS
from .ops import signatures
from .parser import fold, literal_notes, parse_into, to_postfix
from .printing import format_number as _format_expr_number

# Commands that live beside their own layer: name -> module providing HELP (str),
# TAKES_POINT (bool: gets --at), add_arguments(parser) and run(args, text, expr).
COMMAND_MODULES: dict[str, str] = {"graph": "symad.viz_cli", "minimize": "symad.optimize_cli",
                                    "hessian": "symad.hessian_cli", "explain": "symad.explain_cli",
                                    "diff": "symad.diff_cli"}
COMMAND_ORDER = ("grad", "eval", "diff", "postfix", "stats", "graph", "minimize", "hessian", "explain")

EPILOG = """\
examples:
  symad grad "(x+y)+x*(x+y)" --at x=1,y=2       value and every partial derivative
  symad grad "sin(x)^2/sqrt(1+y)" --at x=pi/4,y=3 --json
  symad eval "atan2(y, x)" --at x=-1,y=0
  symad diff "x^3*y" --wrt x                      the derivative as an expression
  symad postfix "(x+y)+x*(x+y)"                   the parser's postfix output
  symad stats "(x+y)+x*(x+y)"                     tree size vs hash-consed DAG size
  symad explain "(x+y)+x*(x+y)" --at x=1,y=2      reverse-mode AD step by step
  symad graph "(x+y)+x*(x+y)" --grad --at x=1,y=2 -o dag.png   picture of the DAG and its sweep
  symad grad - --at x=1 < big_expression.txt       read the expression from stdin (or @FILE)

language: numbers (2, .5, 1e-3), variables (x, theta_2), constants pi e inf nan,
  + - * / ^ (or **), unary -, parentheses, and the functions
{functions}.
  ^ binds tighter than unary minus and is right-associative: -x^2 = -(x^2), 2^3^2 = 512.

exit status: 0 success, 1 not converged (minimize --strict), 2 bad input (syntax,
  unknown function or variable, bad value), 130 interrupted (Ctrl-C).
"""
EPILOG = EPILOG.format(functions="\n".join(textwrap.wrap(" ".join(signatures()), 86, initial_indent="  ",
                                                              subsequent_indent="  ")))


class _Parser(argparse.ArgumentParser):
    commands: dict[str, argparse.ArgumentParser]  # the top-level parser's subcommands

    def error(self, message: str) -> None:  # usage errors: one line, exit 2
        self.print_usage(sys.stderr)
        raise SystemExit(f"symad: error: {message}")


def build_parser() -> _Parser:
    """The argument parser, with one subcommand per job."""
    top = _Parser(prog="symad", description="Exact derivatives of expressions typed as text.",
                  epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    top.add_argument("--version", action="version", version=f"symad {__version__}")
    sub = top.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    top.commands = sub.choices

    def command(name: str, help_text: str, at: bool = False) -> argparse.ArgumentParser:
        p = sub.add_parser(name, help=help_text, description=help_text,
                           epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
        p.add_argument("expr", metavar="EXPR",
                       help="the expression (it may start with '-', as in \"-x^2\"); "
                            "'-' alone reads it from stdin, '@FILE' from a file")
        p.add_argument("--json", action="store_true", help="print one JSON object")
        p.add_argument("--max-input", type=int, metavar="CHARS", default=LIMITS.max_input_chars,
                       help=f"longest expression text accepted (default {LIMITS.max_input_chars:,})")
        p.add_argument("--max-dag-nodes", type=int, metavar="N", default=LIMITS.max_nodes,
                       help=f"most DAG nodes built, derivatives included (default {LIMITS.max_nodes:,})")
        p.add_argument("--max-program-ops", type=int, metavar="N", default=LIMITS.max_program_ops,
                       help=f"most operations in one compiled program (default {LIMITS.max_program_ops:,})")
        if at:
            p.add_argument("--at", action="append", default=[], metavar="x=1,y=2",
                           help="the point: name=value pairs; values may be constant "
                                "expressions such as pi/4 (repeatable)")
        return p

    builtin = {"grad": ("print the value and every partial derivative at a point", True),
               "eval": ("print the value at a point", True),
               "postfix": ("print the parser's postfix (RPN) form", False),
               "stats": ("print tree size, DAG size, gradient size, depth and variables", False)}
    for name in COMMAND_ORDER:
        if name in builtin:
            command(name, *builtin[name])
        else:
            mod = importlib.import_module(COMMAND_MODULES[name])
            mod.add_arguments(command(name, mod.HELP, at=mod.TAKES_POINT))
    return top


def shield_expr(argv: Sequence[str], top: _Parser) -> tuple[list[str], str | None]:
    """``argv`` with an EXPR that starts with '-' (``"-x^2"``, ``"-log(x)"``) marked by a
    leading space, so that argparse does not take it for an option; and that EXPR.

    EXPR is the command's first argument that is neither an option nor an option's value;
    an argument is an option when argparse would read it as one of the command's options."""
    out = list(argv)
    i = 0
    while i < len(out) and out[i].startswith("-"):  # top-level options (--version, --help)
        i += 1
    if i == len(out) or out[i] not in top.commands:
        return out, None
    nargs = {s: a.nargs for a in top.commands[out[i]]._actions for s in a.option_strings}
    i += 1
    while i < len(out):
        arg = out[i]
        if arg == "--" or arg == "-" or not arg.startswith("-"):
            return out, None
        option, attached = _as_option(arg, nargs)
        if option is None:
            out[i] = " " + arg
            return out, arg
        i += 1
        if not attached:
            n = nargs[option]
            i += n if isinstance(n, int) else 1 if n in (None, "?") else 0
    return out, None


def _as_option(arg: str, nargs: dict[str, Any]) -> tuple[str | None, bool]:
    """The option ``arg`` names (argparse's rules: exact, ``--name=value``, an unambiguous
    prefix of a long name, ``-oVALUE``), and whether its value is attached; (None, False)
    if ``arg`` is no option."""
    if arg in nargs:
        return arg, False
    if arg.startswith("--"):
        name, eq, _ = arg.partition("=")
        hits = [s for s in nargs if s.startswith(name)]
        return (name if name in nargs else hits[0], bool(eq)) if hits else (None, False)
    if nargs.get(arg[:2], 0) != 0:
        return arg[:2], True
    return None, False


# ---------------------------------------------------------------- inputs
def read_expr(arg: str) -> str:
    """The expression text: the argument itself, stdin for '-', a file's contents for '@FILE'.

    At most one character past the input limit is read (stdin may be endless, @/dev/zero
    is); a leading byte-order mark is skipped."""
    if arg == "-":
        if sys.stdin is None:
            raise SymadError("standard input is closed")
        if not hasattr(sys.stdin, "buffer"):  # a text stream put in place of stdin (tests, notebooks)
            text = sys.stdin.read(LIMITS.max_input_chars + 2).removeprefix(BOM)
            if len(text) > LIMITS.max_input_chars:
                raise _too_long(None)
            return text
        try:
            return _read_utf8(sys.stdin.buffer)
        except UnicodeDecodeError as err:
            raise SymadError(f"standard input is not UTF-8 text (byte {err.start})") from None
    if arg.startswith("@"):
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
    return arg


BOM = "\ufeff"
_CHUNK = 1 << 20
_CONTINUATION_BYTES = bytes(range(0x80, 0xC0))


def _read_utf8(stream: BinaryIO) -> str:
    """Decode UTF-8 from ``stream`` until its end or one character past the input limit.

    Raises UnicodeDecodeError with ``start`` counted from the stream's first byte."""
    limit = LIMITS.max_input_chars
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
        parts.append(text)
        chars += len(text)
        consumed += len(data)
        if not data:
            return "".join(parts)
    left = _chars_left(stream, decoder.getstate()[0])
    raise _too_long(None if left is None else chars + left)


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


def _too_long(chars: int | None) -> LimitError:
    limit = LIMITS.max_input_chars
    how = "raise it with --max-input or symad.limits.LIMITS.max_input_chars"
    if chars is None:
        return LimitError(f"the input is over the limit of {limit:,} characters ({how})")
    return LimitError(f"the input is {chars:,} characters, over the limit of {limit:,} ({how})")


def _split_top_level(text: str) -> list[str]:
    parts, depth, start = [], 0, 0
    for i, ch in enumerate(text):
        depth += ch == "("
        depth -= ch == ")"
        if ch == "," and depth == 0:
            parts.append(text[start:i])
            start = i + 1
    parts.append(text[start:])
    return [p.strip() for p in parts if p.strip()]


def parse_point(specs: Sequence[str]) -> dict[str, float]:
    """``['x=1,y=pi/2']`` → ``{'x': 1.0, 'y': 1.5707963267948966}``."""
    point: dict[str, float] = {}
    for spec in specs:
        for item in _split_top_level(spec):
            name, eq, text = item.partition("=")
            name = name.strip()
            if not eq or not name:
                raise PointError(f"--at expects name=value pairs, got {item!r}")
            if name in point:
                raise PointError(f"--at gives {name} twice")
            try:
                value = parse(text, Graph())
            except SymadError:
                raise PointError(f"value for {name} is not a number: {text.strip()!r}") from None
            if value.variables:
                raise PointError(f"value for {name} is not a number: {text.strip()!r}")
            point[name] = value.evaluate()
    return point


# ---------------------------------------------------------------- outputs
def format_number(v: float) -> str:
    """A result for people: shortest round-trip digits, no named constants (3.14..., not pi)."""
    return _format_expr_number(v, named_constants=False)


def _json_number(v: float) -> float | str:
    return v if math.isfinite(v) else format_number(v)


def nonfinite_warnings(outputs: dict[str, tuple[float, Expr]], point: dict[str, float],
                       text: str = "") -> list[str]:
    """One line per non-finite output, naming the subexpression where it first went wrong
    (or, given the expression's ``text``, a number literal that overflows to inf)."""
    from .diagnose import first_nonfinite

    where = f" at {_format_point(point)}" if point else ""
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


def _explain_vanished(err: VariableError, text: str, expr: Expr | None) -> str:
    """A VariableError's message, plus why a variable in the text is not in the expression
    when a number literal underflowed to 0 (or overflowed): ``x*1e-400`` is ``0``."""
    message = str(err)
    if expr is None or not any(re.search(rf"\b{re.escape(name)}\b", text) for name in err.unknown):
        return message
    notes = literal_notes(text)
    if not notes:
        return message
    if expr.variables:
        what = f"the expression uses {name_list(expr.variables)}"
    else:
        what = f"the expression simplified to {format_number(expr.evaluate())} and uses no variables"
    return f"unknown variable {', '.join(err.unknown)}: {what} ({'; '.join(notes)})"


def _format_point(point: dict[str, float]) -> str:
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


def _table(rows: list[tuple[str, str]]) -> list[str]:
    width = max((len(k) for k, _ in rows), default=0)
    return [f"{k.ljust(width)} = {v}" for k, v in rows]


# ---------------------------------------------------------------- commands
def run_grad(args: argparse.Namespace, text: str, expr: Expr) -> None:
    point = parse_point(args.at)
    check_variables(expr.variables, point)
    point = {v: point[v] for v in expr.variables}
    value, grad = expr.compile().value_and_grad(point)
    partials = {v: float(g) for v, g in zip(expr.variables, grad)}
    obj = {"expr": text.strip(), "at": point, "value": _json_number(value),
           "grad": {v: _json_number(g) for v, g in partials.items()}}
    rows = [("f", format_number(value))] + [(f"df/d{v}", format_number(g)) for v, g in partials.items()]
    outputs = {"f": (value, expr)}
    if not all(map(math.isfinite, partials.values())):
        symbolic = expr.grad()
        outputs.update({f"df/d{v}": (g, symbolic[v]) for v, g in partials.items()})
    emit(args, obj, _table(rows), nonfinite_warnings(outputs, point, text))


def run_eval(args: argparse.Namespace, text: str, expr: Expr) -> None:
    point = parse_point(args.at)
    check_variables(expr.variables, point)
    point = {v: point[v] for v in expr.variables}
    value = expr.compile().value(point)
    obj = {"expr": text.strip(), "at": point, "value": _json_number(value)}
    emit(args, obj, [format_number(value)], nonfinite_warnings({"f": (value, expr)}, point, text))


def run_stats(args: argparse.Namespace, text: str, expr: Expr) -> None:
    stats = expr.stats()
    stats["tree_nodes"] = _count(stats["tree_nodes"])
    rows = [("tree nodes", str(stats["tree_nodes"])), ("DAG nodes", str(stats["dag_nodes"])),
            ("gradient nodes", str(stats["gradient_nodes"])), ("depth", str(stats["depth"])),
            ("variables", ", ".join(stats["variables"]) or "(none)"),
            ("ops", ", ".join(f"{k} {v}" for k, v in stats["ops"].items()))]
    width = max(len(k) for k, _ in rows)
    emit(args, {"expr": text.strip(), **stats}, [f"{k.ljust(width)}  {v}" for k, v in rows], [])


def _count(n: int) -> int | str:
    """An exact count; past 4,000 digits (more than Python prints), its order of magnitude."""
    if n.bit_length() < 13_000:
        return n
    shift = n.bit_length() - 60
    digits = math.log10(n >> shift) + shift * math.log10(2)  # log10(n) from its leading 60 bits
    mantissa = 10 ** (digits - math.floor(digits))
    return f"about {mantissa:.3f}e+{math.floor(digits)}"


COMMANDS = {"grad": run_grad, "eval": run_eval, "stats": run_stats}


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI; returns the exit status (0 ok, 2 bad input, 70 a bug in symad, 130 Ctrl-C)."""
    try:
        return _main(sys.argv[1:] if argv is None else argv)
    except KeyboardInterrupt:
        background.flush_streams()
        return 130
    except Exception as err:  # a bug in symad: still no traceback for the user
        print(f"symad: internal error: {type(err).__name__}: {err} (please report this)", file=sys.stderr)
        return 70


def _main(argv: Sequence[str]) -> int:
    parser = build_parser()
    argv, shielded = shield_expr(argv, parser)
    try:
        args = parser.parse_args(argv)
    except SystemExit as exit_:
        if isinstance(exit_.code, str):
            print(exit_.code, file=sys.stderr)
            return 2
        return int(exit_.code or 0)
    if shielded is not None and getattr(args, "expr", None) == " " + shielded:
        args.expr = shielded
    if args.command is None:
        parser.print_help()
        return 2
    # The flags hold for this run; main() called in-process (tests, notebooks) leaves no trace.
    saved = (LIMITS.max_input_chars, LIMITS.max_nodes, LIMITS.max_program_ops, compiler.BACKGROUND_OPTIMIZE)
    LIMITS.max_input_chars, LIMITS.max_nodes = args.max_input, args.max_dag_nodes
    LIMITS.max_program_ops = args.max_program_ops
    compiler.BACKGROUND_OPTIMIZE = False  # one evaluation: nothing to compile in the background
    text, expr = "", None
    try:
        text = read_expr(args.expr)
        graph = Graph()
        if args.command == "postfix":
            tokens = to_postfix(text)
            fold(tokens, graph, text)  # reports what parsing alone cannot (e.g. double definitions)
            words = [str(t) for t in tokens]
            emit(args, {"expr": text.strip(), "postfix": words}, [" ".join(words)], [])
            return 0
        expr = Expr(graph, parse_into(text, graph))
        if args.command in COMMANDS:
            COMMANDS[args.command](args, text, expr)
        else:
            importlib.import_module(COMMAND_MODULES[args.command]).run(args, text, expr)
    except SymadError as err:
        message = _explain_vanished(err, text, expr) if isinstance(err, VariableError) else str(err)
        print(f"symad: error: {message}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        background.flush_streams()
        return 130
    except MemoryError:
        print("symad: error: out of memory", file=sys.stderr)
        return 2
    except BrokenPipeError:
        return 0
    finally:
        LIMITS.max_input_chars, LIMITS.max_nodes, LIMITS.max_program_ops, compiler.BACKGROUND_OPTIMIZE = saved
    return 0


def entry() -> None:
    """The console-script entry point of earlier installs (now :func:`symad.__main__.entry`)."""
    from .__main__ import entry as run

    run()


if __name__ == "__main__":
    entry()
