"""The numerical edge cases symad documents: one table, read by the test and by the doc.

``tests/core/test_numerics.py`` checks every row against the Python API (every
backend, single points and batches) and the command line;
``python tests/support/numerics_table.py`` rewrites ``docs/reference/numerics.md`` from the same
rows, and a test fails when the doc is out of date.

A row: (expression, point, value, partials in variable order, why).  Values are
floats; ``inf`` and ``nan`` are written as such.
"""

from __future__ import annotations

import math
import sys
from pathlib import Path

inf, nan = math.inf, math.nan

ROWS: list[tuple[str, dict[str, float], float, tuple[float, ...], str]] = [
    # ---- powers at zero
    ("0^0", {}, 1.0, (), "C99 `pow(0, 0) = 1`; also the rewrite `a^0 → 1`"),
    ("x^0", {}, 1.0, (), "`a^0 → 1` at construction, whatever `a` is: x is gone, and `--at x=0` is an "
     "error (unknown variable x)"),
    ("x^y", {"x": 0.0, "y": 0.0}, 1.0, (nan, -inf),
     "∂x = y·x^(y−1) = 0·inf = nan; ∂y = x^y·log x = 1·(−inf)"),
    ("x^y", {"x": 0.0, "y": 2.0}, 0.0, (0.0, nan),
     "∂y = x^y·log x = 0·(−inf) = nan, although 0^y is constant near y = 2 (JAX and PyTorch give 0)"),
    ("0^-1", {}, inf, (), "IEEE division by zero: `pow(0, −1) = inf` (the node is kept, not folded)"),
    ("x^-1", {"x": 0.0}, inf, (-inf,), "computed as 1/x; ∂ = −x^−2 = −inf"),
    ("x^-1", {"x": -0.0}, -inf, (-inf,), "the sign of zero is kept: 1/(−0) = −inf"),
    ("x^0.5", {"x": 0.0}, 0.0, (inf,), "∂ = 0.5·x^−0.5 = inf"),
    ("x^x", {"x": 0.0}, 1.0, (nan,), "∂ = x·x^(x−1) + x^x·log x = 0·inf + (−inf) = nan"),
    # ---- C99 pow special cases (NumPy's a^0.5 is sqrt(a), which differs at −0 and −inf)
    ("x^0.5", {"x": -0.0}, 0.0, (inf,), "C99 `pow(−0, 0.5) = +0` (`sqrt(−0)` is −0); ∂ = 0.5·(−0)^−0.5 "
     "= inf"),
    ("x^0.5", {"x": -inf}, inf, (0.0,), "C99 `pow(−inf, y) = inf` for y > 0 not an odd integer; "
     "∂ = 0.5·(−inf)^−0.5 = 0"),
    ("x^y", {"x": -inf, "y": -3.0}, -0.0, (-0.0, nan), "C99: an odd integer exponent keeps the sign: −0; ∂y needs "
     "log(−inf)"),
    ("x^y", {"x": nan, "y": 0.0}, 1.0, (nan, nan), "C99 `pow(nan, 0) = 1`; ∂x = 0·nan^−1 = nan, "
     "∂y = 1·log(nan)"),
    ("x^y", {"x": 1.0, "y": nan}, 1.0, (nan, 0.0), "C99 `pow(1, nan) = 1`; ∂y = 1·log 1 = 0"),
    ("x^y", {"x": -1.0, "y": inf}, 1.0, (inf, nan), "C99 `pow(−1, ±inf) = 1`; ∂y needs log(−1) = nan"),
    # ---- negative bases
    ("(-8)^(1/3)", {}, nan, (), "real power of a negative base: nan (no complex results)"),
    ("x^y", {"x": -8.0, "y": 1 / 3}, nan, (nan, nan),
     "negative base, non-integer exponent: nan, and so are both partials"),
    ("x^y", {"x": -2.0, "y": 2.0}, 4.0, (-4.0, nan), "integer exponent: defined; ∂y needs log(−2) = nan"),
    ("x^3", {"x": -2.0}, -8.0, (12.0,), "a constant small integer power is computed as products"),
    # ---- logarithms and roots
    ("log(0)", {}, -inf, (), "IEEE: log(0) = −inf"),
    ("log(x)", {"x": 0.0}, -inf, (inf,), "∂ = 1/x = inf"),
    ("log(-1)", {}, nan, (), "outside the domain: nan"),
    ("log(x, 1)", {"x": 2.0}, inf, (inf,), "log base 1 is log(x)/log(1) = log(2)/0"),
    ("sqrt(-1)", {}, nan, (), "outside the domain: nan"),
    ("sqrt(x)", {"x": -1.0}, nan, (nan,), "nan value, nan derivative"),
    ("sqrt(x)", {"x": 0.0}, 0.0, (inf,), "∂ = 0.5/sqrt(x) = inf (the one-sided derivative)"),
    ("sqrt(x)", {"x": -0.0}, -0.0, (-inf,), "IEEE: sqrt(−0) = −0; ∂ = 0.5/(−0) = −inf"),
    ("asin(x)", {"x": 1.0}, math.pi / 2, (inf,), "∂ = 1/sqrt(1 − x²) = inf at the end of the domain"),
    ("acos(x)", {"x": 1.0}, 0.0, (-inf,), "∂ = −1/sqrt(1 − x²) = −inf"),
    # ---- branches: the arm not taken passes nothing back
    ("where(x > 0, sqrt(x), 0)", {"x": 0.0}, 0.0, (0.0,), "the arm not taken (sqrt's partial inf) passes nothing"),
    ("where(x > 0, sqrt(x), 0)", {"x": -1.0}, 0.0, (0.0,), "sqrt(−1) = nan in the arm not taken: 0 and 0"),
    ("where(x != 0, sin(x)/x, 1)", {"x": 0.0}, 1.0, (0.0,), "0/0 in the arm not taken"),
    ("(x > 0)*sqrt(x)", {"x": 0.0}, 0.0, (nan,), "a product, not a branch: 0·inf = nan (write where)"),
    ("where(x, 1, 2)", {"x": nan}, 1.0, (0.0,), "a condition is true where it is not 0; nan is true, as in C"),
    ("x < y", {"x": nan, "y": 1.0}, 0.0, (0.0, 0.0), "a comparison with nan is false (except !=); derivative 0"),
    # ---- kinks: the convention abs'(0) = sign(0) = 0, ties split evenly
    ("abs(x)", {"x": 0.0}, 0.0, (0.0,), "∂ = sign(x), and sign(0) = 0"),
    ("abs(x)", {"x": -0.0}, 0.0, (0.0,), "sign(−0) = 0 too"),
    ("sign(x)", {"x": 0.0}, 0.0, (0.0,), "sign is flat where it is differentiable; 0 by convention at 0"),
    ("step(x)", {"x": 0.0}, 0.5, (0.0,), "Heaviside step with step(0) = 0.5"),
    ("min(x, y)", {"x": 1.0, "y": 1.0}, 1.0, (0.5, 0.5), "a tie splits the derivative evenly: step(0) = 0.5 each"),
    ("max(x, y)", {"x": 1.0, "y": 1.0}, 1.0, (0.5, 0.5), "the same for max"),
    ("max(x, x)", {"x": 1.0}, 1.0, (1.0,), "both halves reach x: 0.5 + 0.5"),
    ("min(x, y)", {"x": nan, "y": 1.0}, nan, (nan, nan), "IEEE 754-2019 minimum: nan propagates (C's fmin "
     "would give 1)"),
    # ---- signed zeros
    ("min(x, y)", {"x": 0.0, "y": -0.0}, -0.0, (0.5, 0.5), "IEEE 754-2019 minimum: −0 < +0, in either order; "
     "for the derivative the zeros tie"),
    ("1/min(x, y)", {"x": 0.0, "y": -0.0}, -inf, (-inf, -inf), "1/(−0); ∂ = −(1/m)/m·0.5 = −inf"),
    ("max(x, y)", {"x": -0.0, "y": 0.0}, 0.0, (0.5, 0.5), "IEEE 754-2019 maximum: +0"),
    ("1/max(x, y)", {"x": -0.0, "y": 0.0}, inf, (-inf, -inf), "1/(+0); ∂ = −(1/m)/m·0.5 = −inf"),
    ("x*y", {"x": -0.0, "y": inf}, nan, (inf, -0.0), "IEEE: 0·inf = nan; ∂x = y = inf, ∂y = x = −0"),
    ("atan2(y, x)", {"x": -1.0, "y": -0.0}, -math.pi, (0.0, -1.0), "C99: atan2(−0, −1) = −π, the sign of zero "
     "picks the side of the branch cut"),
    # ---- atan2's partials, x/(x² + y²) and −y/(x² + y²), on x and y scaled by max(|x|, |y|)
    ("atan2(y, x)", {"x": 0.0, "y": 0.0}, 0.0, (nan, nan), "atan2(0, 0) = 0 (C99); partials 0/0 = nan"),
    ("atan2(y, x)", {"x": 3e-170, "y": 4e-170}, 0.9272952180016122, (-1.6e169, 1.2e169),
     "unscaled, x² + y² would underflow to 0 and the partials be ∓inf"),
    ("atan2(y, x)", {"x": 1.0, "y": 1e200}, math.pi / 2, (-1e-200, 0.0),
     "unscaled, x² + y² = inf would make ∂x −0; ∂y = 1e−400 underflows"),
    ("atan2(y, x)", {"x": inf, "y": -2.0}, -0.0, (0.0, 0.0), "an infinite argument: the partials' limit, 0 "
     "(scaled by max(|x|, |y|) = inf they would be inf/inf)"),
    # ---- stable functions at ±inf and at their own special points
    ("logsumexp(x, y, z)", {"x": -inf, "y": -inf, "z": 1.0}, 1.0, (0.0, 0.0, 1.0),
     "a masked (−inf) entry gets 0: logaddexp's partials are 0.5 each at a = b = −inf, and 0·0.5 = 0"),
    ("logaddexp(x, y)", {"x": -inf, "y": -inf}, -inf, (0.5, 0.5), "a = b = ±inf: a − b is nan, and the "
     "partials are 0.5 each, their limit along a = b (a documented choice)"),
    ("logsumexp(x, y, z)", {"x": -inf, "y": -inf, "z": -inf}, -inf, (0.25, 0.25, 0.5),
     "every entry masked: 0.5 at each logaddexp of the fold, logaddexp(logaddexp(x, y), z)"),
    ("hypot(x, y)", {"x": 0.0, "y": 0.0}, 0.0, (0.0, 0.0), "not differentiable at the origin: 0, the "
     "documented choice (as abs'(0) = 0), not 0/0"),
    # ---- overflow and underflow
    ("exp(x)", {"x": 1000.0}, inf, (inf,), "overflow to inf"),
    ("exp(x)", {"x": -1000.0}, 0.0, (0.0,), "underflow to 0"),
    ("exp(x)", {"x": -745.0}, 5e-324, (5e-324,), "a subnormal result is kept (no flush to zero)"),
    ("x*x", {"x": 1e200}, inf, (2e200,), "the value overflows, the derivative x + x does not"),
    ("1e308*10", {}, inf, (), "overflow in a constant: the node is kept, not folded"),
    ("cosh(x)", {"x": 1000.0}, inf, (inf,), "∂ = sinh(x) = inf"),
    ("tanh(x)", {"x": 1000.0}, 1.0, (0.0,), "∂ = (1/cosh x)² = 0: the exact 4e−869 underflows"),
    ("tanh(x)", {"x": 20.0}, 1.0, (1.6993417021166355e-17,), "∂ = (1/cosh x)², not 1 − tanh², which is 0 "
     "from |x| ≈ 19"),
    ("tanh(x)", {"x": 0.7}, 0.6043677771171636, (0.6347395899824586,), "the C library's tanh in every backend: "
     "NumPy's own is 1 ulp less here"),
    ("expm1(x)", {"x": -40.0}, -1.0, (4.248354255291589e-18,), "∂ = exp(x), not expm1(x) + 1, which is 0 "
     "below x ≈ −37"),
    ("1/x", {"x": 0.0}, inf, (-inf,), "∂ = −(1/x)/x = −inf/0 = −inf"),
    ("1/x", {"x": -0.0}, -inf, (-inf,), "∂ = −(−inf)/(−0) = −inf"),
    ("x/y", {"x": 0.0, "y": 0.0}, nan, (inf, nan), "0/0 = nan; ∂x = 1/y = inf; ∂y = −(x/y)/y = nan"),
    # ---- nan and inf through gradients
    ("x + nan", {"x": 1.0}, nan, (1.0,), "a nan constant makes the value nan; ∂/∂x of a sum is still 1"),
    ("x*nan", {"x": 1.0}, nan, (nan,), "∂ = nan"),
    ("x*y", {"x": nan, "y": 2.0}, nan, (2.0, nan), "∂x = y = 2 is independent of the nan; ∂y = x = nan"),
    ("sin(x)", {"x": inf}, nan, (nan,), "sin(inf) = nan, cos(inf) = nan"),
    ("x - x", {}, 0.0, (), "`a − a → 0` at construction (assumes a finite a, as SymPy does): 0 even for "
     "x = inf, and x is no longer a variable"),
    ("0*x", {}, 0.0, (), "`0·a → 0` at construction (same assumption)"),
    ("0*inf", {}, nan, (), "two constants are folded with IEEE arithmetic: 0·inf = nan"),
    ("inf - inf", {}, nan, (), "IEEE: nan"),
]


