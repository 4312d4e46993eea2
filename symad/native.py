"""Native backend: the straight-line program as one LLVM function, compiled with llvmlite.

Two entry points are emitted for a schedule: ``point(in, out)`` for one point,
and ``batch(in, out, n)``, one fused loop over ``n`` points in which every
intermediate value stays in registers (no temporary array per node, unlike
NumPy).  No fast-math flags are set, so results follow IEEE arithmetic like the
other backends (``1/0 → inf``, ``log(-1) → nan``); ``sin``, ``exp`` and the like
call the C library, as Python's ``math`` module does.

llvmlite needs no C compiler at run time; compiled machine code is cached in
memory keyed by the program's structural hash, so an expression never compiles
twice in a process.
"""

from __future__ import annotations

import ctypes
import functools
import struct
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .compiler import Schedule

_lock = threading.Lock()
_compile_lock = threading.Lock()
_cache: dict[str, NativeProgram] = {}
_engines: list[Any] = []  # keep execution engines (and their code) alive
_machines: dict[int, Any] = {}
_stats = {"compiles": 0, "seconds": 0.0, "loaded": 0}


def compile_stats() -> dict[str, float]:
    """Native compiles in this process so far: how many, their total seconds, how many loaded from disk."""
    with _lock:
        return dict(_stats)

POINT = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p)
BATCH = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64)
# `call` takes the NumPy arrays themselves and keeps the GIL: converting an array to an
# address in Python (`a.ctypes.data`) costs more than a small program's whole run.
CALL = ctypes.PYFUNCTYPE(ctypes.c_double, ctypes.py_object, ctypes.py_object)


def available() -> bool:
    """Whether llvmlite can be imported (the native backend is optional)."""
    try:
        import llvmlite.binding  # noqa: F401
    except ImportError:
        return False
    return True


_data_offset: list[int | None] = []


def array_data_offset() -> int | None:
    """Where a NumPy array object keeps its data pointer (NumPy's C API ``PyArrayObject``).

    The field follows the object header, whose size depends on how Python was built,
    so it is found by looking, once; None (no ``call`` entry) if it is not where expected.
    """
    if not _data_offset:
        import numpy as np

        probe = np.arange(3.0)
        found = None
        for offset in (16, 32):  # the header of a release build, of a debug build
            if ctypes.c_void_p.from_address(id(probe) + offset).value == probe.ctypes.data:
                found = offset
                break
        _data_offset.append(found)
    return _data_offset[0]


class NativeProgram:
    """Machine code for a schedule.

    * ``point(in_ptr, out0_ptr, rest_ptr)``: output 0 to ``*out0``, output k ≥ 1 to ``rest[k-1]``;
    * ``batch(in_ptr, out_ptr, n)``: ``n`` points, row after row, into rows of ``out``;
    * ``call(x, rest) -> output 0``: the same as ``point`` on the data of two contiguous
      float64 NumPy arrays (``x`` of the inputs, ``rest`` of the other outputs), without
      the cost of taking their addresses in Python; None where unavailable.  The caller
      checks the arrays' dtype, shape and contiguity.
    """

    def __init__(self, point: Callable[..., None], batch: Callable[..., None], call: Callable[..., float] | None,
                 n_in: int, n_out: int):
        self.point, self.batch, self.call = point, batch, call
        self.n_in, self.n_out = n_in, n_out


def _hex(value: float) -> str:
    """An LLVM double literal with the exact bits of ``value``."""
    return f"0x{struct.unpack('<Q', struct.pack('<d', value))[0]:016X}"


# LLVM IR templates per op; {0}, {1} are the arguments, {t} a fresh name prefix.
# Ops not listed call the C library function of the same name (tan, asin, ...).
_INTRINSICS = {"pow": "llvm.pow.f64", "sin": "llvm.sin.f64", "cos": "llvm.cos.f64",
               "exp": "llvm.exp.f64", "log": "llvm.log.f64", "sqrt": "llvm.sqrt.f64",
               "abs": "llvm.fabs.f64"}
