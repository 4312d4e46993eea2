"""The native (LLVM) backend gives the same numbers as the Python backend."""

import math

import numpy as np
import pytest

from symad import Graph, SymadError, parse
from symad.core.ops import OPS
from symad.native import codegen, fastcall
from symad.native import ir as llvm_ir
from symad.native import jit as native
from symad.runtime import blocks, policy
from symad.schedule import schedule

pytestmark = pytest.mark.skipif(not native.available(), reason="llvmlite not installed")

EXPRESSIONS = [
    "(x+y)+x*(x+y)",
    "sin(x)^2/sqrt(1+y) + cos(x*y) - tan(x/3)",
    "asin(x/4) + acos(y/4) + atan(x*y) + atan2(y, x)",
    "sinh(x/2) + cosh(y/3) + tanh(x*y) + exp(-x^2) + log(1 + y^2) + log(x^2 + 1, 3)",
    "abs(x - y) + sign(x) + step(y) + min(x, y) + max(x, 2*y) + x^-2 + y^3 + x^4 + y^-3 + x^y",
    "100*(y-x^2)^2+(1-x)^2",
    "log1p(x^2) + expm1(y/3) + sigmoid(x*y) + softplus(3*x) + log_sigmoid(y - x) + logaddexp(x, 2*y)",
    "erf(x/2) + erfc(y) + hypot(x, y) + cbrt(x*y) + asinh(x) + acosh(2 + y^2) + atanh(x/(4 + y^2))",
    "floor(x) + ceil(y) + round(x*y) + logsumexp(x, y, x*y) + clip(x, -1, y) + sinc(x*y)",
    "where(x < y and not (x >= 1), sqrt(y - x), x^2) + (x <= y or x > 2*y) + (x == y) + (x != 1)"
    " + (if 0 < x < y then log(x) else -y)",
    "lgamma(1 + x^2) + digamma(2 + y^2) + polygamma(1, 1 + x^2) + gamma(1 + y^2/4) + ndtr(x) + log_ndtr(y)"
    " + logit(sigmoid(x)) + xlogy(x, 1 + y^2) + xlog1py(y, x^2)",
    "betaln(1 + x^2, 2 + y^2) + digamma_diff(1 + y^2, x^2) + beta(x^2, 0.5)",
]


def every_op_is_covered():
    text = " ".join(EXPRESSIONS)
    return [op for op, spec in OPS.items() if spec.arity and op not in ("add", "sub", "mul", "div", "neg", "pow")
            and (op + "(" if spec.kind == "call" else f" {spec.symbol.strip()} ") not in text]


def test_expressions_cover_every_function():
    assert every_op_is_covered() == []


@pytest.mark.parametrize("text", EXPRESSIONS)
def test_native_equals_python_bit_for_bit_on_points(text):
    g = Graph()
    e = parse(text, g)
    fn, fp = e.compile(backend="native"), e.compile(backend="python")
    rng = np.random.default_rng(7)
    for p in rng.uniform(-3, 3, size=(200, len(e.variables))):
        vn, gn = fn.value_and_grad(p)
        vp, gp = fp.value_and_grad(p)
        np.testing.assert_array_equal(np.array([vn, *gn]), np.array([vp, *gp]))


