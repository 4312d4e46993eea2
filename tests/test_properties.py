"""Property tests on random expressions: derivatives against SymPy and finite differences,
forward vs reverse mode, printing round trips, hash-consing invariants, batch evaluation,
and one finite-difference check per op-table entry.

Random expression *text* comes from ``tests/strategies.py`` (generated from the op
table).  SymPy is the independent oracle: the same text is translated to SymPy by
:func:`to_sympy` (a whitelist of names, no ``eval`` of anything else), differentiated
there and evaluated at 30 significant digits.

Random expressions are often undefined at random points (``log`` of a negative
number, overflow) or sit next to a kink (``abs``, ``min``, ``max``, ``sign``,
``step``), where derivatives legitimately differ.  Such examples are counted as
skipped, not compared; the terminal summary prints, per check, how many examples
were tried, compared and skipped, and how many disagreed (see ``conftest.py``).
Every check also asserts that most examples were really compared.
"""

from __future__ import annotations

import math
import re

import numpy as np
import pytest
import sympy
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sympy.parsing.sympy_parser import auto_number, convert_xor, parse_expr
from strategies import VARIABLES, coordinates, expressions, points

import symad
from symad import Graph
from symad.ops import CONSTANTS, FUNCTIONS, OPS, PREC_ATOM, PREC_POWER, PREC_PRODUCT, PREC_SUM, PREC_UNARY

# Fixed seeds (derandomize) keep CI reproducible; no example database is written.
PROPERTY = dict(deadline=None, derandomize=True, database=None, print_blob=False,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                       HealthCheck.filter_too_much])

REL_TOL = 1e-9  # symad's float64 result vs SymPy's 30-digit one
ABS_TOL = 1e-12  # floor for values near 0
KINK = 1e-6  # closer than this to a kink of abs/min/max/sign/step: not compared
MIN_COMPARED = 0.5  # every check must compare at least this fraction of its examples


# ============================================================ SymPy oracle
_SYMBOLS = {name: sympy.Symbol(name, real=True) for name in VARIABLES}
_HALF = sympy.S.Half

# symad's functions and constants in SymPy; a function missing here fails
# test_sympy_translator_knows_every_function, so a new op gets an oracle too.
SYMPY_FUNCTIONS = {
    "sin": sympy.sin, "cos": sympy.cos, "tan": sympy.tan,
    "asin": sympy.asin, "acos": sympy.acos, "atan": sympy.atan,
    "sinh": sympy.sinh, "cosh": sympy.cosh, "tanh": sympy.tanh,
    "exp": sympy.exp, "log": sympy.log,  # log(x, b) is log(x)/log(b) in SymPy too
    "sqrt": sympy.sqrt, "abs": sympy.Abs, "sign": sympy.sign,
    "step": lambda a: sympy.Heaviside(a, _HALF),  # step(0) = 1/2, as in symad
    "atan2": sympy.atan2, "pow": sympy.Pow, "min": sympy.Min, "max": sympy.Max,
}
SYMPY_CONSTANTS = {"pi": sympy.pi, "e": sympy.E, "inf": sympy.oo, "nan": sympy.nan}

_ALLOWED_TEXT = re.compile(r"[A-Za-z0-9_ .+\-*/^(),]*")
_NAME = re.compile(r"(?<![0-9.])[A-Za-z_][A-Za-z_0-9]*")
# parse_expr evaluates the (tokenized, transformed) text against these namespaces
# only: no builtins, nothing but numbers, our symbols and the functions above.
_SYMPY_GLOBALS = {"__builtins__": {}, "Integer": sympy.Integer, "Float": sympy.Float,
                  "Rational": sympy.Rational}
_SYMPY_LOCALS = {**_SYMBOLS, **SYMPY_FUNCTIONS, **SYMPY_CONSTANTS}


def to_sympy(text: str) -> sympy.Expr:
    """The same expression in SymPy; ``^`` is power (``convert_xor``), names are whitelisted."""
    if not _ALLOWED_TEXT.fullmatch(text):
        raise ValueError(f"unexpected character in {text!r}")
    for name in _NAME.findall(re.sub(r"\d+\.?\d*[eE][+-]?\d+", "", text)):
        if name not in _SYMPY_LOCALS:
            raise ValueError(f"name {name!r} is not in the SymPy translator")
    return parse_expr(text, local_dict=dict(_SYMPY_LOCALS), global_dict=dict(_SYMPY_GLOBALS),
                      transformations=(auto_number, convert_xor))


