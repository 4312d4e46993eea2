"""The error catalogue: every kind of error (and warning) the ``symad`` command prints.

``python tests/error_catalogue.py`` runs each command below from the repository
root and writes ``docs/reference/errors.md`` with its exact output and exit status;
``tests/test_error_catalogue.py`` re-runs the commands in the doc and compares,
so the catalogue stays true.  Commands run under ``bash -c`` (so they may use a
pipe for stdin), with ``symad`` and ``python`` this interpreter running the checkout's code
(``python -m symad``), never whatever is first on PATH.
"""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DOC = ROOT / "docs" / "reference" / "errors.md"

# (section, title, explanation, command)
ENTRIES: list[tuple[str, str, str, str]] = [
    # ------------------------------------------------------------ syntax
    ("Syntax errors", "Unexpected end of input",
     "The text stops where more was needed. Every syntax error names the line and column (1-based), "
     "what the grammar expected there, and shows the line with a caret.",
     'symad grad "x*(y+" --at x=1,y=2'),
    ("Syntax errors", "Unexpected operator",
     "", 'symad eval "x*/y" --at x=1,y=2'),
    ("Syntax errors", "Unbalanced parentheses",
     "", 'symad eval "(x+1))" --at x=1'),
    ("Syntax errors", "Implicit multiplication",
     "symad has no implicit multiplication: write `2*x`.", 'symad eval "2x" --at x=1'),
    ("Syntax errors", "Two numbers in a row",
     "", 'symad eval "1..2"'),
    ("Syntax errors", "Numbers in other notations",
     "Only decimal numbers are read: no hexadecimal, no digit separators.", 'symad eval "0x10"'),
    ("Syntax errors", "Numbers in other notations (digit separator)", "", 'symad eval "1_000"'),
    ("Syntax errors", "An unexpected character",
     "The first line quotes the character with Python escapes (`'\\x00'` for a NUL byte, `'\\x1b'` for "
     "an escape), so control characters are visible.", 'symad eval "x $ y" --at x=1,y=2'),
    ("Syntax errors", "A lookalike character",
     "Characters pasted from documents get a hint: `−` `–` `×` `·` `÷` `²` `³` `，` `（` `）` `π` `√`.",
     'symad eval "x × y" --at x=2,y=3'),
    ("Syntax errors", "A lookalike character (superscript)", "", 'symad eval "x²" --at x=2'),
    ("Syntax errors", "An error on a later line",
     "Lines are counted at `\\n`.", "printf 'x +\\n  * y\\n' | symad eval - --at x=1,y=2"),
    ("Syntax errors", "Empty input", "", 'symad eval ""'),
    # ------------------------------------------------------------ names and calls
    ("Names and calls", "Unknown function",
     "The message lists the functions symad knows.", 'symad eval "foo(x)" --at x=1'),
    ("Names and calls", "Wrong number of arguments", "", 'symad eval "atan2(x)" --at x=1'),
    ("Names and calls", "Wrong number of arguments (log)",
     "`log` takes one argument, or two for a base.", 'symad eval "log(x, 2, 3)" --at x=1'),
    ("Names and calls", "A function used as a name", "", 'symad eval "sin*x" --at x=1'),
    # ------------------------------------------------------------ definitions
    ("Definitions", "A name defined twice",
     "Definitions `name = expression;` come before the expression; each name once.",
     'symad eval "a = x; a = y; a*a" --at x=1,y=2'),
    ("Definitions", "Defining a built-in name", "", 'symad eval "pi = 3; pi*x" --at x=1'),
    ("Definitions", "A definition without its semicolon", "", 'symad eval "a = x a*a" --at x=1'),
    ("Definitions", "Definitions without an expression", "", 'symad eval "a = x;" --at x=1'),
    # ------------------------------------------------------------ points
    ("Points (`--at`)", "A variable without a value", "", 'symad grad "x*y" --at x=1'),
    ("Points (`--at`)", "A value for a variable the expression does not use",
     "", 'symad eval "x" --at x=1,z=2'),
    ("Points (`--at`)", "A variable removed by a rewrite",
     "`x - x` is rewritten to 0 when it is built (see [numerics.md](numerics.md)), so it has no variables.",
     'symad eval "x - x" --at x=1'),
    ("Points (`--at`)", "A value that is not a number",
     "Values may be constant expressions (`pi/4`, `exp(1)`), not expressions of variables.",
     'symad eval "x" --at x=abc'),
    ("Points (`--at`)", "A value that is not a constant expression", "", 'symad eval "x" --at x=1+'),
    ("Points (`--at`)", "A pair without `=`", "", 'symad eval "x" --at x'),
    ("Points (`--at`)", "Assignments separated by a space",
     "The assignments of one `--at` (or `--params`) are separated by commas; the command's usage says so.",
     'symad grad "x*y" --at x=1 y=2'),
    ("Points (`--at`)", "A variable given twice", "", 'symad eval "x" --at x=1 --at x=2'),
    ("Points (`--at`)", "`--wrt` with something that is not a name", "", 'symad diff "x*y" --wrt 1x'),
    ("Points (`--at`)", "A parameter also given by `--at`", "",
     'symad grad "a*x" --at x=1,a=2 --params a=3'),
    ("Points (`--at`)", "A parameter the expression does not use", "", 'symad grad "a*x" --at x=1 --params b=3'),
    # ------------------------------------------------------------ input files
    ("Reading the expression", "A missing file", "`@FILE` reads the expression from a file.",
     "symad eval @missing.txt --at x=1"),
    ("Reading the expression", "A directory", "", "symad eval @docs --at x=1"),
    ("Reading the expression", "A comment in an argument",
     "`#` starts a comment (to the end of the line) in text read from a file or stdin, not in an "
     "argument.", 'symad eval "x^2  # the square" --at x=1'),
    ("Reading the expression", "A file that is not UTF-8", "",
     "printf 'x*\\351' > /tmp/symad-latin1.txt && symad eval @/tmp/symad-latin1.txt --at x=1"),
    # ------------------------------------------------------------ limits
    ("Limits", "Input too long",
     "Each limit's error names the limit and how to raise it; see [limits.md](limits.md).",
     'symad eval "x+x+x+x" --at x=1 --max-input 5'),
    ("Limits", "Expression graph too large",
     "The node limit counts every node built, derivatives included (`symad grad` evaluates the gradient "
     "numerically and builds none; `symad diff` builds it).",
     'symad diff "sin(x)*cos(y)" --max-dag-nodes 6'),
    ("Limits", "Compiled program too large",
     "A program (value and gradient, compiled or interpreted) may have at most 4,000,000 operations; "
     "raise it with `--max-program-ops`, or in Python with "
     "`with symad.core.limits.override(max_program_ops=10**7): ...`. Shown here from Python, "
     "with the limit lowered to 2.",
     "python -c 'import symad, symad.core.limits as L; L.LIMITS.max_program_ops = 2; "
     "symad.parse(\"sin(x)*cos(y)\").compile().value(x=1, y=2)' 2>&1 | grep '^symad.core.errors'"),
    ("Limits", "A limit flag that is not a number", "", 'symad eval "x" --at x=1 --max-input lots'),
    # ------------------------------------------------------------ usage
    ("Usage errors", "No command", "`symad` alone prints the help (on stdout) and exits with status 2.",
     "symad >/dev/null"),
    ("Usage errors", "An unknown command", "", "symad frob x"),
    ("Usage errors", "A missing expression", "", "symad eval --at x=1"),
    ("Usage errors", "A literal that underflows",
     "A number too small for a double is 0, and may take a variable with it.",
     'symad eval "x*1e-400" --at x=1'),
    ("Usage errors", "An unknown option", "", 'symad eval "x" --at x=1 --bogus'),
    ("Usage errors", "Errors in JSON",
     "With `--json` every error is one JSON object on stdout, `{\"error\": {\"type\": ..., \"message\": ...}}`, "
     "with a syntax error's `line`, `column` and `expected`, a usage error's `usage` "
     "([cli.md](../guide/cli.md#errors-and-warnings)); the exit status is 2 as ever.",
     'symad eval "2*x +" --at x=1 --json; symad eval "x" --at x=1 --bogus --json'),
    # ------------------------------------------------------------ warnings
    ("Non-finite results (warnings, exit status 0)", "Division by zero",
     "Values outside a function's domain follow IEEE arithmetic; the command succeeds and says on "
     "stderr where the first non-finite value arose. See [numerics.md](numerics.md).",
     'symad grad "sqrt(x)" --at x=0'),
    ("Non-finite results (warnings, exit status 0)", "Outside the domain", "", 'symad eval "log(x)" --at x=-1'),
    ("Non-finite results (warnings, exit status 0)", "Overflow", "", 'symad eval "exp(x)" --at x=1000'),
    ("Non-finite results (warnings, exit status 0)", "A nan from a constant",
     "When the nan was typed, there is no subexpression to blame.", 'symad eval "x + nan" --at x=1'),
    ("Non-finite results (warnings, exit status 0)", "Warnings in JSON",
     "With `--json` the warnings are a list in the object, and non-finite numbers are strings.",
     'symad grad "1/x" --at x=0 --json'),
    ("Minimize", "A setting out of range",
     "Tolerances and learning rates are positive, `--max-iter` at least 1. A run that does not reach a "
     "stationary point (unbounded below, non-finite, stalled, out of iterations) warns on stderr and, "
     "with `--strict`, exits with status 1.",
     'symad minimize "x^2" --from x=1 --tol 0'),
]


