"""Source code for a schedule, in C99 or in plain Python: the native backend's straight-line code.

Each step is the op table's LLVM lowering (:data:`symad.core.ops.OPS`) read back as source.
The lowerings use a small set of instructions (``fadd``, ``fcmp``, ``select``, calls of the
C library, a bit cast for the sign of a zero); each is one expression of the target
language with the same IEEE meaning, so the C computes what the native code computes, bit
for bit, and the Python the same wherever Python's ``math`` does not raise (it raises
``ValueError``/``ZeroDivisionError``/``OverflowError`` where IEEE gives inf or nan).  No
user text reaches the source: names are generated, numbers are literals of the exact bits.
"""

from __future__ import annotations

import math
import re
import struct
from dataclasses import dataclass

from symad.backends.schedule import Schedule
from symad.core.errors import SymadError
from symad.core.ops import OPS, Inline
from symad.core.semantics import small_power_step

_BINARY = {"fadd": "+", "fsub": "-", "fmul": "*", "fdiv": "/"}
_COMPARE = {"oeq": "==", "une": "!=", "olt": "<", "ole": "<=", "ogt": ">", "oge": ">="}
_LINE = re.compile(r"(\S+) = (\w+) (.*)")
_CALL = re.compile(r"double @([\w.]+)\((.*)\)")


@dataclass(frozen=True)
class Dialect:
    """How one target language writes the lowerings' instructions."""

    types: dict[str, str]  # LLVM type -> declared type ("" for none)
    declare: str  # a line: {type} {name} {value}
    double: str  # "c" or "python": how literals are written
    unordered: str  # fcmp uno of {0}, {1}
    select: str
    to_double: str
    logical: dict[str, str]  # and/or of i1 values
    functions: dict[str, str]  # C library name -> the target's call, where they differ
    helpers: dict[str, str]  # function -> its definition, emitted when used


C = Dialect(
    types={"double": "const double", "i1": "const int", "i64": "const uint64_t"},
    declare="{type} {name} = {value};", double="c", unordered="isunordered({0}, {1})",
    select="{0} ? {1} : {2}", to_double="(double){0}", logical={"and": "{0} & {1}", "or": "{0} | {1}"},
    functions={"symad_bits": "symad_bits", "symad_double": "symad_double"},
    helpers={
        "symad_bits": "static uint64_t symad_bits(double d) { uint64_t b; memcpy(&b, &d, sizeof b); return b; }",
        "symad_double": "static double symad_double(uint64_t b) { double d; memcpy(&d, &b, sizeof d); return d; }",
    })

PYTHON = Dialect(
    types={"double": "", "i1": "", "i64": ""},
    declare="{name} = {value}", double="python", unordered="({0} != {0} or {1} != {1})",
    select="({1} if {0} else {2})", to_double="float({0})", logical={"and": "({0} and {1})", "or": "({0} or {1})"},
    functions={"symad_bits": "_bits", "symad_double": "_double", "fabs": "math.fabs", "round": "_round",
               "floor": "_floor", "ceil": "_ceil", **{f: f"math.{f}" for f in (
                   "sin", "cos", "tan", "asin", "acos", "atan", "atan2", "sinh", "cosh", "tanh", "asinh", "acosh",
                   "atanh", "exp", "expm1", "log", "log1p", "sqrt", "cbrt", "pow", "hypot", "erf", "erfc")}},
    helpers={
        "_bits": "def _bits(d):\n    return struct.unpack('<Q', struct.pack('<d', d))[0]",
        "_double": "def _double(b):\n    return struct.unpack('<d', struct.pack('<Q', b))[0]",
        "_round": ("def _round(x):  # C's round: halfway cases away from zero\n"
                   "    if not math.isfinite(x):\n        return x\n    t = float(math.trunc(x))\n"
                   "    if abs(x - t) >= 0.5:\n        t += math.copysign(1.0, x)\n    return math.copysign(t, x)"),
        "_floor": ("def _floor(x):  # C's floor: a float, inf and nan kept, the sign of a zero too\n"
                   "    return x if not math.isfinite(x) else math.copysign(float(math.floor(x)), x)"),
        "_ceil": ("def _ceil(x):\n"
                  "    return x if not math.isfinite(x) else math.copysign(float(math.ceil(x)), x)"),
    })


def c_name(symbol: str) -> str:
    """The C library's name of a function the lowering calls (``llvm.sin.f64`` is ``sin``)."""
    return symbol[5:-4] if symbol.startswith("llvm.") and symbol.endswith(".f64") else symbol


def literal(value: float, language: str) -> str:
    """A literal with the exact bits of ``value`` (Python's ``repr`` is also exact in C)."""
    if language == "python":
        if math.isnan(value):
            return "math.nan"
        if math.isinf(value):
            return "math.inf" if value > 0 else "(-math.inf)"
        return repr(value) if math.copysign(1.0, value) > 0 else f"({value!r})"
    if math.isnan(value):
        return "NAN"
    if math.isinf(value):
        return "INFINITY" if value > 0 else "(-INFINITY)"
    # Python's shortest repr reads back as the same double in C too (C99 decimal literals are
    # correctly rounded by GCC and Clang); it is what the expression printed.
    text = repr(value)
    return f"({text})" if text.startswith("-") else text


