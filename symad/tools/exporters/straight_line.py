"""Source code for a schedule, in C99 or in plain Python: the native backend's straight-line code.

Each step of the lowered schedule is its op's LLVM lowering
(:data:`symad.schedule.lowering.PRIMITIVES`) read back as source.
The lowerings use a small set of instructions (``fadd``, ``fcmp``, ``select``, calls of the
C library, a bit cast for the sign of a zero); each is one expression of the target
language with the same IEEE meaning, so the C computes what the native code computes, bit
for bit, and the Python too: where Python raises and IEEE gives inf or nan (``1/0``,
``math.log(0)``, ``math.exp(1000)``), a small helper, emitted when used, returns IEEE's value.
The C is straight-line, as the native code; the Python computes a step needed only in one
arm of a select (``where``) inside an ``if`` on its condition, so an arm not taken costs
nothing.  No user text reaches the source: names are generated, numbers are literals of
the exact bits.
"""

from __future__ import annotations

import heapq
import math
import re
import struct
from collections import Counter
from dataclasses import dataclass

from symad.core.errors import SymadError
from symad.core.ops import OPS, Call, Inline
from symad.schedule.lowering import PRIMITIVES, SELECT, Step
from symad.schedule.schedule import Schedule

_BINARY = {"fadd": "+", "fsub": "-", "fmul": "*", "fdiv": "/"}
_COMPARE = {"oeq": "==", "une": "!=", "olt": "<", "ole": "<=", "ogt": ">", "oge": ">="}
_LINE = re.compile(r"(\S+) = (\w+) (.*)")
_CALL = re.compile(r"double @([\w.]+)\((.*)\)")

# Where a step is computed: the conditions of the selects it serves, outermost first, each
# with the value it has there (True: not 0).  () is unconditional.
Guard = tuple[tuple[int, bool], ...]
ARMS = (1, 2)  # the operands a select(c, a, b) chooses between: a where c is not 0, else b


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
    divide: str  # {0} / {1} where {1} may be zero
    functions: dict[str, str]  # C library name -> the target's call, where they differ
    helpers: dict[str, str]  # function -> its definition, emitted when used
    any_function: bool  # whether a C library function not in `functions` is called as it is
    branches: tuple[str, str, str] | None = None  # blocks on a condition: if true, if false, else


C = Dialect(
    types={"double": "const double", "i1": "const int", "i64": "const uint64_t"},
    declare="{type} {name} = {value};", double="c", unordered="isunordered({0}, {1})",
    select="{0} ? {1} : {2}", to_double="(double){0}", logical={"and": "{0} & {1}", "or": "{0} | {1}"},
    divide="{0} / {1}", functions={"symad_bits": "symad_bits", "symad_double": "symad_double"},
    helpers={
        "symad_bits": "static uint64_t symad_bits(double d) { uint64_t b; memcpy(&b, &d, sizeof b); return b; }",
        "symad_double": "static double symad_double(uint64_t b) { double d; memcpy(&d, &b, sizeof d); return d; }",
    }, any_function=True)


def c_name(symbol: str) -> str:
    """The C library's name of a function the lowering calls (``llvm.sin.f64`` is ``sin``)."""
    return symbol[5:-4] if symbol.startswith("llvm.") and symbol.endswith(".f64") else symbol


def _total(f: str, value: str) -> str:
    """A helper calling ``math.f``, returning C's ``value`` where ``math`` raises (it raises only
    where the C library's result is inf or nan)."""
    return (f"def _{f}(x):  # C's {f}: math's, and IEEE's value where math raises\n    try:\n"
            f"        return math.{f}(x)\n    except (ValueError, OverflowError):\n        return {value}")


# The C library functions the lowerings call that `math` has by the same name (the op's `py`):
# math's, through a helper returning C's value where math raises (the op's `math_raises`).
_MATH = {c_name(s.llvm.symbol): s for s in OPS.values()
         if isinstance(s.llvm, Call) and s.math_name == c_name(s.llvm.symbol)}
