"""SymPy both ways (SymPy is an optional dependency): ``to_sympy`` and ``from_sympy``.

Users can simplify in SymPy, then differentiate and compile in symad.  Both walks are
iterative (a deep expression does not overflow Python's stack).  ``to_sympy`` writes
each op as SymPy's own function where it has one, and the stable functions as their
mathematical definitions (``softplus(x)`` is ``log(1 + exp(x))``), and the doubles of
``pi`` and ``e`` as SymPy's constants; ``from_sympy`` reads SymPy's n-ary sums and products
as chains, ``x**(1/2)`` as ``sqrt(x)``, rationals as their nearest doubles, ``Piecewise`` as
nested ``where``, ``Sum`` and ``Product`` with whole-number bounds unrolled, ``x[3]`` of an
``IndexedBase`` as the indexed variable, and admits only names of the name rule.

Loops go both ways too: a ``sum``/``prod`` kept as a loop is SymPy's ``Sum``/``Product`` over an
integer symbol, its entries ``Indexed`` of an ``IndexedBase`` (``x[i + 1]``, ``A[i, j]``); a
``Sum`` or ``Product`` over more than :data:`symad.core.binders.UNROLL_MAX_TERMS` terms is read
back as a loop, as the text's ``sum`` is, so a looped expression comes back as the same node.
"""

from __future__ import annotations

import functools
import importlib
import math
from typing import Any

from symad.core import binders
from symad.core.dag import SCOPED, Graph
from symad.core.errors import LimitError, SymadError
from symad.core.limits import LIMITS
from symad.core.name_rule import checked
from symad.core.ops import OPS
from symad.core.printing import scoped_names
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


# Loops' bounds stay within what the text admits (±2^31); a wider range can only be unrolled.
_LARGEST_BOUND = 2**31
_LOOPS = {"sum": "Sum", "prod": "Product"}


def to_sympy(expr: Expr) -> Any:
    """The expression in SymPy (numbers exact: a double becomes the SymPy Float of its value,
    integers Integers, and the doubles of ``pi`` and ``e`` SymPy's ``pi`` and ``E``); variables
    become real SymPy symbols of the same names; a loop ``Sum(body, (i, a, b))`` (or ``Product``)
    over an integer symbol, its entries ``Indexed`` of real ``IndexedBase``s."""
    sp = _sympy()
    indices: list[Any] = []  # the symbol of each index level, named as the text names them
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
        elif op in SCOPED:
            if not indices:
                indices.extend(sp.Symbol(name, integer=True) for name in scoped_names(g, expr.id))
            built[node] = _scoped_to_sympy(sp, g, node, built, indices)
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


def _scoped_to_sympy(sp: Any, g: Graph, node: int, built: dict[int, Any], indices: list[Any]) -> Any:
    """An index, vector, entry or loop in SymPy, its arguments ``built`` already."""
    op, args, data = g.op[node], g.args[node], g.data[node]
    if op == "index":
        return indices[data]  # type: ignore[index]
    if op == "vector":
        return sp.IndexedBase(data, real=True)
    if op == "item":
        return built[args[0]][tuple(built[a] for a in args[1:])]
    if op not in _LOOPS:
        raise SymadError(f"SymPy has no {op}(...) over a range (a vector of expressions): convert its body, "
                         "one entry's expression, instead")
    level, low, high = data  # type: ignore[misc]
    return getattr(sp, _LOOPS[op])(built[args[0]], (indices[level], low, high))


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
    or a constant.  A ``Sum`` or ``Product`` over more than
    :data:`~symad.core.binders.UNROLL_MAX_TERMS` terms stays a loop, its entries ``x[i + 1]``
    (affine in its indices) entries of the vector ``x``, as in the text."""
    sp = _sympy()
    g = default_graph() if graph is None else graph
    root = sp.sympify(sympy_expr)
    ops = _from_sympy_table(sp)
    # Each SymPy node is read in a scope: the symbols of the loops around it, with their levels.
    built: dict[tuple[Any, tuple], Term] = {}
    children_of: dict[tuple[Any, tuple], list[tuple[Any, tuple]]] = {}
    stack: list[tuple[tuple[Any, tuple], bool]] = [((root, ()), False)]
    while stack:
        key, ready = stack.pop()
        if key in built:
            continue
        if key not in children_of:
            children_of[key] = _children(sp, *key)
        children = children_of[key]
        if not ready:
            stack.append((key, True))
            stack.extend((c, False) for c in reversed(children) if c not in built)  # built in order
            continue
        built[key] = _node(sp, g, key[0], [built[c] for c in children], ops, key[1])
    return Expr(g, _entries_as_items(g, built[root, ()].id))


def _complex(e: Any) -> bool:
    """A number that is not real (acosh(1/2) is I*pi/3 in SymPy): nan in symad's real arithmetic."""
    try:
        return bool(e.is_number) and e.is_real is False
    except OverflowError:  # SymPy evaluates exp of a huge Float past mpmath's range to decide: real
        return False


