"""The SymPy oracle of the property tests, and detectors of float64 trouble.

:func:`to_sympy` translates symad's text into SymPy (a whitelist of names, no
``eval`` of anything else); :func:`sympy_at` evaluates at 30 significant digits.
Where float64 itself cannot get within the tolerance (an amplified rounding
error, an underflow, a point next to a kink), an example says nothing about
symad's derivatives: :func:`not_comparable` says why, so that such examples are
skipped and counted instead of compared.
"""

from __future__ import annotations

import contextlib
import math
import re
import signal
from typing import Any

import numpy as np
import sympy
from sympy.parsing.sympy_parser import auto_number, convert_xor, parse_expr

import symad
from support.expressions import VARIABLES
from symad import Graph
from symad.core.ops import CONSTANTS, FUNCTIONS, OPS
from symad.core.ops.special import POLYGAMMA_MAX

REL_TOL = 1e-9  # symad's float64 result vs SymPy's 30-digit one
ABS_TOL = 1e-12  # floor for values near 0
KINK = 1e-6  # closer than this to a kink of abs/min/max/sign/step or a jump of floor/ceil/round: not compared
# Every check must compare at least this fraction of its examples (random text over an op table with
# many functions defined on half-lines only, lgamma, betaln, logit..., is often undefined at a point:
# the gradient check compares 42% of its 2000 examples, the second-derivative one 50%).
MIN_COMPARED = 0.35


# ============================================================ SymPy oracle
SYMBOLS = {name: sympy.Symbol(name, real=True) for name in VARIABLES}
_HALF = sympy.S.Half

# symad's functions and constants in SymPy; a function missing here fails
# test_sympy_translator_knows_every_function, so a new op gets an oracle too.
def _flat(fn):
    """A piecewise-constant function whose derivative SymPy takes as 0 (as symad does), ``fn`` on numbers."""

    class Flat(sympy.Function):
        @classmethod
        def eval(cls, a):
            return fn(a) if a.is_Number else None

        def fdiff(self, argindex=1):
            return sympy.S.Zero

    Flat.__name__ = getattr(fn, "__name__", "flat")
    return Flat


def _polygamma(n: Any, a: Any) -> Any:
    """ψ⁽ⁿ⁾(a) with n rounded, as symad does, and nan for an order outside 0..POLYGAMMA_MAX as
    symad gives (SymPy would compute harmonic numbers of a huge order for minutes first)."""
    k = sympy.floor(n + _HALF)
    if k.is_number and (k.is_finite is not True or not 0 <= k <= POLYGAMMA_MAX):
        return sympy.nan
    return sympy.polygamma(k, a)


def _log_abs_gamma(a):
    """log|Γ(a)|, real for negative a too (SymPy's loggamma is complex there)."""
    return sympy.log(sympy.Abs(sympy.gamma(a)))


