"""The native runtime: a schedule as LLVM machine code, behind one interface.

:func:`compile` turns a :class:`~symad.schedule.schedule.Schedule` into a :class:`NativeProgram`
(``point``, ``batch`` and ``call`` entry points); :func:`compile_rows` into a loop summing it
over rows of data, :func:`compile_map` into a loop mapping it over a range.  :func:`interpreter`
is the instruction interpreter the VM runs on (its opcodes: :func:`interpreter_opcodes`,
``COPY``); :func:`stitch` copies and patches machine code from precompiled stencils (the
``stencils`` and ``stitcher`` modules); :func:`lbfgs_step` is L-BFGS's iteration between
evaluations in machine code (``lbfgs_ir``: its record, ``lbfgs_record``, and answers,
``LbfgsTask``).  The on-disk cache of object code is configured by :func:`set_cache_dir` and
:func:`set_cache_max_mb`.  Inside: the IR (``ir``), LLVM's passes and object code
(``codegen``), the loader of object code (``elf``), the compile worker process (``worker``,
``remote``), the on-disk cache (``cache``) and the compiles themselves (``jit``).  Nothing
outside this package imports those modules: they are reached through the names below.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from symad.core import lazy

# Each name's module, imported on first use (PEP 562): the compile worker process, which runs
# ``python -m symad.native.worker`` and needs LLVM's passes alone, starts without the op table.
_EXPORTS = {
    "cache_dir": "cache", "set_cache_dir": "cache", "set_cache_max_mb": "cache",
    "COPY": "ir", "interpreter_opcodes": "ir",
    "CACHE_PROGRAMS": "jit", "MapProgram": "jit", "NativeProgram": "jit", "RowsProgram": "jit",
    "available": "jit", "clear_cache": "jit", "compile": "jit", "compile_map": "jit", "compile_nest": "jit",
    "compile_program": "jit", "fast_call": "jit", "LoopCode": "jit", "compile_rows": "jit", "compile_stats": "jit",
    "interpreter": "jit", "interpreter_ready": "jit", "loaded_program": "jit", "rows_if_cached": "jit",
    "stitch": "jit", "stitch_available": "jit",
    "stencils_ready": "jit", "lbfgs_step": "jit",
    "LBFGS_LINE_STEPS": "lbfgs_ir", "LBFGS_SLOT": "lbfgs_ir", "LbfgsTask": "lbfgs_ir", "lbfgs_record": "lbfgs_ir",
}

if TYPE_CHECKING:
    from symad.native.cache import cache_dir, set_cache_dir, set_cache_max_mb
    from symad.native.ir import COPY, interpreter_opcodes
    from symad.native.jit import (
        CACHE_PROGRAMS,
        LoopCode,
        MapProgram,
        NativeProgram,
        RowsProgram,
        available,
        clear_cache,
        compile,
        compile_map,
        compile_nest,
        compile_program,
        compile_rows,
        compile_stats,
        fast_call,
        interpreter,
        interpreter_ready,
        lbfgs_step,
        loaded_program,
        rows_if_cached,
        stencils_ready,
        stitch,
        stitch_available,
    )
    from symad.native.lbfgs_ir import LBFGS_LINE_STEPS, LBFGS_SLOT, LbfgsTask, lbfgs_record


__getattr__, __dir__ = lazy.exports(__name__, _EXPORTS)


__all__ = [
    "CACHE_PROGRAMS", "COPY", "LoopCode", "MapProgram", "NativeProgram", "RowsProgram",
    "available", "cache_dir", "clear_cache", "compile", "fast_call", "compile_map", "compile_nest", "compile_program",
    "compile_rows", "compile_stats", "interpreter", "interpreter_ready", "interpreter_opcodes", "loaded_program",
    "rows_if_cached", "set_cache_dir",
    "set_cache_max_mb", "stencils_ready", "stitch", "stitch_available",
    "LBFGS_LINE_STEPS", "LBFGS_SLOT", "LbfgsTask", "lbfgs_record", "lbfgs_step",
]