_RAISING = {f: s.math_raises for f, s in _MATH.items() if s.math_raises}
_PY_HELPERS = {f"_{f}": _total(f, value) for f, value in _RAISING.items()}
_PY_HELPERS.update({
    "_bits": "def _bits(d):\n    return struct.unpack('<Q', struct.pack('<d', d))[0]",
    "_double": "def _double(b):\n    return struct.unpack('<d', struct.pack('<Q', b))[0]",
    "_div": ("def _div(a, b):  # a / b for b = ±0, as IEEE divides: ±inf, or nan for 0/0\n"
             "    if a != a or a == 0.0:\n        return math.nan\n"
             "    return math.copysign(math.inf, a) * math.copysign(1.0, b)"),
    "_pow": ("def _pow(x, y):  # C's pow: math's, and IEEE's value where math raises\n    try:\n"
             "        return math.pow(x, y)\n    except ValueError:  # a negative base, a non-integer y: nan\n"
             "        if x != 0.0:\n            return math.nan\n"
             "    except OverflowError:\n        pass\n"
             "    return math.copysign(math.inf, x) if y % 2.0 == 1.0 else math.inf  # odd y keeps x's sign"),
    # math.hypot is another algorithm than the C library's (other bits on ~0.1% of points)
    "_hypot": ("def _c_hypot():\n    try:\n        fn = ctypes.CDLL(None).hypot\n"
               "    except (OSError, AttributeError):  # no C library to load: math's (last bits may differ)\n"
               "        return math.hypot\n"
               "    fn.argtypes, fn.restype = (ctypes.c_double, ctypes.c_double), ctypes.c_double\n"
               "    return fn\n\n\n_hypot = _c_hypot()"),
    "_round": ("def _round(x):  # C's round: halfway cases away from zero\n"
               "    if not math.isfinite(x):\n        return x\n    t = float(math.trunc(x))\n"
               "    if abs(x - t) >= 0.5:\n        t += math.copysign(1.0, x)\n    return math.copysign(t, x)"),
    "_floor": ("def _floor(x):  # C's floor: a float, inf and nan kept, the sign of a zero too\n"
               "    return x if not math.isfinite(x) else math.copysign(float(math.floor(x)), x)"),
    "_ceil": ("def _ceil(x):\n"
              "    return x if not math.isfinite(x) else math.copysign(float(math.ceil(x)), x)"),
})

PYTHON = Dialect(
    types={"double": "", "i1": "", "i64": ""},
    declare="{name} = {value}", double="python", unordered="({0} != {0} or {1} != {1})",
    select="({1} if {0} else {2})", to_double="float({0})", logical={"and": "({0} and {1})", "or": "({0} or {1})"},
    divide="({0} / {1} if {1} else _div({0}, {1}))",
    functions={"symad_bits": "_bits", "symad_double": "_double", "fabs": "math.fabs",
               **{f: f"math.{f}" for f, s in _MATH.items() if not s.math_raises},  # never raise
               **{name[1:]: name for name in _PY_HELPERS if name not in ("_bits", "_double", "_div")}},
    helpers=_PY_HELPERS, any_function=False, branches=("if {0} != 0.0:", "if {0} == 0.0:", "else:"))


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


class Translator:
    """LLVM IR lines of the op table's lowerings, as declarations of one dialect."""

    def __init__(self, dialect: Dialect) -> None:
        self.d = dialect
        self.used: set[str] = set()  # helper functions called
        self.args: dict[str, str] = {}  # the lowering's arguments %a0, %a1, ... as source text
        self.nonzero: set[str] = set()  # source texts of numbers other than ±0 (safe divisors)

    def call(self, function: str, args: list[str]) -> str:
        name = self.d.functions.get(function, function if self.d.any_function else None)
        if name is None:
            raise SymadError(f"no Python for the C library function {function!r}: add it to "
                             "symad.tools.exporters.straight_line.PYTHON")
        return self._using(f"{name}({', '.join(args)})")

    def divide(self, a: str, b: str) -> str:
        return f"{a} / {b}" if b in self.nonzero else self._using(self.d.divide.format(a, b))

    def _using(self, text: str) -> str:
        self.used.update(h for h in self.d.helpers if f"{h}(" in text)
        return text

    def operand(self, text: str) -> str:
        text = text.strip()
        if text.startswith("%"):
            return self.args.get(text[1:], text[1:])
        if re.fullmatch(r"0x[0-9A-Fa-f]{16}", text):  # LLVM's hex double: the bits
            value = struct.unpack("<d", struct.pack("<Q", int(text, 16)))[0]
        else:
            value = float(text)
        out = literal(value, self.d.double)
        if value != 0.0:
            self.nonzero.add(out)
        return out

    def line(self, ir: str) -> str:
        """The declaration of one IR line ``%name = instruction ...``."""
        m = _LINE.fullmatch(ir.strip())
        if m is None:
            raise SymadError(f"cannot read the lowering line {ir.strip()!r}")
        name, instr, rest = m.group(1)[1:], m.group(2), m.group(3)
        kind, value = self._value(instr, rest)
        return self.declare(name, value, kind)

    def declare(self, name: str, value: str, kind: str = "double") -> str:
        return self.d.declare.format(type=self.d.types[kind], name=name, value=value).replace("  ", " ").strip()

    def _value(self, instr: str, rest: str) -> tuple[str, str]:
        if instr == "fdiv":
            a, b = rest.removeprefix("double ").split(",")
            return "double", self.divide(self.operand(a), self.operand(b))
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


