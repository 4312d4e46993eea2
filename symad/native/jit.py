"""Native backend: the straight-line program compiled to machine code with llvmlite.

Three entry points are compiled for a schedule (the IR comes from :mod:`symad.native.ir`):
``point`` for one point, ``batch``, one fused loop over ``n`` points in which every
intermediate value stays in registers (no temporary array per node, unlike NumPy),
and ``call``, ``point`` on NumPy arrays read in place.  No fast-math flags are set,
so results follow IEEE arithmetic like the other backends (``1/0 → inf``,
``log(-1) → nan``); ``sin``, ``exp`` and the like call the C library, as Python's
``math`` module does.

llvmlite needs no C compiler at run time; compiled machine code is cached in
memory keyed by the program's structural hash (the ``CACHE_PROGRAMS`` most recently
used), so an expression compiled again reuses its code, and optionally on disk
(:mod:`symad.native.cache`).  Code found in the disk cache is loaded where it is asked
for, by symad's own loader (:mod:`symad.native.elf`: no LLVM, no lock, no thread).  Compiles
run one at a time, in a thread that a Ctrl-C does not wait for (:mod:`symad.runtime.background`);
background compiles (the pool's tasks) get their object code from the compile worker process
and are abandoned at exit.
"""

from __future__ import annotations

import contextlib
import ctypes
import functools
import hashlib
import sys
import threading
import time
import weakref
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from symad.core import forksafe
from symad.native import cache, codegen, elf, fastcall, ir
from symad.runtime import background
from symad.schedule.schedule import Schedule

if TYPE_CHECKING:  # imported at their first use (_native): code loaded from the disk cache needs none of them
    from symad.native import loop_ir, remote, stencils  # noqa: F401 - the dependencies, for the import-graph checks
    from symad.native import stitcher as stitching
    from symad.schedule.loop_nest import LoopNest, LoopProgram


def _native(name: str) -> Any:
    """The module ``symad.native.<name>`` (``remote``, ``stencils``, ``stitcher``, ``loop_ir``,
    ``lbfgs_ir``), imported at its first use: the compile worker's client (and subprocess), the
    stitcher and the IR writers cost milliseconds to import, which a program loaded from the disk
    cache would spend for nothing."""
    return background.module(f"symad.native.{name}")


_lock = threading.Lock()
_compile_lock = threading.Lock()
# Recently compiled programs, most recent last: an expression compiled again in this
# process reuses its code.  At most CACHE_PROGRAMS are kept (the least recently used
# goes first); a program's code is freed when neither this cache nor a Program holds it.
CACHE_PROGRAMS = 256
_cache: dict[str, Any] = {}  # NativeProgram, RowsProgram; insertion order: least recently used first
_machines: dict[int, Any] = {}
# A fork waits for a compile in flight: LLVM's state is copied whole, never half-changed.
forksafe.hold_across_fork(_compile_lock, _lock)
_engines: weakref.WeakSet = weakref.WeakSet()  # every live execution engine


def _detach_engines() -> None:
    # At exit, engines still alive would be freed while modules are torn down, where
    # llvmlite's own cleanup fails noisily: leave their memory to the ending process.
    for engine in list(_engines):
        engine.detach()


background.when_settled(_detach_engines)
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


@functools.lru_cache(maxsize=1)
def available() -> bool:
    """Whether llvmlite is installed (the native backend is optional).  Found, not imported:
    code loaded from the disk cache runs without it (:mod:`symad.native.elf`)."""
    import importlib.util

    try:
        return importlib.util.find_spec("llvmlite") is not None
    except (ImportError, ValueError):
        return False


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
                 n_in: int, n_out: int, engine: Any = None):
        self.point, self.batch, self.call = point, batch, call
        self.n_in, self.n_out = n_in, n_out
        self.engine = engine  # owns the machine code: freed with the last reference to this object


def _target_machine_for(opt: int) -> Any:
    """The target machine of IR passes and object emission at ``opt`` (one per level, kept)."""
    background.import_compile_modules()
    with _lock:
        if opt not in _machines:
            _machines[opt] = codegen.new_target_machine(opt)
        return _machines[opt]