def variables(point: dict[str, float]) -> list[str]:
    from symad.core.dag import natural_key

    return sorted(point, key=natural_key)


def fmt(v: float) -> str:
    if math.isnan(v):
        return "nan"
    if math.isinf(v):
        return "inf" if v > 0 else "−inf"
    if v == 0:
        return "−0" if math.copysign(1, v) < 0 else "0"
    text = repr(v)
    text = text[:-2] if text.endswith(".0") else text
    return text.replace("-", "−")


def markdown() -> str:
    """The text of ``docs/reference/numerics.md``."""
    lines = [
        "# Numerical edge cases",
        "",
        "symad evaluates with IEEE double-precision arithmetic: a value outside a function's domain is",
        "`nan`, a division by zero or an overflow is `±inf`, and the result is returned, not raised.",
        "Every backend (the interpreter that answers a first call, Python floats, NumPy batches, native",
        "code; single points and batches) and the command line give the same numbers, bit for bit, by",
        "one semantics:",
        "",
        "| operations | semantics |",
        "|---|---|",
        "| `+ − * /`, `−x`, `sqrt`, `abs` | IEEE 754, round to nearest: signed zeros kept (`−0·1 = −0`, "
        "`1/(−0) = −inf`, `sqrt(−0) = −0`), `0/0 = inf − inf = 0·inf = nan`, overflow `±inf`, "
        "subnormals kept (no flush to zero) |",
        "| `exp log sin cos tan asin acos atan sinh cosh tanh atan2` | the C library's function (the one "
        "`math` and native code call), with C99's special cases: `log(±0) = −inf`, `log(−1) = nan`, "
        "`atan2(±0, −1) = ±π`, `tanh(±inf) = ±1`; NumPy batches call it too where NumPy's own vector code "
        "differs in the last bit (`tanh` always; with AVX-512, where NumPy runs SVML, `exp log tan asin acos "
        "atan sinh cosh atan2 pow expm1 cbrt asinh acosh atanh`), per element, slower than NumPy's own "
        "vector code |",
        "| `x^y` | C99 `pow`: `pow(x, ±0) = pow(1, y) = 1` even for nan; `pow(−0, 0.5) = +0`, "
        "`pow(−inf, 0.5) = inf`; `pow(±0, y < 0) = inf` (`±inf` for an odd integer y); a negative base with a "
        "non-integer exponent is nan.  A constant exponent −4…−1, 2…4 is computed as products "
        "(`x^3 = x·x·x`, `x^-1 = 1/x`) |",
        "| `min`, `max` | IEEE 754-2019 minimum/maximum: nan if either argument is nan; −0 < +0 "
        "(`min(0, −0) = −0`, `max(0, −0) = 0`); so both are commutative, and the order in which the DAG "
        "stores their arguments cannot change a result |",
        "| `sign`, `step` | `sign(±0) = 0`, `step(±0) = 0.5`; nan stays nan |",
        "| `< <= > >= == !=`, `and or not`, `where` | 1 or 0; a condition is true where it is not 0, nan "
        "included (as in C and NumPy); a comparison with nan is false, except `!=`; `where(c, a, b)` is `a` "
        "where `c` is true, else `b` (see [Branches](#branches)) |",
        "",
        "`tests/core/test_special_values.py` checks this for every op of the table (and constant powers,",
        "`1/min`, `1/max`) at ±0, ±inf, nan, subnormals and a few ordinary numbers, every pair of them",
        "for two arguments: value and partials agree bit for bit (any nan matching any nan) between the",
        "interpreter (floats, arrays), Python code (floats, NumPy), native code (point, batch) and",
        "`auto`; the values are those of IEEE arithmetic, of the C library (called through ctypes) and of",
        "IEEE 754-2019 minimum/maximum; and each op's NumPy function gives `math`'s bits on 30 000 random",
        "inputs of many magnitudes (contiguous, strided, scalars).  The command line also prints a",
        "warning naming the first subexpression that went non-finite, and in `--json` output writes",
        "non-finite numbers as the strings `\"inf\"`, `\"-inf\"` and `\"nan\"`.",
        "",
        *stable_section(),
        *special_section(),
        *derivative_section(),
        *PRODUCTS.rstrip("\n").split("\n"),
        "",
        *BRANCHES.rstrip("\n").split("\n"),
        "",
        "Derivatives are the derivative rules applied as written (`d sqrt(x) = 0.5/sqrt(x)`), so at a",
        "point where a rule divides by zero or multiplies `0·inf` the partial is `inf` or `nan`;",
        "symad does not take limits, but for a few partials whose rule would give `nan` where the value is",
        "defined ([above](#derivatives-against-mpmath)): `atan2`'s at an infinite argument (0), `hypot`'s at",
        "the origin (0), `x^y`'s ∂x at an infinite y where x^y = 0 (0, not inf·0), `logaddexp`'s, `min`'s and",
        "`max`'s at equal infinities (0.5 each, so that a masked −inf entry of `logsumexp` or `max` gets 0).",
        "At kinks the convention is `abs'(0) = sign(0) = 0`, and",
        "`min`/`max` split the derivative evenly at a tie (`step(0) = 0.5`).",
        "",
        "Two construction-time rewrites, `a − a → 0` and `0·a → 0`, assume that `a` is finite (as SymPy",
        "does); they are what keeps derivative graphs small (`a + 0 → a` and `0 − a → −a` differ from IEEE",
        "only in the sign of a zero result).  Constants alone are folded with IEEE",
        "arithmetic, except that a fold whose result would be `inf` or `nan` from finite inputs is kept",
        "as a node, so that the command line can say where the non-finite value arose.",
        "",
        "The table below is generated by `python tests/support/numerics_table.py`, and",
        "`tests/core/test_numerics.py` checks every row through the Python API (each backend, single points and",
        "batches) and the command line.",
        "",
        "| expression | at | value | partial derivatives | why |",
        "|---|---|---|---|---|",
    ]
    for expr, point, value, partials, why in ROWS:
        names = variables(point)
        at = ", ".join(f"{k}={fmt(point[k])}" for k in names) or "—"
        grads = ", ".join(f"∂{k} = {fmt(g)}" for k, g in zip(names, partials)) or "—"
        lines.append(f"| `{expr}` | {at} | {fmt(value)} | {grads} | {why} |")
    return "\n".join(lines) + "\n"


