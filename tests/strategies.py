"""Hypothesis strategies for symad's input language: random expression text and points.

The generator reads the op table (:data:`symad.ops.OPS` and
:data:`symad.ops.FUNCTIONS`), so a newly added operation or function is
generated, and therefore tested, without touching this file.  The text follows
the grammar in ``grammar/symad.lark``: an operand gets parentheses exactly when
its precedence is too low for its position (and now and then when it is not, to
exercise redundant parentheses).

Expressions are produced as ``Node(text, prec)`` pairs; :func:`expressions`
maps them to plain text.  Depth is bounded (``max_depth``, default 5 levels of
operators), and about a third of the draws at every level are leaves, so
typical expressions have a handful to a few dozen nodes.

Many random expressions are undefined at many points (``log`` of a negative
number, ``0/0``, overflow).  Arbitrary arguments are generated anyway, but the
arguments of functions with a restricted domain are, half of the time, wrapped
in a form that is always inside it (``1 + a^2`` for ``log``, ``0.9*tanh(a)``
for ``asin``), so that most examples can actually be compared at a point.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

from hypothesis import strategies as st

from symad.ops import FUNCTIONS, OPS, PREC_ATOM, PREC_UNARY

VARIABLES = ("x", "y", "z", "x2", "x10")

# Numbers as they may be typed: integers, decimals, a leading dot, exponents,
# and the named constants.  Negative numbers arise from unary minus.
_NUMBER_TEXTS = ("0", "1", "2", "3", "10", "0.5", "1.5", "2.25", ".5", "0.1", "1e-1",
                 "2E0", "1.", "pi", "e")

# Domain knowledge the op table does not hold: wrappers that keep an argument
# inside the function's domain.  An op missing here is still generated, with
# arbitrary arguments only.
_POSITIVE = ("1 + {0}^2", "exp({0})", "2 + sin({0})", "0.5 + abs({0})")
_OPEN_UNIT = ("0.9*tanh({0})", "0.5*sin({0})", "{0}/(1 + abs({0}))")
_DOMAIN_WRAPPERS: dict[str, tuple[tuple[str, ...], ...]] = {
    "log": (_POSITIVE, _POSITIVE),  # log(x) and log(x, b): b ≠ 1 is handled below
    "sqrt": (_POSITIVE,),
    "asin": (_OPEN_UNIT,),
    "acos": (_OPEN_UNIT,),
    "pow": (_POSITIVE, ()),
}
_LOG_BASES = ("2", "10", "e", "3 + {0}^2")


@dataclass(frozen=True)
class Node:
    """Generated text and the grammar precedence level it parses at."""

    text: str
    prec: int


def _operand(node: Node, need: int, extra_parens: bool) -> str:
    """``node`` as an operand that needs precedence ``need`` (parenthesized if lower)."""
    return f"({node.text})" if node.prec < need or extra_parens else node.text


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


leaves = st.one_of(
    st.sampled_from(VARIABLES),  # variables twice: half of the leaves
    st.sampled_from(VARIABLES),
    st.sampled_from(VARIABLES),
    st.sampled_from(_NUMBER_TEXTS),
    st.integers(0, 20).map(str),
    st.floats(0.01, 10, allow_nan=False, allow_infinity=False).map(lambda v: f"{v:.4g}"),
).map(lambda text: Node(text, PREC_ATOM))


@st.composite
def _infix(draw, name: str, child: st.SearchStrategy) -> Node:
    spec = OPS[name]
    need_left, need_right = _infix_requirements(name)
    left, right = draw(child), draw(child)
    if name == "pow":
        form = draw(st.integers(0, 3))
        if form == 1:  # a positive base: any real exponent is defined
            left = Node(draw(st.sampled_from(_POSITIVE)).format(f"({left.text})"), 1)
        elif form == 2:  # a small integer exponent: any base is defined
            right = Node(str(draw(st.integers(-3, 4))), PREC_ATOM)
    symbol = "**" if name == "pow" and draw(st.booleans()) else spec.symbol
    if spec.prec == OPS["add"].prec:
        symbol = f" {symbol} "
    text = (_operand(left, need_left, draw(st.integers(0, 9)) == 0) + symbol
            + _operand(right, need_right, draw(st.integers(0, 9)) == 0))
    return Node(text, spec.prec)


@st.composite
def _prefix(draw, name: str, child: st.SearchStrategy) -> Node:
    spec = OPS[name]
    arg = draw(child)
    return Node(spec.symbol + _operand(arg, PREC_UNARY, draw(st.integers(0, 9)) == 0), PREC_UNARY)


@st.composite
def _unary_plus(draw, child: st.SearchStrategy) -> Node:
    arg = draw(child)
    return Node("+" + _operand(arg, PREC_UNARY, False), PREC_UNARY)


@st.composite
def _call(draw, name: str, arity: int, child: st.SearchStrategy) -> Node:
    args = [draw(child).text for _ in range(arity)]
    wrappers = _DOMAIN_WRAPPERS.get(name, ())
    for i, forms in enumerate(wrappers[:arity]):
        if forms and draw(st.booleans()):
            args[i] = draw(st.sampled_from(forms)).format(f"({args[i]})")
    if name == "log" and arity == 2 and draw(st.booleans()):
        args[1] = draw(st.sampled_from(_LOG_BASES)).format(f"({args[1]})")
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


@lru_cache(maxsize=None)
def nodes(max_depth: int = 5) -> st.SearchStrategy:
    """Expressions with at most ``max_depth`` nested operations, as :class:`Node`."""
    if max_depth <= 0:
        return leaves
    child = nodes(max_depth - 1)
    # Three of four draws build an operation; the rest stop at a leaf.
    return st.one_of(leaves, compound(child), compound(child), compound(child))


def expressions(max_depth: int = 5) -> st.SearchStrategy[str]:
    """Random expression text in symad's language."""
    return nodes(max_depth).map(lambda node: node.text)


def coordinates() -> st.SearchStrategy[float]:
    """A coordinate of a random point: moderate magnitude, never subnormal-tiny."""
    return st.floats(-3.0, 3.0, allow_nan=False, allow_infinity=False, allow_subnormal=False).filter(
        lambda v: v == 0.0 or abs(v) >= 1e-3)


def points(variables=VARIABLES) -> st.SearchStrategy[dict[str, float]]:
    """A random point: ``{name: value}`` for every name in ``variables``."""
    return st.fixed_dictionaries({name: coordinates() for name in variables})