def compile(schedule: Schedule, opt: int = 2) -> NativeProgram:  # noqa: A001 - the package's one verb
    """Machine code for ``schedule`` (cached by its structural hash and ``opt``).

    ``opt=2`` runs LLVM's optimisation pipeline (best code, compile time grows
    faster than linearly with the program; programs of up to ``codegen.QUICK_OPS``
    operations skip the IR passes, which gain them nothing); ``opt=0`` only
    selects instructions and allocates registers (fast to build, slower to run).
    In an abandonable background thread the object code comes from the compile
    worker process (:mod:`symad.native.remote`), in-process otherwise.
    """
    # Chunks cut -O2's memory by a third on large programs at no cost in speed; at -O0
    # the values passed between them through memory would cost a third more time.
    return _program(f"{schedule.key}-O{opt}",
                    lambda: ir.module_ir(schedule, chunked=opt > 0, data_offset=fastcall.array_data_offset()),
                    opt, schedule.size, cache.cache_dir(), lambda engine: _native_program(engine, schedule),
                    remote=True)


def _native_program(engine: Any, schedule: Schedule) -> NativeProgram:
    call_address = engine.get_function_address("call")
    call = (fast_call(engine) or CALL(call_address)) if call_address else None
    return NativeProgram(POINT(engine.get_function_address("point")), BATCH(engine.get_function_address("batch")),
                         call, len(schedule.inputs), len(schedule.outputs), engine)


def fast_call(engine: Any) -> Any:
    """``call(x, rest) -> output 0`` of machine code whose module carries the builtin entry
    (:func:`symad.native.fastcall.fast_entry_ir`), as a builtin function keeping ``engine``
    alive; None where it cannot be one (the caller then calls ``call`` through ctypes)."""
    return fastcall.bound(engine.get_function_address("fast"), 0, (engine,))


def _program(key: str, text: Callable[[], str], opt: int, size: int, folder: Path | None,
             wrap: Callable[[Any], Any], remote: bool = False) -> Any:
    """The program ``wrap(code)`` of ``key``, machine code of the IR ``text()`` at ``opt``: the one
    in memory; else its object code from the disk cache (``folder``), loaded on this thread
    (:func:`_from_disk`); else compiled, under ``_compile_lock`` (:func:`_compiled_once`), or with
    ``remote`` in a pool task, by the compile worker.  ``size`` (operations) picks LLVM's passes."""
    ir_text = _once(text)  # written once for the lookup and, on a miss, the compile
    found, on_disk = _at_hand(key, ir_text, opt, folder, wrap)
    if found is not None:
        return found

    def build(remote_ok: bool = False) -> Any:
        started = time.perf_counter()
        engine, loaded = _engine(ir_text(), opt, size, remote_ok, folder, on_disk)
        return _remember(key, wrap(engine), loaded, started)

    if remote and background.in_abandonable_thread():
        return build(remote_ok=True)  # takes _compile_lock only to load the code
    return _compiled_once(key, build)


def _at_hand(key: str, text: Callable[[], str], opt: int, folder: Path | None, wrap: Callable[[Any], Any],
             mcjit: bool = False) -> tuple[Any, str | None]:
    """``(program, name)``: the program of ``key`` where it is at hand without a compile, in memory
    or in the disk cache (:func:`_from_disk`, which ``mcjit`` lets load by MCJIT too), else None;
    ``name`` its disk entry's, if worked out."""
    cached = _cached(key)
    if cached is not None:
        return cached, None
    return _from_disk(key, text, opt, folder, wrap, mcjit)


def _once(make: Callable[[], str]) -> Callable[[], str]:
    """``make``, called at most once (its result kept)."""
    made: list[str] = []

    def text() -> str:
        if not made:
            made.append(make())
        return made[0]

    return text


def _from_disk(key: str, text: Callable[[], str], opt: int, folder: Path | None, wrap: Callable[[Any], Any],
               mcjit: bool = False) -> tuple[Any, str | None]:
    """``(program, name)``: the program of ``key`` if its object code is in the disk cache
    (``folder``; the cache's trust rules) and symad's loader takes it, loaded here on the calling
    thread: a file read and relocations, which need neither LLVM nor ``_compile_lock``, so a
    compile in flight (another program's, in the background) does not hold it up.  Else None
    (with ``mcjit``, code the loader refuses is loaded by MCJIT, under the lock).  ``name`` is the
    entry's name, if worked out."""
    if folder is None or not (mcjit or elf.supported()):
        return None, None  # elsewhere MCJIT loads it, under the lock, as a compile does
    started = time.perf_counter()
    name = _disk_name(text(), opt)
    stored = cache.load(name, folder)
    if stored is None:
        return None, name
    code = elf.load(stored)
    if code is None:
        if not mcjit:
            return None, name
        with _compile_lock:
            code = _load(stored, opt)
    return _remember(key, wrap(code), True, started), name


_exiting: list[bool] = []  # set at exit: no background compile enters LLVM from then on


