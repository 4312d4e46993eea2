"""The ``symad`` command: one subcommand per module of this package, listed in ``COMMANDS``.

Each command module provides ``add_arguments(parser)`` and ``run(args, text, expr)``;
``COMMANDS`` lists them with their help, and only the module of the command that runs
is imported.  :mod:`symad.cli.common` has what they share.
"""

from __future__ import annotations

import argparse
import importlib
import sys
import textwrap
from collections.abc import Sequence
from dataclasses import dataclass
from types import ModuleType
from typing import Any

from symad import __version__
from symad.cli import loop_commands as loops
from symad.cli.common import (
    OUTPUT_ERRNOS,
    error_fields,
    error_message,
    read_expression,
    report_error,
    silence_stdout,
)
from symad.core.errors import SymadError
from symad.core.limits import LIMITS, override
from symad.core.ops import signatures
from symad.runtime import background


@dataclass(frozen=True)
class Command:
    """A subcommand: its module in this package (``add_arguments(parser)``, ``run(args, text,
    expr)``), its one-line help, and whether it takes ``--at``."""

    module: str
    help: str
    takes_point: bool


# The commands, in the order `symad --help` lists them.
COMMANDS: dict[str, Command] = {
    "grad": Command("grad", "print the value and every partial derivative at a point", True),
    "eval": Command("evaluate", "print the value at a point", True),
    "diff": Command("diff", "print the derivative as an expression", False),
    "postfix": Command("postfix", "print the parser's postfix (RPN) form", False),
    "stats": Command("stats", "print tree size, DAG size, gradient size, depth and variables", False),
    "graph": Command("graph", "draw the DAG (and with --grad the backward graph) as a picture: "
                              ".png, .svg, .pdf or .dot", True),
    "minimize": Command("minimize", "minimize the expression from a start point (--from) with exact derivatives",
                        False),
    "jacobian": Command("jacobian", "print several outputs (separated by ';') and their Jacobian at a point, "
                                    "or as expressions", True),
    "hessian": Command("hessian", "print the Hessian (every second partial derivative) at a point, "
                                  "or as expressions", True),
    "save": Command("save", "write the expression's DAG to a JSON file, which every command reads as @FILE",
                    False),
    "export-c": Command("export", "write the expression (with --grad, --hessian its derivatives) as a C99 "
                                  "function and header", False),
    "export-py": Command("export", "write the expression (with --grad, --hessian its derivatives) as a Python "
                                   "function needing only the standard library", False),
    "explain": Command("explain", "show reverse-mode (or forward-mode) AD step by step: z1..zk, values, "
                                  "adjoints", True),
}


def command_module(name: str) -> ModuleType:
    """The module of command ``name``, imported when that command runs: start-up stays light
    (``symad grad`` never loads NumPy, Graphviz or the optimisers)."""
    return importlib.import_module(f"symad.cli.{COMMANDS[name].module}")


EPILOG = """\
examples:
  symad grad "(x+y)+x*(x+y)" --at x=1,y=2       value and every partial derivative
  symad grad "sin(x)^2/sqrt(1+y)" --at x=pi/4,y=3 --json
  symad eval "atan2(y, x)" --at x=-1,y=0
  symad diff "x^3*y" --wrt x                      the derivative as an expression
  symad jacobian "x*y; x + y" --at x=1,y=2        several outputs (';') and their Jacobian
  symad postfix "(x+y)+x*(x+y)"                   the parser's postfix output
  symad stats "(x+y)+x*(x+y)"                     tree size vs hash-consed DAG size
  symad explain "(x+y)+x*(x+y)" --at x=1,y=2      reverse-mode AD step by step
  symad graph "(x+y)+x*(x+y)" --grad --at x=1,y=2 -o dag.png   picture of the DAG and its sweep
  symad grad - --at x=1 < big_expression.txt       read the expression from stdin (or @FILE)
  symad save "x^2*y" -o f.json; symad grad @f.json --at x=1,y=2   a DAG saved as JSON, read back

language: numbers (2, .5, 1e-3), variables (x, theta_2, x[3]), constants pi e inf nan,
  + - * / ^ (or **), unary -, parentheses, < <= > >= == != and or not, and the functions
{functions}.
  ^ binds tighter than unary minus and is right-associative: -x^2 = -(x^2), 2^3^2 = 512.
  Definitions and functions come first: "r = sqrt(x^2 + y^2); x/r", "f(t) = t^2; f(x) + f(y)".
  Sums and products: "sum(i = 1..3, x[i]^2)", "prod(k = 1..n, y + k)", written out when short,
  kept as loops when long ("n = 10^6; sum(i = 1..n-1, (x[i+1] - x[i])^2)", --at x=1 sets every x[i]).

exit status: 0 success, 1 not converged (minimize --strict), 2 bad input (syntax,
  unknown function or variable, bad value), 130 interrupted (Ctrl-C).
"""
EPILOG = EPILOG.format(functions="\n".join(textwrap.wrap(" ".join(signatures()), 86, initial_indent="  ",
                                                              subsequent_indent="  ")))


