"""Sums over rows of Dask arrays: each chunk summed by the compiled loop on a worker.

A :class:`DaskSums` answers ``sums(w)`` as :class:`~symad.objectives.row_sums.RowSums` does,
with a Dask computation: one task per chunk of rows, which runs the loop over that chunk
(:class:`RowSums`, one thread: Dask runs the chunks in parallel) and returns its blocks'
sums; the client adds every block's sums in the canonical order, as ``RowSums`` adds its own
(:func:`symad.runtime.blocks.add`).  So with chunks a multiple of
:data:`~symad.runtime.blocks.BLOCK` rows (the last one excepted) the chunks' blocks are the
blocks of the same data in memory, and the result its bits; other chunks give the same sum to
rounding.

What a task carries is a :class:`RowsRecipe`: the outputs' DAG and the loop's layout, plain
data.  A worker compiles it on its first task and reuses the code for the rest
(:func:`compiled_on_worker`).  The computation runs on the scheduler Dask would use (its
threads by default, or a ``dask.distributed`` client's cluster).
"""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Sequence
from typing import Any

import numpy as np

from symad.core.dag import Graph, export, rebuild
from symad.core.errors import SymadError
from symad.objectives.row_sums import RowSums
from symad.runtime import blocks
from symad.schedule.schedule import Schedule


def is_dask_array(value: Any) -> bool:
    """Whether ``value`` is a Dask array (without importing Dask)."""
    return type(value).__module__.startswith("dask.") and hasattr(value, "chunks") and hasattr(value, "blocks")


class RowsRecipe:
    """What a worker needs to build a loop over rows: the outputs' DAG, which inputs are ``w``'s
    entries and which are columns, and the backend.  Plain data, pickled to the workers."""

    def __init__(self, graph: Graph, outputs: Sequence[int], inputs: Sequence[int], sources: list[tuple[str, int]],
                 backend: str):
        self.dag = export(graph, [*outputs, *inputs])
        self.n_out, self.sources, self.backend = len(outputs), list(sources), backend
        self.key = hashlib.sha256(repr((self.dag, self.n_out, self.sources, backend)).encode()).hexdigest()

    def schedule(self) -> Schedule:
        graph = Graph()
        nodes = rebuild(graph, *self.dag)
        return Schedule.build(graph, nodes[:self.n_out], nodes[self.n_out:])


_compiled: dict[str, Schedule] = {}  # a worker's schedules, by recipe: the loop's code is cached by it too
_compiled_lock = threading.Lock()


def compiled_on_worker(recipe: RowsRecipe) -> Schedule:
    """The recipe's schedule, built once in this process (its loop is compiled once too:
    :func:`symad.native.compile_rows` keeps programs by their schedule)."""
    with _compiled_lock:
        schedule = _compiled.get(recipe.key)
        if schedule is None:
            schedule = _compiled[recipe.key] = recipe.schedule()
        return schedule


def chunk_block_sums(recipe: RowsRecipe, w: np.ndarray, *columns: np.ndarray) -> np.ndarray:
    """A Dask task: the blocks' sums over one chunk of rows."""
    cols = [np.asarray(c, dtype=np.float64) for c in columns]  # read in place at a whole-number stride
    cols = [c if c.strides[0] % 8 == 0 and c.ctypes.data % 8 == 0 else np.ascontiguousarray(c) for c in cols]
    n_rows = len(cols[0]) if cols else 0
    if n_rows == 0:
        return np.zeros((1, recipe.n_out))  # (a chunk has at least one block: see DaskSums.sums)
    sums = RowSums(compiled_on_worker(recipe), recipe.sources, cols, n_rows, recipe.backend, threads=1,
                   tiered=False)  # every chunk a RowSums of its own: they wait for the one compile
    return sums.block_sums(w)


class DaskSums:
    """The sums of the recipe's outputs over the rows of Dask columns: ``sums(w)``."""

    def __init__(self, recipe: RowsRecipe, schedule: Schedule, columns: list[Any]):
        self.recipe, self.schedule, self.columns = recipe, schedule, columns

    def program(self) -> None:
        """Nothing to compile here: each worker compiles the loop on its first chunk."""

    optimised_program = program

    def sums(self, w: np.ndarray, rows: Any = None) -> np.ndarray:
        """Each output summed over every row, computed by Dask."""
        if rows is not None:
            raise SymadError("rows= (a mini-batch) is for data in memory: select the rows of the Dask arrays "
                             "and make an objective of them")
        import dask.array as da

        w = np.ascontiguousarray(w, dtype=np.float64)
        # One task per chunk, placed by Dask where the chunk's columns are; each returns its
        # blocks' sums (a chunk of n rows has ceil(n / BLOCK) blocks, one at least).
        counts = tuple(blocks.count(n) for n in self.columns[0].chunks[0])
        parts = da.map_blocks(_chunk_task, *self.columns, recipe=self.recipe, w=w, dtype=np.float64,
                              chunks=(counts, (self.recipe.n_out,)), new_axis=1, meta=np.zeros((0, 0)))
        return blocks.add(parts.compute())


def _chunk_task(*columns: np.ndarray, recipe: RowsRecipe, w: np.ndarray) -> np.ndarray:
    return chunk_block_sums(recipe, w, *columns)


def dask_columns(columns: dict[str, Any]) -> dict[str, Any]:
    """Every column as a 1-D float64 Dask array chunked as the first Dask column is (a NumPy
    column becomes one)."""
    import dask.array as da

    first = next(c for c in columns.values() if is_dask_array(c))
    out = {}
    for name, column in columns.items():
        column = column if is_dask_array(column) else da.from_array(np.asarray(column), chunks=first.chunks)
        if column.ndim != 1:
            raise SymadError(f"data column {name} must be one value per row (1-D), got shape {column.shape}")
        if column.shape != first.shape:
            raise SymadError(f"the data columns differ in length ({name}: {column.shape[0]}, "
                             f"not {first.shape[0]})")
        if column.dtype != np.float64:
            column = column.astype(np.float64)
        if column.chunks != first.chunks:
            column = column.rechunk(first.chunks)
        out[name] = column
    return out