SYMPY_FUNCTIONS = {
    "sin": sympy.sin, "cos": sympy.cos, "tan": sympy.tan,
    "asin": sympy.asin, "acos": sympy.acos, "atan": sympy.atan,
    "sinh": sympy.sinh, "cosh": sympy.cosh, "tanh": sympy.tanh,
    "exp": sympy.exp, "log": sympy.log,  # log(x, b) is log(x)/log(b) in SymPy too
    "sqrt": sympy.sqrt,
    # SymPy differentiates Abs and sign cleanly only where it can prove the
    # argument real; sqrt(a^2) (which SymPy turns into Abs(a) when it can) and
    # 2*step(a) - 1 are the same functions on the reals with plain derivatives.
    "abs": lambda a: sympy.sqrt(a**2),
    "sign": lambda a: 2 * sympy.Heaviside(a, _HALF) - 1,
    "step": lambda a: sympy.Heaviside(a, _HALF),  # step(0) = 1/2, as in symad
    "atan2": sympy.atan2, "pow": sympy.Pow, "min": sympy.Min, "max": sympy.Max,
    "log1p": lambda a: sympy.log(1 + a), "expm1": lambda a: sympy.exp(a) - 1,
    "sigmoid": lambda a: 1 / (1 + sympy.exp(-a)), "softplus": lambda a: sympy.log(1 + sympy.exp(a)),
    "log_sigmoid": lambda a: -sympy.log(1 + sympy.exp(-a)),
    "logaddexp": lambda a, b: sympy.log(sympy.exp(a) + sympy.exp(b)),
    "logsumexp": lambda *a: sympy.log(sympy.Add(*(sympy.exp(x) for x in a))),
    "erf": sympy.erf, "erfc": sympy.erfc, "hypot": lambda a, b: sympy.sqrt(a**2 + b**2),
    "cbrt": lambda a: sympy.sign(a) * sympy.Abs(a) ** sympy.Rational(1, 3),
    "asinh": sympy.asinh, "acosh": sympy.acosh, "atanh": sympy.atanh,
    "floor": _flat(sympy.floor), "ceil": _flat(sympy.ceiling),
    "round": _flat(lambda a: sympy.sign(a) * sympy.floor(sympy.Abs(a) + _HALF)),
    # (unevaluated: SymPy's simplification of nested Min/Max can take seconds an example)
    "sinc": sympy.sinc,  # sin(x)/x, unnormalised
    "clip": lambda x, lo, hi: sympy.Min(sympy.Max(x, lo, evaluate=False), hi, evaluate=False),
    # the special functions (symad/core/ops/special.py)
    "lgamma": lambda a: _log_abs_gamma(a), "digamma": lambda a: sympy.polygamma(0, a),
    "polygamma": lambda n, a: _polygamma(n, a),
    "gamma": sympy.gamma,
    "ndtr": lambda a: (1 + sympy.erf(a / sympy.sqrt(2))) / 2,
    "log_ndtr": lambda a: sympy.log((1 + sympy.erf(a / sympy.sqrt(2))) / 2),
    "logit": lambda a: sympy.log(a / (1 - a)),
    "xlogy": lambda a, b: sympy.Piecewise((0, sympy.Eq(a, 0)), (a * sympy.log(b), True)),
    "xlog1py": lambda a, b: sympy.Piecewise((0, sympy.Eq(a, 0)), (a * sympy.log(1 + b), True)),
    "betaln": lambda a, b: _log_abs_gamma(a) + _log_abs_gamma(b) - _log_abs_gamma(a + b),
    "beta": lambda a, b: sympy.exp(_log_abs_gamma(a) + _log_abs_gamma(b) - _log_abs_gamma(a + b)),
    "digamma_diff": lambda a, b: sympy.polygamma(0, a) - sympy.polygamma(0, a + b),
}
SYMPY_CONSTANTS = {"pi": sympy.pi, "e": sympy.E, "inf": sympy.oo, "nan": sympy.nan}


def _true(a):
    return sympy.Ne(a, 0)


def _truthy(a) -> bool:
    return a.is_zero is not True  # nan is true, as in IEEE arithmetic (nan != 0)


def _compared(test):
    """A comparison of two numbers: false at nan (IEEE), except ``!=``."""
    return lambda a, b: test(a, b) if sympy.S.NaN not in (a, b) else test is _NE


def _NE(a, b):
    return bool(sympy.Ne(a, b))


def _condition(name: str, test):
    """One of symad's conditions (1 or 0) as an opaque SymPy function: ``test`` on numbers, its
    derivative 0.  Not a Piecewise: SymPy pushes a power into a Piecewise's pieces and then
    misjudges them (Piecewise((1, c), (0, True))**atan(step) became 0 where the exponent is 0)."""

    class Condition(sympy.Function):
        @classmethod
        def eval(cls, *args):
            if all(a.is_Number for a in args):
                return sympy.S.One if test(*args) else sympy.S.Zero
            return None

        def fdiff(self, argindex=1):
            return sympy.S.Zero

        def _eval_evalf(self, prec):
            args = [a.evalf(prec) for a in self.args]
            return self.func(*args) if all(a.is_Number for a in args) else None

    Condition.__name__ = name
    return Condition