_INLINE = {
    "add": "{r} = fadd double {0}, {1}",
    "sub": "{r} = fsub double {0}, {1}",
    "mul": "{r} = fmul double {0}, {1}",
    "div": "{r} = fdiv double {0}, {1}",
    "neg": "{r} = fneg double {0}",
    # min/max propagate nan like NumPy: an unordered pair yields a + b (a nan)
    "min": ("{t}u = fcmp uno double {0}, {1}\n{t}n = fadd double {0}, {1}\n"
            "{t}c = fcmp ole double {0}, {1}\n{t}s = select i1 {t}c, double {0}, double {1}\n"
            "{r} = select i1 {t}u, double {t}n, double {t}s"),
    "max": ("{t}u = fcmp uno double {0}, {1}\n{t}n = fadd double {0}, {1}\n"
            "{t}c = fcmp oge double {0}, {1}\n{t}s = select i1 {t}c, double {0}, double {1}\n"
            "{r} = select i1 {t}u, double {t}n, double {t}s"),
    # sign: -1, 0, 1 (nan stays nan); step: 0, 0.5, 1 (nan stays nan)
    "sign": ("{t}p = fcmp ogt double {0}, 0.0\n{t}a = select i1 {t}p, double 1.0, double 0.0\n"
             "{t}n = fcmp olt double {0}, 0.0\n{t}b = select i1 {t}n, double -1.0, double {t}a\n"
             "{t}u = fcmp uno double {0}, {0}\n{r} = select i1 {t}u, double {0}, double {t}b"),
    "step": ("{t}p = fcmp ogt double {0}, 0.0\n{t}a = select i1 {t}p, double 1.0, double 0.5\n"
             "{t}n = fcmp olt double {0}, 0.0\n{t}b = select i1 {t}n, double 0.0, double {t}a\n"
             "{t}u = fcmp uno double {0}, {0}\n{r} = select i1 {t}u, double {0}, double {t}b"),
}


QUICK_OPS = 200  # up to this size LLVM's IR passes gain nothing measurable: only instruction selection runs


CHUNK_OPS = 1000  # at -O2, a program of over twice this many operations becomes functions of this many


def _steps(schedule: Schedule, steps: list, names: dict[int, str], p: str, declared: dict[str, int]) -> list[str]:
    """IR lines for ``steps``; ``names`` maps the nodes already available to IR values (extended)."""
    from .compiler import small_power
    from .ops import OPS

    lines: list[str] = []
    for node, op, args in steps:
        vals = [names[a] for a in args]
        r = f"%{p}v{node}"
        k = None if all(a in schedule.consts for a in args) else small_power(schedule.consts, op, args)
        if k is not None:
            prev = vals[0]
            for j in range(abs(k) - 1):
                cur = r if k > 0 and j == abs(k) - 2 else f"%{p}v{node}m{j}"
                lines.append(f"  {cur} = fmul double {prev}, {vals[0]}")
                prev = cur
            if k < 0:
                lines.append(f"  {r} = fdiv double 1.0, {prev}")
        elif op in _INLINE:
            lines.extend("  " + ln for ln in _INLINE[op].format(*vals, r=r, t=f"%{p}t{node}").split("\n"))
        else:
            fn = _INTRINSICS.get(op, op)
            declared[fn] = OPS[op].arity
            params = ", ".join(f"double {v}" for v in vals)
            lines.append(f"  {r} = call double @{fn}({params})")
        names[node] = r
    return lines


def _load(lines: list[str], name: str, base: str, index: int) -> None:
    lines.append(f"  {name}a = getelementptr double, ptr {base}, i64 {index}")
    lines.append(f"  {name} = load double, ptr {name}a")


def _store(lines: list[str], value: str, base: str, index: int, tag: str) -> None:
    lines.append(f"  %{tag} = getelementptr double, ptr {base}, i64 {index}")
    lines.append(f"  store double {value}, ptr %{tag}")


def _store_outputs(lines: list[str], values: list[str], out0: str, rest: str, p: str) -> None:
    """Output 0 to ``*out0``, output k ≥ 1 to ``rest[k-1]``."""
    for k, value in enumerate(values):
        _store(lines, value, rest if k else out0, k - 1 if k else 0, f"{p}o{k}")


def _body(schedule: Schedule, p: str, inp: str, out0: str, rest: str, declared: dict[str, int]) -> list[str]:
    """IR lines computing the outputs at ``inp`` (see :func:`_store_outputs`); SSA names start with ``%{p}``."""
    names: dict[int, str] = {node: _hex(c) for node, c in schedule.consts.items()}
    lines: list[str] = []
    for k, node in enumerate(schedule.inputs):
        _load(lines, f"%{p}v{node}", inp, k)
        names[node] = f"%{p}v{node}"
    lines += _steps(schedule, schedule.steps, names, p, declared)
    _store_outputs(lines, [names[node] for node in schedule.outputs], out0, rest, p)
    return lines