def _children(sp: Any, e: Any, scope: tuple) -> list[tuple[Any, tuple]]:
    """The SymPy nodes ``e`` is built from, each with the scope it is read in."""
    if _complex(e):
        return []
    if isinstance(e, sp.Piecewise):
        return [(part, scope) for pair in e.args for part in pair if part is not sp.true]
    if isinstance(e, (sp.Sum, sp.Product)):
        bound = {symbol for symbol, _ in scope}
        for limit in e.limits:
            for at in limit[1:]:
                if bound.intersection(at.free_symbols):
                    raise SymadError(f"the bound {at} of {e} uses the index of a range over more than "
                                     f"{binders.UNROLL_MAX_TERMS:,} terms, which stays a loop: its bounds "
                                     "must be numbers")
        loop = _loop(sp, e.limits[-1], e)
        if loop is None:
            return [(_unrolled(sp, e), scope)]
        inner = e.func(e.function, *e.limits[:-1]) if len(e.limits) > 1 else e.function
        return [(inner, (*scope, (loop[0], len(scope))))]  # its level: how many loops enclose it
    if isinstance(e, sp.Indexed):
        return [(i, scope) for i in e.indices] if _is_entry(sp, e) else []
    if isinstance(e, (sp.Symbol, sp.Number, sp.NumberSymbol, sp.logic.boolalg.BooleanAtom)) \
            or e in (sp.oo, -sp.oo, sp.zoo, sp.nan):
        return []
    return [(a, scope) for a in e.args]


def _node(sp: Any, g: Graph, e: Any, args: list[Term], ops: dict[type, str], scope: tuple) -> Term:
    if isinstance(e, sp.Symbol):
        level = next((lv for symbol, lv in reversed(scope) if symbol == e), None)
        return Term(g, g.var(checked(e.name, "a SymPy symbol")) if level is None else g.index(level))
    if isinstance(e, sp.Indexed):
        return _entry(sp, g, e, args, scope) if _is_entry(sp, e) else Term(g, g.var(_indexed_name(sp, e)))
    if isinstance(e, (sp.Sum, sp.Product)):
        loop = _loop(sp, e.limits[-1], e)
        if loop is None:
            return args[0]  # its unrolled terms
        _, low, high, flipped = loop
        op = "sum" if isinstance(e, sp.Sum) else "prod"
        term = Term(g, binders.reduce(g, op, len(scope), low, high, args[0].id))
        return term if not flipped else -term if op == "sum" else 1.0 / term
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


def _loop(sp: Any, limit: Any, e: Any) -> tuple[Any, int, int, bool] | None:
    """``(symbol, low, high, flipped)`` of a range ``limit`` of the Sum (Product) ``e`` if it has
    more than :data:`~symad.core.binders.UNROLL_MAX_TERMS` terms within ±2^31 (a loop), else None.
    ``flipped``: its bounds were reversed (Karr's convention, as :func:`_unrolled` reads it)."""
    index, low, high = limit
    low, high = _whole(sp, low, "the bound", e), _whole(sp, high, "the bound", e)
    flipped = high < low
    if flipped:
        low, high = high + 1, low - 1
    if high - low + 1 <= binders.UNROLL_MAX_TERMS or max(abs(low), abs(high)) > _LARGEST_BOUND:
        return None
    return index, low, high, flipped


def _is_entry(sp: Any, e: Any) -> bool:
    """Whether an Indexed is an entry of a vector (``x[i + 1]``, ``A[2, 3]``), not the variable ``x[3]``."""
    return len(e.indices) > 1 or not isinstance(e.indices[0], sp.Integer)


def _entry(sp: Any, g: Graph, e: Any, indices: list[Term], scope: tuple) -> Term:
    """The entry ``x[i + 1]`` of the vector ``x``, its indices built in ``scope``."""
    bound = {symbol for symbol, _ in scope}
    free = [s for i in e.indices for s in sorted(i.free_symbols, key=str) if s not in bound]
    if free:
        if len(e.indices) == 1:
            _indexed_name(sp, e)  # the error that says the index is no whole number
        raise SymadError(f"the index {free[0]} of {e} is neither a number nor the index of a Sum over more "
                         f"than {binders.UNROLL_MAX_TERMS:,} terms (a loop)")
    vector = g.vector(checked(str(e.base.label), "a SymPy IndexedBase"))
    try:
        return Term(g, binders.item(g, vector, *(i.id for i in indices)))
    except SymadError:
        raise SymadError(f"the indices of {e} must be affine expressions of the indices of the "
                         "loops around it (such as i + 1 or 2*i - 1)") from None


def _entries_as_items(g: Graph, root: int) -> int:
    """``root`` with the variable ``x[3]`` as the entry ``x[3]`` of the vector ``x`` where ``x``
    has entries at a loop's index (as the text reads ``x[3]`` beside a loop); a vector of several
    indices with only entries at numbers is refused as ``A[1, 2]`` alone is."""
    if not g.scoped:
        return root
    order = g.reachable([root])
    lv = binders.levels(g)
    op_of, args_of, data_of = g.op, g.args, g.data
    looped = binders.looped_vectors(g, order)
    for n in order:
        if op_of[n] == "item" and lv[n] < 0 and data_of[args_of[n][0]] not in looped:
            raise SymadError(f"{data_of[args_of[n][0]]}[...] has {len(args_of[n]) - 1} indices at numbers and "
                             "none at a loop's index: symad's indexed variables have one (x[3])")
    return binders.entries_of(g, [root], looped)[0]


def _unrolled(sp: Any, e: Any) -> Any:
    """A Sum's (Product's) terms as one unevaluated Add (Mul), in index order, inner limits
    first.  An upper bound below the lower one follows SymPy (Karr's convention):
    ``Sum(f, (i, a, b))`` with ``b < a`` is ``-Sum(f, (i, b+1, a-1))``, a Product its inverse."""
    product = isinstance(e, sp.Product)
    terms: list[Any] = []
    work: list[tuple[Any, tuple[Any, ...], bool]] = [(e.function, tuple(e.limits), False)]
    while work:
        f, limits, flipped = work.pop()
        if limits and len(limits) < len(e.limits) and _loop(sp, limits[-1], e) is not None:
            f, limits = e.func(f, *limits), ()  # an inner range long enough stays a loop: one term
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
