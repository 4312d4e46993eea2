"""Packs of four (symad.native.packing): written-out sums run partly as vector stencils, with
the bits of compiled code; the vector stencils come from the op table's lowerings, and every op
that has them gives the scalar bits at special values."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from support.properties import property_test

import symad
from symad import Graph
from symad.native import jit, packing, stencils
from symad.native import stitcher as stitching
from symad.schedule.lowering import PRIMITIVES

pytestmark = pytest.mark.skipif(not (jit.available() and jit.stitch_available()),
                                reason="needs llvmlite on Linux x86-64")

SPECIAL = [0.0, -0.0, 1.0, -1.0, 0.5, 3.0, -2.5, 1e300, -1e-300, 5e-324, math.inf, -math.inf, math.nan]
VECTOR_OPS = ("add", "sub", "mul", "div", "neg", "sqrt")


def _same(a: np.ndarray, b: np.ndarray) -> bool:
    """Bit for bit, signed zeros included; any nan equals any nan."""
    nan = np.isnan(a)
    return bool((nan == np.isnan(b)).all() and a[~nan].tobytes() == b[~nan].tobytes())


def _schedule(text: str):
    return symad.parse(text, Graph()).compile(backend="python").value_grad_program().schedule


def _outputs(program, schedule, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The rows' outputs through ``program``'s batch entry and through -O0 code."""
    native = jit.compile(schedule, opt=0)
    got, want = (np.empty((len(rows), len(schedule.outputs))) for _ in range(2))
    rows = np.ascontiguousarray(rows)
    with np.errstate(all="ignore"):
        program.batch(rows.ctypes.data, got.ctypes.data, len(rows))
        native.batch(rows.ctypes.data, want.ctypes.data, len(rows))
    return got, want


def _vector_steps(schedule) -> dict[str, int]:
    """How many steps of each op the stitched code runs in vector stencils."""
    library = jit._load_stencils()[0]
    stencil, _, _, _ = stitching.layout(schedule, library)
    names = {k: op for op, k in library.ops.items()}
    found = {}
    for op_id in range(len(names)):
        vector = library.variants[op_id, stencils.VECTOR_BASE:]
        count = int(np.isin(stencil, vector[vector >= 0]).sum())
        if count:
            found[names[op_id]] = stencils.LANES * count
    return found


def _rosenbrock(n: int) -> str:
    return "+".join(f"100*(x{i + 1}-x{i}^2)^2+(1-x{i})^2" for i in range(1, n))


@pytest.mark.parametrize("n", [5, 9, 10, 31, 120])
def test_rosenbrock_runs_in_packs_with_the_bits_of_compiled_code(n):
    schedule = _schedule(_rosenbrock(n))
    program = jit.stitch(schedule)
    packed = sum(_vector_steps(schedule).values())
    if n >= 31:  # most partials: every middle one's steps, and the terms its neighbours read
        assert packed > 0.4 * schedule.size, packed
    rows = np.random.default_rng(n).uniform(-2, 2, (6, len(schedule.inputs)))
    rows[1, ::3] = -0.0
    rows[2, 1::4] = math.inf
    rows[3, 2::5] = math.nan
    got, want = _outputs(program, schedule, rows)
    assert _same(got, want)
    rest = np.empty(program.n_out - 1)  # (the call entry, in the program's own frame, too)
    assert _same(np.array([program.call(rows[0], rest), *rest]), want[0])


def test_a_written_out_quotient_runs_its_divisions_in_packs():
    n = 40
    norm = "sqrt(" + "+".join(f"x{j}^2" for j in range(1, n + 1)) + ")"
    schedule = _schedule("+".join(f"{i}*x{i}/{norm}" for i in range(1, n + 1)))
    packed = _vector_steps(schedule)
    assert packed.get("div", 0) >= n  # the terms' quotients and their partials' (a broadcast norm)
    rows = np.random.default_rng(3).uniform(-1, 1, (4, n))
    rows[1, 5] = math.inf
    rows[2] = 0.0
    got, want = _outputs(jit.stitch(schedule), schedule, rows)
    assert _same(got, want)


@pytest.mark.parametrize("op", VECTOR_OPS)
def test_every_vector_stencil_gives_the_scalar_bits_at_special_values(op):
    """Each op with vector stencils, packed (its partials' program has four or more neighbouring
    terms of it), at every pair of special values."""
    n = 12
    term = {"add": "(x{i}+x{j})^2", "sub": "(x{i}-x{j})^2", "mul": "x{i}*x{j}*x{i}", "div": "x{i}/x{j}",
            "neg": "-x{i}*x{j}", "sqrt": "sqrt(x{i})*x{j}"}[op]
    schedule = _schedule("+".join(term.format(i=i, j=i + 1) for i in range(1, n)))
    assert op in _vector_steps(schedule)
    pairs = np.array([(a, b) for a in SPECIAL for b in SPECIAL])
    rows = np.resize(pairs.reshape(-1), (len(pairs), n))  # each pair in neighbouring columns somewhere
    got, want = _outputs(jit.stitch(schedule), schedule, rows)
    assert _same(got, want)
    python = symad.parse("+".join(term.format(i=i, j=i + 1) for i in range(1, n)), Graph()).compile(backend="python")
    with np.errstate(all="ignore"):
        for row, out in zip(rows[::17], got[::17]):
            value, grad = python.value_and_grad(row)
            assert _same(out, np.array([value, *grad]))