@pytest.mark.parametrize("text", EXPRESSIONS)
def test_chunked_native_code_gives_the_same_numbers(text, monkeypatch):
    """Split into functions of 2 operations (values passed through the stack array), -O2 code
    computes exactly what the Python backend does (chunked by the same plan, and unchunked),
    at points and over a batch."""
    monkeypatch.setattr(schedule, "CHUNK_OPS", 2)
    monkeypatch.setattr(native, "_cache", {})
    e = parse(text, Graph())
    program = e.compile(backend="native").value_grad_program()
    assert "@chunk1" in llvm_ir.module_ir(program.schedule, chunked=True)
    fp = e.compile(backend="python")
    assert "def chunk1(" in fp.value_grad_program().source
    monkeypatch.setattr(schedule, "CHUNK_OPS", 1000)
    straight = parse(text, Graph()).compile(backend="python")
    assert "def chunk" not in straight.value_grad_program().source
    pts = np.random.default_rng(11).uniform(-3, 3, size=(50, len(e.variables)))
    for p in pts:
        vp, gp = fp.value_and_grad(p)
        np.testing.assert_array_equal(program.point(p), np.array([vp, *gp]))
        np.testing.assert_array_equal(straight.value_grad_program().point(p), np.array([vp, *gp]))
    vp, gp = fp.value_and_grad(pts)
    np.testing.assert_array_equal(program.batch(pts), np.column_stack([vp, gp]))


@pytest.mark.parametrize("text", EXPRESSIONS)
def test_native_batch_matches_numpy_batch(text):
    g = Graph()
    e = parse(text, g)
    pts = np.random.default_rng(3).uniform(-3, 3, size=(1000, len(e.variables)))
    vn, gn = e.compile(backend="native").value_and_grad(pts)
    vp, gp = e.compile(backend="python").value_and_grad(pts)
    np.testing.assert_array_equal(vn, vp)
    np.testing.assert_array_equal(gn, gp)


@pytest.mark.parametrize("threads", [2, 3])
def test_large_batches_are_split_across_threads(monkeypatch, threads):
    """Parts of uneven size (1001 points in 2 or 3 parts), rows of 3 inputs and 4 outputs:
    each part reads and writes its own rows, and the whole equals one pass."""
    monkeypatch.setattr(blocks, "PARALLEL_MIN_ROWS", 10)
    monkeypatch.setattr(blocks, "THREADS", threads)
    monkeypatch.setattr(blocks, "_pool", [])
    e = parse("100*(y-x^2)^2+(1-x)^2 + z*x", Graph())
    pts = np.random.default_rng(1).normal(size=(1001, 3))
    program = e.compile(backend="native").value_grad_program()
    split = program.batch(pts)
    assert blocks._pool and blocks._pool[0][0] == threads
    whole = np.empty_like(split)
    program.native.batch(pts.ctypes.data, whole.ctypes.data, len(pts))
    np.testing.assert_array_equal(split, whole)
    vp, gp = e.compile(backend="python").value_and_grad(pts)
    np.testing.assert_allclose(split, np.column_stack([vp, gp]), rtol=1e-14)
    blocks._pool[0][1].shutdown()


@pytest.mark.parametrize("text, point, expected", [
    ("1/x", {"x": 0.0}, math.inf),
    ("log(x)", {"x": 0.0}, -math.inf),
    ("log(x)", {"x": -1.0}, math.nan),
    ("sqrt(x)", {"x": -1.0}, math.nan),
    ("x^y", {"x": -8.0, "y": 1 / 3}, math.nan),
    ("x^y", {"x": 0.0, "y": 0.0}, 1.0),
    ("exp(x)", {"x": 1000.0}, math.inf),
    ("min(x, y)", {"x": math.nan, "y": 1.0}, math.nan),
    ("max(x, y)", {"x": 1.0, "y": math.nan}, math.nan),
    ("sign(x)", {"x": math.nan}, math.nan),
    ("step(x)", {"x": 0.0}, 0.5),
    ("sign(x)", {"x": 0.0}, 0.0),
])
def test_ieee_semantics_match(text, point, expected):
    g = Graph()
    e = parse(text, g)
    for backend in ("native", "python"):
        value = e.compile(backend=backend).value(point)
        assert (math.isnan(value) and math.isnan(expected)) or value == expected, backend