class _Translator:
    """LLVM IR lines of the op table's lowerings, as declarations of one dialect."""

    def __init__(self, dialect: Dialect) -> None:
        self.d = dialect
        self.used: set[str] = set()  # helper functions called
        self.args: dict[str, str] = {}  # the lowering's arguments %a0, %a1, ... as source text

    def call(self, function: str, args: list[str]) -> str:
        name = self.d.functions.get(function, function)
        if name in self.d.helpers:
            self.used.add(name)
        return f"{name}({', '.join(args)})"

    def operand(self, text: str) -> str:
        text = text.strip()
        if text.startswith("%"):
            return self.args.get(text[1:], text[1:])
        if re.fullmatch(r"0x[0-9A-Fa-f]{16}", text):  # LLVM's hex double: the bits
            return literal(struct.unpack("<d", struct.pack("<Q", int(text, 16)))[0], self.d.double)
        return literal(float(text), self.d.double)

    def line(self, ir: str) -> str:
        """The declaration of one IR line ``%name = instruction ...``."""
        m = _LINE.fullmatch(ir.strip())
        if m is None:
            raise SymadError(f"cannot read the lowering line {ir.strip()!r}")
        name, instr, rest = m.group(1)[1:], m.group(2), m.group(3)
        kind, value = self._value(instr, rest)
        return self.d.declare.format(type=self.d.types[kind], name=name, value=value).replace("  ", " ").strip()

    def _value(self, instr: str, rest: str) -> tuple[str, str]:
        if instr in _BINARY:
            a, b = rest.removeprefix("double ").split(",")
            return "double", f"{self.operand(a)} {_BINARY[instr]} {self.operand(b)}"
        if instr == "fneg":
            return "double", f"-{self.operand(rest.removeprefix('double '))}"
        if instr == "fcmp":
            pred, rest = rest.split(" ", 1)
            a, b = (self.operand(x) for x in rest.removeprefix("double ").split(","))
            if pred == "uno":
                return "i1", self.d.unordered.format(a, b)
            return "i1", f"{a} {_COMPARE[pred]} {b}"
        if instr == "select":
            c, a, b = (p.strip().split() for p in rest.split(","))
            return a[0], self.d.select.format(self.operand(c[1]), self.operand(a[1]), self.operand(b[1]))
        if instr == "uitofp":
            return "double", self.d.to_double.format(self.operand(rest.split()[1]))
        if instr in ("and", "or"):
            kind, operands = rest.split(" ", 1)
            a, b = (self.operand(x) for x in operands.split(","))
            if kind == "i1":
                return "i1", self.d.logical[instr].format(a, b)
            return kind, f"{a} {'&' if instr == 'and' else '|'} {b}"
        if instr == "bitcast":
            kind, value, _, to = rest.split()
            return to, self.call("symad_bits" if kind == "double" else "symad_double", [self.operand(value)])
        if instr == "call":
            cm = _CALL.fullmatch(rest.strip().removesuffix(" #0"))
            if cm is None:
                raise SymadError(f"cannot read the call {rest!r}")
            args = [self.operand(a.strip().removeprefix("double ")) for a in cm.group(2).split(",")]
            return "double", self.call(c_name(cm.group(1)), args)
        raise SymadError(f"no source for the instruction {instr!r}")


def straight_line(schedule: Schedule, dialect: Dialect, x: str = "x") -> tuple[list[str], list[str], list[str]]:
    """Source lines computing the schedule from ``x[k]``: the lines, each output's expression,
    and the definitions of the helpers they call."""
    tr = _Translator(dialect)
    names: dict[int, str] = {node: literal(c, dialect.double) for node, c in schedule.consts.items()}
    for k, node in enumerate(schedule.inputs):
        names[node] = f"{x}[{k}]"
    lines: list[str] = []
    consts = schedule.consts
    for node, op, args in schedule.steps:
        vals = [names[a] for a in args]
        r = f"v{node}"
        k = None if all(a in consts for a in args) else small_power_step(consts, op, args)
        if k is not None:  # x^k as the products every evaluator computes
            product = " * ".join([vals[0]] * abs(k))
            value = product if k > 0 else f"1.0 / ({product})"
            lines.append(dialect.declare.format(type=dialect.types["double"], name=r, value=value).strip())
        else:
            lowering = OPS[op].llvm
            if isinstance(lowering, Inline):
                tr.args = {f"a{j}": v for j, v in enumerate(vals)}
                template = lowering.template.format(*(f"%a{j}" for j in range(len(vals))), r=f"%{r}", t=f"%t{node}_")
                lines += [tr.line(ir) for ir in template.split("\n")]
            else:
                value = tr.call(c_name(lowering.symbol), vals)
                lines.append(dialect.declare.format(type=dialect.types["double"], name=r, value=value).strip())
        names[node] = r
    return lines, [names[node] for node in schedule.outputs], [dialect.helpers[h] for h in sorted(tr.used)]