@contextlib.contextmanager
def _llvm_for_background() -> Iterator[None]:
    """``_compile_lock``, for a background task about to enter LLVM in this process; raises
    :class:`~symad.runtime.background.Abandoned` once the process is exiting (a thread inside
    LLVM while the interpreter tears down would abort it)."""
    with _compile_lock:
        if _exiting:
            raise background.Abandoned
        yield


def _compiled_once(key: str, build: Callable[[], Any]) -> Any:
    """``build()`` under ``_compile_lock`` (from the main thread, interruptibly), unless a compile
    that held the lock meanwhile left ``key`` in the cache."""

    def work() -> Any:
        # llvmlite works in LLVM's one global context, which is not thread-safe: one
        # compile at a time (a background -O2 compile and a foreground one would crash).
        with _compile_lock:
            cached = _cached(key)
            return cached if cached is not None else build()

    return background.run_interruptibly(work)


def _cached(key: str) -> Any:
    with _lock:
        program = _cache.pop(key, None)
        if program is not None:
            _cache[key] = program  # now the most recently used
        return program


def clear_cache() -> None:
    """Forget the compiled programs (their code is freed once no Function uses it)."""
    with _lock:
        _cache.clear()


SHARED_ROWS_OPS = 20_000  # loops over rows up to this size (~0.5 MB of code) are kept in the shared cache
ROWS = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p,
                        ctypes.c_int64, ctypes.c_int64, ctypes.c_void_p)


class RowsProgram:
    """Machine code summing a schedule's outputs over rows of data (:func:`symad.native.ir.rows_ir`):
    ``rows(w, cols, strides, idx, start, end, out)``, which releases the GIL."""

    def __init__(self, rows: Callable[..., None], n_out: int, engine: Any):
        self.rows, self.n_out = rows, n_out
        self.engine = engine  # owns the machine code


def compile_rows(schedule: Schedule, sources: list[tuple[str, int]], opt: int = 2) -> RowsProgram:
    """Machine code for the sum of ``schedule`` over rows (cached as :func:`compile`'s programs)."""
    # however short its body, a loop over rows runs LLVM's passes, as _loop_code's loops do: the body
    # runs once a row, and an inlined special function is one step of the schedule but ~200 instructions
    return _program(_rows_key(schedule, sources, opt), lambda: _rows_ir(schedule, sources), opt,
                    max(schedule.size, ir.QUICK_OPS + 1), _rows_folder(schedule),
                    lambda engine: _rows_program(engine, schedule), remote=True)


def _rows_program(engine: Any, schedule: Schedule) -> RowsProgram:
    return RowsProgram(ROWS(engine.get_function_address("rows")), len(schedule.outputs), engine)


def rows_if_cached(schedule: Schedule, sources: list[tuple[str, int]], opt: int = 2) -> RowsProgram | None:
    """The loop of :func:`compile_rows` if it needs no compile (in memory, or its object code
    on disk: loaded, milliseconds), else None."""
    found, _ = _at_hand(_rows_key(schedule, sources, opt), lambda: _rows_ir(schedule, sources), opt,
                        _rows_folder(schedule), lambda engine: _rows_program(engine, schedule), mcjit=True)
    return found


def _rows_key(schedule: Schedule, sources: list[tuple[str, int]], opt: int) -> str:
    return f"{schedule.key}-rows{sources}-O{opt}"


_last_rows_ir: list[tuple[str, str]] = []  # (key, IR text) of the loop last asked for


def _rows_ir(schedule: Schedule, sources: list[tuple[str, int]]) -> str:
    """:func:`ir.rows_ir`, generated once for the uses a first call makes of one loop's IR
    (looked up on disk, then compiled); only the last loop's text is kept."""
    key = _rows_key(schedule, sources, -1)
    with _lock:
        if _last_rows_ir and _last_rows_ir[0][0] == key:
            return _last_rows_ir[0][1]
    text = ir.rows_ir(schedule, sources)
    with _lock:
        _last_rows_ir[:] = [(key, text)]
    return text


def _rows_folder(schedule: Schedule) -> Path | None:
    # A loop over rows is small and its compile is most of an objective's build: kept in the
    # shared cache (as the interpreter is), a script run again starts at once.
    return cache.shared_dir() if schedule.size <= SHARED_ROWS_OPS else cache.cache_dir()


MAP = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64, ctypes.c_int64, ctypes.c_void_p,
                       ctypes.c_int64)


EDGE = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64, ctypes.c_int64,
                        ctypes.c_void_p, ctypes.c_int64)