def test_big_programs_tier_up_in_the_background(monkeypatch):
    monkeypatch.setattr(policy, "NATIVE_SYNC_OPS", 10)
    n = 30
    text = "+".join(f"100*(x{i+1}-x{i}^2)^2+(1-x{i})^2" for i in range(1, n))
    e = parse(text, Graph())
    f = e.compile(backend="auto")
    program = f.value_grad_program()
    x = np.linspace(-1, 1, n)
    first = f.value_and_grad(x)  # served by Python or native, whichever is ready
    program.wait_native()
    assert program.native is not None
    second = f.value_and_grad(x)
    assert first[0] == second[0] and np.array_equal(first[1], second[1])


def test_compiled_code_is_cached_by_structure():
    a = parse("sin(x)*y + 100*(y-x^2)^2 + cos(x*y)^3", Graph()).compile(backend="native").value_grad_program()
    b = parse("sin(x)*y + 100*(y-x^2)^2 + cos(x*y)^3", Graph()).compile(backend="native").value_grad_program()
    assert a.schedule.key == b.schedule.key and a.native is b.native


def test_unknown_backend():
    with pytest.raises(SymadError, match="backend must be one of"):
        parse("x", Graph()).compile(backend="gpu")


def test_native_call_reads_the_array_in_place_and_agrees_with_every_other_path():
    """Single points of contiguous float64 arrays go straight to ``call``, which reads the
    array's data pointer from the array object; every other form of point takes the
    general path.  All give the same numbers, and each result is a new array."""
    assert fastcall.array_data_offset() is not None
    e = parse("sin(x)*y^3 + x/(1+z^2)", Graph())
    f = e.compile(backend="native")
    program = f.value_grad_program()
    assert program.call is not None
    base = np.array([0.3, -1.2, 2.5, 9.0, 9.0, 9.0])
    want_v, want_g = e.compile(backend="python").value_and_grad(base[:3])
    forms = {
        "contiguous": base[:3].copy(),
        "row of a matrix": np.vstack([base[:3], base[3:]])[0],
        "strided": np.array([0.3, 0.0, -1.2, 0.0, 2.5, 0.0])[::2],
        "reversed": np.array([2.5, -1.2, 0.3])[::-1],
        "read-only": np.frombuffer(base[:3].tobytes()),
        "big-endian": base[:3].astype(">f8"),
        "list": [0.3, -1.2, 2.5],
        "dict": {"x": 0.3, "y": -1.2, "z": 2.5},
    }
    grads = []
    for name, point in forms.items():
        v, g = f.value_and_grad(point)
        assert v == want_v and np.array_equal(g, want_g), name
        assert f.value(point) == want_v, name
        grads.append(g)
    assert len({id(g) for g in grads}) == len(grads)
    grads[0][:] = 0.0  # a caller may keep or change a result: later calls are unaffected
    assert np.array_equal(f.grad(forms["contiguous"]), want_g)
    np.testing.assert_array_equal(program.point(forms["contiguous"]), np.array([want_v, *want_g]))
    for name in ("strided", "reversed", "big-endian"):  # the program converts what it cannot read in place
        np.testing.assert_array_equal(program.point(forms[name]), np.array([want_v, *want_g]), err_msg=name)
    with pytest.raises(SymadError):
        program.point(np.zeros(2))


def test_native_call_with_one_output_and_no_inputs():
    f = parse("2^3 + pi", Graph()).compile(backend="native")
    assert f.value(np.empty(0)) == 8 + math.pi
    v, g = f.value_and_grad(np.empty(0))
    assert v == 8 + math.pi and g.shape == (0,)