# Branches as SymPy's Piecewise (its derivative is the derivative of the piece taken, the
# semantics symad's derivatives have); conditions as opaque functions of their operands.
SYMPY_FUNCTIONS["where"] = lambda c, a, b: sympy.Piecewise((a, _true(c)), (b, True))
SYMPY_CONDITIONS = {
    "lt": _condition("symad_lt", _compared(lambda a, b: bool(a < b))),
    "le": _condition("symad_le", _compared(lambda a, b: bool(a <= b))),
    "gt": _condition("symad_gt", _compared(lambda a, b: bool(a > b))),
    "ge": _condition("symad_ge", _compared(lambda a, b: bool(a >= b))),
    "eq": _condition("symad_eq", _compared(lambda a, b: bool(sympy.Eq(a, b)))),
    "ne": _condition("symad_ne", _compared(_NE)),
    "and": _condition("symad_and", lambda a, b: _truthy(a) and _truthy(b)),
    "or": _condition("symad_or", lambda a, b: _truthy(a) or _truthy(b)),
    "not": _condition("symad_not", lambda a: not _truthy(a)),
}
_ARITHMETIC = {"add": sympy.Add, "sub": lambda a, b: a - b, "mul": sympy.Mul, "div": lambda a, b: a / b,
               "neg": lambda a: -a, "pow": sympy.Pow}
# Text Python's parser cannot read (conditions, branches, indices, sums): read through symad's postfix
_POSTFIX_ONLY = re.compile(r"[<>=!\[]|\b(and|or|not|if|then|else|where|sum|prod)\b")

_ALLOWED_TEXT = re.compile(r"[A-Za-z0-9_ .+\-*/^(),]*")
_NAME = re.compile(r"(?<![0-9.])[A-Za-z_][A-Za-z_0-9]*")
# parse_expr evaluates the (tokenized, transformed) text against these namespaces
# only: no builtins, nothing but numbers, our symbols and the functions above.
_SYMPY_GLOBALS = {"__builtins__": {}, "Integer": sympy.Integer, "Float": sympy.Float,
                  "Rational": sympy.Rational}
_SYMPY_LOCALS = {**SYMBOLS, **SYMPY_FUNCTIONS, **SYMPY_CONSTANTS}


class SympyTooSlow(BaseException):
    """SymPy spent more than its CPU-time budget on one example (an oracle must never hang a run).
    Not an Exception: SymPy's own ``except Exception`` (around a memoised recurrence, a sympify)
    swallowed it once, and the example ran on for minutes."""


# A budget per example: SymPy's work on one takes milliseconds, rarely a second or two; of the
# SymPy property checks' ~1,000 examples, five took 3.4 to 10 s (40 s of the suite between them)
SYMPY_CPU_SECONDS = 3.0


@contextlib.contextmanager
def sympy_budget(seconds: float = SYMPY_CPU_SECONDS):
    """Raise :class:`SympyTooSlow` inside the block once it has used ``seconds`` of CPU time (CPU,
    not wall-clock: a loaded machine gives the same answer).  SymPy can hang on an innocent-looking
    example (deciding Eq(a, 0) for a huge constant ``a``), and a hung oracle hangs CI."""
    def expire(signum, frame):
        raise SympyTooSlow(f"SymPy used more than {seconds} s of CPU time on one example")

    previous = signal.signal(signal.SIGVTALRM, expire)
    signal.setitimer(signal.ITIMER_VIRTUAL, seconds, 1.0)  # and every second after, till the block ends
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_VIRTUAL, 0)
        signal.signal(signal.SIGVTALRM, previous)


class TranslationError(Exception):
    """The text holds something the SymPy translator does not know (a test bug, not symad's)."""