class _Parser(argparse.ArgumentParser):
    commands: dict[str, _Parser]  # the top-level parser's subcommands

    def __init__(self, *args: Any, **kwargs: Any):
        self.option_nargs: dict[str, Any] = {}  # option string -> nargs, for shield_expr
        super().__init__(*args, **kwargs)

    def add_argument(self, *args: Any, **kwargs: Any) -> argparse.Action:
        action = super().add_argument(*args, **kwargs)
        self.option_nargs.update(dict.fromkeys(action.option_strings, action.nargs))
        return action

    def error(self, message: str) -> None:  # type: ignore[override]  # usage errors: _main reports them
        raise UsageError(message, self.format_usage())


class UsageError(Exception):
    """A usage error of the command line (argparse's), with the usage of the (sub)command it concerns."""

    def __init__(self, message: str, usage: str):
        super().__init__(message)
        self.message, self.usage = message, usage


def build_parser(selected: str | None = None) -> _Parser:
    """The argument parser, with one subcommand per job; the options of command ``selected``
    (the one that runs) only are added, by its module."""
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
        p.add_argument("--max-document", type=int, metavar="CHARS", default=LIMITS.max_document_chars,
                       help=f"longest JSON document read as @FILE (default {LIMITS.document_chars():,}, "
                            "or 40 a node of --max-dag-nodes)")
        if at:
            p.add_argument("--at", action="append", default=[], metavar="x=1,y=2",
                           help="the point: name=value pairs; values may be constant "
                                "expressions such as pi/4 (repeatable)")
        return p

    for name, spec in COMMANDS.items():
        parser = command(name, spec.help, at=spec.takes_point)
        if name == selected:
            command_module(name).add_arguments(parser)
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
    nargs = top.commands[out[i]].option_nargs
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


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI; returns the exit status (0 ok, 2 bad input, 70 a bug in symad, 130 Ctrl-C)."""
    try:
        return _main(sys.argv[1:] if argv is None else argv)
    except KeyboardInterrupt:
        background.flush_streams()
        return 130
    except Exception as err:  # a bug in symad: still no traceback for the user
        message = f"{type(err).__name__}: {err} (please report this)"
        report_error(asks_json(sys.argv[1:] if argv is None else argv), "InternalError", message, internal=True)
        return 70


def _selected(argv: Sequence[str]) -> str | None:
    """The command named in ``argv``: its first argument that is no option."""
    return next((arg for arg in argv if not arg.startswith("-")), None)


def attach_expression_values(argv: Sequence[str], options: Sequence[str]) -> list[str]:
    """``--eq -x+1`` as ``--eq=-x+1`` for each of ``options`` (whose values are expressions):
    argparse would take a value starting with '-' for an option."""
    out: list[str] = []
    i = 0
    while i < len(argv):
        arg = argv[i]
        if arg == "--":
            return out + list(argv[i:])
        if arg in options and i + 1 < len(argv) and argv[i + 1].startswith("-"):
            out.append(f"{arg}={argv[i + 1]}")
            i += 2
        else:
            out.append(arg)
            i += 1
    return out


def asks_json(argv: Sequence[str]) -> bool:
    """Whether ``argv`` (after :func:`shield_expr`) has ``--json`` (or an abbreviation of it):
    known before the arguments are parsed, so that usage errors are JSON too."""
    for arg in argv:
        if arg == "--":
            return False
        if len(arg) >= 3 and "--json".startswith(arg):
            return True
    return False


def comma_hint(argv: Sequence[str], extras: Sequence[str]) -> str:
    """For ``--at x=1 y=2`` (assignments separated by a space, so ``y=2`` is left over): the
    hint to separate them with commas, ``" (separate assignments with commas: --at x=1,y=2)"``."""
    def assignment(arg: str) -> bool:
        return "=" in arg and not arg.startswith("-")

    for i, arg in enumerate(argv):
        if arg not in extras or not assignment(arg):
            continue
        start = i
        while start > 0 and assignment(argv[start - 1]):
            start -= 1
        end = i
        while end + 1 < len(argv) and assignment(argv[end + 1]):
            end += 1
        values = list(argv[start:end + 1])
        if start > 0 and argv[start - 1].startswith("--") and "=" not in argv[start - 1]:
            flag = argv[start - 1]
        elif start > 0 and argv[start - 1].startswith("--"):
            flag, _, first = argv[start - 1].partition("=")
            values.insert(0, first)
        else:
            return ""
        return f" (separate assignments with commas: {flag} {','.join(values)})"
    return ""


def _main(argv: Sequence[str]) -> int:
    selected = _selected(argv)
    parser = build_parser(selected)
    if selected in COMMANDS:
        argv = attach_expression_values(argv, getattr(command_module(selected), "EXPRESSION_OPTIONS", ()))
    argv, shielded = shield_expr(argv, parser)
    as_json = asks_json(argv)
    try:
        args, extras = parser.parse_known_args(argv)
        if extras:  # reported by the command's parser, with its usage
            owner = parser.commands.get(args.command, parser) if args.command else parser
            shown = [e[1:] if shielded is not None and e == " " + shielded else e for e in extras]
            owner.error(f"unrecognized arguments: {' '.join(shown)}{comma_hint(argv, extras)}")
    except UsageError as err:
        report_error(as_json, "UsageError", err.message, usage=err.usage.strip())
        return 2
    except SystemExit as exit_:  # --help, --version
        return int(exit_.code or 0)
    if shielded is not None and getattr(args, "expr", None) == " " + shielded:
        args.expr = shielded
    if args.command is None:
        parser.print_help()
        return 2
    command = command_module(args.command)
    text, expr = "", None
    # The flags' limits hold for this run only: main() called in-process (tests, notebooks)
    # leaves no trace.
    try:
        with override(max_input_chars=args.max_input, max_nodes=args.max_dag_nodes,
                      max_program_ops=args.max_program_ops, max_document_chars=args.max_document):
            text, expr = read_expression(args.expr, getattr(command, "NEEDS_EXPR", True))
            if loops.has_loops(expr):  # a sum kept as a loop: the commands that take one
                if args.command not in loops.COMMANDS:
                    raise loops.refuse(args.command)
                if args.command in ("grad", "eval"):
                    loops.value_and_grad(args, text, expr, args.command == "grad")
                    return 0
            command.run(args, text, expr)
            if sys.stdout is not None:
                sys.stdout.flush()  # a write error shows here, not at the interpreter's exit
    except SymadError as err:
        report_error(args.json, type(err).__name__, error_message(err, text, expr), error_fields(err))
        return 2
    except KeyboardInterrupt:
        background.flush_streams()
        return 130
    except MemoryError:
        report_error(args.json, "MemoryError", "out of memory")
        return 2
    except BrokenPipeError:  # symad ... | head: the reader has what it wanted
        silence_stdout()
        return 0
    except OSError as err:
        if err.errno not in OUTPUT_ERRNOS:
            raise
        silence_stdout()  # the result could not be written (> /dev/full): said on stderr, stdout being unusable
        report_error(False, "OutputError", f"cannot write the output: {err.strerror}")
        return 2
    return 0
