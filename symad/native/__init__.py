"""The native runtime: a schedule as LLVM machine code, behind one interface.

:func:`compile` turns a :class:`~symad.schedule.schedule.Schedule` into a :class:`NativeProgram`
(``point``, ``batch`` and ``call`` entry points); :func:`compile_rows` into a loop summing
it over rows of data.  :func:`interpreter` is the instruction interpreter the VM runs on
(its opcodes: :func:`interpreter_opcodes`, ``COPY``).  The on-disk cache of object code is
configured by :func:`set_cache_dir` and :func:`set_cache_max_mb`.  Inside: the IR (``ir``), LLVM's passes
and object code (``codegen``), the loader of object code (``elf``), the compile worker process
(``worker``, ``remote``), the on-disk cache (``cache``) and the compiles themselves (``jit``).
Nothing outside this package imports those modules: they are reached through the names below.
"""

from symad.native.cache import cache_dir, set_cache_dir, set_cache_max_mb
from symad.native.ir import COPY, interpreter_opcodes
from symad.native.jit import (
    CACHE_PROGRAMS,
    MapProgram,
    NativeProgram,
    RowsProgram,
    available,
    clear_cache,
    compile,
    compile_map,
    compile_rows,
    compile_stats,
    interpreter,
    rows_if_cached,
)

__all__ = ["CACHE_PROGRAMS", "COPY", "MapProgram", "NativeProgram", "RowsProgram", "available", "cache_dir",
           "clear_cache", "compile", "compile_map", "compile_rows", "compile_stats", "interpreter",
           "interpreter_opcodes", "rows_if_cached", "set_cache_dir", "set_cache_max_mb"]
