"""The op table's machinery: :class:`Op` (everything symad knows about one operation), the
forms of its facts (LLVM lowerings, SymPy forms), and :func:`define`, which adds an entry.

The entries themselves are in the family modules beside this one (``arith``, ``elementary``,
``stable``, ``logic``), one ``define(...)`` per operation with all its facts together.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from symad.core import semantics as sem

# Printing precedence levels, lowest binds loosest (as grammar/symad.lark layers them).
PREC_OR, PREC_AND, PREC_NOT, PREC_CMP = -3, -2, -1, 0
PREC_SUM, PREC_PRODUCT, PREC_UNARY, PREC_POWER, PREC_ATOM = 1, 2, 3, 4, 5

# A LaTeX form of its own: pieces of text and argument positions (an int k is argument k,
# printed without parentheses: the form encloses it), e.g. (r"\sqrt{", 0, "}").
LatexForm = tuple[str | int, ...]


class Inline:
    """LLVM IR lines computing the op in place: ``{0}``, ``{1}`` the arguments, ``{r}`` the
    result, ``{t}`` a prefix for temporaries; ``calls``: the functions on doubles the lines
    call, as ``(symbol, number of arguments)``.  ``Inline(trace=f)`` has them from ``f()``,
    ``(template, calls)``, at their first use (a kernel traced into IR costs milliseconds at
    import, for ops most programs never lower)."""

    __slots__ = ("_template", "_calls", "_trace")

    def __init__(self, template: str | None = None, calls: tuple[tuple[str, int], ...] = (), *,
                 trace: Callable[[], tuple[str, tuple[tuple[str, int], ...]]] | None = None):
        if (template is None) == (trace is None):
            raise TypeError("Inline takes a template or a trace, one of them")
        self._template, self._calls, self._trace = template, calls, trace

    def _traced(self) -> None:
        if self._template is None:  # (two threads tracing at once get the same lines)
            template, calls = self._trace()  # type: ignore[misc]
            self._calls = calls
            self._template = template  # last: a thread that sees the template sees its calls

    @property
    def template(self) -> str:
        self._traced()
        return self._template  # type: ignore[return-value]

    @property
    def calls(self) -> tuple[tuple[str, int], ...]:
        self._traced()
        return self._calls

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Inline) and (self.template, self.calls) == (other.template, other.calls)

    def __hash__(self) -> int:
        return hash((self.template, self.calls))

    def __repr__(self) -> str:
        return f"Inline(template={self.template!r}, calls={self.calls!r})"


@dataclass(frozen=True)
class Call:
    """A call of an LLVM intrinsic or C library function on doubles."""

    symbol: str
    # Called as `nobuiltin`, which LLVM leaves alone: its IR passes would rewrite pow(x, 0.5)
    # into sqrt(x) and pow(2, x) into exp2(x), 1 ulp off the C library's pow on ~0.1% of inputs.
    opaque: bool = False
    # An intrinsic that the processor computes on a vector of doubles lane by lane, each lane's
    # bits the scalar one's (IEEE's correctly rounded square root): vector stencils call it so.
    lanewise: bool = False


@dataclass(frozen=True)
class Sympy:
    """The op in SymPy.  ``name``: SymPy's function (class) of it, an attribute of ``sympy`` or a
    dotted path under it (``"codegen.cfunctions.log2"``): ``from_sympy`` reads it back as the op,
    and ``to_sympy`` calls it on the arguments unless ``build`` is given.  ``build(sp, *args)``:
    how ``to_sympy`` writes the op where SymPy has no such function (``softplus`` is
    ``log(1 + exp(x))``).  A condition built (``sp.Lt``, ``sp.And``) becomes 1 or 0."""

    name: str | None = None
    build: Callable[..., Any] | None = None


@dataclass(frozen=True)
class Op:
    """One operation: everything symad knows about it."""

    name: str  # the one name used everywhere: grammar alias, table key, DOT label
    arity: int  # 0 for leaves (const, var)
    py: Callable[..., float] | None  # scalar evaluation on floats; may raise on domain errors
    np: Callable[..., Any] | None  # NumPy evaluation with IEEE semantics
    partials: tuple[Callable[..., Any] | float, ...]  # d out / d arg_i: expression builders or numbers
    kind: str  # printing form: "leaf", "infix", "prefix" or "call"
    symbol: str  # infix/prefix symbol, or the function name for calls
    prec: int = PREC_ATOM
    assoc: str = "left"  # infix associativity: "left", "right" or "none" (comparisons)
    commutative: bool = False
    code: str | None = None  # inline Python template, e.g. "{0} + {1}"; else a call of ``py``/``np``
    llvm: Any = None  # lowering to LLVM IR: Inline(template) or Call(symbol)
    domain: tuple[tuple[float, ...], ...] = ()  # points inside the domain where the tests check it
    doc: str = ""
    # The arguments the op selects between by its first (``where``): reverse mode passes the
    # adjoint into the arm taken only, and forward mode selects the arms' tangents.
    arms: tuple[int, ...] = ()
    # LaTeX: the operator (infix, prefix), the function's name (calls), or a form of its own.
    latex: str | LatexForm = ""
    sympy: Sympy | None = None
    numpy: tuple[str, ...] = ()  # the NumPy ufuncs that are this op (np.sin(x) on an expression)
    # C's value where ``math.<name>`` raises (a Python expression of x; None: it never raises):
    # what the Python export returns there.
    math_raises: str | None = None
    roles: tuple[str, ...] = ()  # argument labels in pictures that say more than a position
    number_last: bool = False  # commutative: a number argument comes last (x + 2), not first (2*x)

    def partial(self, k: int, *args_and_out: Any) -> Any:
        """∂out/∂(argument k) at ``(*args, out)``: an expression, or a number for a constant rule."""
        rule = self.partials[k]
        return rule if isinstance(rule, float) else rule(*args_and_out)

    @property
    def math_name(self) -> str | None:
        """The name of ``py`` in Python's ``math`` module where it is one (``sin``), else None."""
        return self.py.__name__ if getattr(self.py, "__module__", None) == "math" else None  # type: ignore[union-attr]