def sympy_at(e: sympy.Expr, point: dict[str, float]) -> float | None:
    """``e`` at the point, to 30 digits, as a float; None if complex, non-finite or undefined."""
    subs = {_SYMBOLS[n]: sympy.Float(v, 40) for n, v in point.items()}  # exact binary values
    try:
        value = e.evalf(30, subs=subs)
    except (ValueError, TypeError, ZeroDivisionError, OverflowError):
        return None
    if not value.is_number:
        return None
    re_part, im_part = value.as_real_imag()
    if not (re_part.is_Number and im_part.is_Number):
        return None
    if im_part != 0 and abs(im_part) > 1e-25 * max(1, abs(re_part)):
        return None
    try:
        result = float(re_part)
    except (TypeError, ValueError):
        return None
    return result if math.isfinite(result) else None


def close(got: float, want: float, rel: float = REL_TOL, floor: float = ABS_TOL) -> bool:
    return abs(got - want) <= rel * max(abs(got), abs(want)) + floor


# ============================================================ helpers on symad's side
def node_values(e: symad.Expr, point: dict[str, float]) -> dict[int, float]:
    """Every node ``e`` depends on, evaluated with the op table's NumPy functions."""
    g = e.graph
    values: dict[int, float] = {}
    with np.errstate(all="ignore"):
        for n in g.reachable([e.id]):
            op = g.op[n]
            if op == "const":
                values[n] = g.data[n]
            elif op == "var":
                values[n] = point[g.data[n]]
            else:
                values[n] = float(OPS[op].np(*(np.float64(values[a]) for a in g.args[n])))
    return values


def kink_distance(e: symad.Expr, point: dict[str, float]) -> float:
    """How far the point is from the nearest kink of abs/sign/step/min/max in ``e``."""
    g = e.graph
    values = node_values(e, point)
    nearest = math.inf
    for n, v in values.items():
        args = [values[a] for a in g.args[n]]
        if g.op[n] in ("abs", "sign", "step"):
            nearest = min(nearest, abs(args[0]))
        elif g.op[n] in ("min", "max"):
            a, b = args
            nearest = min(nearest, abs(a - b) / max(1.0, abs(a), abs(b)))
    return nearest if nearest == nearest else 0.0


def finite(*values) -> bool:
    return all(np.all(np.isfinite(v)) for v in values)


def at(point: dict[str, float], names) -> dict[str, float]:
    return {n: point[n] for n in names}


def check_compared_enough(tally) -> None:
    assert tally.compared >= MIN_COMPARED * tally.tried, (
        f"only {tally.compared} of {tally.tried} examples were compared: {tally.skipped}")


# ============================================================ 1. gradient vs SymPy
def test_sympy_translator_knows_every_function():
    assert set(FUNCTIONS) <= set(SYMPY_FUNCTIONS), "add the new function to SYMPY_FUNCTIONS"
    assert set(CONSTANTS) <= set(SYMPY_CONSTANTS)


def test_gradient_matches_sympy(property_tally):
    tally = property_tally("random expressions vs SymPy gradient")

    @settings(max_examples=1500, **PROPERTY)
    @given(text=expressions(), point=points())
    def check(text, point):
        tally.tried += 1
        e = symad.parse(text, Graph())
        names = e.variables
        point = at(point, names)
        if kink_distance(e, point) < KINK:
            return tally.skip("near a kink")
        value, grad = e.compile().value_and_grad(point)
        if not finite(value, grad):
            return tally.skip("non-finite in symad")
        s = to_sympy(text)
        want_value = sympy_at(s, point)
        want_grad = [sympy_at(sympy.diff(s, _SYMBOLS[n]), point) for n in names]
        if want_value is None or None in want_grad:
            return tally.skip("undefined in SymPy")
        tally.compared += 1
        bad = [f"value {value!r} vs SymPy {want_value!r}"] if not close(value, want_value) else []
        bad += [f"d/d{n}: {g!r} vs SymPy {w!r}" for n, g, w in zip(names, grad, want_grad)
                if not close(g, w)]
        if bad:
            tally.mismatch(f"{text} at {point}")
        assert not bad, f"{text} at {point}: " + "; ".join(bad)

    check()
    check_compared_enough(tally)


# ============================================================ 2. gradient vs finite differences
def central_difference(fn: symad.Function, point: dict[str, float], name: str, h: float) -> float:
    up, down = dict(point), dict(point)
    up[name] += h
    down[name] -= h
    return (fn.value(up) - fn.value(down)) / (2 * h)


