"""The random-expression generator of the tests: Hypothesis strategies for expression text and points.

One generator, :func:`expressions`, makes valid text of symad's language for
every test that needs random expressions: the property tests (against SymPy,
finite differences...), the tape tests, the Hessian tests and the fuzzer.

The generator reads the op table (:data:`symad.core.ops.OPS` and
:data:`symad.core.ops.FUNCTIONS`), so a newly added operation or function is
generated, and therefore tested, without touching this file.  The text follows
the grammar in ``grammar/symad.lark``: an operand gets parentheses exactly when
its precedence is too low for its position (and now and then when it is not, to
exercise redundant parentheses); ``^`` is written ``**`` half the time.

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

Options (keywords of :func:`expressions`) narrow or widen the language:

* ``variables``, ``numbers`` and ``ops`` choose the leaves and the operations
  (names of the op table's ops and functions); ``in_domain=True`` keeps every
  argument inside its function's domain (always wrapped; a positive
  denominator; a positive base or an exponent 0 to 4 for ``^``);
* for the fuzzer, ``whitespace=True`` puts ignorable whitespace (tabs, newlines,
  ``\\r\\n``, form feeds) between tokens, ``odd_terminals=True`` draws odd
  number texts (``007``, ``1e999999``, ``4.9e-324``...) and odd names
  (``theta_2``, ``__2``, ``inf_``, any identifier), and ``definitions=True``
  starts a third of the texts with definitions ``name = sum;`` whose names the
  expression then uses;
* ``sums=True`` adds sums and products over small ranges (``sum(k0 = 1..3, ...)``,
  some empty), whose bodies use the indexed variables ``v[k0]``, ``v[k0+1]``.

:func:`example` draws one value from a strategy with a seeded random (for a
test that wants a few fixed, large examples rather than many small ones).
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from functools import cache
from typing import Any, TypeVar

from hypothesis import Phase, find, settings
from hypothesis import strategies as st

from symad.core.name_rule import problem
from symad.core.ops import CONSTANTS, FUNCTIONS, OPS, PREC_ATOM, PREC_UNARY

T = TypeVar("T")

VARIABLES = ("x", "y", "z", "x2", "x10")
# Names of every shape the rule admits (docs/guide/language.md, "Names"): underscore-leading,
# indexed, with digits and capitals; for the tests of what names go through (documents,
# pickles, LaTeX, printing).  (VARIABLES stays as it is: its examples are the property tests'.)
NAMES = ("x", "y", "_t", "w[2]", "w[-1]", "a_b", "X1", "__2", "e1", "sum_")

# Numbers as they may be typed: integers, decimals, a leading dot, exponents,
# and the named constants.  Negative numbers arise from unary minus.
NUMBERS = ("2", "1", "0", "3", "10", "0.5", "1.5", "2.25", ".5", "0.1", "1e-1",
           "2E0", "1.", "pi", "e", *(str(k) for k in range(4, 21)))

# ---------------------------------------------------------------- odd terminals (odd_terminals=True)
FUNCTION_NAMES = tuple(sorted(FUNCTIONS))
CONSTANT_NAMES = tuple(sorted(CONSTANTS))
# Short names most of the time, so expressions share variables; some odd ones.
ODD_NAMES = ("x", "y", "z", "t", "x1", "x2", "x10", "theta_2", "_", "_1", "__2", "e1", "E",
             "inf_", "nan0", "sinh2", "pi2", "X", "a_b_c", "sum_", "if1", "w[2]", "_v[-1]", "q_[10]")
ODD_NUMBER_TEXTS = (
    "0", "1", "2", "10", "0.5", ".5", "1.", "3.25", "007", "0.000", "1e3", "1E3", "1e-3", "2.5e+2",
    "6.02E23", "1e308", "1.7976931348623157e308", "1e309", "1e999999", "4.9e-324", "5e-324",
    "2.2250738585072014e-308", "1e-400", "123456789012345678901234567890", "0.1", "9007199254740993",
    "0e0", ".0e-0",
)
# The NUMBER terminal of the grammar, restricted to ASCII digits.
ascii_numbers = st.from_regex(r"\A([0-9]{1,6}(\.[0-9]{0,4})?|\.[0-9]{1,4})([eE][+-]?[0-9]{1,3})?\Z")
odd_numbers = st.one_of(st.sampled_from(ODD_NUMBER_TEXTS), ascii_numbers)
# Any name the rule admits (a word of the language is no variable's name: the fuzzer tries those apart).
identifiers = st.from_regex(r"\A[A-Za-z_][A-Za-z_0-9]{0,12}\Z").filter(lambda name: problem(name) is None)
# Names the rule admits, indexed ones among them (x[3], _v[-12]).
admitted_names = st.from_regex(r"\A[A-Za-z_][A-Za-z_0-9]{0,10}(\[-?[0-9]{1,3}\])?\Z").filter(
    lambda name: problem(name) is None)
odd_names = st.one_of(st.sampled_from(ODD_NAMES), st.sampled_from(ODD_NAMES), identifiers)

# Whitespace the grammar ignores (common.WS: space, tab, \f, \r, \n), for whitespace=True.
SPACES = ("", "", "", "", " ", " ", "  ", "\t", "\n", "\r\n", "\f", " \n ")
spaces = st.sampled_from(SPACES)

# Names the definitions (definitions=True) define: fresh ones, and variables they shadow.
DEFINITION_NAMES = ("a", "b", "t1", "t2", "_1", "x", "y")

# ---------------------------------------------------------------- domains
# Domain knowledge the op table does not hold: wrappers that keep an argument
# inside the function's domain.  An op missing here is still generated, with
# arbitrary arguments only (or, with in_domain=True, with the forms of _TOTAL).
_POSITIVE = ("1 + {0}^2", "exp({0})", "2 + sin({0})", "0.5 + abs({0})")
_OPEN_UNIT = ("0.9*tanh({0})", "0.5*sin({0})", "{0}/(1 + abs({0}))")
_LOG_BASES = ("2", "10", "e", "3 + {0}^2")
_MODERATE = ("2 + sin({0})", "1.5 + tanh({0})", "1 + 1/(1 + {0}^2)")  # in [0.5, 3]
# positive and away from the zeros of lgamma (1, 2), digamma (1.46...) and log (1), where a value
# near 0 makes random text ill-conditioned; no exp: huge arguments are ill-conditioned too
_AWAY = ("3 + {0}^2", "0.25 + 0.2*sin({0})", "3.5 + abs({0})")
_DOMAIN_WRAPPERS: dict[str, tuple[tuple[str, ...], ...]] = {
    "log": (_POSITIVE, _LOG_BASES),  # log(x) and log(x, b)
    "sqrt": (_POSITIVE,),
    "asin": (_OPEN_UNIT,),
    "acos": (_OPEN_UNIT,),
    "pow": (_POSITIVE, ()),
    "log1p": (_POSITIVE,),
    "acosh": (("1 + {0}^2", "1 + exp({0})", "1.5 + sin({0})"),),
    "atanh": (_OPEN_UNIT,),
    # the special functions: poles at 0 and the negative integers, logs of their arguments
    "lgamma": (_AWAY,), "digamma": (_AWAY,), "gamma": (_MODERATE,),  # (Γ overflows past 171)
    "polygamma": (("1", "2", "0"), _AWAY),  # (its order n: a whole number 0..10)
    "betaln": (_AWAY, _AWAY), "beta": (_MODERATE, _MODERATE), "digamma_diff": (_AWAY, _AWAY),
    "logit": (("0.5 + 0.4*tanh({0})", "1/(1 + exp({0}))", "0.5 + 0.25*sin({0})"),),
    "xlogy": ((), _AWAY), "xlog1py": ((), _AWAY),
}
# Functions defined on a half-line at most, often of two such arguments: their arguments are
# left bare one time in eight, not four, or random text would mostly be undefined there.
_MOSTLY_WRAPPED = frozenset({"lgamma", "digamma", "gamma", "polygamma", "betaln", "beta", "digamma_diff", "logit",
                             "xlogy", "xlog1py"})
# With in_domain=True only: the poles of tan, atan2(0, 0), and (below) a zero denominator.
_TOTAL: dict[str, tuple[tuple[str, ...], ...]] = {
    **_DOMAIN_WRAPPERS,
    "tan": (_OPEN_UNIT,),
    "atan2": ((), _POSITIVE),
    "cbrt": (_POSITIVE,),  # (an infinite slope at 0)
    "hypot": ((), _POSITIVE),  # (no derivative at the origin)
}
_SYMBOL_OPS = {"+": "add", "*": "mul", "/": "div", "^": "pow"}


def _ops_used(form: str) -> set[str]:
    """Names of the ops and functions a wrapper form uses."""
    used = {_SYMBOL_OPS[c] for c in form if c in _SYMBOL_OPS}
    return used | set(re.findall(r"([a-z]+)\(", form))


@dataclass(frozen=True)
class Options:
    """What :func:`expressions` may generate (see the module doc); hashable, so strategies are made once."""

    variables: tuple[str, ...] = VARIABLES
    numbers: tuple[str, ...] = NUMBERS
    ops: frozenset[str] | None = None  # op and function names; None: the whole table
    in_domain: bool = False
    whitespace: bool = False
    odd_terminals: bool = False
    defined: tuple[str, ...] = ()  # names defined so far (definitions=True), sorted
    sums: bool = False

    def allows(self, name: str) -> bool:
        return self.ops is None or name in self.ops

    def forms(self, forms: tuple[str, ...]) -> tuple[str, ...]:
        """The wrapper forms that use only allowed ops."""
        return forms if self.ops is None else tuple(f for f in forms if _ops_used(f) <= self.ops)

    def wrappers(self, name: str) -> tuple[tuple[str, ...], ...]:
        return tuple(self.forms(f) for f in (_TOTAL if self.in_domain else _DOMAIN_WRAPPERS).get(name, ()))


DEFAULT = Options()


def _ws(draw, opts: Options) -> str:
    """Ignorable whitespace (whitespace=True), else nothing, without a draw."""
    return draw(spaces) if opts.whitespace else ""


@dataclass(frozen=True)
class Node:
    """Generated text and the grammar precedence level it parses at."""

    text: str
    prec: int


def _operand(draw, opts: Options, node: Node, need: int) -> str:
    """``node`` as an operand that needs precedence ``need`` (parenthesized if lower)."""
    if node.prec >= need:
        return node.text
    return f"({_ws(draw, opts)}{node.text}{_ws(draw, opts)})"


def _infix_requirements(name: str) -> tuple[int, int]:
    """Minimum precedence of the left and right operands of infix op ``name``.

    Mirrors the layered grammar: a left-associative op at level P takes a left
    operand at P and a right one above P; ``^`` takes an atom as base and a
    unary expression as exponent.
    """
    spec = OPS[name]
    if spec.assoc == "right":
        return spec.prec + 1, PREC_UNARY
    if spec.assoc == "none":  # comparisons: `a < b < c` would be a chain
        return spec.prec + 1, spec.prec + 1
    return spec.prec, spec.prec + 1


# Strategies drawn inside the builders below are made once: Hypothesis computes a
# label for every new strategy object, which would otherwise dominate run time.
_EIGHT = st.integers(0, 7)
_SMALL_EXPONENT = st.integers(-3, 4)
_NATURAL_EXPONENT = st.integers(0, 4)  # in_domain: a negative power of 0 is a pole
_LEAF_OR_NOT = st.integers(0, 99)
_DECIMAL = st.floats(0.01, 10, allow_nan=False, allow_infinity=False).map(lambda v: f"{v:.4g}")


@cache
def _wrap_choice(forms: tuple[str, ...], odds: int = 4) -> st.SearchStrategy[int]:
    return st.integers(0, odds * len(forms) - 1)


@cache
def _form_choice(forms: tuple[str, ...]) -> st.SearchStrategy[str]:
    return st.sampled_from(forms)


def _wrapped(draw, opts: Options, forms: tuple[str, ...], text: str, odds: int = 4) -> str:
    """``text`` inside one of ``forms`` but one time in ``odds`` (a single draw), always with in_domain."""
    if opts.in_domain:
        return draw(_form_choice(forms)).format(f"({text})")
    k = draw(_wrap_choice(forms, odds))
    return text if k < len(forms) else forms[k % len(forms)].format(f"({text})")


@st.composite
def _infix(draw, name: str, child: st.SearchStrategy, opts: Options) -> Node:
    spec = OPS[name]
    need_left, need_right = _infix_requirements(name)
    left, right = draw(child), draw(child)
    symbol = spec.symbol
    if name == "pow":
        form = draw(_EIGHT)
        positive = opts.forms(_POSITIVE)
        if opts.in_domain and form & 3 in (0, 3):  # arbitrary operands are not allowed
            form = form - (form & 3) + (1 if positive and form & 1 else 2)
        if form & 3 == 1 and positive:  # a positive base: any real exponent is defined
            left = Node(positive[draw(_EIGHT) % len(positive)].format(f"({left.text})"), 1)
        elif form & 3 in (1, 2):  # a small integer exponent: any base is defined (any nonzero base)
            right = Node(str(draw(_NATURAL_EXPONENT if opts.in_domain else _SMALL_EXPONENT)), PREC_ATOM)
        if form & 4:
            symbol = "**"
    elif name == "div" and opts.in_domain:
        right = Node(draw(_form_choice(opts.forms(_POSITIVE))).format(f"({right.text})"), 1)
    if symbol.isalpha():  # `and`, `or`: a word needs a space on each side
        symbol = f" {_ws(draw, opts)}{symbol}{_ws(draw, opts)} "
    elif opts.whitespace:
        symbol = f"{_ws(draw, opts)}{symbol}{_ws(draw, opts)}"
    elif spec.prec <= OPS["add"].prec:
        symbol = f" {symbol} "
    return Node(_operand(draw, opts, left, need_left) + symbol + _operand(draw, opts, right, need_right),
                spec.prec)


@st.composite
def _prefix(draw, name: str, child: st.SearchStrategy, opts: Options) -> Node:
    spec = OPS[name]  # `-` takes a unary operand, `not ` a negation or a comparison
    return Node(spec.symbol + _ws(draw, opts) + _operand(draw, opts, draw(child), spec.prec), spec.prec)


PREC_IF = OPS["or"].prec - 1  # `if c then a else b` binds loosest of all


@st.composite
def _if_then_else(draw, child: st.SearchStrategy, opts: Options) -> Node:
    """``where(c, a, b)`` written ``if c then a else b``."""
    c, a, b = (draw(child).text for _ in range(3))
    return Node(f"if {c} then {a} else {b}", PREC_IF)


_RANGE_START = st.integers(1, 3)  # (an empty range ends at 0 or more: a bound as one number token)
_RANGE_LENGTH = st.integers(0, 3)  # 0: an empty range
_REDUCTION = st.sampled_from(("sum", "sum", "prod"))
_INDEX_NAME = re.compile(r"\bk(\d+) =")


@st.composite
def _range(draw, child: st.SearchStrategy, opts: Options) -> Node:
    """``sum(k = a..b, body)`` or ``prod``: in the body, ``x`` becomes ``v[k]``, ``y`` becomes
    ``v[k+1]`` and ``z`` becomes ``k*z``; an index outside every range inside the body."""
    body = draw(child).text
    inner = [int(k) for k in _INDEX_NAME.findall(body)]
    k = f"k{max(inner, default=-1) + 1}"
    body = re.sub(r"\bx\b", f"v[{k}]", body)
    body = re.sub(r"\by\b", f"v[{k}+1]", body)
    body = re.sub(r"\bz\b", f"({k}*z)", body)
    low = draw(_RANGE_START)
    return Node(f"{draw(_REDUCTION)}({k} = {low}..{low + draw(_RANGE_LENGTH) - 1}, {body})", PREC_ATOM)


@st.composite
def _unary_plus(draw, child: st.SearchStrategy, opts: Options) -> Node:
    return Node("+" + _ws(draw, opts) + _operand(draw, opts, draw(child), PREC_UNARY), PREC_UNARY)


@st.composite
def _call(draw, name: str, arity: int, child: st.SearchStrategy, opts: Options) -> Node:
    args = [draw(child).text for _ in range(arity)]
    for i, forms in enumerate(opts.wrappers(name)[:arity]):
        if forms:
            args[i] = _wrapped(draw, opts, forms, args[i], 8 if name in _MOSTLY_WRAPPED else 4)
    if opts.whitespace:
        args = [_ws(draw, opts) + a + _ws(draw, opts) for a in args]
        return Node(f"{name}({','.join(args)})", PREC_ATOM)
    return Node(f"{name}({', '.join(args)})", PREC_ATOM)


def _can_stay_in_domain(opts: Options, name: str, arity: int, infix: bool = False) -> bool:
    """Whether op ``name`` can be generated with in_domain=True using only the allowed ops."""
    if infix:
        # ^ can always take a small integer exponent; / needs a positive form for its denominator.
        return name != "div" or bool(opts.forms(_POSITIVE))
    return all(forms or not want for forms, want in zip(opts.wrappers(name), _TOTAL.get(name, ())[:arity]))


def _allowed(opts: Options, name: str, arity: int, infix: bool = False) -> bool:
    return opts.allows(name) and (not opts.in_domain or _can_stay_in_domain(opts, name, arity, infix))


def compound(child: st.SearchStrategy, opts: Options = DEFAULT) -> st.SearchStrategy:
    """One operation of the op table (or a function of the language) over ``child`` operands."""
    options: list[st.SearchStrategy] = []
    for name, spec in OPS.items():
        if spec.kind == "infix" and _allowed(opts, name, 2, infix=True):
            options.append(_infix(name, child, opts))
        elif spec.kind == "prefix" and _allowed(opts, name, 1):
            options.append(_prefix(name, child, opts))
    options.append(_unary_plus(child, opts))
    if opts.sums:
        options.append(_range(child, opts))
    if _allowed(opts, "where", 3):
        options.append(_if_then_else(child, opts))
    for name, arities in FUNCTIONS.items():
        for arity in sorted(arities):
            if _allowed(opts, name, arity):
                options.append(_call(name, arity, child, opts))
    return st.one_of(options)


@cache
def _leaf_text(opts: Options) -> st.SearchStrategy[str]:
    if opts.odd_terminals:
        leaf = st.one_of(odd_numbers, odd_names, st.sampled_from(CONSTANT_NAMES))
    else:
        leaf = st.sampled_from(opts.variables * 10 + opts.numbers)
    return st.one_of(leaf, leaf, st.sampled_from(opts.defined)) if opts.defined else leaf


@st.composite
def _node(draw, operation: st.SearchStrategy | None, opts: Options) -> Node:
    # One draw decides: a leaf from the table (12%), a decimal leaf (3%), an
    # operation (85%, 5% of them in redundant parentheses).
    k = draw(_LEAF_OR_NOT)
    if 12 <= k < 15:
        return Node(draw(odd_numbers if opts.odd_terminals else _DECIMAL), PREC_ATOM)
    if operation is None or k < 12:
        return Node(draw(_leaf_text(opts)), PREC_ATOM)
    node = draw(operation)
    return Node(f"({_ws(draw, opts)}{node.text}{_ws(draw, opts)})", PREC_ATOM) if k >= 95 else node


@cache
def nodes(max_depth: int = 5, opts: Options = DEFAULT) -> st.SearchStrategy:
    """Expressions with at most ``max_depth`` nested operations, as :class:`Node`."""
    if max_depth <= 0:
        return _node(None, opts)
    return _node(compound(nodes(max_depth - 1, opts), opts), opts)


_DEFINE_OR_NOT = st.integers(0, 2)
_DEFINITIONS = st.integers(0, 3)
_DEFINITION_NAME = st.sampled_from(DEFINITION_NAMES)


@st.composite
def _program(draw, max_depth: int, opts: Options) -> str:
    """Definitions ``name = sum;`` (a third of the time), then an expression that may use their names."""
    parts = []
    defined: tuple[str, ...] = ()
    for _ in range(draw(_DEFINITIONS) if draw(_DEFINE_OR_NOT) == 0 else 0):
        name = draw(_DEFINITION_NAME)
        value = draw(nodes(max(max_depth - 1, 0), replace(opts, defined=defined))).text
        if opts.whitespace:
            parts.append(f"{name}{_ws(draw, opts)}={_ws(draw, opts)}{value}{_ws(draw, opts)};")
        else:
            parts.append(f"{name} = {value};")
        defined = tuple(sorted({*defined, name}))
    body = draw(nodes(max_depth, replace(opts, defined=defined))).text
    if not opts.whitespace:
        return " ".join([*parts, body])
    return _ws(draw, opts) + "".join(p + _ws(draw, opts) for p in parts) + body + _ws(draw, opts)


def expressions(max_depth: int = 5, *, variables: Iterable[str] = VARIABLES, numbers: Iterable[str] = NUMBERS,
                ops: Iterable[str] | None = None, in_domain: bool = False, whitespace: bool = False,
                odd_terminals: bool = False, definitions: bool = False,
                sums: bool = False) -> st.SearchStrategy[str]:
    """Random expression text in symad's language (the options are described in the module doc).

    ``ops`` names the ops and functions of the op table to use (``"add"``,
    ``"neg"``, ``"sin"``, ``"pow"`` for both ``^`` and ``pow(a, b)``...); unary
    plus is always among them.
    """
    unknown = set(ops or ()) - set(OPS) - set(FUNCTIONS)
    if unknown:
        raise ValueError(f"not in the op table: {sorted(unknown)}")
    opts = Options(tuple(variables), tuple(numbers), None if ops is None else frozenset(ops), in_domain,
                   whitespace, odd_terminals, sums=sums)
    if definitions:
        return _program(max_depth, opts)
    return nodes(max_depth, opts).map(lambda node: node.text)


def example(strategy: st.SearchStrategy[T], seed: int, condition: Callable[[T], Any] = bool,
            tries: int = 1000) -> T:
    """The first value of ``strategy`` that meets ``condition``, drawn with ``random.Random(seed)``.

    The same value on every run (no database, no shrinking): for tests that want
    a few fixed examples of some size rather than many small ones.
    """
    config = settings(database=None, phases=[Phase.generate], max_examples=tries, deadline=None)
    return find(strategy, condition, settings=config, random=random.Random(seed))


# ---------------------------------------------------------------- points
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