class MapProgram:
    """Machine code of a schedule's outputs at each row (:func:`symad.native.loop_ir.map_ir`):
    ``map(w, cols, start, end, out, ld)`` and ``edge(w, cols, lims, start, end, out, ld)``, which
    release the GIL."""

    def __init__(self, engine: Any, n_out: int):
        self.map = MAP(engine.get_function_address("map"))
        self.edge = EDGE(engine.get_function_address("edge"))
        self.n_out = n_out
        self.engine = engine  # owns the machine code


def compile_map(schedule: Schedule, sources: list[tuple[str, int]], opt: int = 2) -> MapProgram:
    """Machine code of ``schedule`` at each row of columns (cached as :func:`compile`'s programs)."""
    return _loop_code(f"{schedule.key}-map{sources}-O{opt}", lambda: _native("loop_ir").map_ir(schedule, sources), opt,
                      _rows_folder(schedule),
                      lambda e: MapProgram(e, len(schedule.outputs)))


def _loop_code(key: str, text: Callable[[], str], opt: int, folder: Path | None, wrap: Callable[[Any], Any],
               remote: bool = False) -> Any:
    """A loop's machine code, compiled once (and cached): however short its body, a loop runs LLVM's
    passes, which vectorise it (4 to 8 rows an instruction)."""
    return _program(key, text, opt, ir.QUICK_OPS + 1, folder, wrap, remote)


NEST = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64, ctypes.c_int64, ctypes.c_void_p)
PROG = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p)


class LoopCode:
    """Machine code of a loop nest (``run(w, bases, start, end, out)``, :func:`symad.native.loop_ir.nest_ir`)
    or of a whole program with loops (``run(w, bases, outs)``, :func:`symad.native.loop_ir.program_ir`),
    which releases the GIL."""

    def __init__(self, run: Callable[..., None], engine: Any):
        self.run = run
        self.engine = engine  # owns the machine code


def compile_nest(nest: LoopNest, opt: int = 2) -> LoopCode:
    """Machine code of a loop nest (cached as :func:`compile`'s programs)."""
    return _loop_code(f"{nest.key}-nest-O{opt}", lambda: _native("loop_ir").nest_ir(nest), opt, cache.shared_dir(),
                      lambda e: LoopCode(NEST(e.get_function_address("nest")), e))


def compile_program(program: LoopProgram, opt: int = 2, remote: bool = False) -> LoopCode:
    """Machine code of a whole program with loops (cached as :func:`compile`'s programs); with
    ``remote``, in a pool task, compiled by the compile worker (abandoned at exit)."""
    return _loop_code(f"{program.key}-prog-O{opt}", lambda: _native("loop_ir").program_ir(program), opt,
                      cache.shared_dir(), _program_code, remote)


def loaded_program(program: LoopProgram, opt: int = 2) -> LoopCode | None:
    """:func:`compile_program`'s code where it is at hand without LLVM: in memory, or in the disk
    cache (loaded here); else None."""
    found, _ = _at_hand(f"{program.key}-prog-O{opt}", _once(lambda: _native("loop_ir").program_ir(program)), opt,
                        cache.shared_dir(), _program_code)
    return found


def _program_code(engine: Any) -> LoopCode:
    return LoopCode(PROG(engine.get_function_address("prog")), engine)


def _remember(key: str, program: Any, loaded: bool, started: float) -> Any:
    """Keep a compiled program in the in-memory cache, and count its compile; the program kept
    under ``key``: the one another thread kept meanwhile (a load from disk takes no lock), else
    ``program``."""
    with _lock:
        _stats["compiles"] += 1
        _stats["loaded"] += loaded
        _stats["seconds"] += time.perf_counter() - started
        kept = _cache.pop(key, None)
        _cache[key] = program = kept if kept is not None else program  # the most recently used
        while len(_cache) > CACHE_PROGRAMS:
            del _cache[next(iter(_cache))]  # the least recently used
        return program


def _engine(text: str, opt: int, size: int, remote_ok: bool = False, folder: Path | None = None,
            on_disk: str | None = None) -> tuple[Any, bool]:
    """An execution engine holding the machine code of the IR ``text``, and whether that code
    came from the disk cache (``folder``, by default the cache directory when one is set; its
    entry's name ``on_disk`` if known).  With ``remote_ok`` (an abandonable thread) call it without
    ``_compile_lock``: the worker compiles, the lock is taken to load; else with it held."""
    folder = folder if folder is not None else cache.cache_dir()
    if on_disk is None and folder is not None:
        on_disk = _disk_name(text, opt)
    stored = cache.load(on_disk, folder) if on_disk else None
    loaded = stored is not None
    if stored is None and remote_ok:
        stored = _native("remote").object_code(text, opt, size)
        if stored is None:  # no worker: compile here, as a foreground compile does
            with _llvm_for_background():
                stored = codegen.object_code(text, _target_machine_for(opt), opt, size)
    elif stored is None:
        # Object code, not an engine compiling the module: the engine would keep the IR
        # (~0.7 MB a small program) for as long as the code lives.
        stored = codegen.object_code(text, _target_machine_for(opt), opt, size)
    if on_disk and not loaded:
        cache.store(on_disk, stored, folder)
    if remote_ok:
        with _llvm_for_background():
            return _load(stored, opt), loaded
    return _load(stored, opt), loaded