def test_gradient_matches_finite_differences(property_tally):
    tally = property_tally("random expressions vs finite differences")

    @settings(max_examples=1500, **PROPERTY)
    @given(text=expressions(), point=points())
    def check(text, point):
        tally.tried += 1
        e = symad.parse(text, Graph())
        names = e.variables
        point = at(point, names)
        if kink_distance(e, point) < 1e-3:
            return tally.skip("near a kink")
        fn = e.compile()
        value, grad = fn.value_and_grad(point)
        if not finite(value, grad):
            return tally.skip("non-finite")
        bad = []
        for name, g in zip(names, grad):
            h = 1e-6 * max(1.0, abs(point[name]))
            fd, coarse = central_difference(fn, point, name, h), central_difference(fn, point, name, 8 * h)
            if not finite(fd, coarse) or not close(fd, coarse, rel=1e-4, floor=1e-6 * (1 + abs(value))):
                # The difference quotient itself has not converged: a discontinuity, a
                # kink or a pole is within a few steps. Nothing to compare with.
                return tally.skip("finite differences unreliable")
            if not close(g, fd, rel=1e-5, floor=1e-6 * (1 + abs(value))):
                bad.append(f"d/d{name}: {g!r} vs finite difference {fd!r}")
        tally.compared += 1
        if bad:
            tally.mismatch(f"{text} at {point}")
        assert not bad, f"{text} at {point}: " + "; ".join(bad)

    check()
    check_compared_enough(tally)


# ============================================================ 3. forward mode vs reverse mode
def test_jvp_equals_gradient_dot_direction(property_tally):
    tally = property_tally("random expressions: JVP vs gradient·direction")

    @settings(max_examples=1000, **PROPERTY)
    @given(text=expressions(), point=points(), direction=points())
    def check(text, point, direction):
        tally.tried += 1
        e = symad.parse(text, Graph())
        names = e.variables
        point, direction = at(point, names), at(direction, names)
        value, grad = e.compile().value_and_grad(point)
        if not finite(value, grad):
            return tally.skip("non-finite")
        jvp = e.jvp(direction).compile(variables=list(names)).value(point)
        terms = [g * direction[n] for n, g in zip(names, grad)]
        want = math.fsum(terms)
        tally.compared += 1
        scale = math.fsum(abs(t) for t in terms)
        ok = math.isfinite(jvp) and abs(jvp - want) <= 1e-9 * scale + ABS_TOL
        if not ok:
            tally.mismatch(f"{text} at {point} along {direction}")
        assert ok, f"{text} at {point} along {direction}: jvp {jvp!r} vs gradient·direction {want!r}"

    check()
    check_compared_enough(tally)


# ============================================================ 4. printing round trip
def test_printing_round_trips(property_tally):
    tally = property_tally("random expressions: print/parse round trips (with their gradients)")

    @settings(max_examples=2000, **PROPERTY)
    @given(text=expressions())
    def check(text):
        tally.tried += 1
        g = Graph()
        e = symad.parse(text, g)
        tally.compared += 1
        for label, expr in [("expression", e), *((f"d/d{n}", d) for n, d in e.grad().items())]:
            printed = str(expr)
            again = symad.parse(printed, g)
            if again != expr:
                tally.mismatch(f"{text}: {label}")
            assert again == expr, f"{label} of {text!r} prints as {printed!r}, which parses as {str(again)!r}"

    check()
    check_compared_enough(tally)


# ============================================================ 5. hash-consing invariants
def postfix_bound(text: str) -> int:
    """An upper bound on the tree size of ``text``'s DAG, from the parser's postfix alone.

    Every rewrite symad does keeps or shrinks the tree, except ``log(x, b)``, which
    becomes ``log(x)/log(b)``: two nodes more than its one token.
    """
    tokens = symad.to_postfix(text)
    return len(tokens) + 2 * sum(1 for t in tokens if t.kind == "call" and t.text == "log" and t.arity == 2)


def graph_invariants(g: Graph) -> list[str]:
    problems = []
    seen: dict[tuple, int] = {}
    for n in range(len(g)):
        op, args, data = g.op[n], g.args[n], g.data[n]
        key = (op, args, data.hex() if isinstance(data, float) else data)
        if key in seen:
            problems.append(f"nodes {seen[key]} and {n} are both {key}")
        seen[key] = n
        if any(a >= n for a in args):
            problems.append(f"node {n} ({op}) has an argument that is not older: {args}")
        if op not in ("const", "var") and len(args) != OPS[op].arity:
            problems.append(f"node {n} ({op}) has {len(args)} arguments")
    return problems


