"""One implementation, every backend: a function written once as straight-line steps, run on
Python floats, on NumPy arrays, or traced into the LLVM IR of an :class:`~symad.core.ops.table.Inline`
lowering.

A kernel is a Python function ``kernel(m, *args)`` that computes only with ``+ - *`` and unary
``-`` on its values and float constants, and with the methods of ``m``: ``div``, ``log``, ``exp``,
``fabs``, ``floor``, ``pow``, ``erfc``, comparisons giving conditions, ``both``/``either`` of conditions and
``where(c, a, b)``.  Every step is an IEEE operation or one C library call (``log``, ``exp``,
``pow``, ``erfc``), each evaluator takes the same steps in the same order, so all give the same bits; both
arms of a ``where`` are always computed (no branch), as LLVM's ``select`` does.  The IR uses only
the instructions the C and Python exporters read (``fadd``, ``fcmp``, ``select``, calls).
"""

from __future__ import annotations

import math
import re
import struct
from collections.abc import Callable
from typing import Any

from symad.core import semantics as sem
from symad.core.ops.table import OPS, Call, Inline


# ===================================================================== Python floats
def _log(x: float) -> float:
    if x > 0.0:
        return math.log(x)
    return -math.inf if x == 0.0 else math.nan


def _exp(x: float) -> float:
    try:
        return math.exp(x)
    except OverflowError:
        return math.inf


def _div(a: float, b: float) -> float:
    if b != 0.0:
        return a / b
    if a != a or a == 0.0:
        return math.nan
    return math.copysign(math.inf, a) * math.copysign(1.0, b)


def _floor(x: float) -> float:
    return x if not math.isfinite(x) else math.copysign(float(math.floor(x)), x)


def _pow(x: float, y: float) -> float:
    try:
        return math.pow(x, y)
    except ValueError:
        if x != 0.0:
            return math.nan
    except OverflowError:
        pass
    return math.copysign(math.inf, x) if y % 2.0 == 1.0 else math.inf


class Floats:
    """Python floats: the op's ``py``."""

    div, log, exp, floor, pow, fabs = staticmethod(_div), staticmethod(_log), staticmethod(_exp), \
        staticmethod(_floor), staticmethod(_pow), staticmethod(math.fabs)
    erfc = staticmethod(math.erfc)  # the C library's (the erfc op's py)

    @staticmethod
    def where(c: bool, a: float, b: float) -> float:
        return a if c else b

    lt = staticmethod(lambda a, b: a < b)
    le = staticmethod(lambda a, b: a <= b)
    gt = staticmethod(lambda a, b: a > b)
    ge = staticmethod(lambda a, b: a >= b)
    eq = staticmethod(lambda a, b: a == b)
    ne = staticmethod(lambda a, b: a != b)
    both = staticmethod(lambda a, b: a and b)
    either = staticmethod(lambda a, b: a or b)


# ===================================================================== NumPy arrays
class Arrays:
    """NumPy arrays (the C library's ``log``/``exp``/``pow`` where NumPy's own differ): the op's ``np``."""

    @staticmethod
    def div(a: Any, b: Any) -> Any:
        return sem.numpy().divide(a, b)

    log, exp = staticmethod(sem.np_log), staticmethod(sem.np_exp)
    erfc = staticmethod(sem.each_libm(math.erfc))
    pow = staticmethod(sem.np_pow)

    @staticmethod
    def floor(x: Any) -> Any:
        return sem.numpy().floor(x)

    @staticmethod
    def fabs(x: Any) -> Any:
        return sem.numpy().fabs(x)

    @staticmethod
    def where(c: Any, a: Any, b: Any) -> Any:
        return sem.numpy().where(c, a, b)

    lt = staticmethod(lambda a, b: sem.numpy().less(a, b))
    le = staticmethod(lambda a, b: sem.numpy().less_equal(a, b))
    gt = staticmethod(lambda a, b: sem.numpy().greater(a, b))
    ge = staticmethod(lambda a, b: sem.numpy().greater_equal(a, b))
    eq = staticmethod(lambda a, b: sem.numpy().equal(a, b))
    ne = staticmethod(lambda a, b: sem.numpy().not_equal(a, b))
    both = staticmethod(lambda a, b: sem.numpy().logical_and(a, b))
    either = staticmethod(lambda a, b: sem.numpy().logical_or(a, b))


# ===================================================================== LLVM IR
def _literal(v: Any) -> str:
    if isinstance(v, Value):
        return v.name
    return f"0x{struct.unpack('<Q', struct.pack('<d', float(v)))[0]:016X}"


class Value:
    """An SSA value of the traced IR (a double, or an ``i1`` condition)."""

    __slots__ = ("name", "trace")

    def __init__(self, trace: Trace, name: str):
        self.trace, self.name = trace, name

    def _binary(self, instr: str, a: Any, b: Any) -> Value:
        return self.trace.emit(f"{instr} double {_literal(a)}, {_literal(b)}")

    def __add__(self, o: Any) -> Value:
        return self._binary("fadd", self, o)

    def __radd__(self, o: Any) -> Value:
        return self._binary("fadd", o, self)

    def __sub__(self, o: Any) -> Value:
        return self._binary("fsub", self, o)

    def __rsub__(self, o: Any) -> Value:
        return self._binary("fsub", o, self)

    def __mul__(self, o: Any) -> Value:
        return self._binary("fmul", self, o)

    def __rmul__(self, o: Any) -> Value:
        return self._binary("fmul", o, self)

    def __neg__(self) -> Value:
        return self.trace.emit(f"fneg double {self.name}")