OPS: dict[str, Op] = {}
# Functions callable by name in the input language: name -> {arity: builder}.
FUNCTIONS: dict[str, dict[int, Callable[..., Any]]] = {}
DEFAULT_DOMAIN = {1: ((0.4,), (-1.1,)), 2: ((0.4, -1.1), (-0.6, 0.8))}


def op_call(name: str) -> Callable[..., Any]:
    """Op ``name`` applied to expressions (building a node) or to numbers (computing it).

    Derivative rules call these, so one rule serves symbolic differentiation and
    the numeric reverse sweep of :mod:`symad.ad.numbers` (the tape).  On a Python float the scalar
    function runs and may raise on a domain error (callers retry with NumPy); on
    NumPy values the NumPy function runs with IEEE semantics.
    """

    def build(first: Any, *rest: Any) -> Any:
        if type(first) is float:
            return OPS[name].py(first, *rest)  # type: ignore[misc]
        apply = getattr(first, "apply", None)
        if apply is None:
            return OPS[name].np(first, *rest)  # type: ignore[misc]
        return apply(name, *rest)

    build.__name__ = name
    return build


def define(name: str, arity: int, py: Any, np_fn: Any, partials: tuple = (), *, llvm: Inline | Call | None = None,
           kind: str = "call", symbol: str | None = None, prec: int = PREC_ATOM, assoc: str = "left",
           commutative: bool = False, code: str | None = None,
           domain: tuple[tuple[float, ...], ...] | None = None, doc: str = "", arms: tuple[int, ...] = (),
           latex: str | LatexForm | None = None, sympy: Sympy | str | None = None, numpy: tuple[str, ...] = (),
           math_raises: str | None = None, roles: tuple[str, ...] = (), number_last: bool = False) -> Op:
    """Add an operation to the table: everything symad needs to parse, simplify, differentiate,
    evaluate, compile, print, typeset, convert and draw it.  Define it before importing the
    layers that read the table (``symad`` itself), as the family modules are.

    ``domain`` lists points inside its domain, away from kinks and poles, where the tests
    check the partials against finite differences (default: points inside most domains).
    ``latex`` defaults to the symbol (operators) or ``\\operatorname{name}`` (functions);
    ``sympy`` may be SymPy's function name alone; ``numpy`` names NumPy ufuncs that are the op
    besides ``np_fn``'s own (a :class:`~symad.core.semantics.NumpyFunction` names its ufunc).
    """
    if len(partials) != arity:
        raise TypeError(f"operation {name}: one partial per argument ({arity}), got {len(partials)}")
    if arity and llvm is None:
        raise TypeError(f"operation {name} has no LLVM lowering (llvm=Inline(...) or Call(...))")
    if roles and len(roles) != arity:
        raise TypeError(f"operation {name}: one role per argument ({arity}), got {len(roles)}")
    symbol = symbol or name
    if latex is None:
        latex = symbol if kind in ("infix", "prefix") else r"\operatorname{" + name.replace("_", r"\_") + "}"
    own = (np_fn.name,) if isinstance(np_fn, sem.NumpyFunction) else ()
    op = Op(name, arity, py, np_fn, partials, kind, symbol, prec, assoc, commutative, code,
            llvm, domain or DEFAULT_DOMAIN.get(arity, ()), doc, arms,
            latex, Sympy(sympy) if isinstance(sympy, str) else sympy, (*own, *numpy), math_raises, roles, number_last)
    OPS[name] = op
    if kind == "call":
        FUNCTIONS.setdefault(name, {})[arity] = op_call(name)
    return op


# Builders the derivative rules are written with: on expressions a node, on numbers the number.
sin, cos, sqrt, log, sign, step, sinh, cosh, power, fabs, fmax, fmin, exp, hypot, sigmoid, where, less, equal, \
    sinc = map(op_call, ["sin", "cos", "sqrt", "log", "sign", "step", "sinh", "cosh", "pow", "abs", "max", "min", "exp",
                         "hypot", "sigmoid", "where", "lt", "eq", "sinc"])