def to_sympy(text: str) -> sympy.Expr | None:
    """The same expression in SymPy; ``^`` is power (``convert_xor``), names are whitelisted.

    None if SymPy refuses to build it (``max(x, log(0))``: SymPy cannot order ``zoo``).
    """
    if _POSTFIX_ONLY.search(text):
        return _postfix_to_sympy(text)
    if not _ALLOWED_TEXT.fullmatch(text):
        raise TranslationError(f"unexpected character in {text!r}")
    for name in _NAME.findall(re.sub(r"\d+\.?\d*[eE][+-]?\d+", "", text)):
        if name not in _SYMPY_LOCALS:
            raise TranslationError(f"name {name!r} is not in the SymPy translator")
    try:
        return parse_expr(text, local_dict=dict(_SYMPY_LOCALS), global_dict=dict(_SYMPY_GLOBALS),
                          transformations=(auto_number, convert_xor))
    except (ValueError, TypeError, ZeroDivisionError):
        return None


def symbol(name: str) -> sympy.Symbol:
    """The SymPy symbol of the variable ``name`` (``x``, ``x[3]``)."""
    if name not in SYMBOLS:
        SYMBOLS[name] = sympy.Symbol(name, real=True)
    return SYMBOLS[name]


def unrolled(text: str) -> list[symad.frontend.tokens.Token]:
    """The postfix tokens of ``text`` with each sum or product written out, term after term:
    a second implementation of the ranges, for the oracles (bounds must be numbers as typed)."""
    return _unrolled(symad.to_postfix(text), text)


def _unrolled(tokens: list, text: str) -> list:
    out: list = []
    i = 0
    while i < len(tokens):
        tok = tokens[i]
        if tok.kind != "range":
            if tok.kind in ("function", "end"):
                raise TranslationError(f"{tok.kind} tokens are not translated ({text!r})")
            out.append(tok)
            i += 1
            continue
        depth, j = 0, i + 1
        while tokens[j].kind != "end" or depth:
            depth += tokens[j].kind == "range"
            depth -= tokens[j].kind == "end"
            j += 1
        high, low = out.pop(), out.pop()
        if high.kind != "number" or low.kind != "number":
            raise TranslationError(f"bounds are not numbers as typed ({text!r})")
        reduction, index = tok.text.split()
        op, empty = {"sum": ("add", "0"), "prod": ("mul", "1")}[reduction]
        terms = 0
        for k in range(int(low.text), int(high.text) + 1):
            body = [tok._replace(kind="number", text=str(k)) if tok.kind == "name" and tok.text == index else tok
                    for tok in tokens[i + 1:j]]
            out.extend(_unrolled(body, text))
            if terms:
                out.append(tok._replace(kind="op", text=op, arity=2))
            terms += 1
        if not terms:
            out.append(tok._replace(kind="number", text=empty, arity=0))
        i = j + 1
    return out


def _postfix_to_sympy(text: str) -> sympy.Expr | None:
    """Text with conditions, branches, indices or sums (not Python's syntax, so not ``parse_expr``'s)
    in SymPy, from symad's postfix tokens: the parser's reading, each operation SymPy's own."""
    stack: list = []
    try:
        for tok in unrolled(text):
            if tok.kind == "number":
                stack.append(sympy.Float(tok.text, 30) if any(c in tok.text for c in ".eE")
                             else sympy.Integer(tok.text))
            elif tok.kind == "name":
                stack.append(_SYMPY_LOCALS[tok.text])
            elif tok.kind == "index":
                stack.append(symbol(f"{tok.text}[{int(stack.pop())}]"))
            elif tok.kind in ("op", "call"):
                args = stack[len(stack) - tok.arity:]
                del stack[len(stack) - tok.arity:]
                build = _ARITHMETIC.get(tok.text) or SYMPY_CONDITIONS.get(tok.text) or SYMPY_FUNCTIONS[tok.text]
                stack.append(build(*args))
            else:
                raise TranslationError(f"{tok.kind} tokens are not translated ({text!r})")
    except (ValueError, TypeError, ZeroDivisionError):
        return None
    return stack[0]


