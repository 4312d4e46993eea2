"""Copy-and-patch code (symad.native.stitcher): the stencils read from their object code, the
stitcher's patches (constants, inputs, outputs, long programs, deep chains), its entries, and
the code cache's trust rules applied to the stencils."""

from __future__ import annotations

import fcntl
import itertools
import math
import os

import numpy as np
import pytest
from hypothesis import given
from support.expressions import expressions
from support.properties import property_test

import symad
from symad import Graph
from symad.native import build_stencils, cache, elf, jit, stencils
from symad.native import stitcher as stitching
from symad.schedule.lowering import PRIMITIVES
from symad.schedule.schedule import Schedule

pytestmark = pytest.mark.skipif(not (jit.available() and jit.stitch_available()),
                                reason="needs llvmlite on Linux x86-64")


def _same(a: np.ndarray, b: np.ndarray) -> bool:
    """Bit for bit, signed zeros included; any nan equals any nan."""
    a, b = np.asarray(a), np.asarray(b)
    nan = np.isnan(a)
    return bool((nan == np.isnan(b)).all() and a[~nan].tobytes() == b[~nan].tobytes())


def _schedule(text: str, grad: bool = True) -> Schedule:
    e = symad.parse(text, Graph())
    return e.compile(backend="python").value_grad_program().schedule if grad else \
        Schedule.build(e.graph, [e.id], [e.graph.var(v) for v in e.variables])


def _all_entries(program: stitching.StitchedProgram, x: np.ndarray) -> list[np.ndarray]:
    """The outputs at ``x`` through ``call``, ``point`` and a batch of one row."""
    results = []
    rest = np.empty(program.n_out - 1)
    results.append(np.array([program.call(x, rest), *rest]))
    out, inp = np.empty(program.n_out), np.ascontiguousarray(x, dtype=float)
    program.point(inp.ctypes.data, out.ctypes.data, out.ctypes.data + 8)
    results.append(out)
    row = np.empty((1, program.n_out))
    program.batch(inp.ctypes.data, row.ctypes.data, 1)
    results.append(row[0])
    return results


def test_every_primitive_op_has_its_stencils_read_from_their_object_code():
    library = jit._load_stencils()[0]
    assert set(library.ops) == set(PRIMITIVES)
    for op, k in library.ops.items():
        arity = PRIMITIVES[op].arity
        for sources in itertools.product((stencils.MEMORY, stencils.ACC, stencils.KEEP), repeat=arity):
            for keep in (False, True):
                for store in (True, False):
                    s = library.variants[k, stencils.variant(sources, keep, store)]
                    assert s >= 0, op
                    rows = slice(library.rel_start[s], library.rel_start[s] + library.rel_count[s])
                    holes = set(library.rel_arg[rows][library.rel_kind[rows] == stencils.HOLE].tolist())
                    # only operands read from the frame read holes (LLVM may find one unneeded:
                    # select(c, a, a) is a), and the result is stored where asked
                    assert holes - {3} <= {j for j in range(arity) if sources[j] == stencils.MEMORY}, op
                    assert (3 in holes) == store, op


def test_the_stencil_ir_comes_from_the_op_tables_lowerings():
    text = stencils.library_ir()
    for op, spec in PRIMITIVES.items():
        assert f"@{stencils.PREFIX}{op}_{stencils.variant((stencils.MEMORY,) * spec.arity, False, True)}(" in text
    assert "fast" not in text and "contract" not in text  # no fast-math flag: the bits of the other backends


def test_many_constants_and_inputs_each_land_in_their_slot():
    n = 300
    text = "+".join(f"{k + 0.25}*x{k}*x{(k * 7) % n}" for k in range(n))
    schedule = _schedule(text)
    program = jit.stitch(schedule)
    native = jit.compile(schedule, opt=0)
    rng = np.random.default_rng(3)
    for x in rng.uniform(-2, 2, (5, len(schedule.inputs))):
        want = np.empty(program.n_out)
        native.point(x.ctypes.data, want.ctypes.data, want.ctypes.data + 8)
        for got in _all_entries(program, x):
            assert _same(got, want)