PRODUCTS = """## Products kept as loops

A `prod(i = a..b, f)` kept as a loop multiplies its factors in one order in every backend (blocks
of 8,192 left to right, the blocks' products as a tree of adjacent pairs), which differs from the
written-out product's left-to-right order by rounding. Its partial along a factor is the product
of the other factors, as an expression ([loops.md](../guide/loops.md)): `P/f_i` where no factor is
0, and the product of the nonzero factors, in cases on how many are 0, where some are; so a
factor of exactly 0 gives the exact gradient and Hessian. The quotient is the product of the
others only while `P` is a normal double: where the product overflows, underflows, passes
through a subnormal, or a factor is `inf` or `nan`, the partials are `nan` (never a wrong
number); write `exp(sum(i = a..b, log(abs(f))))` with the sign apart there. A product's Hessian
has its diagonal 0 to rounding (`(P/f_i)/f_i − P/f_i²`), not exactly 0.
"""


BRANCHES = """## Branches

`where(c, a, b)`, also written `if c then a else b`, computes both arms and selects one. Its
derivative is the derivative of the arm it takes: reverse mode passes the adjoint into that arm
only (as `where(c, adjoint, 0)`), and what flows on from there has a *strong zero*: where the
branch is not taken, a contribution is 0 whatever the local partial is (`inf`, `nan`). Forward
mode selects the arms' tangents. So the `nan` or `inf` of the arm not taken never reaches a
derivative: not in the symbolic derivative (`d/dx where(x > 0, sqrt(x), 0)` prints as
`where(x > 0, 0.5/sqrt(x), 0)`), the compiled code (which selects without branching), batches,
Hessians, `explain` (which marks such a contribution "branch not taken") or the pictures.
Conditions and comparisons have derivative 0.

JAX differentiates the same expressions into `nan` (JAX 0.10.2 with float64, run on this machine;
its documentation suggests a second `where` as the workaround); CasADi 3.8.2's `if_else` gives
0 on these, as symad does:

| expression, at | symad | `jax.grad` of the `jnp.where` form | CasADi `if_else` |
|---|---|---|---|
| `where(x > 0, sqrt(x), 0)`, x = 0 | 0 | nan | 0 |
| `where(x > 0, sqrt(x), 0)`, x = −1 | 0 | nan | 0 |
| `where(x != 0, sin(x)/x, 1)`, x = 0 | 0 | nan | 0 |

Multiplying by a condition is arithmetic, not a branch: `(x > 0)*sqrt(x)` has derivative `nan`
at 0 (IEEE `0·inf`, row below); write `where`. `tests/ad/test_branches.py` checks these cases in
every evaluator, over batches with points on both sides, in second derivatives and on the
command line; the rows below are checked with the rest of the table.
"""

