"""Stencils: one small machine-code function per op of the table, with holes, for copy-and-patch code.

Each primitive op (:data:`symad.schedule.lowering.PRIMITIVES`) gets a stencil generated from
its own LLVM lowering (:func:`symad.native.ir.op_lines`, as every other native code is): it
reads its operands from a frame of doubles, computes the op and stores the result in the
frame, then jumps to the next stencil::

    s_add(frame): frame[_HOLE_OUT] = frame[_HOLE_A] + frame[_HOLE_B]; tail call _HOLE_NEXT(frame)

The holes are symbols the object file leaves undefined.  Compiled with the small code model
and static relocations, LLVM folds a hole into the displacement of the load or store itself
(``vaddsd _HOLE_B(%rdi), %xmm0, %xmm0``, an ``R_X86_64_32S`` relocation), and the tail call
into a ``jmp _HOLE_NEXT`` (``R_X86_64_PLT32``), its last instruction, which the stitcher drops
when the next stencil follows (:mod:`symad.native.stitcher`).  Calls of the C library
(``sin``) and constants LLVM puts in read-only data are relative relocations, which the
stitcher points at trampolines and at a copy of the data inside the stitched code.

Every stencil is a whole function of the C calling convention that leaves the stack and the
frame register as it found them, so any sequence of them is one function too.  No fast-math
and no IR passes: each op computes the bits of its lowering, as the interpreter and the
compiled code do.

Ops whose lowering is IEEE arithmetic alone (or an intrinsic the table marks ``lanewise``) also
get vector stencils (:func:`vector_lines`): the same lowering on :data:`LANES` doubles, reading
each operand as neighbouring slots, one slot broadcast, or neighbouring slots last first, for
the stitcher's packs (:mod:`symad.native.packing`); each lane computes the scalar bits.

:func:`library_ir` writes the stencils' IR (from whatever the table holds), :func:`entries_ir`
the entry points that run a stitched body, and :func:`parse` reads the object code of the
stencils into :class:`Library` arrays (without LLVM); :mod:`symad.native.jit` compiles and
caches them.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import re
import struct
from dataclasses import dataclass

import numpy as np

from symad.core.ops import Inline
from symad.native.fastcall import fast_entry_ir
from symad.native.ir import op_lines
from symad.schedule.lowering import PRIMITIVES

HOLES = ("_HOLE_A", "_HOLE_B", "_HOLE_C", "_HOLE_OUT")  # operand k, then the destination
NEXT = "_HOLE_NEXT"
PREFIX = "stencil_"

# Relocation kinds in a Library's tables
HOLE, PC_NEXT, PC_DATA, PC_CALL = 0, 1, 2, 3

_R_X86_64_PC32, _R_X86_64_PLT32, _R_X86_64_32, _R_X86_64_32S = 2, 4, 10, 11
_SHT_SYMTAB, _SHT_RELA, _SHT_PROGBITS, _SHT_NOBITS = 2, 4, 1, 8
_SHF_WRITE, _SHF_ALLOC, _SHF_EXECINSTR, _SHF_MERGE = 0x1, 0x2, 0x4, 0x10
_SHT_X86_64_UNWIND = 0x70000001
_SHN_UNDEF = 0
_JMP_REL32 = 0xE9


class StencilError(Exception):
    """The stencils' object code is not one the stitcher can use (the tier is then not used)."""


MEMORY, ACC, KEEP = 0, 1, 2  # where a stencil reads an operand: the frame, or one of two registers


def variant(sources: tuple[int, ...], keep: bool, store: bool) -> int:
    """The number of a stencil's variant: ``sources[k]``, where operand ``k`` is read
    (:data:`MEMORY`, the frame; :data:`ACC`, the register holding the result of the last stencil
    that did not keep its own; :data:`KEEP`, the register holding the result of the last stencil
    that kept its own); ``keep``, whether the result is kept (in ``KEEP``, in place of ``ACC``);
    ``store``, whether it is also stored in the frame (not when no later stencil reads it from there)."""
    number = sum(source << 2 * k for k, source in enumerate(sources))
    return number | (64 if keep else 0) | (128 if store else 0)