def test_a_deep_chain_and_a_long_program():
    deep = "x" + "".join(f"*{1 + k / 1000}+sin(x)" for k in range(1500))
    schedule = _schedule(deep)
    program = jit.stitch(schedule)
    native = jit.compile(schedule, opt=0)
    x = np.array([0.3])
    rest_a, rest_b = np.empty(program.n_out - 1), np.empty(program.n_out - 1)
    assert _same([program.call(x, rest_a), *rest_a], [native.call(x, rest_b), *rest_b])
    n = 800
    long = "+".join(f"exp(x{k}/{k + 1})*(x{(k + 1) % n}-{k})^2" for k in range(n))
    schedule = _schedule(long)
    assert schedule.size > 7_000
    program = jit.stitch(schedule)
    rows = np.random.default_rng(4).uniform(-1, 1, (3, n))
    out = np.empty((3, program.n_out))
    program.batch(rows.ctypes.data, out.ctypes.data, 3)
    assert _same(out, _native_batch(schedule, rows))


def _native_batch(schedule: Schedule, rows: np.ndarray) -> np.ndarray:
    native = jit.compile(schedule, opt=0)
    out = np.empty((len(rows), len(schedule.outputs)))
    native.batch(rows.ctypes.data, out.ctypes.data, len(rows))
    return out


def test_the_outputs_are_copied_as_a_block_when_each_is_a_step_of_its_own():
    schedule = _schedule("sin(x)*y + exp(x - y)/(1 + x^2) + x*y*z")
    program = jit.stitch(schedule)
    assert program.record[5] >= 0 and (np.diff(program.outs) == 1).all()
    native = jit.compile(schedule, opt=0)
    for x in np.random.default_rng(6).uniform(-2, 2, (4, 3)):
        want = np.empty(program.n_out)
        native.point(x.ctypes.data, want.ctypes.data, want.ctypes.data + 8)
        for got in _all_entries(program, x):
            assert _same(got, want)


def test_outputs_that_are_inputs_or_constants_and_a_program_without_steps():
    g = Graph()
    x, y = g.var("x"), g.var("y")
    c = g.const(2.5)
    s = g.make("mul", x, y)
    schedule = Schedule.build(g, [y, c, s, x], [x, y])
    program = jit.stitch(schedule)
    for got in _all_entries(program, np.array([3.0, -4.0])):
        assert got.tolist() == [-4.0, 2.5, -12.0, 3.0]
    empty = jit.stitch(Schedule.build(g, [x, c], [x, y]))
    for got in _all_entries(empty, np.array([7.0, 1.0])):
        assert got.tolist() == [7.0, 2.5]


SPECIAL = [0.0, -0.0, 1.0, -1.0, 0.5, 2.0, -3.5, 1e300, -1e-300, math.inf, -math.inf, math.nan]


@property_test(30)
@given(expressions(max_depth=4))
def test_random_expressions_give_the_bits_of_compiled_code(text):
    e = symad.parse(text, Graph())
    if not e.variables:
        return
    schedule = e.compile(backend="python").value_grad_program().schedule
    program = jit.stitch(schedule)
    rows = np.random.default_rng(5).uniform(-3, 3, (8, len(e.variables)))
    rows[0, 0], rows[1, -1] = math.inf, -0.0
    with np.errstate(all="ignore"):
        out = np.empty((len(rows), program.n_out))
        program.batch(rows.ctypes.data, out.ctypes.data, len(rows))
        assert _same(out, _native_batch(schedule, rows)), text


def test_the_code_is_position_independent_and_built_before_mapping():
    schedule = _schedule("sin(x)*y + exp(x - y)/(1 + x^2)")
    library = jit._load_stencils()[0]
    stencil, operands, _, _ = stitching.layout(schedule, library)
    a, b = stitching.body(library, stencil, operands), stitching.body(library, stencil, operands)
    assert a.tobytes() == b.tobytes()
    assert a[int(library.length[stencil].sum())] == 0xC3  # the body returns after its last stencil


def test_a_tampered_stencil_library_is_not_loaded(tmp_path, monkeypatch):
    """The stencils are kept in the code cache under its trust rules: a changed entry is not run
    (the stencils are compiled again instead)."""
    good = jit.stencil_objects(compile_missing=True)[0]  # the machine's copy (compiled once)
    folder = tmp_path / "cache"
    monkeypatch.setattr(cache, "_dir", [folder])
    name = jit._disk_name(jit._stencils_key(), jit.STENCIL_OPT, "stencils")
    cache.store(name, good, folder)
    assert cache.load(name, folder) == good
    path = folder / f"{name}.o"
    blob = bytearray(path.read_bytes())
    blob[-100] ^= 0xFF  # one byte of machine code changed
    path.write_bytes(bytes(blob))
    os.chmod(path, 0o600)
    assert cache.load(name, folder) is None
    assert jit.stencil_objects(compile_missing=False) is None  # not trusted: not used