STABLE_INTRO = """## Stable functions

`log1p`, `expm1`, `softplus`, `sigmoid`, `log_sigmoid`, `logsumexp(a, b, ...)` (any number of
arguments; `logaddexp(a, b)` for two), `erf`, `erfc`, `hypot`, `cbrt`, `asinh`, `acosh`,
`atanh`, `floor`, `ceil`, `round` (halfway cases away from zero, as C's `round`),
`sinc(x) = sin(x)/x` (1 at 0; unnormalised, unlike NumPy's `sinc`) and `clip(x, lo, hi)`
are evaluated stably, and so are their derivatives, each an expression of
stable functions: `softplus' = sigmoid` (not `exp(x)/(1 + exp(x))`, which is `nan` at 800),
`sigmoid'(x) = sigmoid(x)·sigmoid(−x)` (not `σ(1 − σ)`, which is 0 at 40),
`∂logaddexp(a, b)/∂a = sigmoid(a − b)` (0.5 at a = b = ±inf), `asinh'(x) = 1/hypot(x, 1)`,
`acosh'(x) = 1/(sqrt(x − 1)·sqrt(x + 1))`, `atanh'(x) = 1/((1 − x)(1 + x))`; `floor`, `ceil`,
`round` have derivative 0, `clip` is `min(max(x, lo), hi)`, and `sinc'(x) = (cos(x) − sinc(x))/x`,
which cancels near 0, is its Taylor series `−x/3 + x³/30 − x⁵/840 + …` (to x¹⁹) where |x| < 1
([derivatives against mpmath](#derivatives-against-mpmath)). The composite ones are
written once as the steps every backend takes (`symad/core/semantics.py`, and the same steps
in their LLVM lowering): `softplus(x) = max(x, 0) + log1p(exp(−|x|))`, `sigmoid` from
`e = exp(−|x|)` as `q = 1/(1 + e)` where x ≥ 0, else `e·q`, `logaddexp(a, b) = max(a, b) +
log1p(exp(−|a − b|))` (`a + log 2` when `a = b`, infinities included, as NumPy's `logaddexp`),
so no `exp` ever overflows and every backend gives the same bits (checked with the rest of the
table above); a value and its derivative share `e`, `1 + e` and `q`: one `exp`, one `log` and
one division a term. `log1p(x)` is Goldberg's formula on the C library's `log`,
`log(u)·(x/(u − 1))` with `u = 1 + x` rounded (`x` where `u = 1`), within 2 ulp; inside the
composite ones, where its argument `e` is in [0, 1], it is `log(u) + (e − (u − 1))·q`, within
1 ulp. The C library's own `log1p` is within 1 ulp too, but over a batch it costs twice as
much as `log` and a division. The others are the C library's functions.

Values and derivatives (`∂/∂x`) at extreme points, as symad computes them; each is checked by
`tests/core/test_stable_functions.py` against mpmath at 80 digits (to a relative 1e-15, or
exactly where the true value is below the smallest double):

"""
# (expression, point): the stable functions at extreme points (tests/core/test_stable_functions.py
# checks each row against mpmath)
STABLE_ROWS = [("softplus(x)", "x=800"), ("softplus(x)", "x=-40"), ("sigmoid(x)", "x=-800"), ("sigmoid(x)", "x=40"),
        ("log_sigmoid(x)", "x=-800"), ("log_sigmoid(x)", "x=40"), ("logsumexp(x, y)", "x=1000,y=1000"),
        ("logsumexp(x, y)", "x=-1000,y=-1000"), ("logsumexp(x, y, 0)", "x=800,y=-800"),
        ("log1p(x)", "x=1e-20"), ("expm1(x)", "x=1e-20"), ("erf(x)", "x=1e-10"), ("erfc(x)", "x=10"),
        ("hypot(x, y)", "x=3e200,y=4e200"), ("hypot(x, y)", "x=3e-200,y=4e-200"), ("cbrt(x)", "x=-27"),
        ("asinh(x)", "x=1e200"), ("acosh(x)", "x=1e200"), ("atanh(x)", "x=0.9999999999999999"),
        ("sinc(x)", "x=0"), ("sinc(x)", "x=0.001"), ("sinc(x)", "x=-1e-5"),
        ("floor(x)", "x=-0.5"), ("ceil(x)", "x=-0.5"), ("round(x)", "x=2.5"), ("round(x)", "x=-2.5"),
        ("clip(x, 0, 1)", "x=5")]


