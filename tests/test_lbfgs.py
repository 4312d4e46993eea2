"""method="l-bfgs": symad's L-BFGS, its iteration in machine code between the evaluations.

Without bounds, L-BFGS-B's iteration is L-BFGS with Moré-Thuente's line search: scipy's routine is
the oracle, its iterates the same points up to rounding (different sums: the compact form against
the two-loop recursion), and its evaluations as many.
"""

from __future__ import annotations

import threading

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import symad
from symad.core.errors import SymadError

N = 12
NAMES = [f"x{i}" for i in range(1, N + 1)]
ROSENBROCK = " + ".join(f"100*(x{i + 1} - x{i}^2)^2 + (1 - x{i})^2" for i in range(1, N))
START = np.array([-1.2 if i % 2 == 0 else 1.0 for i in range(N)])
# a smooth function with a dense Hessian, and one whose curvature varies a thousandfold
LOGSUMEXP = "log(" + " + ".join(f"exp({(i % 5) - 2}*x{i} + 0.1*x{i % N + 1})" for i in range(1, N + 1)) + ") + " + \
    " + ".join(f"0.05*x{i}^2" for i in range(1, N + 1))
SCALED = " + ".join(f"{10 ** (3 * i / N):.6g}*(x{i} - {i % 3})^2 + 0.01*x{i}^4" for i in range(1, N + 1))
PROBLEMS = {"rosenbrock": ROSENBROCK, "logsumexp": LOGSUMEXP, "scaled": SCALED}


def _ours(text: str, x0: np.ndarray, iterates: int) -> list[np.ndarray]:
    seen: list[np.ndarray] = []
    symad.minimize(text, x0, variables=NAMES, method="l-bfgs", max_iter=iterates, tol=1e-300, xtol=0.0,
                   callback=lambda r: seen.append(r.x.copy()))
    return seen


@pytest.mark.parametrize("name", sorted(PROBLEMS))
def test_the_iterates_are_l_bfgs_bs_up_to_rounding(name):
    so = pytest.importorskip("scipy.optimize")
    fn = symad.compile(PROBLEMS[name], variables=NAMES)
    theirs: list[np.ndarray] = []
    so.minimize(fn.value_and_grad, START, jac=True, method="L-BFGS-B",
                callback=lambda xk: theirs.append(np.array(xk)),
                options={"maxiter": 25, "gtol": 0.0, "ftol": 0.0})
    ours = _ours(PROBLEMS[name], START, 25)
    assert len(ours) == len(theirs) >= 10  # (fewer where f stops falling: L-BFGS-B's own test, as both stop)
    for k, (a, b) in enumerate(zip(ours, theirs)):
        # rounding apart, the same points: the gap starts at a few ulps and may grow with k
        assert np.allclose(a, b, rtol=1e-7, atol=1e-9), (k, np.abs(a - b).max())