def run(command: str) -> tuple[str, int]:
    """The command's stdout followed by its stderr, and its exit status."""
    env = dict(os.environ, COLUMNS="100", PYTHONPATH=str(ROOT))
    py = shlex.quote(sys.executable)
    checkout = f'symad() {{ {py} -m symad "$@"; }}; python() {{ {py} "$@"; }}; '
    p = subprocess.run(["bash", "-c", checkout + command], cwd=ROOT, capture_output=True, text=True, timeout=120,
                       stdin=subprocess.DEVNULL, env=env)
    return (p.stdout + p.stderr).rstrip("\n"), p.returncode


INTRO = """# Error catalogue

Every kind of error the `symad` command prints, with the exact command and output. Errors go to
stderr as `symad: error: ...` and exit with status 2; a usage error first prints the usage line.
Warnings (`symad: warning: ...`) do not change the exit status. Exit status 70 with
`symad: internal error: ...` means a bug in symad: please report it. A traceback is never printed.

In Python the same errors are exceptions, all subclasses of `symad.SymadError`: `ParseError`
(with `.line`, `.column`, `.expected`; `UnknownFunctionError` is a subclass), `VariableError`,
`PointError`, `NameRuleError` and `LimitError`. With `--json` an error is one JSON object on
stdout instead ([Errors in JSON](#errors-in-json)).

This file is generated by `python tests/error_catalogue.py`, which runs every command below from
the repository root; `tests/test_error_catalogue.py` runs them again and compares.
"""


def markdown() -> str:
    """The text of ``docs/reference/errors.md`` (runs every command)."""
    parts = [INTRO]
    section = None
    for sec, title, note, command in ENTRIES:
        if sec != section:
            parts.append(f"## {sec}\n")
            section = sec
        output, status = run(command)
        parts.append(f"### {title}\n")
        if note:
            parts.append(f"{note}\n")
        shown = f"$ {command}\n{output}" if output else f"$ {command}"
        parts.append(f"```console\n{shown}\n```\nexit status {status}\n")
    return "\n".join(parts)


if __name__ == "__main__":
    DOC.write_text(markdown(), encoding="utf-8")
    print(f"wrote {DOC}")