_COMMUTATIVE = [name for name, spec in OPS.items() if spec.commutative]


def _commuted(name: str, a: str, b: str) -> str:
    spec = OPS[name]
    return f"({a}){spec.symbol}({b})" if spec.kind == "infix" else f"{spec.symbol}({a}, {b})"


def test_hash_consing_invariants(property_tally):
    tally = property_tally("random expression pairs: hash-consing invariants")

    @settings(max_examples=1000, **PROPERTY)
    @given(a=expressions(4), b=expressions(4), op=st.sampled_from(_COMMUTATIVE))
    def check(a, b, op):
        tally.tried += 1
        g = Graph()
        ea = symad.parse(a, g)
        problems = []
        if symad.parse(a, g) != ea:
            problems.append("parsing the same text twice gave two nodes")
        ab, ba = symad.parse(_commuted(op, a, b), g), symad.parse(_commuted(op, b, a), g)
        if ab != ba:
            problems.append(f"{op}(a, b) is {ab!r} but {op}(b, a) is {ba!r}")
        for text in (a, b, _commuted(op, a, b)):
            e = symad.parse(text, g)
            stats = e.stats()
            if stats["dag_nodes"] != len(g.reachable([e.id])):
                problems.append(f"{text}: stats()['dag_nodes'] disagrees with reachable()")
            if not stats["dag_nodes"] <= stats["tree_nodes"] <= postfix_bound(text):
                problems.append(f"{text}: dag {stats['dag_nodes']}, tree {stats['tree_nodes']}, "
                                f"postfix bound {postfix_bound(text)}")
        problems += graph_invariants(g)  # including every gradient node stats() built
        tally.compared += 1
        if problems:
            tally.mismatch(f"{a} | {b} | {op}")
        assert not problems, f"a={a!r}, b={b!r}: " + "; ".join(problems)

    check()
    check_compared_enough(tally)


# ============================================================ 6. second derivatives vs SymPy
def test_second_derivatives_match_sympy(property_tally):
    tally = property_tally("random expressions vs SymPy second derivative")

    @settings(max_examples=300, **PROPERTY)
    @given(text=expressions(), point=points(), pick=st.tuples(st.integers(0, 4), st.integers(0, 4)))
    def check(text, point, pick):
        tally.tried += 1
        e = symad.parse(text, Graph())
        names = e.variables
        if not names:
            return tally.skip("no variables")
        v, w = names[pick[0] % len(names)], names[pick[1] % len(names)]
        point = at(point, names)
        if kink_distance(e, point) < KINK:
            return tally.skip("near a kink")
        got = e.diff(v).diff(w).compile(variables=list(names)).value(point)
        if not finite(got):
            return tally.skip("non-finite in symad")
        want = sympy_at(sympy.diff(to_sympy(text), _SYMBOLS[v], _SYMBOLS[w]), point)
        if want is None:
            return tally.skip("undefined in SymPy")
        tally.compared += 1
        ok = close(got, want)
        if not ok:
            tally.mismatch(f"{text} d/d{v} d/d{w} at {point}")
        assert ok, f"d/d{w} d/d{v} of {text} at {point}: {got!r} vs SymPy {want!r}"

    check()
    check_compared_enough(tally)


# ============================================================ 7. batch vs pointwise
def same(a: float, b: float) -> bool:
    """Equal up to rounding (NumPy's and math's libm may differ in the last bit)."""
    if math.isnan(a) or math.isnan(b):
        return math.isnan(a) and math.isnan(b)
    if math.isinf(a) or math.isinf(b):
        return a == b
    return close(a, b, rel=1e-12, floor=1e-300)


def test_batch_equals_pointwise(property_tally):
    tally = property_tally("random expressions: batch vs pointwise evaluation")

    @settings(max_examples=500, **PROPERTY)
    @given(text=expressions(), rows=st.lists(points(), min_size=1, max_size=5))
    def check(text, rows):
        tally.tried += 1
        e = symad.parse(text, Graph())
        names = e.variables
        fn = e.compile()
        batch = np.array([[row[n] for n in names] for row in rows], dtype=float).reshape(len(rows), len(names))
        values, grads = fn.value_and_grad(batch)
        problems = []
        if np.shape(values) != (len(rows),) or np.shape(grads) != (len(rows), len(names)):
            problems.append(f"batch of shape {batch.shape} gave shapes {np.shape(values)}, {np.shape(grads)}")
        else:
            for i, row in enumerate(rows):
                value, grad = fn.value_and_grad(at(row, names))
                if not same(value, values[i]) or not all(map(same, grad, grads[i])):
                    problems.append(f"point {at(row, names)}: pointwise {value!r}, {grad!r}, "
                                    f"batch {values[i]!r}, {grads[i]!r}")
        tally.compared += 1
        if problems:
            tally.mismatch(text)
        assert not problems, f"{text}: " + "; ".join(problems)

    check()
    check_compared_enough(tally)