LANES = 4  # a vector stencil's lanes: four doubles (AVX's registers; two SSE ones elsewhere)
# How a vector stencil reads an operand: LANES slots from the hole on; one slot in every lane;
# LANES slots from the hole on, last first
VECTOR, BROADCAST, REVERSED = 0, 1, 2
VECTOR_BASE = 256  # vector variants follow the scalar ones


def vector_variant(kinds: tuple[int, ...]) -> int:
    """The number of a vector stencil's variant: ``kinds[k]`` (:data:`VECTOR`, :data:`BROADCAST`,
    :data:`REVERSED`) is how operand ``k`` is read; the result is always stored, :data:`LANES`
    slots from the destination's hole on, and both registers pass through unchanged."""
    return VECTOR_BASE + sum(kind * 3**k for k, kind in enumerate(kinds))


VARIANTS = VECTOR_BASE + 27


FORMAT = "stencils-5"  # the stencils' generator and calling convention: changed with them


def library_digest() -> str:
    """What the stencils' code depends on besides the machine and LLVM: the op table's lowerings
    (each primitive op's name, arity and LLVM lowering) and :data:`FORMAT`; their cache key,
    known without writing the IR."""
    parts = [FORMAT, *(f"{op}/{spec.arity}/{spec.llvm!r}" for op, spec in PRIMITIVES.items())]
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()


def library_ir() -> str:
    """LLVM IR of the stencils of every primitive op of the table (``stencil_<op>_<variant>``).

    A stencil is ``void (ptr frame, double acc, double keep)`` (``acc`` and ``keep`` in ``xmm0``
    and ``xmm1``): ``acc`` is the last result not kept, ``keep`` the last kept result; it passes
    on its own result as ``keep`` if it keeps it (``acc`` unchanged: the result is computed in
    ``xmm1``, no copy between the registers), else as ``acc`` (``keep`` unchanged).  Each variant
    (:func:`variant`) reads its operands from the frame or from those registers, and may leave the
    store out.
    """
    declared: dict[str, int] = {}
    parts = [f"@{h} = external dso_local global [0 x i8], align 1\n" for h in HOLES]
    parts.append(f"declare dso_local void @{NEXT}(ptr, double, double)\n")
    for op, spec in PRIMITIVES.items():
        for sources in itertools.product((MEMORY, ACC, KEEP), repeat=spec.arity):
            loads, vals = [], []
            for k, source in enumerate(sources):
                if source != MEMORY:
                    vals.append("%acc" if source == ACC else "%keep")
                    continue
                loads += [f"  %p{k} = getelementptr i8, ptr %f, i64 ptrtoint (ptr @{HOLES[k]} to i64)",
                          f"  %a{k} = load double, ptr %p{k}"]
                vals.append(f"%a{k}")
            body = loads + op_lines(op, vals, "%r", "%t", declared)
            for keep in (False, True):
                for store in (True, False):
                    lines = list(body)
                    if store:
                        lines += [f"  %po = getelementptr i8, ptr %f, i64 ptrtoint (ptr @{HOLES[3]} to i64)",
                                  "  store double %r, ptr %po"]
                    passed = "double %acc, double %r" if keep else "double %r, double %keep"
                    lines += [f"  musttail call void @{NEXT}(ptr %f, {passed})",
                              "  ret void"]
                    name = f"{PREFIX}{op}_{variant(sources, keep, store)}"
                    parts.append(f"define void @{name}(ptr noalias %f, double %acc, double %keep) {{\nentry:\n"
                                 + "\n".join(lines) + "\n}\n")
    vector_declared: dict[str, str] = {}
    parts += _vector_stencils(vector_declared)
    decls = "".join(f"declare double @{fn}({', '.join(['double'] * n)})\n" for fn, n in declared.items())
    decls += "".join(f"declare <{LANES} x double> @{fn}({params})\n" for fn, params in vector_declared.items())
    return decls + "\n".join(parts) + "\nattributes #0 = { nobuiltin }\n"


_LANEWISE = re.compile(r"^\{[rt]\}\w* = (fadd|fsub|fmul|fdiv) double \{\w+\}, \{\w+\}$"
                       r"|^\{[rt]\}\w* = fneg double \{\w+\}$")


