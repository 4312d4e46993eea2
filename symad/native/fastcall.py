"""Machine code called from Python as a builtin function, with no ctypes conversion between.

A ctypes function pointer converts each argument and the result on every call (a few hundred
nanoseconds, more than a small program's own work).  CPython calls a builtin function of the
``METH_FASTCALL`` convention, ``fast(self, args, nargs)``, directly.  The compiled modules
(:func:`symad.native.ir.module_ir`), the loop programs (:mod:`symad.native.loop_ir`), the
instruction interpreter (:func:`symad.native.ir.interpreter_ir`) and the entries of stitched
code (:func:`symad.native.stencils.entries_ir`) carry such an entry, written by
:func:`fast_entry_ir`: it runs their ``call(x, rest)`` on the two NumPy arrays it is given and
returns output 0 as a new float.  Its ``self`` is a small record (a ctypes array): the address
of ``PyFloat_FromDouble``, then the program's context (the interpreter's or the stitched
program's record; 0 for compiled code); the entry finds the record's buffer ``self_offset``
bytes into ``self``.  The
record also keeps alive what the code needs (its machine code, the program's arrays), so a
caller still holding the function runs code still mapped.

The caller checks the arrays' dtype, shape and contiguity, as for ``call``.
"""

from __future__ import annotations

import ctypes
import functools
from typing import Any

METH_FASTCALL = 0x80


class MethodDef(ctypes.Structure):
    """CPython's ``PyMethodDef``."""

    _fields_ = [("name", ctypes.c_char_p), ("meth", ctypes.c_void_p), ("flags", ctypes.c_int),
                ("doc", ctypes.c_char_p)]


@functools.lru_cache(maxsize=1)
def _new_function() -> Any:
    """CPython's ``PyCFunction_NewEx`` through a prototype of our own (ctypes.pythonapi's shared
    function objects keep their settings), made once; None where it is not at hand."""
    try:
        return ctypes.PYFUNCTYPE(ctypes.py_object, ctypes.c_void_p, ctypes.py_object, ctypes.py_object)(
            ("PyCFunction_NewEx", ctypes.pythonapi))
    except AttributeError:
        return None


@functools.lru_cache(maxsize=1)
def box_address() -> int:
    """The address of ``PyFloat_FromDouble`` (0 where it is not at hand)."""
    try:
        return ctypes.cast(ctypes.pythonapi.PyFloat_FromDouble, ctypes.c_void_p).value or 0
    except AttributeError:
        return 0


@functools.lru_cache(maxsize=1)
def array_data_offset() -> int | None:
    """Where a NumPy array object keeps its data pointer (NumPy's C API ``PyArrayObject``): the
    field after the object header, whose size depends on how Python was built, found by
    looking, once; None (no ``call`` entry) if it is not where expected."""
    import numpy as np

    probe = np.arange(3.0)
    for offset in (16, 32):  # the header of a release build, of a debug build
        if ctypes.c_void_p.from_address(id(probe) + offset).value == probe.ctypes.data:
            return offset
    return None


@functools.lru_cache(maxsize=1)
def self_offset() -> int | None:
    """Where a ctypes object keeps the address of its buffer (the field after the object's
    header, whose size depends on how Python was built): found by looking, once; None if it is
    not where expected (no fast entry then)."""
    probe = (ctypes.c_int64 * 2)()
    for offset in (16, 32):  # the header of a release build, of a debug build
        if ctypes.c_void_p.from_address(id(probe) + offset).value == ctypes.addressof(probe):
            return offset
    return None


def _fast_function(address: int, owner: Any) -> Any:
    """A builtin function (``METH_FASTCALL``) running the machine code at ``address`` with
    ``owner`` (a ctypes object with a ``keep`` attribute) as its ``self``; None where CPython's
    API is not at hand."""
    new = _new_function()
    if new is None or not address:
        return None
    definition = MethodDef(b"call", address, METH_FASTCALL, None)
    owner.keep += (definition,)  # the function object points at it
    return new(ctypes.addressof(definition), owner, None)


def bound(entry: int, context: int, keep: tuple) -> Any:
    """``call(x, rest) -> output 0`` as a builtin running the entry :func:`fast_entry_ir` wrote
    (at ``entry``) with ``context`` in its record, keeping ``keep`` alive; None where the entry,
    ``PyFloat_FromDouble`` or CPython's API is not at hand."""
    box = box_address()
    if not entry or not box or self_offset() is None:
        return None
    record = (ctypes.c_int64 * 2)(box, context)
    record.keep = keep  # type: ignore[attr-defined]
    return _fast_function(entry, record)


def fast_entry_ir(with_context: bool) -> str:
    """LLVM IR of ``fast(self, args, nargs)``: ``@call`` on ``args[0]`` and ``args[1]`` (with
    ``with_context``, the record's context before them), output 0 boxed by the record's first
    field; NULL for other than two arguments (CPython then raises SystemError).  Empty where the
    record's place in ``self`` is unknown."""
    offset = self_offset()
    if offset is None:
        return ""
    context = ("  %ca = getelementptr i64, ptr %rec, i64 1\n  %ctx = load ptr, ptr %ca\n"
               "  %y = call double @call(ptr %ctx, ptr %xo, ptr %ro)\n" if with_context
               else "  %y = call double @call(ptr %xo, ptr %ro)\n")
    return ("\ndefine ptr @fast(ptr %self, ptr %args, i64 %nargs) {\nentry:\n"
            "  %two = icmp eq i64 %nargs, 2\n  br i1 %two, label %run, label %wrong\n"
            "wrong:\n  ret ptr null\n"
            f"run:\n  %sa = getelementptr i8, ptr %self, i64 {offset}\n  %rec = load ptr, ptr %sa\n"
            "  %xo = load ptr, ptr %args\n  %roa = getelementptr ptr, ptr %args, i64 1\n  %ro = load ptr, ptr %roa\n"
            + context +
            "  %box = load ptr, ptr %rec\n  %obj = call ptr %box(double %y)\n  ret ptr %obj\n}\n")
