"""SymPy both ways (SymPy is an optional dependency): ``to_sympy`` and ``from_sympy``.

Users can simplify in SymPy, then differentiate and compile in symad.  Both walks are
iterative (a deep expression does not overflow Python's stack).  ``to_sympy`` writes
each op as SymPy's own function where it has one, and the stable functions as their
mathematical definitions (``softplus(x)`` is ``log(1 + exp(x))``); ``from_sympy`` reads
SymPy's n-ary sums and products as chains, ``x**(1/2)`` as ``sqrt(x)``, rationals as
their nearest doubles, and ``Piecewise`` as nested ``where``.
"""

from __future__ import annotations

from typing import Any

from symad.core.errors import SymadError
from symad.core.graph import Graph
from symad.core.term import Term
from symad.expr import Expr, default_graph


def _sympy() -> Any:
    try:
        import sympy
    except ImportError:
        raise SymadError("SymPy is not installed: pip install sympy") from None
    return sympy


def _to_sympy_table(sp: Any) -> dict[str, Any]:
    half = sp.Rational(1, 2)

    def indicator(condition: Any) -> Any:
        return sp.Piecewise((sp.Integer(1), condition), (sp.Integer(0), True))

    def true(a: Any) -> Any:
        return sp.Ne(a, 0)

    return {
        "add": lambda a, b: a + b, "sub": lambda a, b: a - b, "mul": lambda a, b: a * b, "div": lambda a, b: a / b,
        "pow": sp.Pow, "neg": lambda a: -a, "sin": sp.sin, "cos": sp.cos, "tan": sp.tan, "asin": sp.asin,
        "acos": sp.acos, "atan": sp.atan, "atan2": sp.atan2, "sinh": sp.sinh, "cosh": sp.cosh, "tanh": sp.tanh,
        "asinh": sp.asinh, "acosh": sp.acosh, "atanh": sp.atanh, "exp": sp.exp, "log": sp.log, "sqrt": sp.sqrt,
        "abs": sp.Abs, "sign": sp.sign, "step": lambda a: sp.Heaviside(a, half), "min": sp.Min, "max": sp.Max,
        "log1p": lambda a: sp.log(1 + a), "expm1": lambda a: sp.exp(a) - 1,
        "sigmoid": lambda a: 1 / (1 + sp.exp(-a)), "softplus": lambda a: sp.log(1 + sp.exp(a)),
        "log_sigmoid": lambda a: -sp.log(1 + sp.exp(-a)),
        "logaddexp": lambda a, b: sp.log(sp.exp(a) + sp.exp(b)), "erf": sp.erf, "erfc": sp.erfc,
        "hypot": lambda a, b: sp.sqrt(a**2 + b**2), "cbrt": lambda a: sp.sign(a) * sp.Abs(a) ** sp.Rational(1, 3),
        "floor": sp.floor, "ceil": sp.ceiling, "round": lambda a: sp.sign(a) * sp.floor(sp.Abs(a) + half),
        "sinc": sp.sinc, "clip": lambda x, lo, hi: sp.Min(sp.Max(x, lo), hi),
        "lt": lambda a, b: indicator(sp.Lt(a, b)), "le": lambda a, b: indicator(sp.Le(a, b)),
        "gt": lambda a, b: indicator(sp.Gt(a, b)), "ge": lambda a, b: indicator(sp.Ge(a, b)),
        "eq": lambda a, b: indicator(sp.Eq(a, b)), "ne": lambda a, b: indicator(sp.Ne(a, b)),
        "and": lambda a, b: indicator(sp.And(true(a), true(b))), "or": lambda a, b: indicator(sp.Or(true(a), true(b))),
        "not": lambda a: indicator(sp.Eq(a, 0)),
        "where": lambda c, a, b: sp.Piecewise((a, true(c)), (b, True)),
    }


def to_sympy(expr: Expr) -> Any:
    """The expression in SymPy (numbers exact: a double becomes the SymPy Float of its value,
    integers Integers); variables become real SymPy symbols of the same names."""
    sp = _sympy()
    table = _to_sympy_table(sp)
    g = expr.graph
    built: dict[int, Any] = {}
    for node in g.reachable([expr.id]):
        op, data = g.op[node], g.data[node]
        if op == "const":
            value = float(data)  # type: ignore[arg-type]
            built[node] = sp.Integer(int(value)) if value.is_integer() and abs(value) < 2**53 else sp.Float(value, 17)
        elif op == "var":
            built[node] = sp.Symbol(data, real=True)
        else:
            rule = table.get(op)
            if rule is None:
                raise SymadError(f"{op} has no SymPy form")
            try:
                built[node] = rule(*(built[a] for a in g.args[node]))
            except (ValueError, TypeError) as err:  # min(x, acosh(1/2)): SymPy cannot order I*pi/3
                raise SymadError(f"SymPy cannot build {op} of these arguments: {err}") from None
    return built[expr.id]