def vector_lines(op: str, vals: list[str], r: str, t: str, declared: dict[str, str]) -> list[str] | None:
    """IR lines computing primitive ``op`` lane by lane on vectors of :data:`LANES` doubles, from the
    op table's own lowering, where that is IEEE arithmetic alone or an intrinsic the table marks
    ``lanewise`` (each lane the bits of the scalar lowering); None for any other op (a C library
    call, a comparison, a constant)."""
    spec = PRIMITIVES[op]
    lowering = spec.llvm
    vec = f"<{LANES} x double>"
    if isinstance(lowering, Inline):
        template = lowering.template
        if lowering.calls or not all(_LANEWISE.match(line) for line in template.split("\n")):
            return None
        return ["  " + ln for ln in template.replace("double", vec).format(*vals, r=r, t=t).split("\n")]
    if not lowering.lanewise or not lowering.symbol.endswith(".f64"):
        return None
    symbol = f"{lowering.symbol[:-len('f64')]}v{LANES}f64"  # (the intrinsic on LANES doubles)
    declared[symbol] = ", ".join([vec] * spec.arity)
    return [f"  {r} = call {vec} @{symbol}({', '.join(f'{vec} {v}' for v in vals)})"]


def _vector_stencils(declared: dict[str, str]) -> list[str]:
    """The vector stencils (``stencil_<op>_<vector variant>``) of the ops :func:`vector_lines` lowers."""
    vec = f"<{LANES} x double>"
    parts = []
    for op, spec in PRIMITIVES.items():
        vals = [f"%a{k}" for k in range(spec.arity)]
        lines = vector_lines(op, vals, "%r", "%t", declared)
        if lines is None:
            continue
        for kinds in itertools.product((VECTOR, BROADCAST, REVERSED), repeat=spec.arity):
            loads = []
            for k, kind in enumerate(kinds):
                loads.append(f"  %p{k} = getelementptr i8, ptr %f, i64 ptrtoint (ptr @{HOLES[k]} to i64)")
                if kind == VECTOR:
                    loads.append(f"  %a{k} = load {vec}, ptr %p{k}, align 8")
                elif kind == REVERSED:
                    last_first = ", ".join(f"i32 {LANES - 1 - j}" for j in range(LANES))
                    loads += [f"  %v{k} = load {vec}, ptr %p{k}, align 8",
                              f"  %a{k} = shufflevector {vec} %v{k}, {vec} poison, <{LANES} x i32> <{last_first}>"]
                else:
                    loads += [f"  %s{k} = load double, ptr %p{k}",
                              f"  %i{k} = insertelement {vec} poison, double %s{k}, i64 0",
                              f"  %a{k} = shufflevector {vec} %i{k}, {vec} poison, <{LANES} x i32> zeroinitializer"]
            body = loads + lines + [
                f"  %po = getelementptr i8, ptr %f, i64 ptrtoint (ptr @{HOLES[3]} to i64)",
                f"  store {vec} %r, ptr %po, align 8",
                f"  musttail call void @{NEXT}(ptr %f, double %acc, double %keep)", "  ret void"]
            name = f"{PREFIX}{op}_{vector_variant(kinds)}"
            parts.append(f"define void @{name}(ptr noalias %f, double %acc, double %keep) {{\nentry:\n"
                         + "\n".join(body) + "\n}\n")
    return parts


# The record a stitched program's entries read (see symad.native.stitcher): eight-byte fields.
RECORD_FIELDS = ("body", "n_in", "outs", "n_out", "frame", "block")


