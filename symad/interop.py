"""SymPy both ways (SymPy is an optional dependency): ``to_sympy`` and ``from_sympy``.

Users can simplify in SymPy, then differentiate and compile in symad.  Both walks are
iterative (a deep expression does not overflow Python's stack).  ``to_sympy`` writes
each op as SymPy's own function where it has one, and the stable functions as their
mathematical definitions (``softplus(x)`` is ``log(1 + exp(x))``), and the doubles of
``pi`` and ``e`` as SymPy's constants; ``from_sympy`` reads SymPy's n-ary sums and products
as chains, ``x**(1/2)`` as ``sqrt(x)``, rationals as their nearest doubles, ``Piecewise`` as
nested ``where``, ``Sum`` and ``Product`` with whole-number bounds unrolled, ``x[3]`` of an
``IndexedBase`` as the indexed variable, and admits only names of the name rule.
"""

from __future__ import annotations

import functools
import importlib
import math
from typing import Any

from symad.core import binders
from symad.core.dag import Graph
from symad.core.errors import LimitError, SymadError
from symad.core.limits import LIMITS
from symad.core.name_rule import checked
from symad.core.ops import OPS
from symad.core.term import Term
from symad.expr import Expr, default_graph


def _sympy() -> Any:
    try:
        import sympy
    except ImportError:
        raise SymadError("SymPy is not installed: pip install sympy") from None
    return sympy


def _sympy_function(sp: Any, name: str) -> Any:
    """SymPy's function ``name``: an attribute of ``sympy``, or a dotted path under it."""
    module, _, attr = name.rpartition(".")
    return getattr(importlib.import_module(f"sympy.{module}") if module else sp, attr)


def _to_sympy_rule(sp: Any, op: str) -> Any:
    """How ``to_sympy`` writes op ``op``: the op table entry's SymPy form, a condition as 1 or 0."""
    form = OPS[op].sympy
    if form is None:
        raise SymadError(f"{op} has no SymPy form")
    if form.build is not None:
        build = functools.partial(form.build, sp)
    else:
        build = _sympy_function(sp, form.name)  # type: ignore[arg-type]

    def rule(*args: Any) -> Any:
        value = build(*args)
        # A condition (a relation, and/or/not, true/false): the number 1 where it holds, else 0.  A
        # Symbol is a Boolean in SymPy too, and max(x, x) is x: only what is not also a number.
        if isinstance(value, sp.logic.boolalg.Boolean) and not isinstance(value, sp.Expr):
            return sp.Piecewise((sp.Integer(1), value), (sp.Integer(0), True))
        return value

    return rule


def _from_sympy_table(sp: Any) -> dict[type, str]:
    """SymPy's function classes that are ops, from the op table: class -> op."""
    return {_sympy_function(sp, spec.sympy.name): name for name, spec in OPS.items()
            if spec.sympy is not None and spec.sympy.name is not None}


def to_sympy(expr: Expr) -> Any:
    """The expression in SymPy (numbers exact: a double becomes the SymPy Float of its value,
    integers Integers, and the doubles of ``pi`` and ``e`` SymPy's ``pi`` and ``E``); variables
    become real SymPy symbols of the same names."""
    binders.refuse(expr.graph, [expr.id], "SymPy conversion")
    sp = _sympy()
    table: dict[str, Any] = {}
    # The text's pi and e are these doubles: exactly these bits (and their negations) are the constants.
    constants = {math.pi: sp.pi, -math.pi: -sp.pi, math.e: sp.E, -math.e: -sp.E}
    g = expr.graph
    built: dict[int, Any] = {}
    for node in g.reachable([expr.id]):
        op, data = g.op[node], g.data[node]
        if op == "const":
            value = float(data)  # type: ignore[arg-type]
            if value in constants:
                built[node] = constants[value]
            elif value.is_integer() and abs(value) < 2**53:
                built[node] = sp.Integer(int(value))
            else:
                built[node] = sp.Float(value, 17)
        elif op == "var":
            built[node] = sp.Symbol(data, real=True)
        else:
            rule = table.get(op)
            if rule is None:
                rule = table[op] = _to_sympy_rule(sp, op)
            args = [built[a] for a in g.args[node]]
            try:
                try:
                    built[node] = rule(*args)
                except OverflowError:  # SymPy evaluates exp(exp(exp(exp(5.63)))) to a number past mpmath's
                    with sp.evaluate(False):
                        built[node] = rule(*args)
            except (ValueError, TypeError, OverflowError) as err:  # min(x, acosh(1/2)): SymPy cannot order I*pi/3
                raise SymadError(f"SymPy cannot build {op} of these arguments: {err}") from None
    return built[expr.id]


