"""The stitcher's linear-time pieces (symad.native.stitcher): the greedy choice of the KEEP
register's waits found for every wait at once, against the one-at-a-time greedy it replaces,
and the body copied and patched in chunks, byte for byte the body built in one piece."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from support.properties import property_test

import symad
from symad import Graph
from symad.native import jit
from symad.native import stitcher as stitching

pytestmark = pytest.mark.skipif(not (jit.available() and jit.stitch_available()),
                                reason="needs llvmlite on Linux x86-64")


def _greedy(starts: np.ndarray, ends: np.ndarray) -> list[int]:
    """The waits kept, one at a time: in order of end (then of start), each starting at or after
    the end of the last one kept."""
    kept, last = [], -1
    for j, e in sorted(zip(starts.tolist(), ends.tolist()), key=lambda w: (w[1], w[0])):
        if j >= last:
            kept.append(j)
            last = e
    return sorted(kept)


@st.composite
def waits(draw):
    """Distinct starts below n, each with an end two or more steps on (below n)."""
    n = draw(st.integers(3, 60))
    starts = draw(st.lists(st.integers(0, n - 3), unique=True, max_size=n))
    ends = [draw(st.integers(j + 2, n - 1)) for j in starts]
    return np.array(starts, dtype=np.int64), np.array(ends, dtype=np.int64), n


@property_test(200)
@given(waits())
def test_the_waits_kept_are_the_one_at_a_time_greedy_choice(case):
    starts, ends, n = case
    assert sorted(stitching._earliest_ends(starts, ends, n).tolist()) == _greedy(starts, ends)


def test_a_running_sum_keeps_every_other_link_at_least():
    # chains s_i = s_{i-1} + t_i with t_i two steps: waits [3i, 3i + 3] end where the next starts
    starts = np.arange(0, 300, 3)
    ends = starts + 3
    kept = stitching._earliest_ends(starts, ends, 303)
    assert kept.tolist() == starts.tolist() == _greedy(starts, ends)


def _schedule(text: str):
    e = symad.parse(text, Graph())
    return e.compile(backend="python").value_grad_program().schedule


def test_the_body_in_chunks_is_the_body_in_one_piece(monkeypatch):
    """A program of several chunks (a call of the C library, constants in the stencils' data, the
    outputs' block): the same bytes whatever the chunk's size."""
    text = "+".join(f"{k % 7 + 1}*sin(x{k % 23}*x{(k + 1) % 19})/(2 + x{k % 17}^2)" for k in range(120))
    library = jit._load_stencils()[0]
    stencil, operands, _, _ = stitching.layout(_schedule(text), library)
    assert len(stencil) > 1000
    whole = stitching.body(library, stencil, operands).tobytes()
    for size in (1, 7, 256, 1 << 20):
        monkeypatch.setattr(stitching, "_CHUNK", size)
        assert stitching.body(library, stencil, operands).tobytes() == whole, size


def test_a_small_program_in_a_large_graph_gets_the_code_of_a_fresh_graph(monkeypatch):
    """The frame slots found by binary search where the graph's node ids are sparse (a small
    program in a large graph), by a table where dense: the same layout and bytes either way."""
    text = "sin(x)*y + exp(x - y)/(1 + x^2) + where(x > y, x*y, y^3)"
    big = Graph()
    symad.parse("+".join(f"cos(u{k})*u{k + 1}" for k in range(3000)), big)
    e = symad.parse(text, big)
    late = e.compile(backend="python").value_grad_program().schedule
    keys = len(late.inputs) + len(late.consts) + late.size  # (at least the ids the slots are found for)
    assert max(node for node, _, _ in late.steps) > stitching._TABLE_RATIO * keys + stitching._TABLE_SLACK
    fresh = _schedule(text)
    library = jit._load_stencils()[0]
    sparse = stitching.layout(late, library)
    monkeypatch.setattr(stitching, "_TABLE_RATIO", 10**9)  # a table whatever the ids
    dense = stitching.layout(late, library)
    for a, b, c in zip(sparse, dense, stitching.layout(fresh, library)):
        assert a.tobytes() == b.tobytes() == c.tobytes()