def entries_ir(data_offset: int | None) -> str:
    """LLVM IR of the entries that run a stitched body ``body(frame)`` (compiled once, as ordinary
    code).  ``rec`` points at a program's record (:data:`RECORD_FIELDS`); the inputs are copied
    to the frame's first slots, and output ``k`` is read from slot ``outs[k]``, or from slot
    ``block + k`` when ``block`` is not -1 (the outputs one after another: copied as a block).

    * ``point(rec, frame, in, out0, rest)``: output 0 to ``*out0``, output k ≥ 1 to ``rest[k-1]``;
    * ``batch(rec, frame, in, out, n)``: ``n`` points, row after row;
    * ``call(rec, x, rest) -> output 0`` on two NumPy arrays, in the record's own frame (the
      caller keeps the GIL), if ``data_offset`` is known;
    * ``fast(self, args, nargs)``: ``call`` as a builtin function of CPython's fast calling
      convention, its ``self`` holding the program's record (:mod:`symad.native.fastcall`), so a
      call from Python pays no ctypes conversion.
    """
    fields = "".join(f"  %{name}a = getelementptr i64, ptr %rec, i64 {k}\n" for k, name in enumerate(RECORD_FIELDS))
    loads = ("  %body = load ptr, ptr %bodya\n  %n_in = load i64, ptr %n_ina\n"
             "  %outs = load ptr, ptr %outsa\n  %n_out = load i64, ptr %n_outa\n")
    run = ("define internal void @run(ptr %rec, ptr %frame, ptr %in, ptr %out0, ptr %rest) {\nentry:\n"
           + fields + loads +
           "  %bytes = shl i64 %n_in, 3\n"
           "  call void @llvm.memcpy.p0.p0.i64(ptr %frame, ptr %in, i64 %bytes, i1 false)\n"
           "  call void %body(ptr %frame)\n"
           "  %block = load i64, ptr %blocka\n  %inblock = icmp sge i64 %block, 0\n"
           "  br i1 %inblock, label %copy, label %gather\n"
           "copy:\n  %b0 = getelementptr double, ptr %frame, i64 %block\n  %bv = load double, ptr %b0\n"
           "  store double %bv, ptr %out0\n  %b1 = getelementptr double, ptr %b0, i64 1\n"
           "  %nrest = sub i64 %n_out, 1\n  %restbytes = shl i64 %nrest, 3\n"
           "  call void @llvm.memcpy.p0.p0.i64(ptr %rest, ptr %b1, i64 %restbytes, i1 false)\n"
           "  br label %done\n"
           "gather:\n"
           "  %s0 = load i64, ptr %outs\n  %p0 = getelementptr double, ptr %frame, i64 %s0\n"
           "  %v0 = load double, ptr %p0\n  store double %v0, ptr %out0\n"
           "  %more = icmp sgt i64 %n_out, 1\n  br i1 %more, label %loop, label %done\n"
           "loop:\n  %k = phi i64 [1, %gather], [%k1, %loop]\n"
           "  %sp = getelementptr i64, ptr %outs, i64 %k\n  %s = load i64, ptr %sp\n"
           "  %p = getelementptr double, ptr %frame, i64 %s\n  %v = load double, ptr %p\n"
           "  %km = sub i64 %k, 1\n  %q = getelementptr double, ptr %rest, i64 %km\n"
           "  store double %v, ptr %q\n  %k1 = add i64 %k, 1\n  %again = icmp slt i64 %k1, %n_out\n"
           "  br i1 %again, label %loop, label %done\n"
           "done:\n  ret void\n}\n")
    point = ("define void @point(ptr %rec, ptr %frame, ptr %in, ptr %out0, ptr %rest) {\nentry:\n"
             "  call void @run(ptr %rec, ptr %frame, ptr %in, ptr %out0, ptr %rest)\n  ret void\n}\n")
    batch = ("define void @batch(ptr %rec, ptr %frame, ptr %in, ptr %out, i64 %n) {\nentry:\n"
             + fields + "  %n_in = load i64, ptr %n_ina\n  %n_out = load i64, ptr %n_outa\n"
             "  %any = icmp sgt i64 %n, 0\n  br i1 %any, label %loop, label %done\n"
             "loop:\n  %i = phi i64 [0, %entry], [%i1, %loop]\n"
             "  %ri = mul i64 %i, %n_in\n  %ro = mul i64 %i, %n_out\n"
             "  %pi = getelementptr double, ptr %in, i64 %ri\n  %po = getelementptr double, ptr %out, i64 %ro\n"
             "  %pr = getelementptr double, ptr %po, i64 1\n"
             "  call void @run(ptr %rec, ptr %frame, ptr %pi, ptr %po, ptr %pr)\n"
             "  %i1 = add i64 %i, 1\n  %more = icmp slt i64 %i1, %n\n  br i1 %more, label %loop, label %done\n"
             "done:\n  ret void\n}\n")
    call = ""
    if data_offset is not None:
        call = ("define double @call(ptr %rec, ptr %xo, ptr %ro) {\nentry:\n"
                f"  %xa = getelementptr i8, ptr %xo, i64 {data_offset}\n  %x = load ptr, ptr %xa\n"
                f"  %ra = getelementptr i8, ptr %ro, i64 {data_offset}\n  %r = load ptr, ptr %ra\n"
                "  %fa = getelementptr i64, ptr %rec, i64 4\n  %frame = load ptr, ptr %fa\n"
                "  %v = alloca double\n"
                "  call void @run(ptr %rec, ptr %frame, ptr %x, ptr %v, ptr %r)\n"
                "  %value = load double, ptr %v\n  ret double %value\n}\n" + fast_entry_ir(with_context=True))
    return ("declare void @llvm.memcpy.p0.p0.i64(ptr, ptr, i64, i1)\n\n" + run + "\n" + point + "\n" + batch
            + "\n" + call)