def _disk_name(text: str, opt: int, kind: str = "") -> str:
    """The disk cache's name for the object code of IR ``text`` at ``opt`` on this machine
    (``kind``: code compiled otherwise than a program's, such as the stencils).
    The CPU as Linux describes it where it can be read (without loading LLVM), else as LLVM does."""
    import llvmlite

    cpu = elf.cpu_identity() if elf.supported() else ""
    if not cpu:
        background.import_compile_modules()
    parts = (f"O{opt}", *((kind,) if kind else ()), *((cpu,) if cpu else codegen.host_cpu()), llvmlite.__version__)
    return cache.key(text, *parts)


def _load(stored: bytes, opt: int) -> Any:
    """The object code ``stored`` loaded: by symad's own loader where it can, else by MCJIT
    (either answers ``get_function_address``)."""
    image = elf.load(stored)
    if image is not None:
        return image
    background.import_compile_modules()
    import llvmlite.binding as llvm

    # An engine owns (and frees with itself) the target machine it is given: its own one.
    tm = codegen.new_target_machine(opt)
    engine = llvm.create_mcjit_compiler(_empty_module(tm), tm)
    engine.add_object_file(llvm.ObjectFileRef.from_data(stored))
    _engines.add(engine)
    engine.finalize_object()
    return engine


def _abandon_background_compiles() -> None:
    # At exit: a compile in the worker is dropped with it; one loading code here is waited
    # for, and none may start.  The lock is released again: a fork in a later exit hook
    # waits for it, and a compile a later exit hook waits for takes it.
    client = background.imported("symad.native.remote")
    if client is not None:  # else no worker was started
        client.abandon()
    with _compile_lock:
        _exiting.append(True)


background.on_exit(_abandon_background_compiles)


class Interpreter:
    """The machine code of the instruction interpreter (:func:`symad.native.ir.interpreter_ir`).

    * ``batch(program, values, rows, out, n)`` (releases the GIL);
    * ``call(program, x, rest) -> output 0`` on two NumPy arrays (keeps the GIL), or None;
    * ``rows(program, values, colin, ncol, cols, strides, idx, start, end, out, acc)``: sums over
      rows of data, the bits of :class:`RowsProgram`'s loop (releases the GIL).
    """

    def __init__(self, engine: Any):
        self.engine = engine
        self.batch = INTERPRET_BATCH(engine.get_function_address("batch"))
        self.rows = INTERPRET_ROWS(engine.get_function_address("rows"))
        call = engine.get_function_address("call")
        self.call = INTERPRET_CALL(call) if call else None
        self.fast = engine.get_function_address("fast") if call else 0

    def bound_call(self, program: int, keep: tuple) -> Any:
        """``call(x, rest) -> output 0`` of the program whose record is at ``program`` (its arrays
        in ``keep``): a builtin function where CPython's API allows, else through ctypes; None
        where the interpreter has no ``call``."""
        if self.call is None:
            return None
        return fastcall.bound(self.fast, program, (self, *keep)) or functools.partial(self.call, program)


INTERPRET_BATCH = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p,
                                   ctypes.c_int64)
INTERPRET_ROWS = ctypes.CFUNCTYPE(None, *[ctypes.c_void_p] * 3, ctypes.c_int64, *[ctypes.c_void_p] * 3,
                                  ctypes.c_int64, ctypes.c_int64, ctypes.c_void_p, ctypes.c_void_p)
INTERPRET_CALL = ctypes.PYFUNCTYPE(ctypes.c_double, ctypes.c_void_p, ctypes.py_object, ctypes.py_object)
_interpreter: list[Interpreter] = []


def interpreter_ready() -> bool:
    """Whether the interpreter's machine code is compiled in this process."""
    return bool(_interpreter)


def interpreter() -> Interpreter:
    """The interpreter's machine code: compiled once a process (or loaded from the disk cache,
    on the calling thread)."""
    return _cached_interpreter() or background.run_interruptibly(lambda: _load_interpreter(_interpreter_text()))


@functools.lru_cache(maxsize=1)
def _interpreter_text() -> str:
    return ir.interpreter_ir(fastcall.array_data_offset())