# ===================================================================== selects as branches
def _decided(guard: Guard, condition: int) -> bool | None:
    """The value ``condition`` has inside ``guard``, or None if the guard does not test it."""
    return next((truth for c, truth in guard if c == condition), None)


def _common(a: Guard, b: Guard) -> Guard:
    """The guards' common prefix: the innermost block enclosing both."""
    n = 0
    while n < min(len(a), len(b)) and a[n] == b[n]:
        n += 1
    return a[:n]


def guards(schedule: Schedule) -> dict[int, Guard | None]:
    """Each step's guard: where its value is needed, the selects' conditions it sits under, or
    None where it is needed only in arms that are never taken.  A step is computed once, in
    the innermost block enclosing all its uses (so a step shared with the unconditional part
    stays there); a select passes its guard plus its condition to each arm.

    >>> import symad
    >>> from symad.core.dag import Graph
    >>> e = symad.parse("where(x > 0, sqrt(x), 0)", Graph())
    >>> s = Schedule.build(e.graph, [e.id], [e.graph.var("x")])
    >>> [(op, guards(s)[node]) for node, op, _ in s.steps]
    [('gt', ()), ('sqrt', ((2, True),)), ('select', ())]
    """
    need: dict[int, Guard] = {node: () for node in schedule.outputs}
    placed: dict[int, Guard | None] = {}
    for node, op, args in reversed(schedule.steps):
        guard = placed[node] = need.get(node)
        if guard is None:
            continue
        arms = ARMS if op == SELECT else ()
        taken = _decided(guard, args[0]) if arms else None
        for k, a in enumerate(args):
            if taken is not None:  # the guard decides the select: only its arm is needed
                if k != arms[0 if taken else 1]:
                    continue
                inner = guard
            else:
                inner = guard + ((args[0], k == arms[0]),) if k in arms else guard
            need[a] = _common(need[a], inner) if a in need else inner
    return placed


def _block_order(steps: list[Step], placed: dict[int, Guard | None], alias: dict[int, int]) -> list[Step]:
    """The steps to compute (neither dead nor an alias of an arm), children first and each
    guard's conditions before the steps it guards, keeping a block's steps together: the ones
    ready in the current block first, then those of a block inside it (the one the schedule
    reaches first), then of its ``else``, then back to the enclosing block."""
    index = {node: i for i, (node, _, _) in enumerate(steps) if placed[node] is not None and node not in alias}
    first: dict[Guard, int] = {}  # each block (every prefix of a guard) -> the first step inside it
    waiting: dict[int, int] = {}
    users: dict[int, list[int]] = {}
    for node, i in index.items():
        guard: Guard = placed[node]  # type: ignore[assignment]
        for d in range(len(guard) + 1):
            first.setdefault(guard[:d], i)
        needs = {alias.get(a, a) for a in (*steps[i][2], *(c for c, _ in guard))} & index.keys()
        waiting[node] = len(needs)
        for a in needs:
            users.setdefault(a, []).append(node)
    ready: dict[Guard, list[int]] = {}  # each block's ready steps (a heap of indices)
    below: Counter[Guard] = Counter()  # ready steps in each block and the blocks inside it
    inner: dict[Guard, list[tuple[int, Guard]]] = {}  # blocks inside each that have (had) ready steps

    def add(node: int) -> None:
        guard: Guard = placed[node]  # type: ignore[assignment]
        heapq.heappush(ready.setdefault(guard, []), index[node])
        for d in range(len(guard) + 1):
            below[guard[:d]] += 1
            if d and below[guard[:d]] == 1:
                heapq.heappush(inner.setdefault(guard[:d - 1], []), (first[guard[:d]], guard[:d]))

    for node, n in waiting.items():
        if n == 0:
            add(node)
    order: list[Step] = []
    block: Guard = ()
    while below[()]:
        if not ready.get(block):
            heap = inner.get(block, [])
            while heap and not below[heap[0][1]]:
                heapq.heappop(heap)
            if heap:
                block = heap[0][1]
            elif block and block[-1][1] and below[block[:-1] + ((block[-1][0], False),)]:
                block = block[:-1] + ((block[-1][0], False),)  # its else
            else:
                block = block[:-1]
            continue
        step = steps[heapq.heappop(ready[block])]
        for d in range(len(block) + 1):
            below[block[:d]] -= 1
        order.append(step)
        for u in users.get(step[0], ()):
            waiting[u] -= 1
            if waiting[u] == 0:
                add(u)
    if len(order) != len(index):
        raise SymadError("internal: a select's guards form a cycle")
    return order