@dataclass
class Library:
    """The stencils' code and relocations as arrays the stitcher indexes by stencil.

    ``ops`` numbers the ops, and ``variants[op, v]`` is the stencil of variant ``v`` (:func:`variant`)
    of an op.  ``blob`` holds every stencil's code, stencil ``k``'s at ``start[k]`` for ``length[k]``
    bytes (its final jump to the next stencil left out); its relocations are rows
    ``rel_start[k]`` … ``rel_start[k] + rel_count[k] - 1`` of ``rel_offset`` (in its code),
    ``rel_kind`` (:data:`HOLE`: the frame offset of operand ``rel_arg`` (3: the destination);
    :data:`PC_NEXT`: the next stencil; :data:`PC_DATA`: byte ``rel_arg`` of ``data``;
    :data:`PC_CALL`: the C function ``calls[rel_arg]``) and ``rel_addend``.
    """

    ops: dict[str, int]
    variants: np.ndarray
    blob: np.ndarray
    start: np.ndarray
    length: np.ndarray
    rel_start: np.ndarray
    rel_count: np.ndarray
    rel_offset: np.ndarray
    rel_kind: np.ndarray
    rel_arg: np.ndarray
    rel_addend: np.ndarray
    data: bytes
    calls: list[str]
    arity: np.ndarray  # by op number: each op's number of operands (the table's)
    addresses: list[int | None] | None = None  # the calls' addresses in this process, once found
    tail: np.ndarray | None = None  # the bytes after a stitched body (the stitcher's, once built)
    split: tuple | None = None  # the relocations, holes and relative ones apart (the stitcher's, once built)

    @property
    def vectorizable(self) -> np.ndarray:
        """By op number: whether the op has vector stencils."""
        return self.variants[:, VECTOR_BASE] >= 0


TABLES_FORMAT = "stencil-tables-1"  # the layout of :func:`tables`: changed with it or with Library's arrays
_TABLE_ARRAYS = ("variants", "blob", "start", "length", "rel_start", "rel_count", "rel_offset", "rel_kind",
                 "rel_arg", "rel_addend", "arity")
_TABLE_DTYPES = {"blob": np.dtype(np.uint8)}  # every other array: int64


def tables(library: Library) -> bytes:
    """The library's tables as bytes :func:`from_tables` reads back in a fraction of a millisecond
    (the shared code cache keeps them beside the stencils' object code: parsing that takes a
    process's first stitch tens of milliseconds): a JSON header of the ops, the C functions called
    and each array's length, then the arrays, then the data."""
    arrays = [np.ascontiguousarray(getattr(library, name), dtype=_TABLE_DTYPES.get(name, np.int64))
              for name in _TABLE_ARRAYS]
    header = json.dumps({"format": TABLES_FORMAT, "ops": library.ops, "calls": library.calls,
                         "shapes": [list(a.shape) for a in arrays], "data": len(library.data)}).encode()
    out = bytearray(struct.pack("<Q", len(header)) + header)
    for a in arrays:
        out += bytes(-len(out) % 8)
        out += a.tobytes()
    return bytes(out + library.data)


