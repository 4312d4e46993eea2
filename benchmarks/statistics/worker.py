"""One measurement of the statistics suite in a fresh process, run by :mod:`benchmarks.statistics.suite`.

``--peer symad``, ``jax`` (the data passed as arguments) or ``jax-closed`` (closed over), ``--n``
rows: the negative binomial regression's negative log-likelihood (mean exp(b0 + b1·x1 + b2·x2),
size exp(a)) and its gradient over the rows, from
this script's first line (imports, the data's generation excluded) to the first value and
gradient, a check against NumPy and scipy.special by hand, and the median time of a warm call.
Prints one JSON object per line as each phase ends (:func:`benchmarks.harness.emit`).
"""

from __future__ import annotations

import argparse
import sys
import time
import traceback
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from benchmarks.harness import emit, time_calls  # noqa: E402

T_START = time.perf_counter()

TEXT = ("eta = b0 + b1*x1 + b2*x2; r = exp(a); "
        "-(lgamma(y + r) - lgamma(r) - lgamma(y + 1) + r*a + y*eta - (r + y)*logaddexp(a, eta))")
POINT = [0.4, 0.7, -0.5, 0.9]  # b0, b1, b2, a: near the generating values
RTOL = 1e-9  # a sum of 10^6 terms: rounding only


def data(n: int) -> dict[str, Any]:
    import numpy as np

    rng = np.random.default_rng(34)
    x1, x2 = rng.normal(size=n), rng.uniform(-1, 1, n)
    mu = np.exp(0.5 + 0.8 * x1 - 0.6 * x2)
    y = rng.negative_binomial(2.5, 2.5 / (2.5 + mu)).astype(float)
    return {"x1": x1, "x2": x2, "y": y}


def reference(d: dict[str, Any], w: Any) -> tuple[float, Any]:
    """The value and gradient with NumPy and scipy.special, written out by hand."""
    import numpy as np
    from scipy import special

    b0, b1, b2, a = w
    eta = b0 + b1 * d["x1"] + b2 * d["x2"]
    y, r, m = d["y"], np.exp(a), np.exp(eta)
    lrm = np.logaddexp(a, eta)
    ll = special.gammaln(y + r) - special.gammaln(r) - special.gammaln(y + 1) + r * a + y * eta - (r + y) * lrm
    d_eta = y - (r + y) * m / (r + m)
    d_a = r * (special.digamma(y + r) - special.digamma(r) + a + 1 - lrm - (r + y) / (r + m))
    grad = -np.array([d_eta.sum(), (d_eta * d["x1"]).sum(), (d_eta * d["x2"]).sum(), d_a.sum()])
    return -float(ll.sum()), grad


def build_symad(d: dict[str, Any]) -> Any:
    import symad

    obj = symad.objective(TEXT, d, wrt=["b0", "b1", "b2", "a"], backend="native")
    return obj.value_and_grad


def build_jax(d: dict[str, Any], closed: bool = False) -> Any:
    """JAX's value and gradient, the data passed as arguments (``closed``: closed over, constants
    of the compiled code, which XLA may fold ``gammaln(y + 1)`` into)."""
    import jax

    jax.config.update("jax_enable_x64", True)
    import jax.numpy as jnp
    from jax.scipy.special import gammaln

    x1, x2, y = (jnp.asarray(d[k]) for k in ("x1", "x2", "y"))

    def nll(w: Any, x1: Any, x2: Any, y: Any) -> Any:
        eta = w[0] + w[1] * x1 + w[2] * x2
        r = jnp.exp(w[3])
        ll = gammaln(y + r) - gammaln(r) - gammaln(y + 1) + r * w[3] + y * eta - (r + y) * jnp.logaddexp(w[3], eta)
        return -jnp.sum(ll)

    if closed:
        fn = jax.jit(jax.value_and_grad(lambda w: nll(w, x1, x2, y)))
        args: tuple = ()
    else:
        fn, args = jax.jit(jax.value_and_grad(nll)), (x1, x2, y)

    def call(w: Any) -> Any:
        v, g = fn(jnp.asarray(w), *args)
        g.block_until_ready()
        return float(v), g

    return call


BUILDERS = {"symad": build_symad, "jax": build_jax, "jax-closed": lambda d: build_jax(d, closed=True)}


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--peer", choices=list(BUILDERS), required=True)
    p.add_argument("--n", type=int, default=1_000_000)
    p.add_argument("--min-time", type=float, default=0.5)
    p.add_argument("--repeats", type=int, default=5)
    args = p.parse_args()
    phase = "build"
    try:
        t_data = time.perf_counter()
        d = data(args.n)
        skipped = time.perf_counter() - t_data  # the data's generation is not the peer's cost
        call = BUILDERS[args.peer](d)
        import numpy as np

        value, grad = call(np.array(POINT))
        emit(phase="build", first_call_s=time.perf_counter() - T_START - skipped)
        phase = "check"
        want_v, want_g = reference(d, np.array(POINT))
        ok = abs(value - want_v) <= RTOL * abs(want_v) and np.allclose(np.asarray(grad), want_g, rtol=RTOL,
                                                                       atol=RTOL * np.abs(want_g).max())
        emit(phase="check", check="ok" if ok else "mismatch", value=value, reference=want_v)
        phase = "time"
        rng = np.random.default_rng(1)
        points = [np.array(POINT) + 0.01 * rng.normal(size=4) for _ in range(8)]
        emit(phase="time", **{f"call_{k}": v for k, v in time_calls(call, points, args.min_time,
                                                                      args.repeats).items()})
    except Exception as e:  # reported, not raised: the suite records it
        emit(phase=phase, error=f"{type(e).__name__}: {e}", traceback=traceback.format_exc())
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