def test_the_tables_read_back_as_the_parsed_library():
    parsed = stencils.parse(jit.stencil_objects(compile_missing=True)[0])
    read = stencils.from_tables(stencils.tables(parsed))
    for field in ("ops", "calls", "data"):
        assert getattr(read, field) == getattr(parsed, field)
    for field in ("variants", "blob", "start", "length", "rel_start", "rel_count", "rel_offset", "rel_kind",
                  "rel_arg", "rel_addend", "arity"):
        a, b = getattr(parsed, field), getattr(read, field)
        assert a.dtype == b.dtype and a.shape == b.shape and np.array_equal(a, b), field
    with pytest.raises(stencils.StencilError, match="unreadable stencil tables"):
        stencils.from_tables(stencils.tables(parsed)[:-1])  # the data cut short
    with pytest.raises(stencils.StencilError, match="unreadable stencil tables"):
        stencils.from_tables(b"\x10" + bytes(7) + b'{"format": "other"}')


def test_a_process_with_the_tables_in_the_cache_stitches_without_parsing_the_object_code(tmp_path, monkeypatch):
    """The first process to parse the stencils keeps their tables in the code cache; a later one
    reads them (a fraction of a millisecond, where parsing took tens), and its code computes the
    same bits; tables changed on disk are not trusted, and the object code is parsed instead."""
    objects = jit.stencil_objects(compile_missing=True)
    folder = tmp_path / "cache"
    monkeypatch.setattr(cache, "_dir", [folder])
    cache.store(jit._disk_name(jit._stencils_key(), jit.STENCIL_OPT, "stencils"), objects[0], folder)
    cache.store(jit._disk_name(_entries_key(), 2), objects[1], folder)
    parses = []
    real_parse = stencils.parse
    monkeypatch.setattr(stencils, "parse", lambda obj: parses.append(1) or real_parse(obj))
    monkeypatch.setattr(jit, "_stencils", [])
    assert jit.stencils_ready() and parses == [1]  # parsed once, the tables kept
    assert cache.load(jit._tables_name(), folder) is not None
    monkeypatch.setattr(jit, "_stencils", [])
    assert jit.stencils_ready() and parses == [1]  # read from the tables
    schedule = _schedule("sin(x)*y + exp(x - y)/(1 + x^2)")
    program = jit.stitch(schedule)
    x = np.array([0.3, -1.7])
    want = symad.parse("sin(x)*y + exp(x - y)/(1 + x^2)", Graph()).compile(backend="python").value_and_grad(x)
    got = _all_entries(program, x)[0]
    assert got.tobytes() == np.array([want[0], *want[1]]).tobytes()
    path = folder / f"{jit._tables_name()}.o"
    changed = bytearray(path.read_bytes())
    changed[-1] ^= 0xFF
    path.write_bytes(bytes(changed))
    os.chmod(path, 0o600)
    monkeypatch.setattr(jit, "_stencils", [])
    assert jit.stencils_ready() and parses == [1, 1]  # not trusted: parsed again


def _entries_key() -> str:
    return stencils.entries_ir(jit.fastcall.array_data_offset())


def test_unknown_relocations_are_refused():
    with pytest.raises(stencils.StencilError):
        stencils.parse(b"not an object file")


def test_the_executable_pages_hold_the_code():
    program = jit.stitch(_schedule("x*y + 1"))
    assert program.image.base and elf.supported()


def test_a_running_sum_waits_in_a_register_and_gives_the_same_bits():
    """Each partial sum of a written-out sum is kept in the KEEP register while the next term is
    computed, and read from there (a chain's links never go through memory)."""
    n = 50
    schedule = _schedule("+".join(f"(x{k}-{k})^2*exp(x{k})" for k in range(n)))
    library = jit._load_stencils()[0]
    stencil, operands, _, _ = stitching.layout(schedule, library, block_outputs=False)
    arity = np.array([len(args) for _, _, args in schedule.steps])
    sources, keep = stitching.registers(operands, arity, operands[:, 3], int(operands.max()) + 1)
    assert keep.sum() >= n - 2 and (sources == stencils.KEEP).sum() >= n - 2
    # a KEEP read is of the last kept result before it
    for i in np.flatnonzero((sources == stencils.KEEP).any(axis=1)):
        last = np.flatnonzero(keep[:i])[-1]
        assert operands[last, 3] in operands[i, :3]
    program = jit.stitch(schedule)
    rows = np.random.default_rng(9).uniform(-2, 2, (4, n))
    out = np.empty((4, program.n_out))
    program.batch(rows.ctypes.data, out.ctypes.data, 4)
    assert _same(out, _native_batch(schedule, rows))