def from_tables(payload: bytes) -> Library:
    """The library :func:`tables` wrote (its arrays read-only views of ``payload``); a StencilError
    where ``payload`` is not such tables, or not of this op table."""
    try:
        size, = struct.unpack_from("<Q", payload, 0)
        header = json.loads(payload[8:8 + size])
        if header["format"] != TABLES_FORMAT or len(header["shapes"]) != len(_TABLE_ARRAYS):
            raise ValueError("another layout")
        at, arrays = 8 + size, []
        for name, shape in zip(_TABLE_ARRAYS, header["shapes"]):
            dtype = _TABLE_DTYPES.get(name, np.dtype(np.int64))
            at += -at % 8
            count = int(np.prod(shape, dtype=np.int64))
            arrays.append(np.frombuffer(payload, dtype, count, at).reshape(shape))
            at += count * dtype.itemsize
        data = payload[at:]
        ops, calls = header["ops"], header["calls"]
        if len(data) != header["data"] or not isinstance(ops, dict) or not all(isinstance(c, str) for c in calls):
            raise ValueError("inconsistent lengths")
    except (struct.error, ValueError, TypeError, KeyError) as err:
        raise StencilError(f"unreadable stencil tables: {err}") from err
    if not ops.keys() <= PRIMITIVES.keys():
        raise StencilError(f"stencils of ops the table does not have: {sorted(ops.keys() - PRIMITIVES.keys())}")
    return Library(ops, arrays[0], *arrays[1:10], data, list(calls), arrays[10])


def parse(obj: bytes) -> Library:
    """The stencils of the relocatable x86-64 ELF object ``obj`` (from :func:`library_ir`)."""
    try:
        return _parse(memoryview(obj))
    except (struct.error, IndexError, ValueError, UnicodeDecodeError) as err:
        raise StencilError(f"unreadable stencil object: {err}") from err


_SYMBOL = np.dtype([("name", "<u4"), ("info", "u1"), ("other", "u1"), ("shndx", "<u2"), ("value", "<u8"),
                    ("size", "<u8")])
_RELA = np.dtype([("offset", "<u8"), ("info", "<u8"), ("addend", "<i8")])
_STT_FUNC = 2