def stable_section() -> list[str]:
    """The stable functions' section: what they are, and their values and derivatives at extreme points."""
    import symad

    lines = [*STABLE_INTRO.rstrip("\n").split("\n"), "", "| expression | at | value | ∂/∂x |", "|---|---|---|---|"]
    for text, at in STABLE_ROWS:
        point = {k: float(v) for k, v in (kv.split("=") for kv in at.split(","))}
        value, grad = symad.compile(text, list(point)).value_and_grad(point)
        lines.append(f"| `{text}` | `{at.replace(',', ', ')}` | {value!r} | {float(grad[0])!r} |")
    return [*lines, ""]


SPECIAL_INTRO = """## Special functions

`lgamma` (log|Γ(x)|), `digamma` (ψ), `polygamma(n, x)` (ψ⁽ⁿ⁾, n rounded to a whole number from 0
to 10, else `nan`; its derivative in n is 0), `gamma`, `ndtr` (Φ, the normal distribution
function), `log_ndtr` (log Φ), `logit`, `xlogy(x, y)` and `xlog1py(x, y)` (0 where x = 0, y
whatever it is; ∂/∂y is then 0 too, also at y = 0), `betaln(a, b)` (log|B(a, b)| = lgamma(a) +
lgamma(b) − lgamma(a + b)) with its partial `digamma_diff(a, b)` (ψ(a) − ψ(a + b)), and the
derived `beta(a, b) = exp(betaln(a, b))` (for a, b > 0). Each is written
once, in `symad/core/ops/special.py`, as straight-line steps of IEEE arithmetic and the C
library's `log`, `exp`, `pow` and `erfc`, run on floats, on NumPy arrays and traced into its LLVM
lowering, so every backend and both exports give the same bits (no backend calls a platform's
`lgamma`: CPython's `math.lgamma` is its own code). The steps have no branches: every region of a
function is computed and one selected, as the native code's `select` does.

Poles and edges: `lgamma` is `inf` at 0, the negative integers and ±inf; `gamma` is `±inf` at ±0,
`nan` at the negative integers and −inf, `inf` beyond 171.62, and ±0 below −171 (its reflection
divides by Γ(−x), which has overflowed); `digamma` is `∓inf` at ±0 and `nan` at the negative
integers and −inf; `polygamma(n, x)` is `nan` for x < 0 when n ≥ 2; `logit` is `−inf` at 0,
`inf` at 1, `nan` outside [0, 1]; `ndtr` is 0 and 1 at ∓inf, `log_ndtr` −inf and 0.

Accuracy, against mpmath at 256 bits over each domain (`tests/test_special_functions.py`, and
the derivative table below): values within 4 ulp (`gamma` 8), first and second derivatives within
8 (16 for `gamma`'s), normal results compared. What keeps the digits: polynomials fitted in
mpmath (`symad/core/ops/special_fit.py`) in a variable computed exactly carry each function
through its zeros (`lgamma` at 1 and 2 as (x − 1)(x − 2)·Q(x); `digamma` at its root
1.4616… as (x − x0)·Q(x), x0 in two doubles); the recurrences add terms of one sign only
(`lgamma` down to [1.5, 2.5) adding logs, `digamma` adding 1/y as one fraction); Stirling's series
from 10; the reflection for x < 0 on −x, which is exact where 1 − x rounds (600 ulp lost at −128),
and there within a few ulp of its largest term only, near the negative zeros of `lgamma` and
`digamma`; `ndtr(x) = erfc(−x/√2)/2` with −x/√2 in two doubles (a rounded one lost 2z² ulp,
1,400 at −38); `log_ndtr` from the asymptotic series of Φ below −20 (log Φ(−40) to the last
digit) and `log1p(−Φ(−x))` above 0, its derivative φ/Φ with φ's exponent split so that x²/2 is
exact (below −20 the derivative of the value's own series); `logit` as `log1p((2p − 1)/(1 − p))`
in [¼, ¾]; `betaln` for a, b > 0 without the three lgammas' cancellation where one argument is
large (lgamma(0.1) + lgamma(b) − lgamma(0.1 + b) lost 1e-9 at b = 1.6e6): from 10 on lgamma(y) −
lgamma(x + y) as −(y − ½)·log1p(x/y) − x·log(x + y) + x and the difference of Stirling's series,
and where both arguments are 10 or more TOMS 708's sum of terms of one sign; values and its
gradient within 4 ulp from 1e-300 to 1e300 in both orders, except near the curve B(a, b) = 1
(B(0.5, 3) = 16/15), where only ulps of lgamma's terms hold. `digamma_diff` moves a up to 10 with
terms b/(y(y + b)) of one sign and takes the asymptotic series' difference as a divided
difference, so ψ(5) − ψ(5 + 1e-10) keeps its digits. For an argument ≤ 0 both are the plain
difference. The second derivatives of `betaln` in one argument (ψ′(a) − ψ′(a + b), b small
against a), of `log_ndtr` (−r(x + r), r = φ/Φ, in [−20, −1]) and of `logit` (near ½) cancel:
within a few ulp of their terms' size there (ψ′(a) overflows below a = 1e-154: `nan`).

Values and derivatives at hard points, as symad computes them (`tests/test_special_functions.py`
checks each against mpmath):

"""
SPECIAL_ROWS = [("lgamma(x)", "x=1e300"), ("lgamma(x)", "x=1e-300"), ("lgamma(x)", "x=1.0000001"),
                ("lgamma(x)", "x=2.0000001"), ("lgamma(x)", "x=-2.5"), ("digamma(x)", "x=1.4616321449683622"),
                ("digamma(x)", "x=-0.5"), ("polygamma(1, x)", "x=1"), ("polygamma(3, x)", "x=0.01"),
                ("gamma(x)", "x=171.5"), ("gamma(x)", "x=-2.5"), ("ndtr(x)", "x=-38"), ("ndtr(x)", "x=8"),
                ("log_ndtr(x)", "x=-40"), ("log_ndtr(x)", "x=10"), ("logit(x)", "x=0.5000001"),
                ("logit(x)", "x=1e-300"), ("xlogy(x, y)", "x=0,y=0"), ("betaln(x, y)", "x=3,y=4"),
                ("betaln(x, y)", "x=0.1,y=1634508.6862359024"), ("betaln(x, y)", "x=1634508.6862359024,y=0.1"),
                ("betaln(x, y)", "x=1e300,y=1e300"), ("digamma_diff(y, x)", "x=1e-10,y=5")]