def test_a_large_program_runs_stitched_code_from_its_first_call(monkeypatch):
    """Under ``auto``, a program past NATIVE_SYNC_OPS is served by stitched code at once (no
    instructions first), with the Python backend's numbers."""
    from symad.runtime import policy

    monkeypatch.setattr(policy, "NATIVE_SYNC_OPS", 10)
    text = "+".join(f"(1-x{i})^2 + 100*(x{i + 1}-x{i}^2)^2" for i in range(6))
    f = symad.parse(text, Graph()).compile()
    x = np.linspace(-1, 1, len(f.variables))
    value, grad = f.value_and_grad(x)
    tiers = f._value_grad
    assert tiers.vm is None and isinstance(tiers.program.native, stitching.StitchedProgram)
    want_value, want_grad = symad.parse(text, Graph()).compile(backend="python").value_and_grad(x)
    assert value == want_value and grad.tolist() == want_grad.tolist()
    batch = np.random.default_rng(2).uniform(-1, 1, (5, len(f.variables)))
    got_values, got_grads = f.value_and_grad(batch)
    want_values, want_grads = symad.parse(text, Graph()).compile(backend="python").value_and_grad(batch)
    assert _same(got_values, want_values) and _same(got_grads, want_grads)


def test_the_policy_stitches_large_programs_once_the_stencils_are_ready(monkeypatch):
    from symad.runtime import policy

    assert policy.stitched(policy.NATIVE_SYNC_OPS + 1)
    assert not policy.stitched(policy.NATIVE_SYNC_OPS)  # small programs: -O2 code as before
    assert not policy.stitched(policy.STITCH_MAX_OPS + 1)
    import symad.native

    monkeypatch.setattr(symad.native, "stencils_ready", lambda: False)  # stencils still compiling: not yet
    assert not policy.stitched(policy.NATIVE_SYNC_OPS + 1)


def test_processes_started_together_compile_the_stencils_once(tmp_path, monkeypatch):
    """The builder process takes a lock file in the cache folder; a second one finding it taken ends
    without compiling (ten processes started at once on a machine without the stencils ran ten
    compiles of seconds each)."""
    monkeypatch.setattr(cache, "set_cache_dir", lambda folder: None)
    calls = []
    monkeypatch.setattr(build_stencils.jit, "stencil_objects", lambda compile_missing: calls.append(1))
    with open(tmp_path / build_stencils.LOCK_NAME, "a") as held:
        fcntl.flock(held, fcntl.LOCK_EX | fcntl.LOCK_NB)
        build_stencils.build(str(tmp_path))
        assert calls == []
    build_stencils.build(str(tmp_path))
    assert calls == [1]


def test_a_relocation_of_a_kind_the_stitcher_cannot_patch_is_refused():
    """The tables are read with NumPy, not relocation by relocation: a relocation of another type
    (a 64-bit absolute address, R_X86_64_64) still makes the object refused, by its stencil's name."""
    import struct

    obj = bytearray(jit.stencil_objects(compile_missing=True)[0])
    assert stencils.parse(bytes(obj)).rel_kind.size  # as compiled: read
    shoff, = struct.unpack_from("<Q", obj, 40)
    shnum, = struct.unpack_from("<H", obj, 60)
    headers = [struct.unpack_from("<IIQQQQIIQQ", obj, shoff + 64 * k) for k in range(shnum)]
    rela = next(h for h in headers if h[1] == 4 and headers[h[7]][2] & 0x4)  # relocations of code
    info, = struct.unpack_from("<Q", obj, rela[4] + 8)
    struct.pack_into("<Q", obj, rela[4] + 8, (info >> 32) << 32 | 1)
    with pytest.raises(stencils.StencilError, match="relocation type 1"):
        stencils.parse(bytes(obj))
