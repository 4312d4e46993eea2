"""Functions over loops compile one whole program per use (value and gradient, values, Jacobian
entries, Hessian bands), each node's output written even where two outputs are one node, and
IPOPT's problem compiles only what it calls."""

from __future__ import annotations

import numpy as np
import pytest

import symad
from symad import native
from symad.core.dag import Graph
from symad.indexed_function import IndexedFunction, Repeated
from symad.indexed_vector_function import IndexedVectorFunction
from symad.optimize.loops import Family, LoopProblem
from symad.runtime.native_loops import WholeProgram

N = 2000
DEFS = f"N = {N}; h = 10/N; "
VAN_DER_POL = {
    "fun": DEFS + "sum(k = 1..N, h*(x1[k]^2 + x2[k]^2 + u[k]^2))",
    "constraints": [("eq", DEFS + "each(k = 1..N, x1[k+1] - x1[k] - h*((1 - x2[k]^2)*x1[k] - x2[k] + u[k]))"),
                    ("eq", DEFS + "each(k = 1..N, x2[k+1] - x2[k] - h*x1[k])"),
                    ("eq", "x1[1]"), ("eq", "x2[1] - 1")],
}

needs_native = pytest.mark.skipif(not native.available(), reason="llvmlite is not installed")


def _function(text: str) -> IndexedFunction:
    return IndexedFunction(symad.parse(text, Graph()))


@needs_native
def test_two_partials_that_are_one_node_each_get_their_values() -> None:
    # ∂/∂x and ∂/∂y of x[k] + y[k] are one node, each(k, 1): both gradients are ones
    f = _function(f"N = {N}; sum(k = 1..N, x[k] + 3*y[k]*y[k])")
    point = np.linspace(-1.0, 1.0, f.size)
    value, grad = f.value_and_grad(point)
    y = point[N:]
    assert value == pytest.approx(point[:N].sum() + 3 * (y * y).sum())
    np.testing.assert_array_equal(grad[:N], np.ones(N))
    np.testing.assert_allclose(grad[N:], 6 * y, rtol=1e-15)
    same = _function(f"N = {N}; sum(k = 1..N, x[k] + y[k])")
    _, grad = same.value_and_grad(np.zeros(same.size))
    np.testing.assert_array_equal(grad, np.ones(2 * N))
    assert isinstance(same._whole, WholeProgram)


@needs_native
def test_a_repeated_root_is_a_copy_of_its_own() -> None:
    f = _function(f"N = {N}; sum(k = 1..N, x[k] + y[k])")
    program = f.program([f._outputs[1], f._outputs[1], f._outputs[0]])
    assert isinstance(program, Repeated)
    first, second, value = program.run({}, {"x": (np.ones(N), (1,)), "y": (np.ones(N), (1,))})
    np.testing.assert_array_equal(first, second)
    assert first is not second and value == 2 * N


@needs_native
def test_the_hessian_bands_of_a_diagonal_hessian_are_all_written() -> None:
    # three bands, each(k, 2h): one node three times
    f = _function(f"N = {N}; h = 10/N; sum(k = 1..N, h*(x1[k]^2 + x2[k]^2 + u[k]^2))")
    values = f.hessian_values(np.ones(f.size))
    np.testing.assert_array_equal(values, np.full(3 * N, 2 * (10 / N)))


@needs_native
def test_the_same_bits_as_the_loops_program() -> None:
    g = Graph()
    F = IndexedVectorFunction([symad.parse(VAN_DER_POL["constraints"][0][1], g)])
    x = np.random.default_rng(3).standard_normal(F.size)
    inputs = F.program_inputs(F.named(x, None, {}))
    whole = F.program(list(F.roots))
    assert isinstance(whole, WholeProgram)
    (a,), (b,) = whole.run(*inputs), F.compiled(list(F.roots)).run(*inputs)
    assert a.tobytes() == np.asarray(b, dtype=float).tobytes()
    nodes = F._entry_places().nodes
    for a, b in zip(F.program(nodes).run(*inputs), F.compiled(nodes).run(*inputs)):
        b = np.broadcast_to(np.asarray(b, dtype=float), np.shape(a))
        assert np.asarray(a, dtype=float).tobytes() == b.tobytes()


@needs_native
def test_ipopts_problem_compiles_one_program_a_use() -> None:
    native.clear_cache()  # (programs kept in memory by earlier tests would not count as compiles)
    before = native.compile_stats()["compiles"]
    problem = LoopProblem(VAN_DER_POL["fun"], VAN_DER_POL["constraints"], {"u": (-1, 1)})
    x = np.full(problem.layout.size, 0.1)
    problem.fg(x)
    problem.values(x)
    problem.jacobian_values(x)
    problem.hessian_values(x, 1.0, np.ones(problem.m))
    families = [p for p in problem.pieces if isinstance(p, Family)]
    # the objective's value and gradient and its bands; each family's values with its Jacobian's
    # entries, and its Lagrangian's bands: 2 + 2 * 2, never a program per loop, never a
    # Lagrangian's gradient
    assert native.compile_stats()["compiles"] - before <= 6
    for family in families:
        assert family.lagrangian._run is None
        assert isinstance(family.fn._both, WholeProgram)
    assert isinstance(problem.objective.fn._whole, WholeProgram)


@needs_native
def test_values_and_the_jacobian_together_are_each_alone() -> None:
    F = IndexedVectorFunction([symad.parse(VAN_DER_POL["constraints"][0][1], Graph())])
    x = np.random.default_rng(4).standard_normal(F.size)
    values, jacobian = F.value_and_jacobian_values(x)
    assert values.tobytes() == F.value(x).tobytes()
    assert jacobian.tobytes() == F.jacobian_values(x).tobytes()


@needs_native
def test_a_family_answers_for_the_point_it_is_given() -> None:
    family = Family(symad.parse(f"N = {N}; each(k = 1..N, 1/x[k] + x[k+1])", Graph()))
    F = family.fn
    family.take = np.arange(F.size)
    x = np.linspace(1.0, 2.0, F.size)
    first = family.values(x)
    np.testing.assert_array_equal(family.jacobian_values(x), F.jacobian_values(x))
    first[:] = 0.0  # a caller's copy: the kept values are not changed
    np.testing.assert_array_equal(family.values(x), F.value(x))
    y = x.copy()
    y[0] = 3.0
    assert family.values(y)[0] == 1 / 3 + y[1] and family.jacobian_values(y)[0] == -1 / 9
    zero, negative = np.zeros(F.size), np.zeros(F.size)
    negative[0] = -0.0
    assert family.values(zero)[0] == np.inf and family.values(negative)[0] == -np.inf  # the bits, not ==


def test_the_python_backend_runs_the_loops_program() -> None:
    f = IndexedFunction(symad.parse(f"N = {N}; sum(k = 1..N, x[k] + y[k])", Graph()), backend="python")
    _, grad = f.value_and_grad(np.zeros(f.size))
    np.testing.assert_array_equal(grad, np.ones(2 * N))
    assert f._whole is None