# The code that writes the interpreter's IR: the op table (its lowerings, the special functions'
# kernels traced into IR), the semantics they read, the lowering's primitives and the IR writers.
_INTERPRETER_SOURCES = ("symad.core.semantics", "symad.core.dag", "symad.schedule.lowering",
                        "symad.schedule.schedule", "symad.native.ir", "symad.native.fastcall")


def _sources_digest(label: str, *modules: str) -> str | None:
    """A digest of ``label``, of the source text of the code that writes the interpreter's IR and
    the stencils' (the op table's files, :data:`_INTERPRETER_SOURCES` and ``modules``) and of the
    op table as this process has it (an op defined at run time has its lowering in it): read in
    about a millisecond, where writing that IR (tracing the special functions' kernels) takes
    several; None where a source file cannot be read (the IR keys the code then)."""
    digest = hashlib.sha256(label.encode())
    try:
        files = sorted(Path(sys.modules["symad.core.ops"].__file__ or "").parent.glob("*.py"))
        files += [Path(sys.modules[name].__file__ or "") for name in (*_INTERPRETER_SOURCES, *modules)]
        for path in files:
            digest.update(path.name.encode() + b"\0" + path.read_bytes())
    except (OSError, KeyError, TypeError):
        return None
    digest.update("\n".join(_op_table_parts()).encode())
    return f"{label} sources {digest.hexdigest()}"


def _op_table_parts() -> list[str]:
    """Each primitive op as the IR writers see it: its name, arity and lowering, but a kernel
    traced from the op table's own files named by where its tracer is, traced yet or not (those
    files are digested; tracing it would cost what the digest saves)."""
    lowering = sys.modules["symad.schedule.lowering"]
    parts = []
    for op, spec in lowering.PRIMITIVES.items():
        llvm = spec.llvm
        trace = getattr(llvm, "_trace", None)
        if trace is not None and getattr(trace, "__module__", "").startswith("symad.core.ops."):
            parts.append(f"{op}/{spec.arity}/traced by {trace.__module__}.{getattr(trace, '__qualname__', '')}")
        else:
            parts.append(f"{op}/{spec.arity}/{llvm!r}")
    return parts


@functools.lru_cache(maxsize=1)
def _interpreter_key() -> str:
    """What the cached interpreter is looked up by: its sources' digest (with NumPy's and ctypes'
    layouts, which its IR reads), else its IR text."""
    label = f"interpreter {fastcall.array_data_offset()} {fastcall.self_offset()}"
    return _sources_digest(label) or _interpreter_text()


@functools.lru_cache(maxsize=1)
def _stencils_key() -> str:
    """What the cached stencils are looked up by: their sources' digest (the stencils' module
    too), else the digest of the op table's lowerings (:func:`symad.native.stencils.library_digest`)."""
    library = _native("stencils")
    return _sources_digest(f"stencils {library.FORMAT}", "symad.native.stencils") or library.library_digest()


def _cached_interpreter() -> Interpreter | None:
    """The interpreter, loaded in this process or from the shared code cache; None if neither."""
    if _interpreter:
        return _interpreter[0]
    folder = cache.shared_dir()
    if folder is not None and elf.supported():
        stored = cache.load(_disk_name(_interpreter_key(), 2), folder)
        code = elf.load(stored) if stored is not None else None
        if code is not None:
            with _lock:
                _stats["loaded"] += 1
                if not _interpreter:
                    _interpreter.append(Interpreter(code))
                return _interpreter[0]
    return None


def _load_interpreter(text: str) -> Interpreter:
    with _compile_lock:
        if not _interpreter:
            _interpreter.append(Interpreter(_load(*_interpreter_code(text))))
        return _interpreter[0]


def _interpreter_code(text: str) -> tuple[bytes, int]:
    """The interpreter's object code and its optimisation level.  Optimised (-O2: an instruction
    ~15% faster) when it can be kept in the shared cache: compiled once a machine (~0.1 s) and
    loaded by every later process (~3 ms); else quick code (-O0, ~10 ms) every process.  ``text``:
    its IR (:func:`symad.native.ir.interpreter_ir`)."""
    return _routine_code(_interpreter_key(), lambda: text, uncached_opt=0)


