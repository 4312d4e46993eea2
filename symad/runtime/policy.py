"""The ``auto`` backend's policy: which code serves a program, and what compiling it costs.

Machine code is called as a builtin function (no ctypes conversion), so single points run on
it at every size; but below ``NATIVE_MIN_OPS`` operations only where this process has loaded
the instruction interpreter already, else on Python code: loading it (milliseconds) would cost
more than most such programs' calls save.  Up to
``NATIVE_SYNC_OPS`` optimised native code (LLVM -O2) is compiled before the first call.
Beyond, quick native code serves the calls from the first:
code stitched from precompiled stencils (:func:`symad.native.stitch`, about a microsecond an
operation to build, no compiler run) where this machine has them, else -O0 code (compiled in
about the time Python needs to compile the same program); once they have cost what optimised
code's compile will, a background thread compiles it, up to ``NATIVE_OPTIMIZE_OPS`` (-O2's
time grows faster than linearly), and it serves from then on where it runs faster than the
quick code (both timed when it arrives: stitched code often wins).  Past ``NATIVE_MAX_OPS``
(LLVM's memory), stitched code up to ``STITCH_MAX_OPS``, then Python code compiled in chunks,
keep memory bounded.  The thresholds are read through this module at each use, so a test may
change them.
"""

from __future__ import annotations

from collections.abc import Callable

from symad import native

BACKENDS = ("auto", "python", "native")
# measured: a point of a program of 5 operations 0.34 µs on -O2 code, 0.45 µs on the instructions,
# 0.7 µs on Python code (compiled at its second call: 0.2 ms); the interpreter loads in ~6 ms
# from the shared code cache, compiles in ~90 ms without it (llvmlite's import included)
NATIVE_MIN_OPS = 16
NATIVE_SYNC_OPS = 3000
NATIVE_OPTIMIZE_OPS = 50_000
NATIVE_MAX_OPS = 200_000  # beyond, `auto` compiles no LLVM code: LLVM's memory grows with function size
STITCH_MAX_OPS = 20_000_000  # stitched code (no LLVM at all) up to this size: ~25 bytes of code an operation
NATIVE_BATCH_POINTS = 1000  # a batch this large compiles native code even for a tiny program
# A program with loops of at most this many rows in all runs on NumPy arrays while its machine
# code compiles in the background (code in the cache loads at once): NumPy's calls at this size
# take milliseconds and arrays of a few MB, where LLVM's compile takes a few hundred
# milliseconds; larger ones wait for their code (NumPy's arrays would grow with the rows).
LOOP_TIER_MAX_ROWS = 100_000

# What a native compile is expected to cost, for the ski rentals deciding when one pays
# (measured: LLVM -O2 ~20 ms plus ~150 µs an operation, -O0 ~25 µs an operation), and
# what a call of quick (-O0) code costs (~0.6 µs plus ~1.3 ns an operation).
COMPILE_S, COMPILE_S_PER_OP = 0.02, {0: 25e-6, 2: 150e-6}
CALL_S, QUICK_S_PER_OP = 0.6e-6, 1.3e-9  # quick code: -O0 or stitched (~0.4 and ~0.6 ns an operation)
# A compile in the background is not free for the caller: while it runs, the caller's loop
# slows (on 2 cores, with SciPy's BLAS threads spinning beside it, by ~0.7 s during a 0.4 s
# compile).  The ski rentals count a compile at this multiple of its own time.
BACKGROUND_COST = 2.5


def native_points(backend: str, size: int) -> bool:
    """Whether single points of a program of ``size`` operations run on native code."""
    return backend == "native" or (backend == "auto" and native.available()
                                   and machine_code_points(size, native.interpreter_ready)
                                   and (size <= NATIVE_MAX_OPS or (size <= STITCH_MAX_OPS and stitched(size))))


def machine_code_points(size: int, interpreter_loaded: Callable[[], bool]) -> bool:
    """Whether, under ``auto``, a program of ``size`` operations has machine code (the
    instructions, then compiled code) serve its single points rather than Python code: never a
    program of no operations; below ``NATIVE_MIN_OPS`` only where this process has loaded the
    interpreter already (``interpreter_loaded()``, asked only then)."""
    return size > 0 and (size >= NATIVE_MIN_OPS or interpreter_loaded())


def stitched(size: int) -> bool:
    """Whether a program of ``size`` operations gets stitched code as its first native code (at
    once, in place of the instructions' early calls) rather than compiled code: past
    ``NATIVE_SYNC_OPS``, once the stencils are ready (the first ask on a machine starts their
    compile in the background)."""
    return (NATIVE_SYNC_OPS < size <= STITCH_MAX_OPS and native.stitch_available()
            and native.stencils_ready())


def native_batches(backend: str, size: int) -> bool:
    """Whether a large batch compiles native code under ``auto`` whatever the size (the fused
    loop beats one NumPy pass per node)."""
    return backend == "auto" and size <= NATIVE_MAX_OPS and native.available()


def first_native_opt(size: int) -> int:
    """The optimisation level of a program's first native code under ``auto``."""
    return 2 if size <= NATIVE_SYNC_OPS else 0


def compile_seconds(size: int, opt: int) -> float:
    """What a background native compile of ``size`` operations at ``opt`` is expected to cost
    the caller (its time, times ``BACKGROUND_COST``)."""
    return BACKGROUND_COST * (COMPILE_S + COMPILE_S_PER_OP[opt] * size)


def quick_calls_before_optimising(size: int) -> int:
    """Calls of quick code (-O0 or stitched) that cost what the -O2 compile of ``size`` operations will."""
    return max(1, round(compile_seconds(size, 2) / (CALL_S + QUICK_S_PER_OP * size)))