def _chunked_point(schedule: Schedule, declared: dict[str, int]) -> tuple[list[str], list[str]]:
    """``point``'s body as calls to functions of ``CHUNK_OPS`` operations each, and their definitions.

    LLVM's instruction selection and register allocation take time and memory growing
    faster than linearly with the size of one basic block; in pieces, both grow
    linearly.  Values a later piece needs pass through a stack array.
    """
    steps = schedule.steps
    chunks = [steps[i:i + CHUNK_OPS] for i in range(0, len(steps), CHUNK_OPS)]
    chunk_of = {node: c for c, chunk in enumerate(chunks) for node, _, _ in chunk}
    position = {node: k for k, node in enumerate(schedule.inputs)}
    slot: dict[int, int] = {}
    for c, chunk in enumerate(chunks):
        for _, _, args in chunk:
            for a in args:
                if chunk_of.get(a, c) < c:
                    slot.setdefault(a, len(slot))
    for node in schedule.outputs:
        if node in chunk_of:
            slot.setdefault(node, len(slot))
    definitions: list[str] = []
    for c, chunk in enumerate(chunks):
        names: dict[int, str] = {node: _hex(v) for node, v in schedule.consts.items()}
        lines: list[str] = []
        for _, _, args in chunk:
            for a in args:
                if a in names or chunk_of.get(a) == c:
                    continue
                names[a] = f"%v{a}"
                _load(lines, names[a], "%s" if a in slot else "%in", slot[a] if a in slot else position[a])
        lines += _steps(schedule, chunk, names, "", declared)
        for node, _, _ in chunk:
            if node in slot:
                _store(lines, names[node], "%s", slot[node], f"q{node}")
        definitions.append(f"define internal void @chunk{c}(ptr noalias %in, ptr noalias %s) noinline {{\n"
                           "entry:\n" + "\n".join(lines) + "\n  ret void\n}\n")
    body = [f"  %s = alloca [{max(1, len(slot))} x double]"]
    body += [f"  call void @chunk{c}(ptr %in, ptr %s)" for c in range(len(chunks))]
    values = []
    for k, node in enumerate(schedule.outputs):
        if node in schedule.consts:
            values.append(_hex(schedule.consts[node]))
        else:
            values.append(f"%r{k}")
            _load(body, values[-1], "%s" if node in slot else "%in", slot[node] if node in slot else position[node])
    _store_outputs(body, values, "%out0", "%rest", "")
    return body, definitions


def _module_ir(schedule: Schedule, chunked: bool = False) -> str:
    """LLVM IR text of ``point(in, out)`` and ``batch(in, out, n)`` (written directly: fast).

    ``chunked`` splits a large ``point`` into functions (see :func:`_chunked_point`).
    """
    declared: dict[str, int] = {}
    definitions: list[str] = []
    if chunked and schedule.size > 2 * CHUNK_OPS:
        point, definitions = _chunked_point(schedule, declared)
    else:
        point = _body(schedule, "", "%in", "%out0", "%rest", declared)
    # A small body is repeated inside the loop, so that no IR pass is needed to inline
    # it; a large one is called, and LLVM's passes inline it if worthwhile (one copy of
    # a large body keeps compile time down).
    if schedule.size <= QUICK_OPS:
        loop_body = _body(schedule, "L", "%pi", "%po", "%pr", declared)
    else:
        loop_body = ["  call void @point(ptr %pi, ptr %po, ptr %pr)"]
    decls = "".join(f"declare double @{fn}({', '.join(['double'] * n)})\n" for fn, n in declared.items())
    n_in, n_out = len(schedule.inputs), len(schedule.outputs)
    return (f"{decls}\n" + "\n".join(definitions) + "\n"
            "define void @point(ptr noalias %in, ptr noalias %out0, ptr noalias %rest) {\nentry:\n"
            + "\n".join(point) + "\n  ret void\n}\n\n"
            "define void @batch(ptr noalias %in, ptr noalias %out, i64 %n) {\n"
            "entry:\n  %any = icmp sgt i64 %n, 0\n  br i1 %any, label %loop, label %done\n"
            "loop:\n  %i = phi i64 [0, %entry], [%next, %loop]\n"
            f"  %ri = mul i64 %i, {n_in}\n  %ro = mul i64 %i, {n_out}\n"
            "  %pi = getelementptr double, ptr %in, i64 %ri\n"
            "  %po = getelementptr double, ptr %out, i64 %ro\n"
            "  %pr = getelementptr double, ptr %po, i64 1\n"
            + "\n".join(loop_body) + "\n"
            "  %next = add i64 %i, 1\n  %more = icmp slt i64 %next, %n\n"
            "  br i1 %more, label %loop, label %done\n"
            "done:\n  ret void\n}\n" + _call_ir(n_out))


def _call_ir(n_out: int) -> str:
    """``call(x, rest)``: ``point`` on the data pointers of two NumPy array objects (see
    :func:`array_data_offset`); returns output 0.  With one output, ``rest`` is not read."""
    offset = array_data_offset()
    if offset is None:
        return ""
    rest = (f"  %ra = getelementptr i8, ptr %ro, i64 {offset}\n  %r = load ptr, ptr %ra\n" if n_out > 1 else "")
    return ("\ndefine double @call(ptr %xo, ptr %ro) {\nentry:\n"
            f"  %xa = getelementptr i8, ptr %xo, i64 {offset}\n  %x = load ptr, ptr %xa\n{rest}"
            "  %v = alloca double\n"
            f"  call void @point(ptr %x, ptr %v, ptr {'%r' if n_out > 1 else 'null'})\n"
            "  %value = load double, ptr %v\n  ret double %value\n}\n")


