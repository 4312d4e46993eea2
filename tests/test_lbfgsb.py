"""method="l-bfgs-b": scipy's L-BFGS-B routine driven an iterate at a time by symad's driver.

The iterates are scipy's own (``scipy.optimize.minimize(method="L-BFGS-B")`` with its tests off
gives the same points, bit for bit); the routine is loaded without ``scipy.optimize``; the BLAS
libraries run on one thread during the solve and as before after it.
"""

from __future__ import annotations

import subprocess

import numpy as np
import pytest
from support.cli_helpers import fresh_python

import symad
from symad.core.errors import SymadError
from symad.optimize.lbfgsb_steps import lbfgsb_steps

so = pytest.importorskip("scipy.optimize")
threadpoolctl = pytest.importorskip("threadpoolctl")

N = 12
ROSENBROCK = " + ".join(f"100*(x{i + 1} - x{i}^2)^2 + (1 - x{i})^2" for i in range(1, N))
START = np.array([-1.2 if i % 2 == 0 else 1.0 for i in range(N)])


def rosenbrock(x: np.ndarray) -> tuple[float, np.ndarray]:
    r, s = x[1:] - x[:-1] ** 2, 1 - x[:-1]
    g = np.zeros_like(x)
    g[1:] += 200 * r
    g[:-1] += -400 * x[:-1] * r - 2 * s
    return float(np.sum(100 * r**2 + s**2)), g


@pytest.mark.parametrize("bounded", [False, True])
def test_the_iterates_are_scipys_bit_for_bit(bounded):
    lower = np.full(N, -np.inf)
    upper = np.where(np.arange(N) % 3 == 0, 0.8, np.inf) if bounded else np.full(N, np.inf)
    x0 = np.clip(START, lower, upper)
    ours = []
    for x, _, _, _ in lbfgsb_steps(rosenbrock, x0, *rosenbrock(x0), lower, upper):
        ours.append(x)
        if len(ours) == 40:
            break
    theirs = []
    so.minimize(rosenbrock, x0, jac=True, method="L-BFGS-B", bounds=so.Bounds(lower, upper),
                callback=lambda xk: theirs.append(np.array(xk)),
                options={"maxiter": 40, "gtol": 0.0, "ftol": 0.0})
    assert len(theirs) == 40
    assert all(np.array_equal(a, b) for a, b in zip(ours, theirs))
    if bounded:
        assert (np.array(ours) <= upper).all()


def test_minimize_with_l_bfgs_b_converges_on_the_text():
    r = symad.minimize(ROSENBROCK, dict(zip([f"x{i}" for i in range(1, N + 1)], START)), method="L-BFGS-B")
    assert r.success and r.method == "l-bfgs-b" and r.grad_norm <= 1e-8
    assert np.allclose(r.x, 1.0, atol=1e-7)
    assert r.nfev >= r.nit > 10


def test_bounds_are_l_bfgs_bs_own():
    r = symad.minimize("100*(y - x^2)^2 + (1 - x)^2", {"x": -1.2, "y": 1.0}, method="l-bfgs-b",
                       bounds={"x": (None, 0.5)})
    assert r.success and r.x.tolist() == [0.5, 0.25]


def test_options_are_checked():
    with pytest.raises(SymadError, match="memory must be an integer from 1 to 1000"):
        symad.minimize("x^2", {"x": 1.0}, method="l-bfgs-b", memory=0)
    with pytest.raises(SymadError, match="does not take lr"):
        symad.minimize("x^2", {"x": 1.0}, method="l-bfgs-b", lr=0.1)
    r = symad.minimize("(x - 3)^2 + (y + 1)^4", {"x": 0.0, "y": 0.0}, method="l-bfgs-b", memory=3, tol=1e-6)
    assert r.success


def test_a_line_search_that_meets_no_finite_value_says_so():
    r = symad.minimize("log(x)", {"x": 1.0}, method="l-bfgs-b")
    assert not r.success and r.status == 6 and "line search failed (L-BFGS-B" in r.message


def test_blas_runs_on_one_thread_during_the_solve_and_as_before_after():
    before = [(i["filepath"], i["num_threads"]) for i in threadpoolctl.threadpool_info()]
    during = []

    def look(result):
        during.extend(i["num_threads"] for i in threadpoolctl.threadpool_info() if i["user_api"] == "blas")

    r = symad.minimize(ROSENBROCK, START, variables=[f"x{i}" for i in range(1, N + 1)], method="l-bfgs-b",
                       callback=look, max_iter=5)
    assert r.nit == 5 and during and set(during) == {1}
    after = {(i["filepath"], i["num_threads"]) for i in threadpoolctl.threadpool_info()}
    assert set(before) <= after