def sympy_at(e: sympy.Expr, point: dict[str, float]) -> float | None:
    """``e`` at the point, to 30 digits, as a float; None if complex, non-finite or undefined.

    The point's coordinates become 30-digit Floats holding their exact binary
    values; SymPy then evaluates every function on them as it builds the result.
    """
    subs = {symbol(n): sympy.Float(v, 30) for n, v in point.items()}
    try:
        number = complex(e.xreplace(subs).evalf(30))
    except (ValueError, TypeError, ZeroDivisionError, OverflowError):
        return None  # not a number (zoo, an unevaluated DiracDelta(0), ...)
    if not (math.isfinite(number.real) and math.isfinite(number.imag)):
        return None
    if abs(number.imag) > 1e-25 * max(1.0, abs(number.real)):
        return None  # complex: symad is nan there
    return number.real


def close(got: float, want: float, rel: float = REL_TOL, floor: float = ABS_TOL) -> bool:
    return abs(got - want) <= rel * max(abs(got), abs(want)) + floor


# ============================================================ float64 trouble detectors
# symad computes in float64, the oracle exactly.  Where float64 itself cannot get
# within the tolerance (an amplified rounding error, an underflow, a point next to
# a kink), an example says nothing about symad's derivatives; these helpers find
# such examples so that they are skipped and counted instead of compared.

_IGNORE = dict(all="ignore")
_STRICT = dict(over="raise", under="raise", divide="ignore", invalid="ignore")


def _kink(op: str, args: list[float]) -> float:
    """Distance from the kink of op at these arguments (inf for smooth ops)."""
    if op in ("abs", "sign", "step"):
        return abs(args[0])
    if op in ("floor", "ceil", "round"):  # jumps at the integers, at halves for round
        shift = 0.5 if op == "round" else 0.0
        return abs(args[0] - shift - round(args[0] - shift)) if math.isfinite(args[0]) else math.inf
    if op in ("min", "max", "lt", "le", "gt", "ge", "eq", "ne"):
        a, b = args
        return abs(a - b) / max(1.0, abs(a), abs(b))
    if op in ("where", "not", "and", "or"):  # a jump where a condition crosses 0
        # (a condition that is exactly 0 or 1 is most likely a comparison's: it does not move)
        return min((abs(c) for c in args[:1 if op in ("where", "not") else 2] if c not in (0.0, 1.0)),
                   default=math.inf)
    return math.inf


def _jittered(v: float, key: int, jitter: float, pattern: int) -> float:
    # Moves v by a relative ±jitter and an absolute ±1e-300 (an underflow's size);
    # the sign is a fixed pseudo-random function of (key, pattern).
    sign = 1.0 if ((key * 2654435761 + pattern * 40503) >> 5) & 1 else -1.0
    return v * (1.0 + sign * jitter) + sign * 1e-300


def evaluate_dag(g: Graph, roots: list[int], point: dict[str, float], jitter: float = 0.0,
                 pattern: int = 0, errors: dict = _IGNORE) -> dict[int, float]:
    """Every node the roots depend on, evaluated with the op table's NumPy functions.

    With ``jitter``, every node's value is perturbed (see ``_jittered``) before its
    parents use it: a model of rounding errors.
    """
    values: dict[int, float] = {}
    with np.errstate(**errors):
        for n in g.reachable(roots):
            op = g.op[n]
            if op == "const":
                v = g.data[n]
            elif op == "var":
                v = point[g.data[n]]
            else:
                v = float(OPS[op].np(*(np.float64(values[a]) for a in g.args[n])))
            values[n] = _jittered(v, n, jitter, pattern) if jitter else v
    return values


