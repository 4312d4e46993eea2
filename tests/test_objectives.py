"""Objectives over data: sums over rows in one fused loop, mini-batches, second derivatives, fits."""

import pickle

import numpy as np
import pytest
from scipy.optimize import minimize

import symad
from symad import PointError, SymadError, VariableError
from symad.native import jit
from symad.runtime.blocks import BLOCK

D = 5
LOGISTIC = "log(1 + exp(-y*(" + " + ".join(f"w{j}*x{j}" for j in range(D)) + " + b)))"
WRT = [f"w{j}" for j in range(D)] + ["b"]


def classification(n: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Two overlapping Gaussian classes in D features, labels ±1 (a problem with a finite optimum)."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, D))
    truth = np.linspace(-1.0, 1.5, D)
    y = np.where(X @ truth + 0.3 + rng.logistic(size=n) > 0, 1.0, -1.0)
    return X, y


def logistic_numpy(X: np.ndarray, y: np.ndarray, wb: np.ndarray) -> tuple[float, np.ndarray]:
    m = -y * (X @ wb[:D] + wb[D])
    s = -y / (1.0 + np.exp(-m))
    return float(np.sum(np.log1p(np.exp(m)))), np.concatenate([X.T @ s, [s.sum()]])


def logistic_newton(X: np.ndarray, y: np.ndarray) -> np.ndarray:
    """The reference fit: Newton's method (IRLS) on the same loss, to machine precision."""
    A = np.column_stack([X, np.ones(len(X))])
    wb = np.zeros(D + 1)
    for _ in range(50):
        p = 1.0 / (1.0 + np.exp(y * (A @ wb)))
        g = A.T @ (-y * p)
        H = A.T @ (A * (p * (1 - p))[:, None])
        step = np.linalg.solve(H, g)
        wb -= step
        if np.max(np.abs(step)) < 1e-14:
            break
    return wb


def as_data(X: np.ndarray, y: np.ndarray) -> dict[str, np.ndarray]:
    return {**{f"x{j}": X[:, j] for j in range(D)}, "y": y}


@pytest.fixture(params=["auto", "python"])
def backend(request):
    if request.param == "auto" and not jit.available():
        pytest.skip("llvmlite not installed")
    return request.param


def test_value_and_gradient_are_numpys_over_every_row(backend):
    X, y = classification(20_000)  # several blocks of rows
    obj = symad.objective(LOGISTIC, as_data(X, y), wrt=WRT, backend=backend)
    assert obj.n_rows == 20_000 and obj.data_names == tuple(f"x{j}" for j in range(D)) + ("y",)
    for wb in np.random.default_rng(1).normal(size=(3, D + 1)):
        v, g = obj.value_and_grad(wb)
        rv, rg = logistic_numpy(X, y, wb)
        assert v == pytest.approx(rv, rel=1e-12)
        np.testing.assert_allclose(g, rg, rtol=1e-10, atol=1e-9)
        assert obj.value(wb) == v and np.array_equal(obj.grad(wb), g)


def test_mean_divides_by_the_rows_used():
    X, y = classification(1000)
    total = symad.objective(LOGISTIC, as_data(X, y), wrt=WRT)
    mean = symad.objective(LOGISTIC, as_data(X, y), wrt=WRT, reduce="mean")
    wb = np.full(D + 1, 0.1)
    assert mean.value(wb) == total.value(wb) / 1000
    np.testing.assert_array_equal(mean.grad(wb, rows=slice(0, 10)), total.grad(wb, rows=slice(0, 10)) / 10)


def test_the_same_bits_on_one_core_or_several():
    X, y = classification(3 * BLOCK + 17)
    wb = np.random.default_rng(2).normal(size=D + 1)
    results = []
    for threads in (1, 2, 3):
        v, g = symad.objective(LOGISTIC, as_data(X, y), wrt=WRT, threads=threads).value_and_grad(wb)
        results.append(np.concatenate([[v], g]))
    np.testing.assert_array_equal(results[0], results[1])
    np.testing.assert_array_equal(results[0], results[2])


@pytest.mark.skipif(not jit.available(), reason="llvmlite not installed")
def test_the_interpreter_serves_until_the_optimised_loop_arrives_with_the_same_bits(tmp_path, monkeypatch):
    from symad import native
    from symad.backends.vm import InterpretedRows
    from symad.native import cache

    monkeypatch.setattr(cache, "_dir", [tmp_path])  # a code cache without this loop: never compiled here
    jit.clear_cache()
    compiled = []
    compile_rows = native.compile_rows
    monkeypatch.setattr(native, "compile_rows", lambda s, src, opt=2: compiled.append(opt) or compile_rows(s, src, opt))
    X, y = classification(2 * BLOCK + 3)  # blocks of both parities, the last one odd
    wb = np.random.default_rng(5).normal(size=D + 1)
    idx = np.random.default_rng(6).choice(len(y), size=999)

    def passes(obj: symad.Objective) -> list[np.ndarray]:
        return [np.concatenate([[v], g]) for v, g in (obj.value_and_grad(wb), obj.value_and_grad(wb, rows=idx))]

    cold = symad.objective(LOGISTIC, as_data(X, y), wrt=WRT)
    sums = cold.prepare(optimised=False)._sums["value_grad"]
    assert isinstance(sums.program(), (InterpretedRows, jit.RowsProgram))  # the interpreter, unless already replaced
    first = passes(cold)
    assert cold.prepare()._sums["value_grad"].optimised and compiled == [2]
    for a, b in zip(first, passes(cold)):
        np.testing.assert_array_equal(a, b)
    # each block the same bits on every loop, so a pass may change loops between blocks
    loops = [InterpretedRows(sums.schedule, sums.sources), jit.compile_rows(sums.schedule, sums.sources, opt=0),
             sums.program()]
    blocks = []
    for loop in loops:
        sums._program = loop
        blocks.append([sums.block_sums(wb), sums.block_sums(wb, idx)])
    for other in blocks[1:]:
        for a, b in zip(blocks[0], other):
            np.testing.assert_array_equal(a, b)

    jit.clear_cache()  # a script run again: the optimised loop comes from the disk cache
    compiled.clear()
    warm = symad.objective(LOGISTIC, as_data(X, y), wrt=WRT)
    for a, b in zip(first, passes(warm)):
        np.testing.assert_array_equal(a, b)
    assert warm._sums["value_grad"].optimised and compiled == []


def test_mini_batches_are_the_objective_of_those_rows(backend):
    X, y = classification(2000)
    obj = symad.objective(LOGISTIC, as_data(X, y), wrt=WRT, backend=backend)
    wb = np.random.default_rng(3).normal(size=D + 1)
    idx = np.random.default_rng(4).choice(2000, size=300, replace=False)
    sub = symad.objective(LOGISTIC, as_data(X[idx], y[idx]), wrt=WRT, backend=backend)
    v, g = obj.value_and_grad(wb, rows=idx)
    sv, sg = sub.value_and_grad(wb)
    assert v == pytest.approx(sv, rel=1e-13)
    np.testing.assert_allclose(g, sg, rtol=1e-12, atol=1e-12)
    np.testing.assert_array_equal(obj.grad(wb, rows=slice(100, 400)), obj.grad(wb, rows=np.arange(100, 400)))
    mask = np.zeros(2000, dtype=bool)
    mask[idx] = True
    assert obj.value(wb, rows=mask) == pytest.approx(sv, rel=1e-13)
    assert obj.value(wb, rows=[-1]) == obj.value(wb, rows=[1999])
    assert obj.value(wb, rows=np.array([5], dtype=np.int32)) == obj.value(wb, rows=[5])


def test_data_in_every_layout_is_read_as_given():
    X, y = classification(500)
    wb = np.random.default_rng(5).normal(size=D + 1)
    expected = symad.objective(LOGISTIC, as_data(np.ascontiguousarray(X), y), wrt=WRT).value_and_grad(wb)
    table = np.column_stack([X, y])
    layouts = [
        dict(data=table, columns=[f"x{j}" for j in range(D)] + ["y"]),  # columns at a stride
        dict(data=np.asfortranarray(table), columns=[f"x{j}" for j in range(D)] + ["y"]),
        dict(data=as_data(X[::-1], y[::-1])),  # negative strides: the same rows, reversed
        dict(data=as_data(X, y.astype(np.int8))),  # labels as integers: converted once
    ]
    rec = np.zeros(500, dtype=[*[(f"x{j}", "f8") for j in range(D)], ("y", "f8"), ("note", "i4")])
    for j in range(D):
        rec[f"x{j}"] = X[:, j]
    rec["y"] = y
    # a structured array (a stride of 52 bytes: copied once, aligned), its fields the expression reads
    layouts.append(dict(data=rec[[f"x{j}" for j in range(D)] + ["y"]]))
    for kw in layouts:
        v, g = symad.objective(LOGISTIC, wrt=WRT, **kw).value_and_grad(wb)
        assert v == pytest.approx(expected[0], rel=1e-12)
        np.testing.assert_allclose(g, expected[1], rtol=1e-11, atol=1e-11)


class FakeFrame:
    """What objective() reads of a pandas DataFrame: ``columns`` and ``frame[name].to_numpy()``."""

    class Series:
        def __init__(self, values):
            self.values = values

        def to_numpy(self):
            return self.values

    def __init__(self, **columns):
        self._columns = columns
        self.columns = list(columns)

    def __getitem__(self, name):
        return self.Series(self._columns[name])


def test_a_data_frame_is_read_by_its_columns():
    obj = symad.objective("(a*x + b - y)^2", FakeFrame(x=np.array([0.0, 1.0, 2.0]), y=np.array([1.0, 3.0, 5.0])))
    assert obj.wrt == ("a", "b") and obj.value([2, 1]) == 0.0


def test_columns_read_in_place_are_not_copied():
    X, y = classification(100)
    obj = symad.objective(LOGISTIC, as_data(X, y), wrt=WRT)
    assert all(np.shares_memory(c, X) for c in obj.columns[:D])
    before = obj.value(np.zeros(D + 1))
    X[:, 0] += 1.0  # the objective reads the caller's arrays, as documented
    assert obj.value(np.full(D + 1, 0.5)) != before


def test_hessian_and_hessian_vector_products_over_the_sum(backend):
    X, y = classification(5000)
    obj = symad.objective(LOGISTIC, as_data(X, y), wrt=WRT, backend=backend)
    wb = np.random.default_rng(6).normal(size=D + 1) * 0.3
    A = np.column_stack([X, np.ones(len(X))])
    p = 1.0 / (1.0 + np.exp(y * (A @ wb)))
    H = A.T @ (A * (p * (1 - p))[:, None])
    np.testing.assert_allclose(obj.hessian(wb), H, rtol=1e-10, atol=1e-9)
    assert np.array_equal(obj.hessian(wb), obj.hessian(wb).T)
    v = np.random.default_rng(7).normal(size=D + 1)
    np.testing.assert_allclose(obj.hessp(wb, v), H @ v, rtol=1e-10, atol=1e-9)
    np.testing.assert_allclose(obj.hessian(wb, rows=slice(0, 50)), A[:50].T @ (A[:50] * (p * (1 - p))[:50, None]),
                               rtol=1e-10, atol=1e-10)


def test_scipy_fits_logistic_regression_to_the_reference_coefficients():
    X, y = classification(4000, seed=11)
    obj = symad.objective(LOGISTIC, as_data(X, y), wrt=WRT, reduce="mean")
    r = minimize(obj.value_and_grad, np.zeros(D + 1), jac=True, method="L-BFGS-B",
                 options={"gtol": 1e-12, "ftol": 1e-15, "maxiter": 1000})
    reference = logistic_newton(X, y)
    np.testing.assert_allclose(r.x, reference, atol=1e-6)
    newton = minimize(obj.value, np.zeros(D + 1), jac=obj.grad, hess=obj.hessian, method="trust-exact",
                      options={"gtol": 1e-12})
    np.testing.assert_allclose(newton.x, reference, atol=1e-8)
    hessp = minimize(obj.value, np.zeros(D + 1), jac=obj.grad, hessp=obj.hessp, method="trust-ncg",
                     options={"gtol": 1e-12})
    np.testing.assert_allclose(hessp.x, reference, atol=1e-8)


def test_least_squares_fit_is_lstsq():
    rng = np.random.default_rng(12)
    X = rng.normal(size=(3000, 3))
    y = X @ np.array([0.5, -2.0, 3.0]) + 1.25 + rng.normal(scale=0.1, size=3000)
    obj = symad.objective("(a*p + b*q + c*r + d - y)^2", {"p": X[:, 0], "q": X[:, 1], "r": X[:, 2], "y": y},
                          wrt=["a", "b", "c", "d"])
    r = minimize(obj.value_and_grad, np.zeros(4), jac=True, method="L-BFGS-B",
                 options={"gtol": 1e-10, "ftol": 1e-16})
    reference, *_ = np.linalg.lstsq(np.column_stack([X, np.ones(3000)]), y, rcond=None)
    np.testing.assert_allclose(r.x, reference, atol=1e-6)
    # the normal equations: Newton's step from anywhere lands on the optimum
    w = np.ones(4)
    w_newton = w - np.linalg.solve(obj.hessian(w), obj.grad(w))
    np.testing.assert_allclose(w_newton, reference, atol=1e-9)


def test_a_pickled_objective_computes_the_same():
    X, y = classification(300)
    obj = symad.objective(LOGISTIC, as_data(X, y), wrt=WRT, reduce="mean")
    wb = np.full(D + 1, 0.2)
    again = pickle.loads(pickle.dumps(obj))
    assert again.wrt == obj.wrt and again.reduce == "mean" and again.n_rows == 300
    v, g = obj.value_and_grad(wb)
    v2, g2 = again.value_and_grad(wb)
    assert v == v2 and np.array_equal(g, g2)


def test_wrt_defaults_to_the_variables_that_are_not_data():
    obj = symad.objective("(a*x + b - y)^2", {"x": [0.0, 1.0], "y": [1.0, 3.0]})
    assert obj.wrt == ("a", "b") and obj.data_names == ("x", "y")
    assert obj.value({"a": 2, "b": 1}) == 0.0
    assert "2 rows" in repr(obj)


@pytest.mark.parametrize("kwargs, error, words", [
    (dict(expr="(a*x - y)^2", data={"x": [1.0], "y": [2.0], "z": [3.0]}), VariableError,
     "data column z is not a variable of the expression"),
    (dict(expr="(a*x - y)^2", data={"x": [1.0], "y": [2.0]}, wrt=["a", "x"]), VariableError, "x is data"),
    (dict(expr="a*x", data={"x": [1.0, 2.0], "X": [1.0]}), VariableError, "data column X is not a variable"),
    (dict(expr="a*x - y", data={"x": [1.0, 2.0], "y": [1.0]}), SymadError, "differ in length"),
    (dict(expr="a*x", data={"x": []}), SymadError, "no rows"),
    (dict(expr="a*x", data={"x": [[1.0, 2.0]]}), SymadError, "1-D"),
    (dict(expr="a*x", data={"x": ["one"]}), SymadError, "not numbers"),
    (dict(expr="a*x", data={"x": [1.0]}, reduce="median"), SymadError, "reduce must be one of sum, mean"),
    (dict(expr="a*x", data=np.zeros((3, 2))), SymadError, "columns=["),
    (dict(expr="a*x", data=np.zeros((3, 2)), columns=["x"]), SymadError, "names 1 column"),
    (dict(expr="a*x", data=[1, 2]), SymadError, "data must be"),
    (dict(expr="a*x", data={"x": [1.0]}, wrt="a"), SymadError, "list of names"),
])
def test_bad_objectives_are_explained(kwargs, error, words):
    with pytest.raises(error, match=words.replace("[", r"\[")):
        symad.objective(**kwargs)


def test_bad_points_and_rows_are_explained():
    obj = symad.objective("(a*x + b - y)^2", {"x": [0.0, 1.0, 2.0], "y": [1.0, 3.0, 5.0]})
    with pytest.raises(PointError, match=r"w needs 2 value\(s\) \(a, b\), got shape \(3,\)"):
        obj.value([1, 2, 3])
    with pytest.raises(VariableError, match="missing b"):
        obj.value({"a": 1})
    with pytest.raises(PointError, match="row 3 is out of range: the data has 3 rows"):
        obj.value([1, 2], rows=[0, 3])
    with pytest.raises(PointError, match="selects no row"):
        obj.value([1, 2], rows=slice(5, 9))
    with pytest.raises(PointError, match="boolean row mask needs 3"):
        obj.value([1, 2], rows=np.array([True, False]))
    with pytest.raises(PointError, match="1-D array of row indexes"):
        obj.value([1, 2], rows=[0.5])
    with pytest.raises(PointError, match="not a vector of numbers"):
        obj.value(["a", "b"])


def test_importing_the_module_leaves_the_function_in_place():
    import symad.objectives  # noqa: F401

    assert callable(symad.objective) and symad.objective is symad.objectives.objective


ROW_LOSSES = [
    "(a*x + b - y)^2",
    "sin(a*x)^2/sqrt(1 + b^2*y^2) + cos(x*b) - tan(a/3)",
    "asin(x/4) * atan(a*y) + acos(b/4) + atan2(y, a)",
    "sinh(a/2) * cosh(x/3) + tanh(b*y) + exp(-a^2*x^2) + log(1 + b^2) + log(x^2 + 1, 3)",
    "abs(a - x) + sign(b)*y + step(a) + min(a, x) + max(b, 2*y) + x^-2 + a^3 + b^4 + (x^2 + 1)^a",
]


@pytest.mark.parametrize("text", ROW_LOSSES)
def test_sums_over_rows_are_the_rows_values_added(text):
    """Property: for random data and points, the objective's value and gradient are those of the
    compiled per-row function at every row, added (the function is itself checked against SymPy)."""
    from hypothesis import given, settings
    from hypothesis import strategies as st

    fn = symad.compile(text, wrt=["a", "b"], backend="python")

    @settings(max_examples=15, deadline=None)
    @given(st.integers(1, 40), st.integers(0, 2**32 - 1), st.sampled_from(["sum", "mean"]))
    def check(n, seed, reduce):
        rng = np.random.default_rng(seed)
        x, y = rng.uniform(0.5, 2.0, size=n), rng.uniform(-1.5, 1.5, size=n)
        w = rng.uniform(0.2, 1.2, size=2)
        obj = symad.objective(text, {"x": x, "y": y}, wrt=["a", "b"], reduce=reduce)
        values, grads = fn.value_and_grad({"a": np.full(n, w[0]), "b": np.full(n, w[1]), "x": x, "y": y})
        scale = n if reduce == "mean" else 1
        v, g = obj.value_and_grad(w)
        assert v == pytest.approx(values.sum() / scale, rel=1e-12, abs=1e-12)
        np.testing.assert_allclose(g, grads.sum(axis=0) / scale, rtol=1e-11, atol=1e-11)

    check()


def test_symad_minimize_takes_an_objective_and_mini_batches():
    from symad.optimize import minimize as symad_minimize

    X, y = classification(6000, seed=13)
    obj = symad.objective(LOGISTIC, as_data(X, y), wrt=WRT, reduce="mean")
    reference = logistic_newton(X, y)
    for method in ("newton", "trust-ncg"):
        r = symad_minimize(obj, np.zeros(D + 1), method, tol=1e-10)
        assert r.success and r.variables == WRT
        np.testing.assert_allclose(r.x, reference, atol=1e-7)
    runs = [symad_minimize(obj, np.zeros(D + 1), "adam", batch_size=128, max_iter=400, lr=0.02, seed=seed)
            for seed in (1, 1, 2)]
    assert np.array_equal(runs[0].x, runs[1].x)  # the same seed, the same mini-batches
    assert not np.array_equal(runs[0].x, runs[2].x)
    assert np.max(np.abs(runs[0].x - reference)) < 0.2  # near the optimum, as SGD gets
    assert obj.value(runs[0].x) < obj.value(np.zeros(D + 1))


@pytest.mark.parametrize("fun, kwargs, words", [
    ("objective", dict(method="newton", batch_size=10), "batch_size is for the stochastic methods"),
    ("objective", dict(method="adam", batch_size=0), "batch_size must be a positive integer"),
    ("objective", dict(method="adam", variables=["a"]), "takes no variables"),
    ("text", dict(method="adam", batch_size=10), "batch_size is for an objective over data"),
])
def test_bad_stochastic_settings_are_explained(fun, kwargs, words):
    from symad.optimize import minimize as symad_minimize

    obj = symad.objective("(a*x + b - y)^2", {"x": [0.0, 1.0, 2.0], "y": [1.0, 3.0, 5.0]})
    with pytest.raises(SymadError, match=words):
        symad_minimize(obj if fun == "objective" else "(a-1)^2 + b^2", [0.0, 0.0], **kwargs)


@pytest.mark.skipif(not jit.available(), reason="llvmlite not installed")
def test_a_first_pass_needs_no_llvm_once_the_interpreter_is_kept(tmp_path):
    """A formula never run: its first passes run on the interpreter kept in the code cache, so
    LLVM (tens of milliseconds to load) is not loaded before the first result."""
    import os
    import subprocess
    import sys

    env = {**os.environ, "SYMAD_CACHE_DIR": str(tmp_path)}
    os.chmod(tmp_path, 0o700)
    subprocess.run([sys.executable, "-c", "from symad.native import jit; jit.interpreter()"], env=env,
                   check=True, timeout=120)
    script = f"""
import sys
import numpy as np
import symad
from symad.objectives import row_sums
from symad.backends.vm import InterpretedRows
row_sums.RowSums._optimise = lambda self: None  # no optimised loop: what runs before it arrives
rng = np.random.default_rng(0)
fit = symad.objective({LOGISTIC!r}, data={{**{{f"x{{j}}": rng.normal(size=9000) for j in range({D})}},
                                          "y": np.sign(rng.normal(size=9000))}})
value, grad = fit.value_and_grad(np.full({D + 1}, 0.1))
assert isinstance(fit._sums["value_grad"].program(), InterpretedRows)
assert np.isfinite(value) and grad.shape == ({D + 1},)
print("llvmlite.binding" in sys.modules)
"""
    done = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "False"
