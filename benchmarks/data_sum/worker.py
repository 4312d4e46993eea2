"""One models-over-data measurement in a fresh process (issue #16), run by :mod:`benchmarks.data_sum.suite`.

Tasks (``--task``):

* ``pass``: logistic regression over ``--rows`` rows of ``--features`` features: the build
  (the arrays in hand → a value-and-gradient callable, compiled: the peers' first call
  compiles, so symad's is made by ``prepare(optimised=False)``, what its first call waits
  for), the first pass, when symad's optimised loop was ready (from the start of the build),
  then the median of steady passes (on it), and the peak memory beyond the data.
* ``fit``: the same loss from the text (or the peer's code) to scipy's L-BFGS-B optimum.
* ``inline``: the 1,000-row model with its data written into the text (``compile()``, the
  path before ``objective``), to the same optimum.

Prints one JSON object per line as each phase ends (as every suite's worker does).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
import traceback
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
FIT_OPTIONS = {"gtol": 1e-8, "maxiter": 10_000}
PHASES = {"pass": ("import", "build", "first", "steady"), "fit": ("import", "build", "solve"),
          "inline": ("import", "build", "solve")}
_reported: list[str] = []


def emit(**fields: Any) -> None:
    if "phase" in fields and "error" not in fields:
        _reported.append(fields["phase"])
    print(json.dumps(fields), flush=True)


def data(rows: int, features: int, seed: int = 0) -> tuple[Any, Any]:
    """A classification problem with a finite optimum: two overlapping classes, labels ±1."""
    import numpy as np

    rng = np.random.default_rng(seed)
    X = rng.normal(size=(rows, features))
    truth = np.linspace(-1.0, 1.0, features)
    y = np.where(X @ truth + 0.25 + rng.logistic(size=rows) > 0, 1.0, -1.0)
    return X, y


def loss_text(features: int) -> str:
    """One row's loss, as a symad user writes it."""
    return "log(1 + exp(-y*(" + " + ".join(f"w{j}*x{j}" for j in range(features)) + " + b)))"


def wrt(features: int) -> list[str]:
    return [f"w{j}" for j in range(features)] + ["b"]


def build(peer: str, X: Any, y: Any, variant: str = "") -> Any:
    """``vg(w) -> (float, array)`` over every row, compiled."""
    import numpy as np

    n, d = X.shape
    if peer == "symad":
        import symad

        columns = {f"x{j}": X[:, j] for j in range(d)}
        obj = symad.objective(loss_text(d), data={**columns, "y": y}, wrt=wrt(d))
        # what a first call waits for: the optimised loop from the disk cache, or quick code
        # (the optimised loop then compiles in the background: see optimised())
        _objectives.append(obj)
        return obj.prepare(optimised=False).value_and_grad
    if peer == "numpy":
        def vg(w: Any) -> tuple[float, Any]:
            m = -y * (X @ w[:d] + w[d])
            s = -y / (1.0 + np.exp(-m))
            return float(np.sum(np.logaddexp(0.0, m))), np.concatenate([X.T @ s, [s.sum()]])
        return vg
    if peer == "jax":
        import jax

        jax.config.update("jax_enable_x64", True)
        import jax.numpy as jnp

        Xj, yj = jax.device_put(X), jax.device_put(y)

        def loss(w: Any) -> Any:
            return jnp.sum(jnp.logaddexp(0.0, -yj * (Xj @ w[:d] + w[d])))

        f = jax.jit(jax.value_and_grad(loss))
        f(jnp.zeros(d + 1))[0].block_until_ready()  # compiles

        def vg(w: Any) -> tuple[float, Any]:
            v, g = f(w)
            return float(v), np.asarray(g)
        return vg
    if peer == "torch":
        import torch

        torch.set_default_dtype(torch.float64)
        Xt, yt = torch.from_numpy(X), torch.from_numpy(y)

        def vg(w: Any) -> tuple[float, Any]:
            wt = torch.tensor(w, requires_grad=True)
            v = torch.nn.functional.softplus(-yt * (Xt @ wt[:d] + wt[d])).sum()
            v.backward()
            return float(v), wt.grad.numpy()
        return vg
    if peer == "casadi":
        import casadi as ca

        w, x, t = ca.SX.sym("w", d + 1), ca.SX.sym("x", d), ca.SX.sym("y")
        row = ca.Function("row", [w, x, t], [ca.log(1 + ca.exp(-t * (ca.dot(w[:d], x) + w[d])))])
        W, XS, YS = ca.MX.sym("W", d + 1), ca.MX.sym("X", d, n), ca.MX.sym("Y", 1, n)
        total = ca.sum2(row.map(n, variant or "serial")(W, XS, YS))
        F = ca.Function("F", [W, XS, YS], [total, ca.gradient(total, W)])
        XD, YD = ca.DM(X.T), ca.DM(y.reshape(1, -1))  # converted once, reused by every call

        def vg(w: Any) -> tuple[float, Any]:
            v, g = F(w, XD, YD)
            return float(v), np.asarray(g).ravel()
        F(np.zeros(d + 1), XD, YD)  # (CasADi builds at Function(): a first call for symmetry)
        return vg
    raise ValueError(f"unknown peer {peer}")