def from_sympy(sympy_expr: Any, graph: Graph | None = None) -> Expr:
    """A SymPy expression as a symad expression of ``graph`` (the default graph if None).

    Knows SymPy's arithmetic, powers (``x**(1/2)`` is ``sqrt(x)``), the functions symad has,
    ``Min``/``Max``, ``Heaviside``, ``pi``, ``E``, infinities (complex infinity, ``zoo``, is
    ``nan``: it has no real value), ``Piecewise`` of relations (as nested ``where``), ``Sum``
    and ``Product`` over whole-number bounds (unrolled, as the text's ``sum`` is; SymPy's
    convention for an upper bound below the lower one) and ``x[3]`` of an ``IndexedBase``
    (the indexed variable ``x[3]``); anything else is a SymadError naming it.  A symbol's name
    must obey the name rule (docs/guide/language.md): ``θ``, ``x_{1}``, or a symbol named ``e`` or
    ``pi``, is a :class:`~symad.core.errors.NameRuleError`, never silently another variable
    or a constant."""
    sp = _sympy()
    g = default_graph() if graph is None else graph
    root = sp.sympify(sympy_expr)
    ops = _from_sympy_table(sp)
    built: dict[Any, Term] = {}
    children_of: dict[Any, list[Any]] = {}
    stack: list[tuple[Any, bool]] = [(root, False)]
    while stack:
        e, ready = stack.pop()
        if e in built:
            continue
        if e not in children_of:
            children_of[e] = _children(sp, e)
        children = children_of[e]
        if not ready:
            stack.append((e, True))
            stack.extend((c, False) for c in reversed(children) if c not in built)  # built in order
            continue
        built[e] = _node(sp, g, e, [built[c] for c in children], ops)
    return Expr(g, built[root].id)


def _complex(e: Any) -> bool:
    """A number that is not real (acosh(1/2) is I*pi/3 in SymPy): nan in symad's real arithmetic."""
    try:
        return bool(e.is_number) and e.is_real is False
    except OverflowError:  # SymPy evaluates exp of a huge Float past mpmath's range to decide: real
        return False


def _children(sp: Any, e: Any) -> list[Any]:
    if _complex(e):
        return []
    if isinstance(e, sp.Piecewise):
        return [part for pair in e.args for part in pair if part is not sp.true]
    if isinstance(e, (sp.Sum, sp.Product)):
        return [_unrolled(sp, e)]
    if isinstance(e, (sp.Symbol, sp.Number, sp.NumberSymbol, sp.logic.boolalg.BooleanAtom, sp.Indexed)) \
            or e in (sp.oo, -sp.oo, sp.zoo, sp.nan):
        return []
    return list(e.args)


def _node(sp: Any, g: Graph, e: Any, args: list[Term], ops: dict[type, str]) -> Term:
    if isinstance(e, sp.Symbol):
        return Term(g, g.var(checked(e.name, "a SymPy symbol")))
    if isinstance(e, sp.Indexed):
        return Term(g, g.var(_indexed_name(sp, e)))
    if isinstance(e, (sp.Sum, sp.Product)):
        return args[0]  # its unrolled terms
    if e is sp.nan or isinstance(e, (sp.Number, sp.NumberSymbol)) or e in (sp.oo, -sp.oo):
        return Term(g, g.const(float(e)))
    if e is sp.zoo or _complex(e):  # complex infinity (x/0), complex numbers: no real value
        return Term(g, g.const(float("nan")))
    if e is sp.true or e is sp.false:
        return Term(g, g.const(1.0 if e is sp.true else 0.0))
    if isinstance(e, sp.ITE):  # a boolean if-then-else
        return args[0].apply("where", args[1], args[2])
    if isinstance(e, sp.Pow):
        base, exponent = args
        if e.exp == sp.Rational(1, 2):
            return base.apply("sqrt")
        if e.exp == sp.Rational(-1, 2):
            return 1.0 / base.apply("sqrt")
        return base ** exponent
    if isinstance(e, sp.Piecewise):
        return _piecewise(sp, g, e, args)
    if isinstance(e, sp.log) and len(args) == 2:  # log(x, b), if SymPy left it so
        return args[0].apply("log") / args[1].apply("log")
    op = ops.get(type(e))
    if op is not None:
        arity = OPS[op].arity
        if len(args) > arity == 2:  # SymPy's n-ary Add, Min, And...: a chain, left to right
            return _chain(args, lambda a, b: a.apply(op, b))
        # (SymPy's further optional arguments, Heaviside's value at 0, are not read)
        return args[0].apply(op, *args[1:arity])
    raise SymadError(f"symad has no operation for SymPy's {type(e).__name__}")