def special_section() -> list[str]:
    """The special functions' section: how they are computed, poles, accuracy, hard points."""
    import symad

    lines = [*SPECIAL_INTRO.rstrip("\n").split("\n"), "", "| expression | at | value | ∂/∂x | ∂²/∂x² |",
             "|---|---|---|---|---|"]
    for text, at in SPECIAL_ROWS:
        point = {k: float(v) for k, v in (kv.split("=") for kv in at.split(","))}
        e = symad.parse(text, symad.Graph())
        d1 = e.diff("x")
        values = [f.evaluate({k: point[k] for k in f.variables}) for f in (e, d1, d1.diff("x"))]
        lines.append(f"| `{text}` | `{at.replace(',', ', ')}` | " + " | ".join(map(repr, values)) + " |")
    return [*lines, ""]


DERIVATIVES_INTRO = """## Derivatives against mpmath

Wherever an op's true partial derivative is a finite double (normal or subnormal), symad's is
within a few ulp of it, in every backend (they give the same bits); where the op is not
differentiable (a kink, a jump, a tie, hypot's origin) the partial is a documented choice.
The table is the sweep of `tests/support/derivatives.py`: each op's partials at some 1,500
points (2,300 pairs for two arguments): numbers of every binary exponent from the subnormals
to the largest double, both signs, ordinary numbers, the tails where an exponential
underflows (to 800), the ends of a domain approached to the last bit (1 ± 2^−k), the zeros of
a derivative, equal and nearly equal pairs, and ±inf where the value is finite; against the
exact partials, written from calculus in mpmath at 256 bits. An error is counted in ulps of
the exact partial (an ulp of a subnormal is 2^−1074), the relative error over normal results;
a point whose exact partial overflows is not compared. `tests/core/test_derivative_tails.py`
checks every op within 4 ulp (`cbrt` 7: the C library's `cbrt` is within 2.8 ulp, and its
derivative `1/(3·cbrt(x)²)` doubles that), and that this table is the sweep's.

The rules that keep the digits a textbook formula loses: `expm1' = exp` (not `expm1 + 1`, 0
below −37), `tanh' = (1/cosh x)²` (not `1 − tanh²`, 1,300 ulp off at 5, 0 beyond |x| ≈ 19),
`asin' = 1/sqrt((1 − x)(1 + x))` (`1 − x²` lost 7·10⁶ ulp near 1), `atan' = (1/hypot(x, 1))²`
(`1 + x²` overflowed at 1.3e154), `erf' = 2/√π·exp(−h²)·exp(−l·(|x| + h))` with |x| = h + l
split so that h² is exact (`exp(−x²)` lost x²/2 ulp: 340 at 26), `∂(a^b)/∂a = b·a^s·a^e` with
`s = b − 1` rounded and e its rounding error (0 for most constant exponents, folded away),
`∂logaddexp(a, b)/∂a = σ(d) + σ(d)·σ(−d)·t` with d = a − b rounded and t its rounding error
(the smaller argument's partial lost |a − b|/2 ulp), `sinc'` by its series below |x| = 1 (the formula lost 4.5/x² ulp),
`atan2`'s partials 0 at an infinite argument (their limit; not inf/inf), and `x^y`'s ∂x 0 at an
infinite y where x^y = 0 (not inf·0).

"""