def _routine_code(key: str, text: Callable[[], str], uncached_opt: int) -> tuple[bytes, int]:
    """The object code of a routine written once (not a program's), and its optimisation level:
    -O2 kept in the shared code cache under ``key`` (compiled once a machine, loaded by every later
    process), else compiled at ``uncached_opt`` every process.  ``text``: its IR, asked for only
    where it is compiled."""
    folder = cache.shared_dir()
    if folder is not None:
        name = _disk_name(key, 2)
        stored = cache.load(name, folder)
        if stored is not None:
            with _lock:
                _stats["loaded"] += 1
            return stored, 2
        if cache.writable(folder):
            stored = codegen.object_code(text(), _target_machine_for(2), 2, codegen.QUICK_OPS + 1)
            cache.store(name, stored, folder)
            return stored, 2
    return (codegen.object_code(text(), _target_machine_for(uncached_opt), uncached_opt, codegen.QUICK_OPS + 1),
            uncached_opt)


_lbfgs: list[tuple[int, Any]] = []


def lbfgs_step(record: Any) -> Any:
    """L-BFGS's ``step(x, g) -> task`` (:mod:`symad.native.lbfgs_ir`) on ``record`` (a NumPy array
    from ``lbfgs_record``, kept alive with the step), a builtin function; None where its machine
    code or CPython's API is not at hand."""
    entry = lbfgs_entry()
    if entry is None:
        return None
    return fastcall.bound(entry[0], record.ctypes.data, (entry[1], record))


def lbfgs_entry() -> tuple[int, Any] | None:
    """The L-BFGS step's machine code (:mod:`symad.native.lbfgs_ir`): the address of its builtin
    entry and the loaded code (to keep alive while the entry is called); compiled at -O2 once a
    machine and kept in the shared code cache, loaded once a process.  None without llvmlite, or
    where NumPy's or CPython's layout is not the one its entry reads."""
    if _lbfgs:
        return _lbfgs[0]
    offset = fastcall.array_data_offset()
    if offset is None or fastcall.self_offset() is None or not available():
        return None
    text = functools.partial(_native("lbfgs_ir").lbfgs_ir, offset)
    # its sources' digest, else (a source unreadable) its IR text, written once
    key = _sources_digest(f"lbfgs {offset} {fastcall.self_offset()}", "symad.native.lbfgs_ir")
    if key is None:
        key = text()
        text = functools.partial(str, key)

    def load() -> tuple[int, Any]:
        with _compile_lock:
            if not _lbfgs:
                code = _load(*_routine_code(key, text, uncached_opt=2))
                _lbfgs.append((code.get_function_address("fast"), code))
            return _lbfgs[0]

    return background.run_interruptibly(load)


def _empty_module(tm: Any) -> Any:
    import llvmlite.binding as llvm

    module = llvm.parse_assembly("")
    module.triple, module.data_layout = tm.triple, str(tm.target_data)
    return module




# ===================================================================== copy-and-patch
_stencils: list[tuple[stencils.Library, stitching.Entries]] = []
_stencils_task: list[Any] = []  # the background build of the stencils, once started
STENCIL_OPT = -2  # a compile worker request for the stencils: -O2 instruction selection, their target machine


def stitch_available() -> bool:
    """Whether this process can stitch machine code (Linux on x86-64, with the stencils compiled
    or in the shared code cache)."""
    return elf.supported() and codegen.x86() and (bool(_stencils) or available())


def stencils_ready() -> bool:
    """Whether :func:`stitch` runs without compiling: the stencils are loaded, or loaded now from
    the shared code cache (milliseconds); if not, their compile starts in the background (once a
    process; a second or more, once a machine: in a process of its own that stores them in the
    shared cache, or without a cache a background task) and the answer is False."""
    if _stencils:
        return True
    if _install_stencils(compile_missing=False):
        return True
    with _lock:
        if _stencils_task or not stitch_available():
            return False
        folder = cache.shared_dir()
        # Where a cache is kept, a process of its own compiles the stencils into it (a short run
        # leaves them for the next); else a background task, for this process alone.
        started = folder is not None and cache.writable(folder) and _native("remote").build_stencils(str(folder))
        _stencils_task.append(True if started else background.submit(_stencils_in_background))
    return False


def stitch(schedule: Schedule) -> stitching.StitchedProgram:
    """Machine code for ``schedule`` copied and patched from the op table's stencils
    (:mod:`symad.native.stitcher`): a :class:`NativeProgram`'s entries, built in about a
    microsecond a step, no compiler run; the stencils are compiled once a machine."""
    library, entries = _stencils[0] if _stencils else background.run_interruptibly(_load_stencils)
    return _native("stitcher").StitchedProgram(schedule, library, entries)


def _load_stencils() -> tuple[stencils.Library, stitching.Entries]:
    with _compile_lock:
        if not _stencils and not _install_stencils(compile_missing=True):
            raise _native("stencils").StencilError("the stencils' entries cannot be loaded in this process")
        return _stencils[0]