def test_vector_stencils_are_the_op_tables_lowerings_lane_by_lane():
    for op, spec in PRIMITIVES.items():
        lines = stencils.vector_lines(op, ["%a", "%b", "%c"][:spec.arity], "%r", "%t", {})
        assert (lines is not None) == (op in VECTOR_OPS), op
    assert stencils.vector_lines("div", ["%a", "%b"], "%r", "%t", {}) == ["  %r = fdiv <4 x double> %a, %b"]
    library = jit._load_stencils()[0]
    assert {op for op, k in library.ops.items() if library.vectorizable[k]} == set(VECTOR_OPS)


@st.composite
def neighbour_sums(draw):
    """A written-out sum over i of one random term in x[i], x[i+1] and a constant per term (the
    vector ops, with now and then an op that has no vector stencil), and its number of terms."""
    leaves = st.sampled_from(["a", "b", "c", "2"])

    def extend(children):
        unary = st.builds(lambda f, x: f"{f}({x})", st.sampled_from(["sqrt", "-", "exp", "-"]), children)
        binary = st.builds(lambda x, o, y: f"({x}{o}{y})", children, st.sampled_from("+-*/"), children)
        return unary | binary | binary

    template = draw(st.recursive(leaves, extend, max_leaves=6))
    n = draw(st.integers(4, 14))
    consts = draw(st.lists(st.sampled_from([0.5, 1.0, 3.0, -2.0, 7.0]), min_size=n, max_size=n))
    terms = [template.replace("a", f"x{i}").replace("b", f"x{i + 1}").replace("c", f"({consts[i]})")
             for i in range(n)]
    return "+".join(terms), n


@property_test(40)
@given(neighbour_sums())
def test_random_written_out_sums_give_the_bits_of_compiled_code(case):
    text, n = case
    e = symad.parse(text, Graph())
    if not e.variables:
        return
    schedule = e.compile(backend="python").value_grad_program().schedule
    rows = np.random.default_rng(7).uniform(-2, 2, (6, len(e.variables)))
    rows[1, ::2] = 0.0
    rows[2, 1] = math.inf
    rows[3, ::3] = -1e-300
    got, want = _outputs(jit.stitch(schedule), schedule, rows)
    assert _same(got, want), text


NORMALISE = "+".join(f"{i}*x{i}/sqrt(" + "+".join(f"x{j}^2" for j in range(1, 31)) + ")" for i in range(1, 31))


@pytest.mark.parametrize("text", [_rosenbrock(40) + "+" + "+".join(f"x{i}*x{i + 1}*exp(x{i})" for i in range(1, 40)),
                                  NORMALISE])
def test_packs_run_after_the_steps_they_read_and_before_their_readers(text):
    """Every kept pack (placed after what it reads, a sum's terms among its links, the others
    spread among them) runs before every step or pack reading its lanes, in the order the
    stitched code runs."""
    schedule = _schedule(text)
    library = jit._load_stencils()[0]
    seen: list = []
    real = packing.find

    def spy(*args):
        seen.append((args, real(*args)))
        return seen[-1][1]

    packing.find = spy
    try:
        stitching.layout(schedule, library)
    finally:
        packing.find = real
    (operands, arity, _, _, _, _, frame, _), found = seen[0]
    base = len(frame) - len(arity)
    n = len(arity)
    assert found is not None and len(found.groups)
    runs_at = np.arange(n, dtype=float)  # a step's place in the run order; a pack's lanes at the pack's
    for lanes, after, depth in zip(found.groups, found.after, found.depth):
        runs_at[lanes] = after + 0.5 + depth / (2 * n)
    for step in range(n):
        for k in range(arity[step]):
            producer = operands[step, k] - base
            if producer >= 0:  # (no lane of a pack reads another lane of it)
                assert runs_at[producer] < runs_at[step]


def test_packs_store_whole_aligned_blocks_of_a_frame_aligned_to_a_cache_line():
    """Every pack stores its four lanes at a multiple of four slots, and every frame the code runs
    in starts at a multiple of 64 bytes: no pack's store straddles two cache lines."""
    schedule = _schedule(_rosenbrock(50))
    library = jit._load_stencils()[0]
    stencil, operands, frame, _ = stitching.layout(schedule, library)
    vector = library.variants[:, stencils.VECTOR_BASE:]
    packs = np.isin(stencil, vector[vector >= 0])
    assert packs.sum() > 50 and (operands[packs, 3] % stencils.LANES == 0).all()
    program = jit.stitch(schedule)
    assert program.frame.ctypes.data % 64 == 0
    assert all(stitching.aligned_copy(frame[:k]).ctypes.data % 64 == 0 for k in (1, 7, 100))
