"""The numerical edge cases symad documents: one table, read by the test and by the doc.

``tests/test_numerics.py`` checks every row against the Python API (every
backend, single points and batches) and the command line;
``python tests/numerics_table.py`` rewrites ``docs/numerics.md`` from the same
rows, and a test fails when the doc is out of date.

A row: (expression, point, value, partials in variable order, why).  Values are
floats; ``inf`` and ``nan`` are written as such.
"""

from __future__ import annotations

import math
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
    ("asin(x)", {"x": 1.0}, math.pi / 2, (inf,), "∂ = 1/sqrt(1 − x²) = inf at the end of the domain"),
    ("acos(x)", {"x": 1.0}, 0.0, (-inf,), "∂ = −1/sqrt(1 − x²) = −inf"),
    # ---- kinks: the convention abs'(0) = sign(0) = 0, ties split evenly
    ("abs(x)", {"x": 0.0}, 0.0, (0.0,), "∂ = sign(x), and sign(0) = 0"),
    ("abs(x)", {"x": -0.0}, 0.0, (0.0,), "sign(−0) = 0 too"),
    ("sign(x)", {"x": 0.0}, 0.0, (0.0,), "sign is flat where it is differentiable; 0 by convention at 0"),
    ("step(x)", {"x": 0.0}, 0.5, (0.0,), "Heaviside step with step(0) = 0.5"),
    ("min(x, y)", {"x": 1.0, "y": 1.0}, 1.0, (0.5, 0.5), "a tie splits the derivative evenly: step(0) = 0.5 each"),
    ("max(x, y)", {"x": 1.0, "y": 1.0}, 1.0, (0.5, 0.5), "the same for max"),
    ("max(x, x)", {"x": 1.0}, 1.0, (1.0,), "both halves reach x: 0.5 + 0.5"),
    ("min(x, y)", {"x": nan, "y": 1.0}, nan, (nan, nan), "nan is propagated, as NumPy's minimum does"),
    ("atan2(y, x)", {"x": 0.0, "y": 0.0}, 0.0, (nan, nan), "atan2(0, 0) = 0 (C99); partials 0/0 = nan"),
    # ---- overflow and underflow
    ("exp(x)", {"x": 1000.0}, inf, (inf,), "overflow to inf"),
    ("exp(x)", {"x": -1000.0}, 0.0, (0.0,), "underflow to 0"),
    ("x*x", {"x": 1e200}, inf, (2e200,), "the value overflows, the derivative x + x does not"),
    ("1e308*10", {}, inf, (), "overflow in a constant: the node is kept, not folded"),
    ("cosh(x)", {"x": 1000.0}, inf, (inf,), "∂ = sinh(x) = inf"),
    ("tanh(x)", {"x": 1000.0}, 1.0, (0.0,), "∂ = 1 − tanh² = 0"),
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
    from symad.graph import natural_key

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
    """The text of ``docs/numerics.md``."""
    lines = [
        "# Numerical edge cases",
        "",
        "symad evaluates with IEEE double-precision arithmetic: a value outside a function's domain is",
        "`nan`, a division by zero or an overflow is `±inf`, and the result is returned, not raised.",
        "Every backend (the interpreter that answers a first call, Python floats, NumPy batches, native",
        "code) and the command line give the same numbers (one exception: where some operation leaves its",
        "domain, the Python paths redo the point with NumPy, whose `exp`, `log`, `sin`… may differ from",
        "the C library's, which native code calls, in the last bit); the command line also prints a",
        "warning naming the first subexpression that went non-finite, and in `--json` output writes",
        "non-finite numbers as the strings `\"inf\"`,",
        "`\"-inf\"` and `\"nan\"`.",
        "",
        "Derivatives are the derivative rules applied as written (`d sqrt(x) = 0.5/sqrt(x)`), so at a",
        "point where a rule divides by zero or multiplies `0·inf` the partial is `inf` or `nan`;",
        "symad does not take limits.  At kinks the convention is `abs'(0) = sign(0) = 0`, and `min`/`max`",
        "split the derivative evenly at a tie (`step(0) = 0.5`).",
        "",
        "Two construction-time rewrites, `a − a → 0` and `0·a → 0`, assume that `a` is finite (as SymPy",
        "does); they are what keeps derivative graphs small.  Constants alone are folded with IEEE",
        "arithmetic, except that a fold whose result would be `inf` or `nan` from finite inputs is kept",
        "as a node, so that the command line can say where the non-finite value arose.",
        "",
        "This table is generated from `tests/numerics_table.py` (`python tests/numerics_table.py`), and",
        "`tests/test_numerics.py` checks every row through the Python API (each backend, single points and",
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


DOC = Path(__file__).resolve().parent.parent / "docs" / "numerics.md"

if __name__ == "__main__":
    DOC.write_text(markdown(), encoding="utf-8")
    print(f"wrote {DOC}")
