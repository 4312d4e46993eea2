"""An objective over Dask arrays (issue #16 §3): logistic regression on 10^7 rows in chunks.

    python -m benchmarks.dask_fit              # 10^7 rows, 20 features; dask_fit.json and .md here
    python -m benchmarks.dask_fit --rows 200000 --out-dir /tmp   # a smoke run

A ``dask.distributed.LocalCluster`` of ``--workers`` worker processes (one thread each)
generates the data in chunks of ``--chunk`` rows and keeps its columns in the workers'
memory (``persist``); ``symad.objective`` sums the loss and its gradient over it, each chunk by
the compiled loop on the worker holding it.  Timed: the first pass (the workers compile the
loop), the steady passes, and scipy's L-BFGS-B from zeros to convergence; then the same
passes over the same data gathered into this process's memory, for comparison.
"""

from __future__ import annotations

import argparse
import datetime
import statistics
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from benchmarks import harness  # noqa: E402
from benchmarks.dask_fit import report  # noqa: E402

FOLDER = Path(__file__).resolve().parent


def loss_text(features: int) -> str:
    margin = " + ".join(f"w{j}*x{j}" for j in range(features))
    return f"log(1 + exp(-y*({margin} + b)))"


def timed(fn: Any, repeats: int) -> list[float]:
    out = []
    for _ in range(repeats):
        t = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t)
    return out


def measure(args: argparse.Namespace) -> dict[str, Any]:
    import dask.array as da
    import numpy as np
    import scipy.optimize
    from dask.distributed import Client, LocalCluster, wait

    import symad

    n, d = args.rows, args.features
    truth = np.linspace(-1.0, 1.0, d + 1)
    with LocalCluster(n_workers=args.workers, threads_per_worker=1, processes=True, dashboard_address=None,
                      memory_limit=0) as cluster, Client(cluster) as client:
        rng = da.random.default_rng(0)
        X = rng.normal(size=(n, d), chunks=(args.chunk, d))
        noise = rng.logistic(size=n, chunks=args.chunk)
        y = da.where(X @ truth[:d] + truth[d] + noise > 0, 1.0, -1.0)
        columns = client.persist([*(X[:, j] for j in range(d)), y])  # the data as columns, in the workers
        wait(columns)
        data = {**{f"x{j}": columns[j] for j in range(d)}, "y": columns[d]}
        wrt = [*(f"w{j}" for j in range(d)), "b"]
        t = time.perf_counter()
        obj = symad.objective(loss_text(d), data=data, wrt=wrt, reduce="mean")
        build_s = time.perf_counter() - t
        w = np.zeros(d + 1)
        first_s = timed(lambda: obj.value_and_grad(w), 1)[0]
        passes = timed(lambda: obj.value_and_grad(w), args.passes)
        calls = [0]

        def fun(v: Any) -> Any:
            calls[0] += 1
            return obj.value_and_grad(v)

        t = time.perf_counter()
        r = scipy.optimize.minimize(fun, np.zeros(d + 1), jac=True, method="L-BFGS-B")
        fit_s = time.perf_counter() - t
        # the same data in this process's memory: one pass, for comparison
        gathered = client.compute(columns, sync=True)
        memory = symad.objective(loss_text(d), data={**{f"x{j}": gathered[j] for j in range(d)}, "y": gathered[d]},
                                 wrt=wrt, reduce="mean").prepare()
        memory_passes = timed(lambda: memory.value_and_grad(w), args.passes)
        same = memory.value_and_grad(r.x)[0] == obj.value_and_grad(r.x)[0]
    return {
        "rows": n, "features": d, "chunk": args.chunk, "chunks": -(-n // args.chunk), "workers": args.workers,
        "data_mb": (n * (d + 1) * 8) / 2**20, "build_s": build_s, "first_pass_s": first_s,
        "pass_s": statistics.median(passes), "passes": passes,
        "fit_s": fit_s, "fit_calls": calls[0], "fit_nit": int(r.nit), "fit_success": bool(r.success),
        "fit_x": [float(v) for v in r.x], "truth": [float(v) for v in truth],
        "max_error_vs_truth": float(np.max(np.abs(r.x - truth))),
        "memory_pass_s": statistics.median(memory_passes), "same_value_in_memory": bool(same),
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.dask_fit", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=int, default=10**7)
    ap.add_argument("--features", type=int, default=20)
    ap.add_argument("--chunk", type=int, default=2**20, help="rows per chunk (a multiple of 8,192: 2^20)")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--passes", type=int, default=5)
    ap.add_argument("--out-dir", type=Path, default=FOLDER, help="where dask_fit.md/.json go (this folder)")
    args = ap.parse_args(argv)
    load_before = harness.load()
    m = measure(args)
    m.update(date=datetime.date.today().isoformat(), revision=harness.revision(), machine=harness.machine(),
             load_before=load_before, load_after=harness.load())
    harness.write(args.out_dir, "dask_fit", m, report.render(m))
    print(report.render(m))
    return 0

