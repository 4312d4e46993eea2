"""Objectives over Dask arrays: the sum computed chunk by chunk, on Dask's threads and on a
dask.distributed cluster of two worker processes, equal to the sum of the same data in memory."""

from __future__ import annotations

import pickle

import numpy as np
import pytest

import symad
from symad import SymadError

da = pytest.importorskip("dask.array")

FEATURES = 4
LOSS = "log(1 + exp(-y*(" + " + ".join(f"w{j}*x{j}" for j in range(FEATURES)) + " + b)))"
ROWS, CHUNK = 50_000, 2 * 8192  # chunks a multiple of the loop's blocks: the in-memory sum's bits


@pytest.fixture(scope="module")
def data() -> dict[str, np.ndarray]:
    rng = np.random.default_rng(7)
    X = rng.normal(size=(ROWS, FEATURES))
    y = np.where(X @ np.arange(1, FEATURES + 1) + rng.normal(size=ROWS) > 0, 1.0, -1.0)
    return {**{f"x{j}": X[:, j] for j in range(FEATURES)}, "y": y}


def dask_data(data: dict[str, np.ndarray], chunks: int = CHUNK) -> dict[str, object]:
    return {k: da.from_array(v, chunks=chunks) for k, v in data.items()}


W = np.linspace(-0.5, 0.5, FEATURES + 1)


def test_the_dask_sum_is_the_in_memory_sum(data) -> None:
    memory, dasked = symad.objective(LOSS, data), symad.objective(LOSS, dask_data(data))
    assert dasked.dask and not memory.dask and dasked.n_rows == ROWS
    v, g = memory.value_and_grad(W)
    dv, dg = dasked.value_and_grad(W)
    assert dv == v and np.array_equal(dg, g)
    assert np.array_equal(dasked.hessian(W), memory.hessian(W))
    assert np.array_equal(dasked.hessp(W, W), memory.hessp(W, W))
    mean = symad.objective(LOSS, dask_data(data), reduce="mean")
    assert mean.value(W) == v / ROWS


def test_other_chunks_and_mixed_columns_agree_to_rounding(data) -> None:
    want = symad.objective(LOSS, data).value_and_grad(W)
    mixed = {**dask_data(data, 10_000), "y": data["y"]}  # a NumPy column is chunked as the others
    mixed["x0"] = mixed["x0"].rechunk(7_000)  # and a column chunked otherwise is rechunked
    got = symad.objective(LOSS, mixed).value_and_grad(W)
    assert got[0] == pytest.approx(want[0], rel=1e-13)
    np.testing.assert_allclose(got[1], want[1], rtol=1e-12)


def test_pickled_and_minimised(data) -> None:
    dasked = symad.objective(LOSS, dask_data(data), reduce="mean")
    again = pickle.loads(pickle.dumps(dasked))
    assert again.value(W) == dasked.value(W)
    fit = symad.minimize(dasked, np.zeros(FEATURES + 1), method="newton")
    memory_fit = symad.minimize(symad.objective(LOSS, data, reduce="mean"), np.zeros(FEATURES + 1), method="newton")
    assert fit.success
    np.testing.assert_allclose(fit.x, memory_fit.x, rtol=1e-10)


def test_mini_batches_of_dask_data_say_what_to_do(data) -> None:
    with pytest.raises(SymadError, match="rows= .* is for data in memory"):
        symad.objective(LOSS, dask_data(data)).value_and_grad(W, rows=np.arange(10))
    bad = dask_data(data)
    bad["y"] = bad["y"][:-1]
    with pytest.raises(SymadError, match="differ in length"):
        symad.objective(LOSS, bad)


def test_on_a_local_cluster_of_two_worker_processes(data) -> None:
    distributed = pytest.importorskip("dask.distributed")
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) \
            as cluster, distributed.Client(cluster) as client:
        dasked = symad.objective(LOSS, dask_data(data))
        v, g = symad.objective(LOSS, data).value_and_grad(W)
        for _ in range(2):
            dv, dg = dasked.value_and_grad(W)
            assert dv == v and np.array_equal(dg, g)

        def loops_built() -> int:
            from symad.objectives import dask_sums
            return len(dask_sums._compiled)

        # a worker builds the loop for its first chunk and reuses it for the rest (8 chunks ran)
        built = list(client.run(loops_built).values())
        assert len(built) == 2 and max(built) == 1
