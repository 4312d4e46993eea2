"""The ``symad`` command: gradients, values, derivatives, postfix and sizes of expressions."""

from __future__ import annotations

import argparse
import importlib
import json
import math
import sys
from collections.abc import Sequence
from typing import Any

from . import __version__, compiler
from .errors import PointError, SymadError, VariableError
from .expr import Expr, check_variables, parse
from .graph import Graph
from .limits import LIMITS
from .parser import fold, parse_into, to_postfix
from .printing import format_number as _format_expr_number

# Commands that live beside their own layer: name -> module providing HELP (str),
# TAKES_POINT (bool: gets --at), add_arguments(parser) and run(args, text, expr).
COMMAND_MODULES: dict[str, str] = {"graph": "symad.viz_cli", "minimize": "symad.optimize_cli",
                                    "hessian": "symad.hessian_cli", "explain": "symad.explain_cli"}

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
  sin cos tan asin acos atan sinh cosh tanh exp log sqrt abs sign step
  atan2(y, x) pow(a, b) min(a, b) max(a, b) log(x, base).
  ^ binds tighter than unary minus and is right-associative: -x^2 = -(x^2), 2^3^2 = 512.

exit status: 0 success, 2 bad input (syntax, unknown function or variable, bad value).
"""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # usage errors: one line, exit 2
        self.print_usage(sys.stderr)
        raise SystemExit(f"symad: error: {message}")


def build_parser() -> argparse.ArgumentParser:
    """The argument parser, with one subcommand per job."""
    top = _Parser(prog="symad", description="Exact derivatives of expressions typed as text.",
                  epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    top.add_argument("--version", action="version", version=f"symad {__version__}")
    sub = top.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)

    def command(name: str, help_text: str, at: bool = False) -> argparse.ArgumentParser:
        p = sub.add_parser(name, help=help_text, description=help_text,
                           epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
        p.add_argument("expr", metavar="EXPR",
                       help="the expression; '-' reads it from stdin, '@FILE' from a file")
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

    command("grad", "print the value and every partial derivative at a point", at=True)
    command("eval", "print the value at a point", at=True)
    d = command("diff", "print the derivative as an expression")
    d.add_argument("--wrt", metavar="x[,y]", help="the variable(s); default: all")
    command("postfix", "print the parser's postfix (RPN) form")
    command("stats", "print tree size, DAG size, gradient size, depth and variables")
    for name, module in COMMAND_MODULES.items():
        mod = importlib.import_module(module)
        mod.add_arguments(command(name, mod.HELP, at=mod.TAKES_POINT))
    return top


# ---------------------------------------------------------------- inputs
def read_expr(arg: str) -> str:
    """The expression text: the argument itself, stdin for '-', a file's contents for '@FILE'."""
    if arg == "-":
        data = sys.stdin.buffer.read() if hasattr(sys.stdin, "buffer") else sys.stdin.read().encode()
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError as err:
            raise SymadError(f"standard input is not UTF-8 text (byte {err.start})") from None
    if arg.startswith("@"):
        try:
            with open(arg[1:], encoding="utf-8") as fh:
                return fh.read()
        except OSError as err:
            raise SymadError(f"cannot read {arg[1:]}: {err.strerror}") from None
        except UnicodeDecodeError:
            raise SymadError(f"cannot read {arg[1:]}: not UTF-8 text") from None
    return arg


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


def nonfinite_warnings(outputs: dict[str, tuple[float, Expr]], point: dict[str, float]) -> list[str]:
    """One line per non-finite output, naming the subexpression where it first went wrong."""
    from .diagnose import first_nonfinite

    where = f" at {_format_point(point)}" if point else ""
    lines = []
    for label, (value, expr) in outputs.items():
        if not math.isfinite(value):
            cause = first_nonfinite(expr.graph, expr.id, point)
            lines.append(f"{label} = {format_number(value)}{where}" + (f": {cause}" if cause else ""))
    return lines


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
    emit(args, obj, _table(rows), nonfinite_warnings(outputs, point))


def run_eval(args: argparse.Namespace, text: str, expr: Expr) -> None:
    point = parse_point(args.at)
    check_variables(expr.variables, point)
    point = {v: point[v] for v in expr.variables}
    value = expr.compile().value(point)
    obj = {"expr": text.strip(), "at": point, "value": _json_number(value)}
    emit(args, obj, [format_number(value)], nonfinite_warnings({"f": (value, expr)}, point))


def run_diff(args: argparse.Namespace, text: str, expr: Expr) -> None:
    wrt = [w.strip() for w in args.wrt.split(",") if w.strip()] if args.wrt else list(expr.variables)
    for w in wrt:
        if not w.isidentifier():
            raise VariableError(f"--wrt: {w!r} is not a variable name")
    partials = {w: str(d) for w, d in expr.grad(wrt).items()}
    if args.wrt and len(wrt) == 1:
        lines = [partials[wrt[0]]]
    else:
        lines = _table([(f"df/d{w}", d) for w, d in partials.items()])
    emit(args, {"expr": text.strip(), "diff": partials}, lines, [])


def run_stats(args: argparse.Namespace, text: str, expr: Expr) -> None:
    stats = expr.stats()
    rows = [("tree nodes", str(stats["tree_nodes"])), ("DAG nodes", str(stats["dag_nodes"])),
            ("gradient nodes", str(stats["gradient_nodes"])), ("depth", str(stats["depth"])),
            ("variables", ", ".join(stats["variables"]) or "(none)"),
            ("ops", ", ".join(f"{k} {v}" for k, v in stats["ops"].items()))]
    width = max(len(k) for k, _ in rows)
    emit(args, {"expr": text.strip(), **stats}, [f"{k.ljust(width)}  {v}" for k, v in rows], [])


COMMANDS = {"grad": run_grad, "eval": run_eval, "diff": run_diff, "stats": run_stats}


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI; returns the exit status (0 ok, 2 bad input, 70 a bug in symad)."""
    try:
        return _main(argv)
    except Exception as err:  # a bug in symad: still no traceback for the user
        print(f"symad: internal error: {type(err).__name__}: {err} (please report this)", file=sys.stderr)
        return 70


def _main(argv: Sequence[str] | None) -> int:
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exit_:
        if isinstance(exit_.code, str):
            print(exit_.code, file=sys.stderr)
            return 2
        return int(exit_.code or 0)
    if args.command is None:
        parser.print_help()
        return 2
    # The flags hold for this run; main() called in-process (tests, notebooks) leaves no trace.
    saved = (LIMITS.max_input_chars, LIMITS.max_nodes, LIMITS.max_program_ops, compiler.BACKGROUND_OPTIMIZE)
    LIMITS.max_input_chars, LIMITS.max_nodes = args.max_input, args.max_dag_nodes
    LIMITS.max_program_ops = args.max_program_ops
    compiler.BACKGROUND_OPTIMIZE = False  # one evaluation: nothing to compile in the background
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
        print(f"symad: error: {err}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
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
    """Console-script entry point."""
    sys.exit(main())


if __name__ == "__main__":
    entry()