def _stencils_in_background() -> None:
    _install_stencils(compile_missing=True, remote_ok=True)


def _install_stencils(compile_missing: bool, remote_ok: bool = False) -> bool:
    """Load the stencils and their entries (symad's own loader: no LLVM): the stencils' tables from
    the shared code cache where it has them (no object code parsed), else their object code, from
    the cache or compiled where ``compile_missing`` (see :func:`stencil_objects`), parsed and its
    tables kept in the cache for the next process; whether loaded."""
    library = _cached_tables()
    if library is not None:
        entries = _shared_object(*_entries_wanted(), compile_missing, remote_ok)
        image = elf.load(entries) if entries is not None else None
        if image is not None:
            _install(library, image)
            return True
    objects = stencil_objects(compile_missing, remote_ok)
    image = elf.load(objects[1]) if objects is not None else None
    if image is None:  # (before parsing: a process that cannot load the entries parses nothing)
        return False
    _install(keep_stencil_tables(objects[0]), image)  # type: ignore[index]
    return True


def _install(library: stencils.Library, image: Any) -> None:
    with _lock:
        if not _stencils:
            _stencils.append((library, _native("stitcher").Entries(image)))


def _tables_name() -> str:
    return _disk_name(_stencils_key(), STENCIL_OPT, f"stencils tables {_native('stencils').TABLES_FORMAT}")


def _cached_tables() -> stencils.Library | None:
    """The stencils' tables (:func:`symad.native.stencils.tables`) from the shared code cache, or None."""
    folder = cache.shared_dir()
    stored = cache.load(_tables_name(), folder) if folder is not None else None
    if stored is None:
        return None
    library = _native("stencils")
    try:
        return library.from_tables(stored)
    except library.StencilError:
        return None


def keep_stencil_tables(stencil_object: bytes) -> stencils.Library:
    """The stencils of ``stencil_object`` parsed, their tables stored in the shared code cache (where
    there is one to write) for later processes to read without parsing."""
    library = _native("stencils")
    parsed = library.parse(stencil_object)
    folder = cache.shared_dir()
    if folder is not None and cache.writable(folder):
        cache.store(_tables_name(), library.tables(parsed), folder)
    return parsed


def _entries_wanted() -> tuple[str, Callable[[], str], int, str]:
    text = _native("stencils").entries_ir(fastcall.array_data_offset())
    return text, lambda: text, 2, ""


def stencil_objects(compile_missing: bool, remote_ok: bool = False) -> tuple[bytes, bytes] | None:
    """The object code of the stencils and of their entries: from the shared code cache (its trust
    rules; the stencils keyed by the code that writes them, the CPU and LLVM), else compiled and
    stored if ``compile_missing`` (in the worker process if ``remote_ok``: a background task),
    else None."""
    stencil_object = _shared_object(_stencils_key(), _native("stencils").library_ir, STENCIL_OPT, "stencils",
                                    compile_missing, remote_ok)
    if stencil_object is None:
        return None
    entries = _shared_object(*_entries_wanted(), compile_missing, remote_ok)
    return None if entries is None else (stencil_object, entries)


def _shared_object(key: str, text: Callable[[], str], opt: int, kind: str, compile_missing: bool,
                   remote_ok: bool) -> bytes | None:
    """The object code keyed ``key``: from the shared code cache, else compiled from ``text()`` and
    stored if ``compile_missing``, else None."""
    folder = cache.shared_dir()
    name = _disk_name(key, opt, kind) if folder is not None else None
    stored = cache.load(name, folder) if name else None
    if stored is not None:
        with _lock:
            _stats["loaded"] += 1
        return stored
    if not compile_missing:
        return None
    stored = _compile_shared(text(), opt, remote_ok)
    if name and cache.writable(folder):  # type: ignore[arg-type]
        cache.store(name, stored, folder)
    return stored


def _compile_shared(text: str, opt: int, remote_ok: bool) -> bytes:
    """Object code of ``text`` at ``opt`` (:data:`STENCIL_OPT`: the stencils'), in the worker process
    if ``remote_ok`` and there is one, else here (the caller holds ``_compile_lock`` unless ``remote_ok``)."""
    stored = _native("remote").object_code(text, opt, 1) if remote_ok else None
    if stored is not None:
        return stored
    background.import_compile_modules()
    machine = codegen.stencil_target_machine if opt == STENCIL_OPT else lambda: _target_machine_for(opt)
    level = abs(opt)
    if remote_ok:
        with _llvm_for_background():
            return codegen.object_code(text, machine(), level, 1)
    return codegen.object_code(text, machine(), level, 1)