# ============================================================ 8. the op table, one test per entry
OPERATIONS = [name for name, spec in OPS.items() if spec.arity >= 1]

# In-domain points per op, away from kinks and poles; an op not listed here gets
# the default points, which lie inside most domains.
DOMAIN_POINTS: dict[str, list[tuple[float, ...]]] = {
    "asin": [(0.3,), (-0.6,)], "acos": [(0.3,), (-0.6,)],
    "log": [(0.7,), (2.5,)], "sqrt": [(0.7,), (2.5,)],
    "pow": [(1.3, 0.7), (0.8, -2.2), (2.0, 3.0)],
    "div": [(0.7, 1.3), (-2.0, 0.4)],
    "atan2": [(0.5, -1.2), (-0.7, 0.4), (1.1, 0.9)],
    "min": [(0.3, 0.9), (1.2, -0.4)], "max": [(0.3, 0.9), (1.2, -0.4)],
    "abs": [(0.7,), (-1.3,)], "sign": [(0.7,), (-1.3,)], "step": [(0.7,), (-1.3,)],
}
DEFAULT_POINTS = {1: [(0.4,), (-1.1,)], 2: [(0.4, -1.1), (-0.6, 0.8)]}


def test_op_table_entries_have_every_field():
    levels = {PREC_SUM, PREC_PRODUCT, PREC_UNARY, PREC_POWER, PREC_ATOM}
    for name in OPERATIONS:
        spec = OPS[name]
        assert spec.name == name
        assert callable(spec.py) and callable(spec.np), name
        assert len(spec.partials) == spec.arity and all(map(callable, spec.partials)), name
        assert spec.kind in ("infix", "prefix", "call"), name
        assert isinstance(spec.symbol, str) and spec.symbol, name
        assert spec.prec in levels and spec.assoc in ("left", "right"), name
        assert spec.kind != "infix" or spec.arity == 2, name
        assert spec.kind != "prefix" or spec.arity == 1, name
        assert spec.kind != "call" or spec.prec == PREC_ATOM, name
        if spec.code is not None:
            assert all(f"{{{i}}}" in spec.code for i in range(spec.arity)), name
        # Every op can be typed: as an operator, or as a function of its arity.
        assert spec.kind != "call" or spec.arity in FUNCTIONS.get(name, {}), name


def _scalar_fd(fn, args: tuple[float, ...], k: int) -> float:
    h = 1e-5 * max(1.0, abs(args[k]))
    up, down = list(args), list(args)
    up[k] += h
    down[k] -= h
    return (fn(*up) - fn(*down)) / (2 * h)


@pytest.mark.parametrize("name", OPERATIONS)
def test_op_partials_match_finite_differences(name, property_tally):
    spec = OPS[name]
    tally = property_tally("op-table entries: partials vs finite differences, points")
    g = Graph()
    arg_names = [f"a{i}" for i in range(spec.arity)]
    args = [symad.var(n, g) for n in arg_names]
    out = args[0].apply(name, *args[1:])
    for point in DOMAIN_POINTS.get(name, DEFAULT_POINTS[spec.arity]):
        tally.tried += 1
        at_point = dict(zip(arg_names, point))
        value = spec.py(*point)
        assert math.isfinite(value), f"{name}{point} is not in the domain"
        assert same(value, float(spec.np(*map(np.float64, point)))), f"{name}: py and np disagree at {point}"
        assert same(out.evaluate(at_point), value)
        grad = out.compile(variables=arg_names).grad(at_point)
        problems = []
        for k in range(spec.arity):
            rule = spec.partials[k](*args, out)
            local = rule.compile(variables=arg_names).value(at_point) if isinstance(rule, symad.Expr) \
                else float(rule)
            fd = _scalar_fd(spec.py, point, k)
            if not close(local, fd, rel=1e-6, floor=1e-8):
                problems.append(f"partial {k}: rule gives {local!r}, finite difference {fd!r}")
            if not same(grad[k], local):
                problems.append(f"partial {k}: gradient gives {grad[k]!r}, rule {local!r}")
        tally.compared += 1
        if problems:
            tally.mismatch(f"{name} at {point}")
        assert not problems, f"{name} at {point}: " + "; ".join(problems)
