"""Hypothesis strategies for symad's input language: random expression text and points.

The generator reads the op table (:data:`symad.core.ops.OPS` and
:data:`symad.core.ops.FUNCTIONS`), so a newly added operation or function is
generated, and therefore tested, without touching this file.  The text follows
the grammar in ``grammar/symad.lark``: an operand gets parentheses exactly when
its precedence is too low for its position (and now and then when it is not, to
exercise redundant parentheses).

Expressions are produced as ``Node(text, prec)`` pairs; :func:`expressions`
maps them to plain text.  Depth is bounded (``max_depth``, default 5 levels of
operations), and a quarter of the draws at every level are leaves, so typical
expressions have a handful to a few dozen nodes.  Every node costs one or two
Hypothesis draws (Hypothesis' per-draw overhead, not symad, dominates the time
of the property tests), and shrinking moves towards leaves and ``x``.

Many random expressions are undefined at many points (``log`` of a negative
number, ``0/0``, overflow).  Arbitrary arguments are generated anyway, but the
arguments of functions with a restricted domain are, three times in four,
wrapped in a form that is always inside it (``1 + a^2`` for ``log``,
``0.9*tanh(a)`` for ``asin``), so that most examples can be compared at a point.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache

from hypothesis import strategies as st

from symad.core.ops import FUNCTIONS, OPS, PREC_ATOM, PREC_UNARY

VARIABLES = ("x", "y", "z", "x2", "x10")

# Numbers as they may be typed: integers, decimals, a leading dot, exponents,
# and the named constants.  Negative numbers arise from unary minus.
_NUMBER_TEXTS = ("2", "1", "0", "3", "10", "0.5", "1.5", "2.25", ".5", "0.1", "1e-1",
                 "2E0", "1.", "pi", "e", *(str(k) for k in range(4, 21)))

# Domain knowledge the op table does not hold: wrappers that keep an argument
# inside the function's domain.  An op missing here is still generated, with
# arbitrary arguments only.
_POSITIVE = ("1 + {0}^2", "exp({0})", "2 + sin({0})", "0.5 + abs({0})")
_OPEN_UNIT = ("0.9*tanh({0})", "0.5*sin({0})", "{0}/(1 + abs({0}))")
_LOG_BASES = ("2", "10", "e", "3 + {0}^2")
_DOMAIN_WRAPPERS: dict[str, tuple[tuple[str, ...], ...]] = {
    "log": (_POSITIVE, _LOG_BASES),  # log(x) and log(x, b)
    "sqrt": (_POSITIVE,),
    "asin": (_OPEN_UNIT,),
    "acos": (_OPEN_UNIT,),
    "pow": (_POSITIVE, ()),
}


@dataclass(frozen=True)
class Node:
    """Generated text and the grammar precedence level it parses at."""

    text: str
    prec: int


def _operand(node: Node, need: int) -> str:
    """``node`` as an operand that needs precedence ``need`` (parenthesized if lower)."""
    return f"({node.text})" if node.prec < need else node.text


def _infix_requirements(name: str) -> tuple[int, int]:
    """Minimum precedence of the left and right operands of infix op ``name``.

    Mirrors the layered grammar: a left-associative op at level P takes a left
    operand at P and a right one above P; ``^`` takes an atom as base and a
    unary expression as exponent.
    """
    spec = OPS[name]
    if spec.assoc == "right":
        return spec.prec + 1, PREC_UNARY
    return spec.prec, spec.prec + 1


# Strategies drawn inside the builders below are made once: Hypothesis computes a
# label for every new strategy object, which would otherwise dominate run time.
_EIGHT = st.integers(0, 7)
_WRAP = {forms: st.integers(0, 4 * len(forms) - 1) for forms in (_POSITIVE, _OPEN_UNIT, _LOG_BASES)}
_SMALL_EXPONENT = st.integers(-3, 4)
_LEAF_OR_NOT = st.integers(0, 99)
_LEAF_TEXT = st.sampled_from(VARIABLES * 10 + _NUMBER_TEXTS)
_DECIMAL = st.floats(0.01, 10, allow_nan=False, allow_infinity=False).map(lambda v: f"{v:.4g}")


def _wrapped(draw, forms: tuple[str, ...], text: str) -> str:
    """``text`` inside one of ``forms`` three times in four (a single draw)."""
    k = draw(_WRAP[forms])
    return text if k < len(forms) else forms[k % len(forms)].format(f"({text})")


@st.composite
def _infix(draw, name: str, child: st.SearchStrategy) -> Node:
    spec = OPS[name]
    need_left, need_right = _infix_requirements(name)
    left, right = draw(child), draw(child)
    symbol = spec.symbol
    if name == "pow":
        form = draw(_EIGHT)
        if form & 3 == 1:  # a positive base: any real exponent is defined
            left = Node(_POSITIVE[draw(_EIGHT) % len(_POSITIVE)].format(f"({left.text})"), 1)
        elif form & 3 == 2:  # a small integer exponent: any base is defined
            right = Node(str(draw(_SMALL_EXPONENT)), PREC_ATOM)
        if form & 4:
            symbol = "**"
    if spec.prec == OPS["add"].prec:
        symbol = f" {symbol} "
    return Node(_operand(left, need_left) + symbol + _operand(right, need_right), spec.prec)


@st.composite
def _prefix(draw, name: str, child: st.SearchStrategy) -> Node:
    spec = OPS[name]
    return Node(spec.symbol + _operand(draw(child), PREC_UNARY), PREC_UNARY)


@st.composite
def _unary_plus(draw, child: st.SearchStrategy) -> Node:
    return Node("+" + _operand(draw(child), PREC_UNARY), PREC_UNARY)


@st.composite
def _call(draw, name: str, arity: int, child: st.SearchStrategy) -> Node:
    args = [draw(child).text for _ in range(arity)]
    for i, forms in enumerate(_DOMAIN_WRAPPERS.get(name, ())[:arity]):
        if forms:
            args[i] = _wrapped(draw, forms, args[i])
    return Node(f"{name}({', '.join(args)})", PREC_ATOM)


def compound(child: st.SearchStrategy) -> st.SearchStrategy:
    """One operation of the op table (or a function of the language) over ``child`` operands."""
    options: list[st.SearchStrategy] = []
    for name, spec in OPS.items():
        if spec.kind == "infix":
            options.append(_infix(name, child))
        elif spec.kind == "prefix":
            options.append(_prefix(name, child))
    options.append(_unary_plus(child))
    for name, arities in FUNCTIONS.items():
        for arity in sorted(arities):
            options.append(_call(name, arity, child))
    return st.one_of(options)


@st.composite
def _node(draw, operation: st.SearchStrategy | None) -> Node:
    # One draw decides: a leaf from the table (12%), a decimal leaf (3%), an
    # operation (85%, 5% of them in redundant parentheses).
    k = draw(_LEAF_OR_NOT)
    if 12 <= k < 15:
        return Node(draw(_DECIMAL), PREC_ATOM)
    if operation is None or k < 12:
        return Node(draw(_LEAF_TEXT), PREC_ATOM)
    node = draw(operation)
    return Node(f"({node.text})", PREC_ATOM) if k >= 95 else node


@cache
def nodes(max_depth: int = 5) -> st.SearchStrategy:
    """Expressions with at most ``max_depth`` nested operations, as :class:`Node`."""
    if max_depth <= 0:
        return _node(None)
    return _node(compound(nodes(max_depth - 1)))


def expressions(max_depth: int = 5) -> st.SearchStrategy[str]:
    """Random expression text in symad's language."""
    return nodes(max_depth).map(lambda node: node.text)


_MAGNITUDE = st.floats(0.05, 3.0, allow_nan=False, allow_infinity=False)
_SPECIAL = (0.0, -0.0, 1.0, -1.0)


@st.composite
def _coordinate(draw, special: bool) -> float:
    v = draw(_MAGNITUDE)
    k = draw(_EIGHT)  # sign, and (with special) now and then a special value
    if special and k >= 6:
        return _SPECIAL[(k - 6) * 2 + (v > 1.5)]
    return -v if k & 1 else v


def coordinates(special: bool = False) -> st.SearchStrategy[float]:
    """A coordinate of a random point: 0.05 <= |v| <= 3.

    Zero, where ``abs``, ``sign`` and ``step`` have their kink and ``log`` and
    ``sqrt`` their domain's edge, is left out, so that most random points can be
    compared with an oracle; ``special=True`` makes a quarter of the coordinates
    0, -0, 1 or -1.
    """
    return _coordinate(special)


@cache
def points(variables: tuple[str, ...] = VARIABLES, special: bool = False) -> st.SearchStrategy[dict[str, float]]:
    """A random point: ``{name: value}`` for every name in ``variables`` (a tuple)."""
    return st.fixed_dictionaries({name: coordinates(special) for name in variables})
