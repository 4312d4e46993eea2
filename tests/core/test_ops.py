"""The op table (symad/core/ops/): every entry complete, its partials right on its domain, and
one entry enough for every layer to handle a new operation."""

from __future__ import annotations

import ast
import math
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from support.approx import central_derivative, close, same

import symad
from symad import Graph
from symad.core.ops import (
    FUNCTIONS,
    OPS,
    PREC_AND,
    PREC_ATOM,
    PREC_CMP,
    PREC_NOT,
    PREC_OR,
    PREC_POWER,
    PREC_PRODUCT,
    PREC_SUM,
    PREC_UNARY,
    Call,
    Inline,
    Sympy,
    define,
)

ROOT = Path(__file__).resolve().parents[2]


OPERATIONS = [name for name, spec in OPS.items() if spec.arity >= 1]



def test_op_table_entries_have_every_field():
    levels = {PREC_OR, PREC_AND, PREC_NOT, PREC_CMP, PREC_SUM, PREC_PRODUCT, PREC_UNARY, PREC_POWER, PREC_ATOM}
    for name in OPERATIONS:
        spec = OPS[name]
        assert spec.name == name
        assert callable(spec.py) and callable(spec.np), name
        assert len(spec.partials) == spec.arity, name
        assert all(callable(p) or isinstance(p, float) for p in spec.partials), name
        assert spec.kind in ("infix", "prefix", "call"), name
        assert isinstance(spec.symbol, str) and spec.symbol, name
        assert spec.prec in levels and spec.assoc in ("left", "right", "none"), name
        assert spec.kind != "infix" or spec.arity == 2, name
        assert spec.kind != "prefix" or spec.arity == 1, name
        assert spec.kind != "call" or spec.prec == PREC_ATOM, name
        if spec.code is not None:
            assert all(f"{{{i}}}" in spec.code for i in range(spec.arity)), name
        assert isinstance(spec.llvm, (Inline, Call)), name
        if isinstance(spec.llvm, Inline):
            assert "{r}" in spec.llvm.template and all(f"{{{i}}}" in spec.llvm.template for i in range(spec.arity))
        assert spec.domain and all(len(p) == spec.arity for p in spec.domain), name
        # LaTeX: an operator or a function's name, or a form of its own holding each argument once
        if isinstance(spec.latex, tuple):
            assert sorted(p for p in spec.latex if isinstance(p, int)) == list(range(spec.arity)), name
        else:
            assert isinstance(spec.latex, str) and spec.latex, name
        assert isinstance(spec.sympy, Sympy) and (spec.sympy.name or spec.sympy.build), name
        assert not spec.roles or len(spec.roles) == spec.arity, name
        assert all(isinstance(n, str) and n for n in spec.numpy), name
        assert not spec.number_last or spec.commutative, name
        # Every op can be typed: as an operator, or as a function of its arity.
        assert spec.kind != "call" or spec.arity in FUNCTIONS.get(name, {}), name


def _scalar_fd(fn, args: tuple[float, ...], k: int) -> tuple[float, float] | None:
    """The k-th partial of ``fn`` at ``args`` by differences that bound their own error."""
    def along(t: float) -> float:
        moved = list(args)
        moved[k] += t
        return fn(*moved)
    return central_derivative(along, 1e-3 * max(1.0, abs(args[k])))


@pytest.mark.parametrize("name", OPERATIONS)
def test_op_partials_match_finite_differences(name, property_tally):
    spec = OPS[name]
    tally = property_tally("op-table entries: partials vs finite differences, points")
    g = Graph()
    arg_names = [f"a{i}" for i in range(spec.arity)]
    args = [symad.var(n, g) for n in arg_names]
    out = args[0].apply(name, *args[1:])
    for point in spec.domain:
        tally.tried += 1
        at_point = dict(zip(arg_names, point))
        value = spec.py(*point)
        assert math.isfinite(value), f"{name}{point} is not in the domain"
        assert same(value, float(spec.np(*map(np.float64, point)))), f"{name}: py and np disagree at {point}"
        assert same(out.evaluate(at_point), value)
        grad = out.compile(variables=arg_names).grad(at_point)
        problems = []
        for k in range(spec.arity):
            rule = spec.partial(k, *args, out)
            local = rule.compile(variables=arg_names).value(at_point) if isinstance(rule, symad.Expr) \
                else float(rule)
            estimate = _scalar_fd(spec.py, point, k)
            assert estimate is not None, f"{name}: differences do not converge at its domain point {point}"
            fd, error = estimate
            if abs(local - fd) > error + 1e-12 * abs(local) + 1e-15:
                problems.append(f"partial {k}: rule gives {local!r}, finite difference {fd!r} ± {error:.2g}")
            if not same(grad[k], local):
                problems.append(f"partial {k}: gradient gives {grad[k]!r}, rule {local!r}")
        tally.compared_with(problems, f"{name} at {point}")


def test_an_operation_without_a_lowering_is_an_error_at_definition():
    with pytest.raises(TypeError, match="no LLVM lowering"):
        define("frobnicate", 1, math.sin, np.sin, (lambda a, out: a,))
    with pytest.raises(TypeError, match="one partial per argument"):
        define("frobnicate", 2, math.atan2, np.arctan2, (lambda a, b, out: a,), llvm=Call("atan2"))
    assert "frobnicate" not in OPS


def _code_without_docstrings(path: Path) -> str:
    text = path.read_text(encoding="utf-8")
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef)) and ast.get_docstring(node, clean=False):
            text = text.replace(ast.get_docstring(node, clean=False), "")
    return text