@pytest.mark.parametrize("name", sorted(PROBLEMS))
def test_it_converges_with_as_many_evaluations_as_l_bfgs_b(name):
    pytest.importorskip("scipy")
    ours = symad.minimize(PROBLEMS[name], START, variables=NAMES, method="l-bfgs")
    theirs = symad.minimize(PROBLEMS[name], START, variables=NAMES, method="l-bfgs-b")
    assert ours.method == "l-bfgs" and ours.status == theirs.status  # (stalled on "scaled": ill-conditioned)
    assert ours.success == (ours.grad_norm <= 1e-8)
    assert np.allclose(ours.x, theirs.x, atol=1e-5)
    assert abs(ours.nit - theirs.nit) <= max(2, theirs.nit // 10)
    assert abs(ours.nfev - theirs.nfev) <= max(3, theirs.nfev // 10)


def test_the_result_is_the_same_iterate_whether_the_driver_sees_each_one_or_not():
    quiet = symad.minimize(ROSENBROCK, START, variables=NAMES, method="l-bfgs")
    seen: list[int] = []
    watched = symad.minimize(ROSENBROCK, START, variables=NAMES, method="l-bfgs",
                             callback=lambda r: seen.append(r.nit), keep_path=True)
    assert np.array_equal(quiet.x, watched.x) and quiet.fun == watched.fun
    assert quiet.nit == watched.nit == len(seen) == len(watched.path) - 1 and quiet.nfev == watched.nfev
    assert seen == list(range(1, quiet.nit + 1))


def test_max_iter_stops_at_exactly_that_iterate():
    r = symad.minimize(ROSENBROCK, START, variables=NAMES, method="l-bfgs", max_iter=7)
    assert r.status == 2 and r.nit == 7 and not r.success
    assert np.array_equal(r.x, _ours(ROSENBROCK, START, 7)[-1])


def test_memory_changes_the_iterates_and_is_checked():
    a = symad.minimize(ROSENBROCK, START, variables=NAMES, method="l-bfgs", memory=3)
    b = symad.minimize(ROSENBROCK, START, variables=NAMES, method="l-bfgs")
    assert a.success and b.success and a.nit != b.nit
    with pytest.raises(SymadError, match="does not take lr"):
        symad.minimize(ROSENBROCK, START, variables=NAMES, method="l-bfgs", lr=0.1)


def test_bounds_are_refused_naming_l_bfgs_b():
    with pytest.raises(SymadError, match="l-bfgs takes no bounds.*l-bfgs-b"):
        symad.minimize("(x - 2)^2", [0.0], method="l-bfgs", bounds={"x": (None, 1)})


def test_stopping_rules_are_the_drivers():
    stalled = symad.minimize("(x - 1)^2 + (y + 2)^2", [5.0, 5.0], method="l-bfgs", tol=1e-30, xtol=1e-3)
    assert stalled.status in (0, 1) and np.allclose(stalled.x, [1, -2], atol=1e-3)
    below = symad.minimize("-x - y^2", [0.0, 1.0], method="l-bfgs")
    assert below.status == 7 and "unbounded" in below.message
    done = symad.minimize("(x - 3)^2", [3.0], method="l-bfgs")
    assert done.success and done.nit == 0


def test_a_line_search_that_meets_no_finite_value_says_so():
    r = symad.minimize("log(x) + 1/x^3", [0.5], method="l-bfgs", tol=1e-300)
    assert not r.success
    assert r.status in (1, 6) and np.isfinite(r.fun)


def test_an_objective_without_compiled_calls_runs_through_its_own_value_and_grad():
    pytest.importorskip("scipy")
    loops = "sum(i = 1..400, 100*(x[i+1] - x[i]^2)^2 + (1 - x[i])^2)"
    ours = symad.minimize(loops, {"x": np.full(401, 0.5)}, method="l-bfgs")
    theirs = symad.minimize(loops, {"x": np.full(401, 0.5)}, method="l-bfgs-b")
    assert ours.success and np.allclose(ours.x, 1.0, atol=1e-6)
    assert abs(ours.nit - theirs.nit) <= max(2, theirs.nit // 10)


def test_a_callback_error_propagates_and_a_later_run_is_unaffected():
    def boom(r):
        raise RuntimeError("stop here")

    with pytest.raises(RuntimeError, match="stop here"):
        symad.minimize(ROSENBROCK, START, variables=NAMES, method="l-bfgs", callback=boom)
    assert symad.minimize(ROSENBROCK, START, variables=NAMES, method="lbfgs").success


@settings(max_examples=40, deadline=None)
@given(n=st.integers(1, 9), seed=st.integers(0, 2**32 - 1), spread=st.floats(0.0, 4.0))
def test_a_quadratics_minimum_is_reached_to_rounding(n, seed, spread):
    """0.5 x'Ax - b'x with A symmetric positive definite (eigenvalues 10^0 to 10^spread): the run
    ends converged, or where rounding hides any decrease of f (stalled, or a failed line search),
    with the gradient (A x - b, computed here) small; and |x - x*| <= |A^-1| |A x - b|."""
    rng = np.random.default_rng(seed)
    q, _ = np.linalg.qr(rng.standard_normal((n, n)))
    eig = 10 ** rng.uniform(0, spread, n)
    a = (q * eig) @ q.T
    a = (a + a.T) / 2
    b = rng.uniform(-3, 3, n)
    names = [f"x{i}" for i in range(n)]
    terms = [f"{float(0.5 * a[i, i])!r}*x{i}^2" for i in range(n)]
    terms += [f"{float(a[i, j])!r}*x{i}*x{j}" for i in range(n) for j in range(i + 1, n)]
    terms += [f"{float(-b[i])!r}*x{i}" for i in range(n)]
    r = symad.minimize(" + ".join(terms), np.zeros(n), variables=names, method="l-bfgs", tol=1e-9)
    assert r.status in (0, 1, 6), r.message
    reached = 1e-6 * eig.max() * (1 + np.linalg.norm(b))  # far above rounding's floor, far below |b|
    assert np.linalg.norm(a @ r.x - b) <= reached
    assert np.linalg.norm(r.x - np.linalg.solve(a, b)) <= np.linalg.norm(np.linalg.inv(a), 2) * reached * 1.01


def test_solves_on_two_threads_give_what_each_gives_alone():
    alone = [symad.minimize(text, START, variables=NAMES, method="l-bfgs") for text in (ROSENBROCK, SCALED)]
    out: dict[int, symad.OptimizeResult] = {}

    def solve(k: int, text: str) -> None:
        out[k] = symad.minimize(text, START, variables=NAMES, method="l-bfgs")

    threads = [threading.Thread(target=solve, args=(k, t)) for k, t in enumerate((ROSENBROCK, SCALED))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for k, r in enumerate(alone):
        assert np.array_equal(out[k].x, r.x) and out[k].nit == r.nit and out[k].nfev == r.nfev


def test_max_time_stops_a_run_and_a_long_one_changes_nothing():
    r = symad.minimize(ROSENBROCK, START, variables=NAMES, method="l-bfgs", max_time=1e-9)
    assert r.status == 3 and r.nit <= 1
    timed = symad.minimize(ROSENBROCK, START, variables=NAMES, method="l-bfgs", max_time=3600)
    quiet = symad.minimize(ROSENBROCK, START, variables=NAMES, method="l-bfgs")
    assert timed.success and np.array_equal(timed.x, quiet.x) and timed.nit == quiet.nit


def test_parameters_held_values_and_objectives_over_data_run_through_their_own_calls():
    for held in ({"params": {"a": 2.0}}, {"fixed": {"a": 2.0}}):
        r = symad.minimize("(x - a)^2 + 10*(y - x^2)^2", [0.0, 0.0], method="l-bfgs", **held)
        assert r.success and np.allclose(r.x, [2, 4], atol=1e-7), held
    rng = np.random.default_rng(0)
    x = rng.standard_normal((500, 3))
    t = x @ [1.0, -2.0, 0.5] + 0.1 * rng.standard_normal(500)
    fit = symad.objective("(w1*x1 + w2*x2 + w3*x3 - t)^2", data={"x1": x[:, 0], "x2": x[:, 1], "x3": x[:, 2], "t": t},
                          wrt=["w1", "w2", "w3"])
    r = symad.minimize(fit, np.zeros(3), method="l-bfgs")
    assert r.success and np.allclose(r.x, np.linalg.lstsq(x, t, rcond=None)[0], atol=1e-8)


def test_without_llvmlite_it_says_what_it_needs(monkeypatch):
    from symad.native import jit

    monkeypatch.setattr(jit, "_lbfgs", [])
    monkeypatch.setattr(jit, "available", lambda: False)
    with pytest.raises(SymadError, match="l-bfgs runs machine code: it needs llvmlite"):
        symad.minimize("(x - 1)^2", [0.0], method="l-bfgs")


def test_a_long_run_takes_up_the_code_that_replaces_the_objectives_quick_code(monkeypatch):
    """The loop asks which code serves the objective every RECHECK_CALLS evaluations (as the
    -O2 code arrives from its background compile): a run long enough calls the new one."""
    from symad.optimize import lbfgs
    from symad.optimize.problem import Problem

    monkeypatch.setattr(lbfgs, "RECHECK_CALLS", 8)
    served: list[str] = []
    original = Problem.point_call

    def point_call(self):
        call = original(self)
        if call is None:
            return None
        tier = "later" if len(served) >= 20 else "first"

        def counted(x, g):
            served.append(tier)
            return call(x, g)
        return counted

    monkeypatch.setattr(Problem, "point_call", point_call)
    fn = symad.SecondOrder(ROSENBROCK, NAMES)
    fn.prepare()  # (compiled code now: a small program's calls are interpreted first)
    r = symad.minimize(fn, START, method="l-bfgs")
    assert r.success and served[:8] == ["first"] * 8 and served[-1] == "later"
    assert len(served) == r.nfev - 1  # (the driver's own first evaluation aside)
