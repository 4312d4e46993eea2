"""The op table's leaves and arithmetic: ``+ - * / ^`` and negation."""

from __future__ import annotations

import math
from typing import Any

from symad.core import semantics as sem
from symad.core.ops.table import (
    PREC_POWER,
    PREC_PRODUCT,
    PREC_SUM,
    PREC_UNARY,
    Call,
    Inline,
    Sympy,
    define,
    equal,
    fabs,
    log,
    power,
    where,
)

_np = sem.NumpyFunction  # numpy.<name>, imported on first use


# Derivatives to full relative accuracy wherever they are finite doubles (docs/reference/numerics.md's
# derivative table, tests/core/test_derivative_tails.py): the rules keep the digits a
# textbook formula loses in an op's tails.
def difference_error(a: Any, b: Any, d: Any) -> Any:
    """The rounding error of ``d = a - b`` (Knuth's TwoSum): ``a - b = d + t`` exactly; 0 where
    the difference is exact (``a - b`` of nearby numbers, of integers), nan where a or b is inf."""
    bb = d - a
    return (a - (d - bb)) - (b + bb)


def _pow_base_partial(a: Any, b: Any, out: Any) -> Any:
    """b·a^(b−1) as b·a^s·a^e, with s = b − 1 rounded and e its rounding error: a^s alone loses
    e·log a (x^(1/3) at 1e300: 87 ulp); past 2^53, where e = ±1, it has the wrong sign for a
    negative base.  Where b − 1 is exact (x^2.5, any b below 2^53 of integer or half-integer
    form) e = 0 and a^0 = 1, folded away for a constant exponent.  At an infinite b (e is nan
    there) it is b·a^s, and where a^b = 0 (|a| < 1 and b = inf, |a| > 1 and b = −inf) its
    limit 0, not inf·0; for a finite constant b that condition folds away."""
    fixed = _number(b)
    if fixed is not None and math.isfinite(fixed):  # what the general form folds to, on floats
        s_fixed = fixed - 1.0
        written = b * power(a, s_fixed)
        e = difference_error(fixed, 1.0, s_fixed)
        return written if e == 0.0 and math.copysign(1.0, e) > 0 else written * power(a, e)  # a^+0 is 1
    s = b - 1.0
    written = b * power(a, s)
    return where(equal(fabs(b), math.inf), where(equal(out, 0.0), 0.0, written),
                 written * power(a, difference_error(b, 1.0, s)))


def _number(x: Any) -> float | None:
    """The value of a float or of a constant node (a rule's argument), else None."""
    if type(x) is float:
        return x
    graph = getattr(x, "graph", None)
    return float(graph.data[x.id]) if graph is not None and graph.op[x.id] == "const" else None


define("const", 0, None, None, kind="leaf", doc="a number (also pi, e, inf, nan)")
define("var", 0, None, None, kind="leaf", doc="a variable")

define("add", 2, lambda a, b: a + b, _np("add"), (1.0, 1.0), llvm=Inline("{r} = fadd double {0}, {1}"),
       kind="infix", symbol="+", prec=PREC_SUM, commutative=True, number_last=True, code="{0} + {1}",
       sympy="Add")
define("sub", 2, lambda a, b: a - b, _np("subtract"), (1.0, -1.0), llvm=Inline("{r} = fsub double {0}, {1}"),
       kind="infix", symbol="-", prec=PREC_SUM, code="{0} - {1}", sympy=Sympy(build=lambda sp, a, b: a - b))
define("mul", 2, lambda a, b: a * b, _np("multiply"), (lambda a, b, out: b, lambda a, b, out: a),
       llvm=Inline("{r} = fmul double {0}, {1}"),
       kind="infix", symbol="*", prec=PREC_PRODUCT, commutative=True, code="{0} * {1}",
       latex=r"\,", sympy="Mul")  # juxtaposed: 2\,x\,y
define("div", 2, lambda a, b: a / b, _np("divide"), (lambda a, b, out: 1.0 / b, lambda a, b, out: -out / b),
       llvm=Inline("{r} = fdiv double {0}, {1}"),
       kind="infix", symbol="/", prec=PREC_PRODUCT, code="{0} / {1}", domain=((0.7, 1.3), (-2.0, 0.4)),
       latex=(r"\frac{", 0, "}{", 1, "}"), sympy=Sympy(build=lambda sp, a, b: a / b), numpy=("true_divide",))
# C's pow: the Python export has its own helper for it (math.pow raises where C's gives inf or nan)
define("pow", 2, math.pow, sem.np_pow,
       (_pow_base_partial, lambda a, b, out: out * log(a)), llvm=Call("pow", opaque=True),
       kind="infix", symbol="^", prec=PREC_POWER, assoc="right", domain=((1.3, 0.7), (0.8, -2.2), (2.0, 3.0)),
       sympy="Pow", numpy=("power", "float_power"))
define("neg", 1, lambda a: -a, _np("negative"), (-1.0,), llvm=Inline("{r} = fneg double {0}"),
       kind="prefix", symbol="-", prec=PREC_UNARY, code="-{0}", sympy=Sympy(build=lambda sp, a: -a))