@functools.lru_cache(maxsize=1)
def _host_cpu() -> tuple[str, str]:
    """This machine's CPU name and features, as LLVM names them (asked once: it costs 0.5 ms)."""
    import llvmlite.binding as llvm

    llvm.initialize_native_target()
    return llvm.get_host_cpu_name(), llvm.get_host_cpu_features().flatten()


def _target_machine_for(opt: int) -> Any:
    import llvmlite.binding as llvm

    with _lock:
        if opt not in _machines:
            llvm.initialize_native_target()
            llvm.initialize_native_asmprinter()
            target = llvm.Target.from_default_triple()
            # This machine's own instruction set (AVX and the like): code runs where it is compiled
            # (the disk cache keys its entries by CPU).  Without fast-math flags LLVM fuses no
            # multiply-add, so the numbers stay those of the other backends.
            cpu, features = _host_cpu()
            _machines[opt] = target.create_target_machine(cpu=cpu, features=features, opt=opt,
                                                          codemodel="jitdefault")
        return _machines[opt]


def compile_native(schedule: Schedule, opt: int = 2) -> NativeProgram:
    """Machine code for ``schedule`` (cached by its structural hash and ``opt``).

    ``opt=2`` runs LLVM's optimisation pipeline (best code, compile time grows
    faster than linearly with the program; programs of up to ``QUICK_OPS``
    operations skip the IR passes, which gain them nothing); ``opt=0`` only
    selects instructions and allocates registers (fast to build, slower to run).
    """

    key = f"{schedule.key}-O{opt}"
    cached = _cache.get(key)
    if cached is not None:
        return cached
    # llvmlite works in LLVM's one global context, which is not thread-safe: one
    # compile at a time (a background -O2 compile and a foreground one would crash).
    with _compile_lock:
        cached = _cache.get(key)
        return cached if cached is not None else _compile(schedule, opt, key)


def _compile(schedule: Schedule, opt: int, key: str) -> NativeProgram:
    import time

    import llvmlite
    import llvmlite.binding as llvm

    from . import codecache

    started = time.perf_counter()
    tm = _target_machine_for(opt)
    # Chunks cut -O2's memory by a third on large programs at no cost in speed; at -O0
    # the values passed between them through memory would cost a third more time.
    ir = _module_ir(schedule, chunked=opt > 0)
    on_disk = None
    if codecache.cache_dir() is not None:
        on_disk = codecache.key(ir, f"O{opt}", *_host_cpu(),
                                llvmlite.__version__)
    stored = codecache.load(on_disk) if on_disk else None
    if stored is not None:  # machine code from an earlier run: no IR passes, no code generation
        engine = llvm.create_mcjit_compiler(_empty_module(tm), tm)
        engine.add_object_file(llvm.ObjectFileRef.from_data(stored))
    else:
        module = _optimized_module(ir, tm, opt, schedule.size)
        engine = llvm.create_mcjit_compiler(module, tm)
        if on_disk:
            engine.set_object_cache(lambda _module, buffer: codecache.store(on_disk, buffer))
    engine.finalize_object()
    call_address = engine.get_function_address("call")
    program = NativeProgram(POINT(engine.get_function_address("point")),
                            BATCH(engine.get_function_address("batch")),
                            CALL(call_address) if call_address else None,
                            len(schedule.inputs), len(schedule.outputs))
    with _lock:
        _engines.append(engine)
        _cache[key] = program
        _stats["compiles"] += 1
        _stats["loaded"] += stored is not None
        _stats["seconds"] += time.perf_counter() - started
    return program


def _empty_module(tm: Any) -> Any:
    import llvmlite.binding as llvm

    module = llvm.parse_assembly("")
    module.triple, module.data_layout = tm.triple, str(tm.target_data)
    return module


def _optimized_module(ir: str, tm: Any, opt: int, size: int) -> Any:
    """The IR parsed, checked and (at ``opt`` > 0, past ``QUICK_OPS`` operations) optimised."""
    import llvmlite.binding as llvm

    module = llvm.parse_assembly(ir)
    module.triple = tm.triple
    module.data_layout = str(tm.target_data)
    module.verify()
    if opt and size > QUICK_OPS:
        pto = llvm.create_pipeline_tuning_options(speed_level=opt)
        # Pack isomorphic neighbouring operations (the terms of a sum) into vector instructions:
        # a quarter off the run time of a large program, for half as much again compile time.
        pto.slp_vectorization = True
        pb = llvm.create_pass_builder(tm, pto)
        pb.getModulePassManager().run(module, pb)
    return module