_objectives: list[Any] = []  # symad's, as built by build()


def optimised() -> None:
    """Wait for symad's optimised loop (nothing to wait for with the peers)."""
    for obj in _objectives:
        obj.prepare()


IMPORTS = {"symad": ("symad", "symad.objectives"), "numpy": (), "jax": ("jax", "jax.numpy"),
           "torch": ("torch",), "casadi": ("casadi",)}


def reset_peak() -> float:
    """Reset the peak resident memory (Linux's VmHWM) and return the memory held now, MB."""
    from benchmarks import harness

    return harness.reset_peak() / 1024.0


def peak_mb() -> float:
    """The peak resident memory since :func:`reset_peak`, MB."""
    from benchmarks import harness

    return harness.proc_status()["VmHWM"] / 1024.0


def task_pass(args: argparse.Namespace) -> int:
    import numpy as np

    for mod in IMPORTS[args.peer]:
        __import__(mod)
    X, y = data(args.rows, args.features)
    emit(phase="import", data_mb=(X.nbytes + y.nbytes) / 2**20)
    base = reset_peak()
    t = started = time.perf_counter()
    vg = build(args.peer, X, y, args.variant)
    emit(phase="build", build_s=time.perf_counter() - t)
    w = np.full(args.features + 1, 0.01)
    t = time.perf_counter()
    v, g = vg(w)
    first = time.perf_counter() - t
    optimised()
    ready = time.perf_counter() - started
    emit(phase="first", first_s=first, value=v, grad_head=[float(a) for a in g[:3]],
         **({"optimised_s": ready} if _objectives else {}))
    times = []
    deadline = time.perf_counter() + args.min_time
    while len(times) < args.passes or time.perf_counter() < deadline:
        w = w + 1e-6
        t = time.perf_counter()
        vg(w)
        times.append(time.perf_counter() - t)
        if len(times) >= 200:
            break
    emit(phase="steady", pass_s=statistics.median(times), passes=len(times),
         memory_mb=max(0.0, peak_mb() - base))
    return 0


def task_fit(args: argparse.Namespace, inline: bool = False) -> int:
    import numpy as np
    from scipy.optimize import minimize

    for mod in IMPORTS[args.peer]:
        __import__(mod)
    X, y = data(args.rows, args.features, seed=1)
    emit(phase="import")
    t = time.perf_counter()
    if inline:  # symad before objective(): the rows written into the text, compiled and gone
        import symad

        terms = [f"log(1 + exp({-yi:g}*(" + " + ".join(f"{xij!r}*w{j}" for j, xij in enumerate(row)) + " + b)))"
                 for row, yi in zip(X.tolist(), y.tolist())]
        f = symad.compile(" + ".join(terms), wrt(args.features))
        if args.variant == "prepare":
            f.prepare()
        vg = f.value_and_grad
    else:
        vg = build(args.peer, X, y, args.variant)
    emit(phase="build", build_s=time.perf_counter() - t)
    t = time.perf_counter()
    r = minimize(vg, np.zeros(args.features + 1), jac=True, method="L-BFGS-B", options=FIT_OPTIONS)
    emit(phase="solve", solve_s=time.perf_counter() - t, nit=int(r.nit), nfev=int(r.nfev), fun=float(r.fun),
         x=[float(a) for a in r.x], success=bool(r.success))
    return 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--task", required=True, choices=sorted(PHASES))
    ap.add_argument("--peer", required=True)
    ap.add_argument("--variant", default="")
    ap.add_argument("--rows", type=int, required=True)
    ap.add_argument("--features", type=int, default=20)
    ap.add_argument("--passes", type=int, default=10)
    ap.add_argument("--min-time", type=float, default=1.0)
    args = ap.parse_args(argv)
    sys.path.insert(0, str(ROOT))
    try:
        if args.task == "pass":
            return task_pass(args)
        return task_fit(args, inline=args.task == "inline")
    except Exception as err:  # noqa: BLE001 - reported to the driver, which records it
        done = [p for p in _reported if p in PHASES[args.task]]
        order = PHASES[args.task]
        emit(phase=order[min(order.index(done[-1]) + 1, len(order) - 1)] if done else order[0],
             error=f"{type(err).__name__}: {str(err)[:300]}", traceback=traceback.format_exc()[-2000:])
        return 0


if __name__ == "__main__":
    sys.exit(main())