def derivative_section() -> list[str]:
    """Every op's worst partial against mpmath, its documented choices, and where the rule is known not to hold."""
    from support.derivatives import CHOICES, KNOWN, arguments, operations, sweep, text_of

    lines = [*DERIVATIVES_INTRO.rstrip("\n").split("\n"), "",
             "| op | points compared | worst error (ulp) | worst relative error | at "
             "| not differentiable: symad's partial |",
             "|---|---|---|---|---|---|"]
    for op in operations():
        w = sweep(op)
        choice = CHOICES[op][2] if op in CHOICES else "—"
        if w.ulps == 0:
            worst, relative, at = "0 (exact)", "0", "—"
        else:
            names = arguments(op)
            worst, relative = f"{w.ulps:.2f}", f"{w.relative:.1e}"
            at = f"∂{names[w.partial]} at " + ", ".join(f"{n}={fmt(v)}" for n, v in zip(names, w.at))
        lines.append(f"| `{text_of(op)}` | {w.compared} | {worst} | {relative} | {at} | {choice} |")
    lines += ["", "Where the rule is known not to hold (these points are left out of the table above):", ""]
    for op, (_, where) in KNOWN.items():
        w = sweep(op)
        names = arguments(op)
        at = ", ".join(f"{n}={fmt(v)}" for n, v in zip(names, w.known_at))
        lines.append(f"- `{text_of(op)}`, {where}: {w.known} of the sampled partials, the worst "
                     f"{w.known_ulps:.3g} ulp (at {at}).")
    return [*lines, ""]


DOC = Path(__file__).resolve().parents[2] / "docs" / "reference" / "numerics.md"

if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests/, for support.derivatives
    DOC.write_text(markdown(), encoding="utf-8")
    print(f"wrote {DOC}")
