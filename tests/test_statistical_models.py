"""The likelihoods people fit, written with the special functions and fitted with Newton's
method: negative binomial regression (with its dispersion), a Gamma GLM with a log link, Beta
regression and Poisson regression with an exposure offset, each on generated data, against a
reference fit (scipy.optimize on a NumPy log-likelihood with scipy.special's functions and its
hand-written gradient) to 1e-6."""

from __future__ import annotations

import numpy as np
import pytest

import symad

scipy_optimize = pytest.importorskip("scipy.optimize")
special = pytest.importorskip("scipy.special")

N = 400
ETA = "b0 + b1*x1 + b2*x2"


def _design(seed: int) -> tuple[np.random.Generator, np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    x1, x2 = rng.normal(size=N), rng.uniform(-1, 1, N)
    return rng, x1, x2, np.column_stack([np.ones(N), x1, x2])


def _reference(nll, start: np.ndarray) -> np.ndarray:
    """The minimiser of a NumPy negative log-likelihood ``nll(w) -> (value, gradient)``."""
    r = scipy_optimize.minimize(nll, start, jac=True, method="BFGS", options={"gtol": 1e-9, "maxiter": 10000})
    # then the gradient's root to the last digits (BFGS stops where the value no longer falls)
    root = scipy_optimize.root(lambda w: nll(w)[1], r.x, method="hybr", options={"xtol": 1e-14})
    assert np.linalg.norm(nll(root.x)[1]) < 1e-8 * N, root
    return root.x


def _symad_fit(text: str, data: dict, start: np.ndarray) -> np.ndarray:
    obj = symad.objective(text, data, wrt=["b0", "b1", "b2", "a"])
    r = symad.minimize(obj, start, method="newton", tol=1e-10)
    assert r.success, r
    return np.asarray(r.x)


def test_negative_binomial_regression_with_its_dispersion():
    """y ~ NB(mean exp(eta), size r = exp(a)): the log-likelihood needs lgamma(y + r) − lgamma(r)."""
    rng, x1, x2, X = _design(1)
    beta, size = np.array([0.5, 0.8, -0.6]), 2.5
    mu = np.exp(X @ beta)
    y = rng.negative_binomial(size, size / (size + mu)).astype(float)
    text = (f"eta = {ETA}; r = exp(a); -(lgamma(y + r) - lgamma(r) - lgamma(y + 1) + r*a + y*eta "
            "- (r + y)*logaddexp(a, eta))")

    def nll(w):
        b, a = w[:3], w[3]
        eta = X @ b
        r, m = np.exp(a), np.exp(eta)
        log_rm = np.logaddexp(a, eta)
        ll = special.gammaln(y + r) - special.gammaln(r) - special.gammaln(y + 1) + r * a + y * eta - (r + y) * log_rm
        d_eta = y - (r + y) * m / (r + m)
        d_a = r * (special.digamma(y + r) - special.digamma(r) + a + 1 - log_rm - (r + y) / (r + m))
        return -ll.sum(), -np.append(X.T @ d_eta, d_a.sum())

    start = np.zeros(4)
    ref = _reference(nll, start)
    got = _symad_fit(text, {"x1": x1, "x2": x2, "y": y}, start)
    np.testing.assert_allclose(got, ref, rtol=0, atol=1e-6)
    assert abs(np.exp(got[3]) - size) < 1.0  # the dispersion is recovered (sampling error aside)


def test_gamma_glm_with_a_log_link():
    """y ~ Gamma(shape k = exp(a), mean exp(eta))."""
    rng, x1, x2, X = _design(2)
    beta, shape = np.array([1.0, -0.4, 0.7]), 3.0
    mu = np.exp(X @ beta)
    y = rng.gamma(shape, mu / shape)
    text = f"eta = {ETA}; k = exp(a); -(k*a - lgamma(k) + (k - 1)*log(y) - k*eta - k*y*exp(-eta))"

    def nll(w):
        b, a = w[:3], w[3]
        eta = X @ b
        k = np.exp(a)
        ll = k * a - special.gammaln(k) + (k - 1) * np.log(y) - k * eta - k * y * np.exp(-eta)
        d_eta = -k + k * y * np.exp(-eta)
        d_a = k * (a + 1 - special.digamma(k) + np.log(y) - eta - y * np.exp(-eta))
        return -ll.sum(), -np.append(X.T @ d_eta, d_a.sum())

    start = np.array([0.0, 0.0, 0.0, 0.0])
    ref = _reference(nll, start)
    got = _symad_fit(text, {"x1": x1, "x2": x2, "y": y}, start)
    np.testing.assert_allclose(got, ref, rtol=0, atol=1e-6)


def test_beta_regression():
    """y ~ Beta(mean sigmoid(eta), precision phi = exp(a)): lgamma of mu*phi and (1 − mu)*phi."""
    rng, x1, x2, X = _design(3)
    beta, phi = np.array([-0.3, 0.6, 0.9]), 12.0
    mu = special.expit(X @ beta)
    y = rng.beta(mu * phi, (1 - mu) * phi)
    text = (f"eta = {ETA}; phi = exp(a); m = sigmoid(eta); n = sigmoid(-eta); "
            "-(lgamma(phi) - lgamma(m*phi) - lgamma(n*phi) + (m*phi - 1)*log(y) + (n*phi - 1)*log1p(-y))")

    def nll(w):
        b, a = w[:3], w[3]
        eta = X @ b
        phi, m = np.exp(a), special.expit(eta)
        n = 1 - m
        ly, l1y = np.log(y), np.log1p(-y)
        ll = (special.gammaln(phi) - special.gammaln(m * phi) - special.gammaln(n * phi)
              + (m * phi - 1) * ly + (n * phi - 1) * l1y)
        d_m = phi * (-special.digamma(m * phi) + special.digamma(n * phi) + ly - l1y)
        d_eta = d_m * m * n
        d_a = phi * (special.digamma(phi) - m * special.digamma(m * phi) - n * special.digamma(n * phi)
                     + m * ly + n * l1y)
        return -ll.sum(), -np.append(X.T @ d_eta, d_a.sum())

    start = np.array([0.0, 0.0, 0.0, 1.0])
    ref = _reference(nll, start)
    got = _symad_fit(text, {"x1": x1, "x2": x2, "y": y}, start)
    np.testing.assert_allclose(got, ref, rtol=0, atol=1e-6)


def test_poisson_regression_with_an_exposure_offset():
    """y ~ Poisson(t·exp(eta)): the full log-likelihood, lgamma(y + 1) included, offset log t."""
    rng, x1, x2, X = _design(4)
    beta = np.array([-0.5, 0.3, 1.1])
    t = rng.uniform(0.5, 20.0, N)
    y = rng.poisson(t * np.exp(X @ beta)).astype(float)
    text = f"eta = {ETA}; -(xlogy(y, t) + y*eta - t*exp(eta) - lgamma(y + 1))"

    def nll(w):
        eta = X @ w
        ll = special.xlogy(y, t) + y * eta - t * np.exp(eta) - special.gammaln(y + 1)
        return -ll.sum(), -(X.T @ (y - t * np.exp(eta)))

    ref = _reference(nll, np.zeros(3))
    obj = symad.objective(text, {"x1": x1, "x2": x2, "y": y, "t": t}, wrt=["b0", "b1", "b2"])
    r = symad.minimize(obj, np.zeros(3), method="newton", tol=1e-10)
    assert r.success, r
    np.testing.assert_allclose(r.x, ref, rtol=0, atol=1e-6)
    # the value is the full log-likelihood: scipy.stats' Poisson log-pmf summed
    stats = pytest.importorskip("scipy.stats")
    assert abs(-obj.value(r.x) - stats.poisson.logpmf(y, t * np.exp(X @ r.x)).sum()) < 1e-8 * N