def test_lowerings_partials_and_evaluations_live_in_the_table_only():
    """No other module (in any subpackage) names an op's intrinsic, C function or IR template
    (the code generators write IR of their own: loops, sums; not an op's)."""
    names = {spec.llvm.symbol for spec in OPS.values() if isinstance(spec.llvm, Call)}
    patterns = [re.escape(n) for n in names if n.startswith("llvm.")]
    patterns += [r"fcmp (olt|ogt|uno) double \{0\}", r"f(add|sub|mul|div) double \{0\}", r"fneg double \{0\}",
                 r"math\.(sin|tanh|atan2)"]
    for path in (ROOT / "symad").rglob("*.py"):
        if path.parent.name == "ops" or path.name == "semantics.py":
            continue
        text = _code_without_docstrings(path)
        for pattern in patterns:
            assert not re.search(pattern, text), f"{path.name} defines {pattern!r}: it belongs in the op table"


def test_every_layers_table_is_built_from_the_op_table():
    """What other layers keep per op is read from the entries, and covers every op: the
    grammar's operators, the comparisons, NumPy's ufuncs, SymPy's functions (both ways), LaTeX."""
    from symad.core.ops import COMPARISONS
    from symad.frontend.parser import _REDUCE
    from symad.functions import UFUNCS

    for name, spec in OPS.items():
        if spec.kind in ("infix", "prefix"):
            assert name in _REDUCE or COMPARISONS.get(spec.symbol) == name, name
        assert all(UFUNCS[u] == name for u in spec.numpy), name
    assert set(COMPARISONS.values()) == {n for n, s in OPS.items() if s.prec == PREC_CMP}
    assert {"absolute", "fabs", "maximum", "power", "arctan2", "less_equal", "logical_not"} <= set(UFUNCS)
    sympy = pytest.importorskip("sympy")
    from symad.interop import from_sympy, to_sympy

    g = Graph()
    for name in OPERATIONS:
        spec = OPS[name]
        args = [symad.var(v, g) for v in "abc"[:spec.arity]]
        e = args[0].apply(name, *args[1:])
        assert e.latex(), name
        back = from_sympy(to_sympy(e), g)
        # SymPy's own function reads back as the op (a condition as where(c, 1, 0))
        if spec.sympy.name is not None and spec.prec > PREC_CMP:
            assert back == e, (name, str(back))
        point = dict(zip("abc", spec.domain[0]))
        assert close(back.evaluate(point), e.evaluate(point), rel=1e-12, floor=1e-12), name
    assert sympy is not None


def test_small_integer_powers_give_the_same_bits_in_every_evaluator():
    """x^3 and friends are products in the interpreters, both backends and constant folding
    (the node-by-node evaluator used pow and differed in the last bit on a quarter of points)."""
    from symad.backends.interpret import node_values

    rng = np.random.default_rng(5)
    for k in (-4, -3, -2, -1, 2, 3, 4):
        g = Graph()
        e = symad.parse(f"x^{k}", g) if k > 0 else symad.parse(f"x^({k})", g)
        native = e.compile(backend="native")
        python = e.compile(backend="python")
        for x in rng.uniform(-3, 3, 200):
            want = native.value(np.array([x]))
            assert python.value(np.array([x])) == want
            assert node_values(g, [e.id], {"x": float(x)})[e.id] == want
            folded = symad.parse(f"({float(x)!r})^({k})", Graph())
            assert folded.op == "const" and folded.graph.data[folded.id] == want


FAKE_OP = """
import math, numpy as np
from symad.core import ops
ops.define("cube", 1, lambda a: a * a * a, lambda a: a * a * a, (lambda a, out: 3.0 * (a * a),),
           llvm=ops.Inline("{t}s = fmul double {0}, {0}\\n{r} = fmul double {t}s, {0}"),
           domain=((0.5,), (-1.2,)), doc="a test operation")
import symad
from symad import Graph
g = Graph()
e = symad.parse("cube(x)*y + cube(y)", g)
assert e.variables == ("x", "y")
assert [str(t) for t in symad.to_postfix("cube(x)")] == ["x", "cube"]
assert symad.parse(str(e), g) == e, str(e)                       # printing parses back
d = e.diff("x")
assert "cube" not in str(d) and abs(d.evaluate(x=2.0, y=3.0) - 36.0) < 1e-12
point = np.array([2.0, 3.0])
want = (8.0 * 3.0 + 27.0, [36.0, 8.0 + 27.0])
for backend in ("auto", "python", "native"):
    fn = e.compile(backend=backend)
    for _ in range(3):                                           # the tape, then compiled code
        value, grad = fn.value_and_grad(point)
        assert value == want[0] and grad.tolist() == want[1], (backend, value, grad)
    fn.prepare()
    value, grad = fn.value_and_grad(np.array([point] * 2000))     # a native batch
    assert value.tolist() == [want[0]] * 2000
from symad.backends.vm import VMProgram                          # the instruction interpreter
vm = VMProgram(e.compile(backend="python").value_grad_program().schedule)
assert vm.point(point).tolist() == [want[0], *want[1]]
dot = symad.to_digraph(e, grad=True, at={"x": 2.0, "y": 3.0}).source
assert "cube" in dot
table = symad.explain(e, {"x": 2.0, "y": 3.0})
assert "cube" in str(table.rows) and table.result == {"x": 36.0, "y": 35.0}, table.result
print("ok")
"""


def test_one_definition_is_enough_for_every_layer():
    """A new op, defined by one `define` call before the other modules load, is parsed,
    printed, differentiated, interpreted (tape and instructions), compiled (Python and
    native, point and batch), drawn and explained: nothing else is touched."""
    p = subprocess.run([sys.executable, "-c", FAKE_OP], capture_output=True, text=True, timeout=240, cwd=ROOT)
    assert p.returncode == 0 and p.stdout.strip() == "ok", p.stdout + p.stderr