def test_the_routine_loads_without_scipy_optimize_and_scipy_optimize_still_imports():
    code = (
        "import sys, symad\n"
        "r = symad.minimize('(x - 1)^2 + 3*(y + 2)^2', {'x': 0.0, 'y': 0.0}, method='l-bfgs-b')\n"
        "assert r.success, r.message\n"
        "assert 'scipy.optimize' not in sys.modules, 'scipy.optimize was imported'\n"
        "import scipy.optimize as so\n"
        "assert so.minimize(lambda v: float((v**2).sum()), [1.0, 2.0], method='L-BFGS-B').success\n"
        "r = symad.minimize('(x - 1)^2', {'x': 0.0}, method='l-bfgs-b')\n"
        "assert r.success\n"
    )
    fresh_python(code)


def test_the_command_line_takes_l_bfgs_b_for_any_expression():
    done = subprocess.run(["symad", "minimize", "100*(y-x^2)^2+(1-x)^2", "--from", "x=-1.2,y=1",
                           "--method", "l-bfgs-b", "--json"], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    import json

    out = json.loads(done.stdout)
    assert out["method"] == "l-bfgs-b" and out["success"] is True and abs(out["x"]["x"] - 1) < 1e-8


def _blas_threads() -> list[int]:
    return [i["num_threads"] for i in threadpoolctl.threadpool_info() if i["user_api"] == "blas"]


def test_solves_on_two_threads_give_the_blas_threads_back():
    """The limit is the process's, and OpenBLAS raises a count only from the thread that lowered it:
    the first solve in holds the limit and restores it on its thread.  Here it ends while a second
    solve, on another thread, runs (each restoring on its own thread left BLAS on one thread for
    good: the second thread's restore did not take)."""
    import threading

    symad.minimize("(x - 1)^2", {"x": 0.0}, method="l-bfgs-b")  # the routine and BLAS loaded
    before = _blas_threads()
    a_in, b_in, a_done = threading.Event(), threading.Event(), threading.Event()
    during_a: list[list[int]] = []

    def first_callback(result):
        a_in.set()
        b_in.wait(30)
        during_a.append(_blas_threads())
        return True  # the first solve ends while the second is inside

    def second_callback(result):
        b_in.set()
        a_done.wait(30)
        return True

    def second():
        a_in.wait(30)
        symad.minimize("(x - 2)^2 + 3*y^2", {"x": 0.0, "y": 1.0}, method="l-bfgs-b", callback=second_callback)

    t = threading.Thread(target=second)
    t.start()
    r = symad.minimize(ROSENBROCK, START, variables=[f"x{i}" for i in range(1, N + 1)], method="l-bfgs-b",
                       callback=first_callback)
    a_done.set()
    t.join(60)
    assert r.status == 4 and during_a and set(during_a[0]) == {1}
    assert _blas_threads() == before
    symad.minimize("(x - 1)^2", {"x": 0.0}, method="l-bfgs-b", callback=lambda res: during_a.append(_blas_threads()))
    assert set(during_a[-1]) == {1} and _blas_threads() == before  # and a later solve limits again


def test_an_error_in_the_callback_gives_the_blas_threads_back_at_once():
    symad.minimize("(x - 1)^2", {"x": 0.0}, method="l-bfgs-b")
    before = _blas_threads()

    def fail(result):
        raise ValueError("from the callback")

    with pytest.raises(ValueError, match="from the callback") as caught:
        symad.minimize(ROSENBROCK, START, variables=[f"x{i}" for i in range(1, N + 1)], method="l-bfgs-b",
                       callback=fail)
    assert caught.value is not None and _blas_threads() == before  # while the traceback still lives


def test_where_f_no_longer_decreases_the_result_says_so():
    r = symad.minimize("n = 300; sum(i = 1..n-1, 100*(x[i+1] - x[i]^2)^2 + (1 - x[i])^2)", {"x": 0.0},
                       method="l-bfgs-b", bounds={"x": (-0.5, 0.8)})
    assert r.status in (0, 1)
    if r.status == 1:
        assert "f no longer decreases (L-BFGS-B's own test)" in r.message and r.grad_norm > 1e-8


def test_memory_is_bounded():
    with pytest.raises(SymadError, match="memory must be an integer from 1 to 1000"):
        symad.minimize("x^2", {"x": 1.0}, method="l-bfgs-b", memory=10**6)


def test_scipy_optimize_imported_later_has_its_routine_attribute():
    code = ("import sys, symad\n"
            "assert symad.minimize('(x - 1)^2', {'x': 0.0}, method='l-bfgs-b').success\n"
            "assert 'scipy.optimize._lbfgsb' not in sys.modules\n"
            "import scipy.optimize\n"
            "assert hasattr(scipy.optimize, '_lbfgsb') and hasattr(scipy.optimize._lbfgsb, 'setulb')\n")
    fresh_python(code)