def ill_conditioned(g: Graph, roots: list[int], point: dict[str, float]) -> bool:
    """Whether rounding errors can move the roots' values by more than the tolerance.

    A first-order forward error analysis: perturb every node by a relative 1e-13
    (about 500 ulps, with varying signs) and see whether the outputs move by more
    than 1e-10, i.e. whether some node's error is amplified more than ~1000-fold
    (``sin(x + 1e6)``, ``sqrt(cos(atan2(1, x - x)))``: cos(π/2 rounded) is 6e-17,
    not 0).  Well-conditioned points pass with a margin of ~10^4.
    """
    base = evaluate_dag(g, roots, point)
    want = np.array([base[r] for r in roots])
    for pattern in (1, 2, 3):
        moved = evaluate_dag(g, roots, point, 1e-13, pattern)
        got = np.array([moved[r] for r in roots])
        if not np.all(np.abs(got - want) <= 1e-10 * np.abs(want) + ABS_TOL):
            return True
    return False


def as_typed(text: str, point: dict[str, float], jitter: float = 0.0, pattern: int = 0,
             errors: dict = _IGNORE) -> tuple[float, float]:
    """``text`` evaluated in float64 token by token, before symad folds any constant.

    Returns the value and the distance to the nearest kink (of abs, sign, step,
    min, max).  The DAG cannot show what constant folding hid: ``sign(sin(pi))``
    is ``sign(1.2e-16)`` = 1 in float64 but sign(0) = 0 exactly, and
    ``sign(0.5^(3^10))`` is 1 but 0.5^59049 underflows to 0.
    """
    stack: list[float] = []
    nearest = math.inf
    with np.errstate(**errors):
        for i, tok in enumerate(unrolled(text)):
            if tok.kind == "number":
                stack.append(float(tok.text))
                continue
            if tok.kind == "name":
                stack.append(CONSTANTS[tok.text] if tok.text in CONSTANTS else point[tok.text])
                continue
            if tok.kind == "index":
                stack.append(point[f"{tok.text}[{round(stack.pop())}]"])  # (jitter moves an index too)
                continue
            args = stack[len(stack) - tok.arity:]
            del stack[len(stack) - tok.arity:]
            spec = OPS.get(tok.text)
            if spec is not None and spec.arity == tok.arity:
                v = float(spec.np(*map(np.float64, args)))
                nearest = min(nearest, _kink(tok.text, args))
            else:  # a derived form such as log(x, b): build it from ops and evaluate that
                g = Graph()
                params = {f"arg{k}": a for k, a in enumerate(args)}
                built = FUNCTIONS[tok.text][tok.arity](*(symad.var(p, g) for p in params))
                values = evaluate_dag(g, [built.id], params, errors=errors)
                v = values[built.id]
                nearest = min([nearest, *(_kink(g.op[n], [values[a] for a in g.args[n]]) for n in values)])
            stack.append(_jittered(v, i, jitter, pattern) if jitter else v)
    return stack[0], (nearest if nearest == nearest else 0.0)


def not_comparable(e: symad.Expr, roots: list[int], text: str, point: dict[str, float],
                   kink: float = KINK) -> str | None:
    """Why ``roots`` (nodes of ``e``'s graph) cannot be compared with an exact oracle, or None."""
    try:
        value, nearest = as_typed(text, point, errors=_STRICT)
    except FloatingPointError:
        # atan(20^(20^20)) is finite only because inf stands in for a huge number.
        return "float64 over/underflow"
    if nearest < kink:
        return "near a kink"
    if not math.isfinite(value) or not finite(list(evaluate_dag(e.graph, roots, point).values())):
        return "non-finite"
    for pattern in (1, 2, 3):
        moved, _ = as_typed(text, point, 1e-13, pattern)
        if not close(moved, value, rel=1e-10):
            return "ill-conditioned"
    if ill_conditioned(e.graph, roots, point):
        return "ill-conditioned"
    return None


def finite(*values) -> bool:
    return all(np.all(np.isfinite(v)) for v in values)


def check_compared_enough(tally) -> None:
    assert tally.compared >= MIN_COMPARED * tally.tried, (
        f"only {tally.compared} of {tally.tried} examples were compared: {tally.skipped}")