@pytest.fixture
def disk_cache(tmp_path, monkeypatch):
    from symad.native import cache as codecache
    monkeypatch.setattr(codecache, "_dir", [])
    monkeypatch.setenv("SYMAD_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(native, "_cache", {})
    yield tmp_path / "cache"
    monkeypatch.setattr(codecache, "_dir", [])


def test_disk_cache_is_off_by_default(monkeypatch):
    from symad.native import cache as codecache
    monkeypatch.setattr(codecache, "_dir", [])
    monkeypatch.delenv("SYMAD_CACHE_DIR", raising=False)
    assert codecache.cache_dir() is None
    assert codecache.load("anything") is None


def test_disk_cache_reuses_machine_code_across_processes(disk_cache, monkeypatch):
    """A second compile of the same program (as in a new process: the in-memory cache emptied)
    loads the stored object code without generating any, and computes the same numbers."""
    e = parse("sin(x)*y^3 + x/(1+y^2)", Graph())
    schedule = e.compile(backend="python").value_grad_program().schedule
    first = native.compile(schedule, opt=2)
    entries = list(disk_cache.glob("*.o"))
    assert len(entries) == 1
    monkeypatch.setattr(native, "_cache", {})

    def no_codegen(*args):
        raise AssertionError("compiled again")

    monkeypatch.setattr(codegen, "object_code", no_codegen)
    second = native.compile(schedule, opt=2)
    assert second is not first
    x, a, b = np.array([0.3, -1.2]), np.empty(2), np.empty(2)
    assert first.call(x, a) == second.call(x, b) and np.array_equal(a, b)


def test_a_damaged_cache_entry_is_recompiled_not_loaded(disk_cache, monkeypatch):
    e = parse("exp(x)*y - x", Graph())
    schedule = e.compile(backend="python").value_grad_program().schedule
    want = native.compile(schedule, opt=0)
    (entry,) = disk_cache.glob("*.o")
    blob = entry.read_bytes()
    entry.write_bytes(blob[:-40] + bytes(40))  # damaged contents, same length
    monkeypatch.setattr(native, "_cache", {})
    compiled = []
    real = codegen.object_code
    monkeypatch.setattr(codegen, "object_code", lambda *a: compiled.append(1) or real(*a))
    got = native.compile(schedule, opt=0)
    assert compiled == [1]
    x, a, b = np.array([0.5, 2.0]), np.empty(2), np.empty(2)
    assert want.call(x, a) == got.call(x, b) and np.array_equal(a, b)
    assert entry.read_bytes() == blob  # rewritten whole


def test_prepare_compiles_batch_code_of_small_programs_whose_points_run_in_python(monkeypatch):
    """A small program's points run on Python code in a process that has not loaded the
    interpreter; its batches on native code all the same."""
    import symad.native

    monkeypatch.setattr(symad.native, "interpreter_ready", lambda: False)
    e = parse("x*y + 1", Graph())
    f = e.compile().prepare()
    program = f.value_grad_program()
    assert program.size < policy.NATIVE_MIN_OPS
    assert program.native is not None and program.call is None  # batches native, points in Python
    pts = np.random.default_rng(3).uniform(-2, 2, (policy.NATIVE_BATCH_POINTS, 2))
    v, g = f.value_and_grad(pts)
    np.testing.assert_array_equal(v, pts[:, 0] * pts[:, 1] + 1)
    np.testing.assert_array_equal(g, pts[:, ::-1])


def test_a_small_programs_points_run_on_machine_code_where_the_interpreter_is_loaded():
    """Called as a builtin, machine code beats Python code at every size (x*y + 1: about 0.35
    against 0.7 us a point): a small program runs on it in a process that has loaded the
    interpreter (for a larger program: loading it for a small one would cost more than it saves)."""
    native.interpreter()
    f = parse("x*y + 1", Graph()).compile()
    x = np.array([2.0, 3.0])
    assert f.value_and_grad(x)[0] == 7.0
    assert f._value_grad.vm is not None  # the instructions from the first call
    program = f.prepare().value_grad_program()
    assert program.size < policy.NATIVE_MIN_OPS and type(program.call).__name__ == "builtin_function_or_method"
    value, grad = f.value_and_grad(x)
    assert value == 7.0 and grad.tolist() == [3.0, 2.0]
    # on plain floats its Python code is faster still (no array made): float_function gives it
    assert f.float_function() is program.run_float and f.float_function()(2.0, 3.0) == (7.0, 3.0, 2.0)


@pytest.mark.skipif(__import__("platform").machine() not in ("x86_64", "AMD64"), reason="reads x86-64 assembly")
@pytest.mark.parametrize(("cpu", "avx512", "selecting"), [("haswell", False, "vblendvpd"),
                                                          ("skylake-avx512", True, "{%k")])
def test_selects_compile_without_branches(cpu, avx512, selecting):
    """A branch's condition is data: its value and its adjoints select without jumps, on x86
    without AVX-512 (vector selects: blends; scalar selects sharing a condition would be
    branches, wrong for about every other point of a batch) and with it (masked moves)."""
    import llvmlite.binding as llvm

    llvm.initialize_native_target()
    llvm.initialize_native_asmprinter()
    tm = llvm.Target.from_default_triple().create_target_machine(cpu=cpu, features="", opt=2)
    for term in ("if 0 < x{a} < x{b} then x{a}*x{b} else x{a} - x{b}",  # a condition of two comparisons
                 "where(x{a} > x{b}, sqrt(x{a}^2 + 1), log(1 + x{b}^2))"):  # one, its adjoints guarded
        e = parse(" + ".join("(" + term.format(a=i, b=i + 1) + ")" for i in range(1, 30)), Graph())
        program = e.compile(backend="python").value_grad_program()
        text = llvm_ir.module_ir(program.schedule)
        for size in (program.schedule.size, codegen.QUICK_OPS):  # with LLVM's IR passes, and without
            module = codegen.optimized_module(text, tm, 2, size, avx512=avx512)
            assembly = tm.emit_assembly(module)
            point = assembly[assembly.index("point:"):assembly.index("batch:")]
            jumps = [line.split()[0] for line in point.splitlines() if line.strip().startswith("j")]
            assert jumps == [], (term, size, jumps)
            assert size == codegen.QUICK_OPS or selecting in point


def test_both_select_lowerings_give_the_same_bits(monkeypatch):
    text = " + ".join(f"where(x > y + {k}, sqrt(x + {k}), log(y)) + (if {k} < x < y then {k + 1}*x*y else 1/(x - y))"
                      for k in range(12))
    schedule = parse(text, Graph()).compile(backend="python").value_grad_program().schedule
    assert schedule.size > codegen.QUICK_OPS  # LLVM's IR passes run: the lowerings differ
    pts = np.random.default_rng(5).uniform(-2, 2, (64, 2))
    pts[:4] = [[0.0, 0.0], [-1.0, -1.0], [np.inf, 1.0], [np.nan, 1.0]]
    results = []
    for avx512 in (True, False):
        monkeypatch.setattr(codegen, "host_avx512", lambda avx512=avx512: avx512)
        native.clear_cache()
        code = native.compile(schedule, opt=2)  # from this thread: compiled in this process
        out = np.empty((len(pts), 3))
        code.batch(pts.ctypes.data, out.ctypes.data, len(pts))
        results.append(out)
    native.clear_cache()
    assert np.isfinite(results[0]).mean() > 0.5  # mostly numbers (log of a negative y is nan)
    np.testing.assert_array_equal(results[0].view(np.int64), results[1].view(np.int64))


def test_programs_differing_only_in_unread_inputs_have_their_own_code():
    """sin(x) over (x) and over (x, y): equal steps, but a batch's rows differ in length, so the
    code cache must not hand one the other's machine code (it did: a batch read y as the next x)."""
    from symad import compile as compile_function
    compile_function("sin(x)", variables=["x"], backend="native").value([1.0])
    two = compile_function("sin(x) + 0*y", variables=["x", "y"], backend="native")
    points = np.array([[1.0, 5.0], [2.0, 7.0], [3.0, 9.0]])
    assert np.array_equal(two.value(points), [math.sin(1.0), math.sin(2.0), math.sin(3.0)])