def _ranges(lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """``lo[0]..hi[0]-1, lo[1]..hi[1]-1, ...`` as one array."""
    counts = hi - lo
    return np.repeat(lo - (np.cumsum(counts) - counts), counts) + np.arange(int(counts.sum()))


def _parse(data: memoryview) -> Library:
    """Read with NumPy over the symbol and relocation tables (a process's first stitch pays it:
    tens of thousands of relocations, no Python loop per relocation)."""
    if bytes(data[:4]) != b"\x7fELF" or data[4] != 2 or data[5] != 1:
        raise StencilError("not a 64-bit little-endian ELF object")
    shoff, = struct.unpack_from("<Q", data, 40)
    shentsize, shnum, _ = struct.unpack_from("<HHH", data, 58)
    if shentsize != 64:
        raise StencilError("unexpected section header size")
    sections = [struct.unpack_from("<IIQQQQIIQQ", data, shoff + 64 * k) for k in range(shnum)]
    symtab = [k for k, s in enumerate(sections) if s[1] == _SHT_SYMTAB]
    if len(symtab) != 1:
        raise StencilError("no single symbol table")
    _, _, _, _, sym_off, sym_size, strtab, _, _, sym_ent = sections[symtab[0]]
    if sym_ent != _SYMBOL.itemsize:
        raise StencilError("unexpected symbol size")
    strings = bytes(data[sections[strtab][4]:sections[strtab][4] + sections[strtab][5]])

    def name_at(offset: int) -> str:
        return strings[offset:strings.index(b"\0", offset)].decode()

    # Read-only data sections (constants LLVM placed), laid out one after another; the entries of
    # a section of constants (mergeable, of fixed size) each once, whichever stencils share them.
    data_at: dict[int, int] = {}
    merged: dict[int, tuple[int, int]] = {}  # section: (its offset in the file, its entries' size)
    blob = bytearray()
    for k, (_, kind, flags, _, offset, length, _, _, align, entsize) in enumerate(sections):
        if flags & _SHF_ALLOC and not flags & _SHF_EXECINSTR and length and kind != _SHT_X86_64_UNWIND:
            if flags & _SHF_WRITE or kind not in (_SHT_PROGBITS, _SHT_NOBITS):
                raise StencilError("writable data in the stencils")
            if flags & _SHF_MERGE and entsize and kind == _SHT_PROGBITS:
                merged[k] = (offset, entsize)
                continue
            align = max(align, 1)
            blob += bytes(-len(blob) % align)
            data_at[k] = len(blob)
            blob += bytes(data[offset:offset + length]) if kind == _SHT_PROGBITS else bytes(length)

    symbols = np.frombuffer(data, _SYMBOL, sym_size // sym_ent, sym_off)
    executable = np.array([bool(sec[2] & _SHF_EXECINSTR) for sec in sections])
    candidates = np.flatnonzero((symbols["name"] != 0) & (symbols["shndx"] < len(sections))
                                & ((symbols["info"] & 0xF) == _STT_FUNC))
    candidates = candidates[executable[symbols["shndx"][candidates]]]
    functions: dict[str, int] = {}  # "<op>_<variant>": its symbol
    for k in candidates.tolist():
        name = name_at(int(symbols["name"][k]))
        if name.startswith(PREFIX):
            functions[name[len(PREFIX):]] = k
    fsym = np.fromiter(functions.values(), dtype=np.int64, count=len(functions))
    fsec = symbols["shndx"][fsym].astype(np.int64)
    fvalue = symbols["value"][fsym].astype(np.int64)
    fsize = symbols["size"][fsym].astype(np.int64)

    # Every relocation of the stencils' sections: rows (offset in its section, type, symbol,
    # addend), each stencil's rows found by bisection on the offsets.
    n_f = len(fsym)
    lo, hi = np.zeros(n_f, dtype=np.int64), np.zeros(n_f, dtype=np.int64)
    tables = []
    total = 0
    for sec in sorted(set(fsec.tolist())):
        rows = [np.frombuffer(data, _RELA, length // entsize, offset)
                for _, kind, _, _, offset, length, _, target, _, entsize in sections
                if kind == _SHT_RELA and target == sec]
        table = np.concatenate(rows) if rows else np.zeros(0, dtype=_RELA)
        table = table[np.argsort(table["offset"], kind="stable")]
        mine = fsec == sec
        offsets = table["offset"].astype(np.int64)
        lo[mine] = np.searchsorted(offsets, fvalue[mine]) + total
        hi[mine] = np.searchsorted(offsets, fvalue[mine] + fsize[mine]) + total
        tables.append(table)
        total += len(table)
    every = np.concatenate(tables) if tables else np.zeros(0, dtype=_RELA)
    rows = _ranges(lo, hi)
    counts = hi - lo
    owner = np.repeat(np.arange(n_f), counts)
    r_off = every["offset"][rows].astype(np.int64) - fvalue[owner]
    r_type = (every["info"][rows] & 0xFFFFFFFF).astype(np.int64)
    r_sym = (every["info"][rows] >> np.uint64(32)).astype(np.int64)
    r_addend = every["addend"][rows].astype(np.int64)
    if len(r_sym) and r_sym.max() >= len(symbols):
        raise StencilError("a relocation against no symbol")

    # Each symbol a relocation names: a hole, the next stencil, a C function, or data.
    holes = {name: k for k, name in enumerate(HOLES)}
    r_shndx = symbols["shndx"][r_sym].astype(np.int64)
    undefined = r_shndx == _SHN_UNDEF
    names = {k: name_at(int(symbols["name"][k])) for k in set(r_sym[undefined].tolist())}
    r_kind = np.full(len(rows), -1, dtype=np.int64)
    r_arg = np.zeros(len(rows), dtype=np.int64)
    hole_of = np.array([holes.get(names.get(k, ""), -1) for k in r_sym[undefined].tolist()], dtype=np.int64)
    absolute = (r_type == _R_X86_64_32S) | (r_type == _R_X86_64_32)
    relative = (r_type == _R_X86_64_PC32) | (r_type == _R_X86_64_PLT32)
    is_hole = np.zeros(len(rows), dtype=bool)
    is_hole[undefined] = hole_of >= 0
    is_hole &= absolute
    r_kind[is_hole] = HOLE
    r_arg[np.flatnonzero(undefined)[hole_of >= 0]] = hole_of[hole_of >= 0]
    bad = ~is_hole & ~relative
    if bad.any():
        k = int(np.flatnonzero(bad)[0])
        raise StencilError(f"stencil {list(functions)[owner[k]]}: relocation type {r_type[k]} against "
                           f"{names.get(int(r_sym[k])) or 'a section'}")
    called: dict[str, int] = {}  # each C function, numbered in the order first called
    call_rows = np.flatnonzero(relative & undefined)
    for k, sym in zip(call_rows.tolist(), r_sym[call_rows].tolist()):
        name = names[sym]
        if name == NEXT:
            r_kind[k] = PC_NEXT
            continue
        r_kind[k], r_arg[k] = PC_CALL, called.setdefault(name, len(called))
    calls = list(called)
    defined = relative & ~undefined
    for sec, at in data_at.items():
        here = defined & (r_shndx == sec)
        r_kind[here] = PC_DATA
        r_arg[here] = at + symbols["value"][r_sym[here]].astype(np.int64)
    # Constants: the entry a reference reads (``at + addend`` from the end of an instruction, 4
    # or more bytes past the field), each value once in the blob, in the order first read.
    firsts = []
    past_entry = np.zeros(len(rows), dtype=np.int64)
    for sec, (offset, size) in merged.items():
        here = np.flatnonzero(defined & (r_shndx == sec))
        at = symbols["value"][r_sym[here]].astype(np.int64)
        entry = -(-(at + r_addend[here] + 4) // size) * size
        values = np.frombuffer(data, f"V{size}", sections[sec][5] // size, offset)[entry // size]
        unique, first, inverse = np.unique(values, return_index=True, return_inverse=True)
        by_value = np.argsort(inverse.reshape(-1), kind="stable")
        bounds = np.searchsorted(inverse.reshape(-1)[by_value], np.arange(len(unique) + 1))
        firsts += [(int(here[f]), bytes(u), sec, by_value[bounds[j]:bounds[j + 1]])
                   for j, (u, f) in enumerate(zip(unique, first))]
        past_entry[here] = at - entry
    pool: dict[bytes, int] = {}
    for _, value, sec, group in sorted(firsts, key=lambda f: f[0]):
        if value not in pool:
            blob.extend(bytes(-len(blob) % merged[sec][1]))
            pool[value] = len(blob)
            blob.extend(value)
        where = np.flatnonzero(defined & (r_shndx == sec))[group]
        r_kind[where] = PC_DATA
        r_arg[where] = pool[value] + past_entry[where]
    if (r_kind < 0).any():
        k = int(np.flatnonzero(r_kind < 0)[0])
        raise StencilError(f"stencil {list(functions)[owner[k]]}: a relocation against section {r_shndx[k]}")

    # The final `jmp _HOLE_NEXT` goes: the next stencil is placed where it would jump.
    last = hi - lo - 1 + np.cumsum(counts) - counts  # each stencil's last row
    has = counts > 0
    text = np.frombuffer(data, np.uint8)
    starts_in_file = np.array([sections[s][4] for s in fsec.tolist()], dtype=np.int64) + fvalue
    lastrow = np.where(has, last, 0)
    drop = (has & (fsize >= 5) & (r_kind[lastrow] == PC_NEXT) & (r_off[lastrow] == fsize - 4)
            & (text[np.maximum(starts_in_file + fsize - 5, 0)] == _JMP_REL32))
    keep_rows = np.ones(len(rows), dtype=bool)
    keep_rows[lastrow[drop]] = False
    lengths = fsize - 5 * drop
    counts = counts - drop
    code = text[_ranges(starts_in_file, starts_in_file + lengths)]
    starts = np.cumsum(lengths) - lengths
    rel_starts = np.cumsum(counts) - counts

    ops: dict[str, int] = {}
    variants: list[list[int]] = []
    for k, stencil in enumerate(functions):
        op, number = stencil.rsplit("_", 1)
        if op not in ops:
            ops[op] = len(ops)
            variants.append([-1] * VARIANTS)
        variants[ops[op]][int(number)] = k
    if not is_hole.any():
        raise StencilError("no stencil reads a hole")
    if not ops.keys() <= PRIMITIVES.keys():
        raise StencilError(f"stencils of ops the table does not have: {sorted(ops.keys() - PRIMITIVES.keys())}")
    arity = np.array([PRIMITIVES[op].arity for op in ops], dtype=np.int64)
    return Library(ops, np.array(variants, dtype=np.int64).reshape(-1, VARIANTS), code.copy(), starts, lengths,
                   rel_starts, counts, r_off[keep_rows], r_kind[keep_rows], r_arg[keep_rows],
                   r_addend[keep_rows], bytes(blob), calls, arity)