def straight_line(schedule: Schedule, dialect: Dialect, x: str = "x") -> tuple[list[str], list[str], list[str]]:
    """Source lines computing the schedule from ``x[k]``: the lines (indented inside the
    dialect's blocks, if it has them), each output's expression, and the definitions of the
    helpers they call."""
    tr = Translator(dialect)
    names: dict[int, str] = {node: literal(c, dialect.double) for node, c in schedule.consts.items()}
    tr.nonzero.update(names[node] for node, c in schedule.consts.items() if c != 0.0)
    for k, node in enumerate(schedule.inputs):
        names[node] = f"{x}[{k}]"
    steps, placed = schedule.steps, {node: () for node, _, _ in schedule.steps}
    alias: dict[int, int] = {}  # a select its block decides -> the arm taken
    if dialect.branches is not None and any(op == SELECT for _, op, _ in steps):
        placed = guards(schedule)
        for node, op, args in steps:
            guard = placed[node]
            taken = _decided(guard, args[0]) if op == SELECT and guard is not None else None
            if taken is not None:
                arm = args[ARMS[0 if taken else 1]]
                alias[node] = alias.get(arm, arm)
        steps = _block_order(steps, placed, alias)
    lines: list[str] = []
    block: Guard = ()
    for node, op, args in steps:
        guard: Guard = placed[node]  # type: ignore[assignment]
        if guard != block:
            lines += _enter(block, guard, dialect, names, alias)
            block = guard
        vals = [names[alias.get(a, a)] for a in args]
        r = f"v{node}"
        lowering = PRIMITIVES[op].llvm
        if isinstance(lowering, Inline):
            tr.args = {f"a{j}": v for j, v in enumerate(vals)}
            template = lowering.template.format(*(f"%a{j}" for j in range(len(vals))), r=f"%{r}", t=f"%t{node}_")
            body = [tr.line(ir) for ir in template.split("\n")]
        else:
            body = [tr.declare(r, tr.call(c_name(lowering.symbol), vals))]
        lines += ["    " * len(block) + line for line in body]
        names[node] = r
    return (lines, [names[alias.get(node, node)] for node in schedule.outputs],
            [dialect.helpers[h] for h in sorted(tr.used)])


def _enter(block: Guard, guard: Guard, dialect: Dialect, names: dict[int, str], alias: dict[int, int]) -> list[str]:
    """The lines leaving ``block`` for ``guard``: an ``else`` where a block on a condition
    gives way to its false side, else an ``if`` for each condition entered."""
    if_true, if_false, otherwise = dialect.branches  # type: ignore[misc]
    depth = len(_common(block, guard))
    lines = []
    for d in range(depth, len(guard)):
        c, truth = guard[d]
        if d == depth and len(block) > d and block[d] == (c, True) and not truth:
            lines.append("    " * d + otherwise)
        else:
            lines.append("    " * d + (if_true if truth else if_false).format(names[alias.get(c, c)]))
    return lines
