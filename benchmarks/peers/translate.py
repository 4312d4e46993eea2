"""One translator from symad's language to every peer's objects: symad's postfix, folded with a stack.

The text is parsed once by ``symad.to_postfix`` (the same grammar, so every peer
sees exactly the expression symad sees); each token is then mapped mechanically
to the peer's own numbers, variables, operators and functions.  Nothing is
``eval``'d.  ``^`` is power and ``log(x, b)`` is ``log(x)/log(b)``, as in symad.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

_INTEGER = re.compile(r"[0-9]+\Z")

# symad's constants, by name, as plain floats; a library may override them.
CONSTANTS = {"pi": math.pi, "e": math.e, "inf": math.inf, "nan": math.nan}

_BINARY: dict[str, Callable[[Any, Any], Any]] = {
    "add": lambda a, b: a + b,
    "sub": lambda a, b: a - b,
    "mul": lambda a, b: a * b,
    "div": lambda a, b: a / b,
    "pow": lambda a, b: a**b,
}


@dataclass
class Dialect:
    """How one library spells symad's leaves and functions.

    ``functions`` maps symad's function name to the library's callable; what a
    library lacks is spelled through what it has (``step(x)`` as
    ``(1 + sign(x))/2``, ``log(x, b)`` as ``log(x)/log(b)``).
    """

    name: str
    functions: Mapping[str, Callable[..., Any]]
    number: Callable[[str], Any] = float
    constants: Mapping[str, Any] = field(default_factory=dict)

    def call(self, fname: str, args: Sequence[Any]) -> Any:
        if fname == "log" and len(args) == 2:
            log = self.functions["log"]
            return log(args[0]) / log(args[1])
        if fname == "pow":
            return args[0] ** args[1]
        if fname == "step" and "step" not in self.functions:
            return (1 + self.functions["sign"](args[0])) / 2
        fn = self.functions.get(fname)
        if fn is None:
            raise NotImplementedError(f"{self.name} has no {fname}")
        return fn(*args)


def number_value(text: str) -> int | float:
    """A number token as Python's int when it is written as one (so ``x^2`` stays an integer power)."""
    return int(text) if _INTEGER.match(text) else float(text)


def fold(tokens: Sequence[Any], dialect: Dialect, variables: Mapping[str, Any]) -> Any:
    """Fold postfix ``tokens`` into the library's object, with ``variables`` as its leaves."""
    stack: list[Any] = []
    push, pop = stack.append, stack.pop
    for tok in tokens:
        kind = tok.kind
        if kind == "number":
            push(dialect.number(tok.text))
        elif kind == "name":
            if tok.text in variables:
                push(variables[tok.text])
            elif tok.text in dialect.constants:
                push(dialect.constants[tok.text])
            else:
                push(CONSTANTS[tok.text])
        elif kind == "op":
            if tok.text == "neg":
                push(-pop())
            else:
                b = pop()
                a = pop()
                push(_BINARY[tok.text](a, b))
        else:  # call
            n = tok.arity
            args = stack[len(stack) - n :]
            del stack[len(stack) - n :]
            push(dialect.call(tok.text, args))
    if len(stack) != 1:
        raise ValueError("malformed postfix")
    return stack[0]


_UNARY = ["sin", "cos", "tan", "asin", "acos", "atan", "sinh", "cosh", "tanh", "exp", "log", "sqrt"]


def _numpy_like(mod: Any, name: str, heaviside: Callable[[Any], Any] | None = None) -> Dialect:
    """NumPy's spelling, shared by NumPy, JAX (jax.numpy) and HIPS autograd (autograd.numpy)."""
    fns: dict[str, Callable[..., Any]] = {f: getattr(mod, f) for f in _UNARY if f not in ("asin", "acos", "atan")}
    fns.update(
        asin=mod.arcsin,
        acos=mod.arccos,
        atan=mod.arctan,
        atan2=mod.arctan2,
        abs=mod.abs,
        sign=mod.sign,
        min=mod.minimum,
        max=mod.maximum,
    )
    if heaviside is not None:
        fns["step"] = heaviside
    return Dialect(name, fns, number=number_value)


def numpy_dialect() -> Dialect:
    import numpy as np

    return _numpy_like(np, "numpy", lambda x: np.heaviside(x, 0.5))


def jax_dialect() -> Dialect:
    import jax.numpy as jnp

    return _numpy_like(jnp, "jax", lambda x: jnp.heaviside(x, 0.5))


def autograd_dialect() -> Dialect:
    import autograd.numpy as anp

    return _numpy_like(anp, "autograd")


def torch_dialect() -> Dialect:
    import torch

    fns = {f: getattr(torch, f) for f in _UNARY}
    fns.update(
        abs=torch.abs,
        sign=torch.sign,
        atan2=torch.atan2,
        min=lambda a, b: torch.minimum(torch.as_tensor(a), torch.as_tensor(b)),
        max=lambda a, b: torch.maximum(torch.as_tensor(a), torch.as_tensor(b)),
    )
    return Dialect("torch", fns, number=number_value)


def sympy_dialect() -> Dialect:
    import sympy as sp

    fns = {f: getattr(sp, f) for f in _UNARY}
    fns.update(
        abs=sp.Abs,
        sign=sp.sign,
        atan2=sp.atan2,
        min=sp.Min,
        max=sp.Max,
        step=lambda x: sp.Heaviside(x, sp.Rational(1, 2)),
    )
    return Dialect(
        "sympy",
        fns,
        number=lambda t: sp.Integer(int(t)) if _INTEGER.match(t) else sp.Float(float(t)),
        constants={"pi": sp.pi, "e": sp.E, "inf": sp.oo, "nan": sp.nan},
    )


def symengine_dialect() -> Dialect:
    import symengine as se

    fns = {f: getattr(se, f) for f in _UNARY}
    fns.update(abs=se.Abs, sign=se.sign, atan2=se.atan2, min=se.Min, max=se.Max)
    return Dialect(
        "symengine",
        fns,
        number=lambda t: se.Integer(int(t)) if _INTEGER.match(t) else se.RealDouble(float(t)),
        constants={"pi": se.pi, "e": se.E, "inf": se.oo, "nan": se.nan},
    )


def casadi_dialect() -> Dialect:
    import casadi as ca

    fns = {f: getattr(ca, f) for f in _UNARY}
    fns.update(abs=ca.fabs, sign=ca.sign, atan2=ca.atan2, min=ca.fmin, max=ca.fmax)
    return Dialect("casadi", fns, number=number_value)