_FROM_SYMPY_FUNCTIONS = {
    "sin": "sin", "cos": "cos", "tan": "tan", "asin": "asin", "acos": "acos", "atan": "atan", "atan2": "atan2",
    "sinh": "sinh", "cosh": "cosh", "tanh": "tanh", "asinh": "asinh", "acosh": "acosh", "atanh": "atanh",
    "exp": "exp", "log": "log", "Abs": "abs", "sign": "sign", "erf": "erf", "erfc": "erfc", "floor": "floor",
    "ceiling": "ceil", "sinc": "sinc",
}


def from_sympy(sympy_expr: Any, graph: Graph | None = None) -> Expr:
    """A SymPy expression as a symad expression of ``graph`` (the default graph if None).

    Knows SymPy's arithmetic, powers (``x**(1/2)`` is ``sqrt(x)``), the functions symad has,
    ``Min``/``Max``, ``Heaviside``, ``pi``, ``E``, infinities (complex infinity, ``zoo``, is
    ``nan``: it has no real value), and ``Piecewise`` of relations (as nested ``where``);
    anything else is a SymadError naming it."""
    sp = _sympy()
    g = default_graph() if graph is None else graph
    root = sp.sympify(sympy_expr)
    built: dict[Any, Term] = {}
    stack: list[tuple[Any, bool]] = [(root, False)]
    while stack:
        e, ready = stack.pop()
        if e in built:
            continue
        children = _children(sp, e)
        if not ready:
            stack.append((e, True))
            stack.extend((c, False) for c in children if c not in built)
            continue
        built[e] = _node(sp, g, e, [built[c] for c in children])
    return Expr(g, built[root].id)


def _complex(e: Any) -> bool:
    """A number that is not real (acosh(1/2) is I*pi/3 in SymPy): nan in symad's real arithmetic."""
    return bool(e.is_number) and e.is_real is False


def _children(sp: Any, e: Any) -> list[Any]:
    if _complex(e):
        return []
    if isinstance(e, sp.Piecewise):
        return [part for pair in e.args for part in pair if part is not sp.true]
    if isinstance(e, (sp.Symbol, sp.Number, sp.NumberSymbol, sp.logic.boolalg.BooleanAtom)) \
            or e in (sp.oo, -sp.oo, sp.zoo, sp.nan):
        return []
    return list(e.args)


def _node(sp: Any, g: Graph, e: Any, args: list[Term]) -> Term:
    if isinstance(e, sp.Symbol):
        return Term(g, g.var(e.name))
    if e is sp.nan or isinstance(e, (sp.Number, sp.NumberSymbol)) or e in (sp.oo, -sp.oo):
        return Term(g, g.const(float(e)))
    if e is sp.zoo or _complex(e):  # complex infinity (x/0), complex numbers: no real value
        return Term(g, g.const(float("nan")))
    if e is sp.true or e is sp.false:
        return Term(g, g.const(1.0 if e is sp.true else 0.0))
    if isinstance(e, sp.ITE):  # a boolean if-then-else
        return args[0].apply("where", args[1], args[2])
    if isinstance(e, sp.Add):
        return _chain(args, lambda a, b: a + b)
    if isinstance(e, sp.Mul):
        return _chain(args, lambda a, b: a * b)
    if isinstance(e, sp.Pow):
        base, exponent = args
        if e.exp == sp.Rational(1, 2):
            return base.apply("sqrt")
        if e.exp == sp.Rational(-1, 2):
            return 1.0 / base.apply("sqrt")
        return base ** exponent
    if isinstance(e, (sp.Min, sp.Max)):
        name = "min" if isinstance(e, sp.Min) else "max"
        return _chain(args, lambda a, b: a.apply(name, b))
    if isinstance(e, sp.Heaviside):
        return args[0].apply("step")  # (step(0) is 1/2, SymPy's default H(0) is undefined)
    if isinstance(e, sp.Piecewise):
        return _piecewise(sp, g, e, args)
    relation = _RELATIONS.get(type(e).__name__)
    if relation is not None:
        return args[0].apply(relation, args[1])
    if isinstance(e, (sp.And, sp.Or)):
        return _chain(args, lambda a, b: a.apply("and" if isinstance(e, sp.And) else "or", b))
    if isinstance(e, sp.Not):
        return args[0].apply("not")
    name = _FROM_SYMPY_FUNCTIONS.get(type(e).__name__)
    if name is not None and isinstance(e, sp.Function):
        if name == "log" and len(args) == 2:
            return args[0].apply("log") / args[1].apply("log")
        return args[0].apply(name, *args[1:])
    raise SymadError(f"symad has no operation for SymPy's {type(e).__name__}")


_RELATIONS = {"StrictLessThan": "lt", "LessThan": "le", "StrictGreaterThan": "gt", "GreaterThan": "ge",
              "Equality": "eq", "Unequality": "ne"}


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