class Trace:
    """The IR of a kernel: ``{0}``, ``{1}`` its arguments, ``{r}`` its result, ``{t}`` the
    temporaries' prefix (the :class:`~symad.core.ops.table.Inline` template form)."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        self.calls: dict[str, int] = {}

    def emit(self, text: str) -> Value:
        name = f"{{t}}s{len(self.lines)}"
        self.lines.append(f"{name} = {text}")
        return Value(self, name)

    def _call(self, fn: str, *args: Any, opaque: bool = False) -> Value:
        self.calls[fn] = len(args)
        params = ", ".join(f"double {_literal(a)}" for a in args)
        return self.emit(f"call double @{fn}({params}){' #0' if opaque else ''}")

    def _cmp(self, pred: str, a: Any, b: Any) -> Value:
        return self.emit(f"fcmp {pred} double {_literal(a)}, {_literal(b)}")

    def div(self, a: Any, b: Any) -> Value:
        return self.emit(f"fdiv double {_literal(a)}, {_literal(b)}")

    def log(self, x: Any) -> Value:
        return self._call("llvm.log.f64", x)

    def exp(self, x: Any) -> Value:
        return self._call("llvm.exp.f64", x)

    def floor(self, x: Any) -> Value:
        return self._call("llvm.floor.f64", x)

    def fabs(self, x: Any) -> Value:
        return self._call("llvm.fabs.f64", x)

    def erfc(self, x: Any) -> Value:
        return self._call("erfc", x)

    def pow(self, x: Any, y: Any) -> Value:  # the C library's pow, which LLVM must not rewrite
        return self._call("pow", x, y, opaque=True)

    def where(self, c: Value, a: Any, b: Any) -> Value:
        return self.emit(f"select i1 {c.name}, double {_literal(a)}, double {_literal(b)}")

    def lt(self, a: Any, b: Any) -> Value:
        return self._cmp("olt", a, b)

    def le(self, a: Any, b: Any) -> Value:
        return self._cmp("ole", a, b)

    def gt(self, a: Any, b: Any) -> Value:
        return self._cmp("ogt", a, b)

    def ge(self, a: Any, b: Any) -> Value:
        return self._cmp("oge", a, b)

    def eq(self, a: Any, b: Any) -> Value:
        return self._cmp("oeq", a, b)

    def ne(self, a: Any, b: Any) -> Value:
        return self._cmp("une", a, b)

    def both(self, a: Value, b: Value) -> Value:
        return self.emit(f"and i1 {a.name}, {b.name}")

    def either(self, a: Value, b: Value) -> Value:
        return self.emit(f"or i1 {a.name}, {b.name}")


def inline_template(kernel: Callable[..., Any], arity: int) -> tuple[str, tuple[tuple[str, int], ...]]:
    """The kernel traced into an Inline template and the functions it calls."""
    trace = Trace()
    out = kernel(trace, *(Value(trace, f"{{{k}}}") for k in range(arity)))
    if not isinstance(out, Value) or not trace.lines or out.name != f"{{t}}s{len(trace.lines) - 1}":
        raise TypeError(f"kernel {kernel.__name__} must end with a computed value")
    lines = _live(trace.lines)
    lines[-1] = "{r}" + lines[-1][len(out.name):]
    calls = {fn: n for fn, n in trace.calls.items() if any(f"@{fn}(" in line for line in lines)}
    return "\n".join(lines), tuple(sorted(calls.items()))


_NAME = re.compile(r"\{t\}s\d+")


def _live(lines: list[str]) -> list[str]:
    """The lines the last one needs (a kernel may compute what one function of it leaves unused,
    ``sin(πx)`` beside ``cos(πx)``; the exports declare no unused variable)."""
    needed, keep = {lines[-1].split(" = ", 1)[0]}, []
    for line in reversed(lines):
        name, rest = line.split(" = ", 1)
        if name in needed:
            keep.append(line)
            needed.update(_NAME.findall(rest))
    return keep[::-1]


def on_floats(kernel: Callable[..., Any]) -> Callable[..., float]:
    """The kernel on Python floats (never raises: IEEE's inf and nan)."""

    def py(*args: float) -> float:
        return float(kernel(Floats, *args))

    py.__name__ = kernel.__name__
    return py


def on_arrays(kernel: Callable[..., Any]) -> Callable[..., Any]:
    """The kernel on NumPy arrays or scalars (broadcast)."""

    def np_fn(*args: Any) -> Any:
        np = sem.numpy()
        with np.errstate(all="ignore"):
            out = kernel(Arrays, *(np.asarray(a, dtype=np.float64) for a in args))
            return np.asarray(out, dtype=np.float64)[()]

    np_fn.__name__ = kernel.__name__
    return np_fn


# ===================================================================== cost
LIBRARY_CALL = 20  # instructions a call of the C library (log, exp) counts as: a guess
_ONE_INSTRUCTION = frozenset({"llvm.fabs.f64", "llvm.sqrt.f64", "llvm.floor.f64", "llvm.ceil.f64", "llvm.round.f64"})


def instructions(name: str) -> int:
    """About how many instructions op ``name``'s LLVM lowering runs (a C library call counting
    :data:`LIBRARY_CALL`): what evaluating it once costs, for callers weighing work."""
    lowering = OPS[name].llvm if name in OPS else None
    if isinstance(lowering, Call):
        return 1 if lowering.symbol in _ONE_INSTRUCTION else LIBRARY_CALL
    if isinstance(lowering, Inline):
        calls = sum(LIBRARY_CALL for fn, _ in lowering.calls if fn not in _ONE_INSTRUCTION)
        return lowering.template.count("\n") + 1 + calls
    return 1