def _chain(args: list[Term], combine: Any) -> Term:
    total = args[0]
    for a in args[1:]:
        total = combine(total, a)
    return total


def _piecewise(sp: Any, g: Graph, e: Any, args: list[Term]) -> Term:
    """Piecewise((a, c1), (b, c2), ..., (z, True)) as where(c1, a, where(c2, b, ... z)); without a
    final True piece, the value where no condition holds is nan (as SymPy's is undefined)."""
    pieces: list[tuple[Term, Term | None]] = []
    k = 0
    for _, condition in e.args:
        v = args[k]
        k += 1
        if condition is sp.true:
            pieces.append((v, None))
            break
        pieces.append((v, args[k]))
        k += 1
    result = Term(g, g.const(float("nan"))) if pieces[-1][1] is not None else pieces.pop()[0]
    for value, condition in reversed(pieces):
        result = condition.apply("where", value, result)  # type: ignore[union-attr]
    return result


def _whole(sp: Any, value: Any, what: str, e: Any) -> int:
    """``value`` as an int, if SymPy knows it is a whole number; else a SymadError about ``e``."""
    if isinstance(value, sp.Integer):
        return int(value)
    hint = f" (substitute a number first: expr.subs({value}, 10))" if isinstance(value, sp.Symbol) else ""
    raise SymadError(f"{what} {value} of {e} is not a whole number: symad reads indices and the bounds of "
                     f"Sum and Product as whole numbers{hint}")


def _indexed_name(sp: Any, e: Any) -> str:
    """``x[3]`` of an IndexedBase ``x``: the indexed variable ``x[3]``."""
    if len(e.indices) != 1:
        raise SymadError(f"{e} has {len(e.indices)} indices: symad's indexed variables have one (x[3])")
    index = _whole(sp, e.indices[0], "the index", e)
    return checked(f"{e.base.label}[{index}]", "a SymPy Indexed")


def _unrolled(sp: Any, e: Any) -> Any:
    """A Sum's (Product's) terms as one unevaluated Add (Mul), in index order, inner limits
    first.  An upper bound below the lower one follows SymPy (Karr's convention):
    ``Sum(f, (i, a, b))`` with ``b < a`` is ``-Sum(f, (i, b+1, a-1))``, a Product its inverse."""
    product = isinstance(e, sp.Product)
    terms: list[Any] = []
    work: list[tuple[Any, tuple[Any, ...], bool]] = [(e.function, tuple(e.limits), False)]
    while work:
        f, limits, flipped = work.pop()
        if not limits:
            terms.append(f if not flipped else sp.Pow(f, -1, evaluate=False) if product
                         else sp.Mul(-1, f, evaluate=False))
            continue
        *inner, (index, low, high) = limits
        low, high = _whole(sp, low, "the bound", e), _whole(sp, high, "the bound", e)
        if high < low:
            low, high, flipped = high + 1, low - 1, not flipped
        if len(terms) + len(work) + high - low + 1 > LIMITS.max_nodes:
            raise LimitError(f"unrolling {type(e).__name__} would take over {LIMITS.max_nodes:,} terms "
                             "(raise the limit with {setting})", "LIMITS.max_nodes")
        for k in range(high, low - 1, -1):  # popped in index order
            at = {index: sp.Integer(k)}
            work.append((f.subs(at), tuple((i, a.subs(at), b.subs(at)) for i, a, b in inner), flipped))
    return sp.Mul(*terms, evaluate=False) if product else sp.Add(*terms, evaluate=False)
