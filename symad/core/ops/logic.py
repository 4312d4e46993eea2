"""The op table's comparisons, logical operators and selection (``where``).

A condition is a number: true where it is not 0 (nan is true, as in C); comparisons and the
logical operators give 1 or 0, and their derivatives are 0.
"""

from __future__ import annotations

import operator
from collections.abc import Callable

from symad.core import semantics as sem
from symad.core.ops.table import PREC_AND, PREC_CMP, PREC_NOT, PREC_OR, Inline, Sympy, define, where

_BOTH_TRUE = "{t}0 = fcmp une double {0}, 0.0\n{t}1 = fcmp une double {1}, 0.0\n"
_AS_NUMBER = "{r} = uitofp i1 {t}c to double"


def _comparison(name: str, symbol: str, test: Callable[[float, float], bool], fcmp: str, ufunc: str, latex: str,
                sympy: str, commutative: bool = False) -> None:
    """A comparison ``a symbol b``: its Python ``test``, LLVM's ``fcmp`` predicate, NumPy's ``ufunc``,
    its LaTeX operator and SymPy's relation."""
    define(name, 2, sem.py_comparison(test), sem.np_comparison(ufunc), (0.0, 0.0),
           llvm=Inline(f"{{t}}c = fcmp {fcmp} double {{0}}, {{1}}\n" + _AS_NUMBER),
           kind="infix", symbol=symbol, prec=PREC_CMP, assoc="none", commutative=commutative,
           number_last=commutative, doc=f"1 where a {symbol} b, else 0", latex=latex, sympy=sympy, numpy=(ufunc,))


_comparison("lt", "<", operator.lt, "olt", "less", "<", "Lt")
_comparison("le", "<=", operator.le, "ole", "less_equal", r"\le", "Le")
_comparison("gt", ">", operator.gt, "ogt", "greater", ">", "Gt")
_comparison("ge", ">=", operator.ge, "oge", "greater_equal", r"\ge", "Ge")
_comparison("eq", "==", operator.eq, "oeq", "equal", "=", "Eq", commutative=True)
_comparison("ne", "!=", operator.ne, "une", "not_equal", r"\ne", "Ne", commutative=True)

define("and", 2, sem.py_and, sem.np_and, (0.0, 0.0),
       llvm=Inline(_BOTH_TRUE + "{t}c = and i1 {t}0, {t}1\n" + _AS_NUMBER),
       kind="infix", symbol="and", prec=PREC_AND, commutative=True, number_last=True,
       doc="1 where both are true, else 0", latex=r"\land",
       sympy=Sympy("And", lambda sp, a, b: sp.And(sp.Ne(a, 0), sp.Ne(b, 0))), numpy=("logical_and",))
define("or", 2, sem.py_or, sem.np_or, (0.0, 0.0),
       llvm=Inline(_BOTH_TRUE + "{t}c = or i1 {t}0, {t}1\n" + _AS_NUMBER),
       kind="infix", symbol="or", prec=PREC_OR, commutative=True, number_last=True,
       doc="1 where either is true, else 0", latex=r"\lor",
       sympy=Sympy("Or", lambda sp, a, b: sp.Or(sp.Ne(a, 0), sp.Ne(b, 0))), numpy=("logical_or",))
define("not", 1, sem.py_not, sem.np_not, (0.0,), llvm=Inline("{t}c = fcmp oeq double {0}, 0.0\n" + _AS_NUMBER),
       kind="prefix", symbol="not ", prec=PREC_NOT, doc="1 where the argument is 0, else 0", latex=r"\lnot ",
       sympy=Sympy("Not", lambda sp, a: sp.Eq(a, 0)), numpy=("logical_not",))
# SymPy: a Piecewise (read back by symad.interop, with any number of pieces, as nested wheres)
define("where", 3, sem.py_where, sem.np_where,
       (0.0, lambda c, a, b, out: where(c, 1.0, 0.0), lambda c, a, b, out: where(c, 0.0, 1.0)),
       llvm=Inline("{t}c = fcmp une double {0}, 0.0\n{r} = select i1 {t}c, double {1}, double {2}"),
       domain=((1.0, 0.4, -1.1), (-2.0, -0.6, 0.8)), arms=(1, 2), roles=("if", "then", "else"),
       doc="a where the condition is true (not 0), else b; also written if c then a else b",
       latex=(r"\begin{cases} ", 1, r" & \text{if } ", 0, r" \\ ", 2, r" & \text{otherwise} \end{cases}"),
       sympy=Sympy(build=lambda sp, c, a, b: sp.Piecewise((a, sp.Ne(c, 0)), (b, True))))
