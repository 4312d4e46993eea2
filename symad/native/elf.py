"""Load LLVM's object code into this process without LLVM: a minimal ELF loader.

Loading object code through llvmlite's MCJIT costs ~40 ms a process before the
first instruction runs (importing llvmlite.binding, which maps the whole LLVM
library, then creating an engine).  The object files symad emits are simple: one
relocatable x86-64 ELF file, compiled with the large code model, whose sections
are code and read-only data and whose relocations are absolute 64-bit addresses
(``R_X86_64_64``) of its own sections and of C library functions (``sin``,
``memcpy``).  This module maps such a file into fresh pages, writes those
addresses, makes the pages executable and read-only, and returns where its
functions are: well under a millisecond.

Anything else (another machine or operating system, writable data, a relocation
type it does not know, a symbol the process cannot find) makes :func:`load`
return None, and the caller loads the code through MCJIT as before: this loader
only ever takes the fast path where it is certain, never guesses.
"""

from __future__ import annotations

import ctypes
import functools
import os
import struct
import sys
import weakref

_PROT_READ, _PROT_WRITE, _PROT_EXEC = 1, 2, 4
_MAP_PRIVATE, _MAP_ANONYMOUS = 0x02, 0x20
_SHF_WRITE, _SHF_ALLOC = 0x1, 0x2
_SHT_PROGBITS, _SHT_SYMTAB, _SHT_RELA, _SHT_NOBITS, _SHT_REL = 1, 2, 4, 8, 9
# Unwind tables: read only by debuggers and C++ exceptions, neither of which this code meets
# (MCJIT registers them; this loader leaves them out, with the relocations into them).
_SHT_X86_64_UNWIND = 0x70000001
_SHN_UNDEF, _SHN_ABS = 0, 0xFFF1
_R_X86_64_64, _R_X86_64_PC32, _R_X86_64_PLT32 = 1, 2, 4
_EM_X86_64, _ET_REL = 62, 1
_PAGE = 4096


class Image:
    """Machine code loaded by :func:`load`: its functions' addresses, and the pages that hold
    them, unmapped when this object is collected."""

    def __init__(self, base: int, size: int, functions: dict[str, int]):
        self.functions, self.base = functions, base
        self._unmap = weakref.finalize(self, _libc().munmap, ctypes.c_void_p(base), ctypes.c_size_t(size))
        self._unmap.atexit = False  # at exit the process ends: its pages go with it

    def get_function_address(self, name: str) -> int:
        """The address of the function ``name``, 0 if the object defines none (as MCJIT answers)."""
        return self.functions.get(name, 0)


def supported() -> bool:
    """Whether this process can load object code itself (Linux on x86-64)."""
    return sys.platform.startswith("linux") and os.uname().machine == "x86_64"


@functools.lru_cache(maxsize=1)
def cpu_identity() -> str:
    """This CPU's model and instruction-set flags as Linux reports them (``/proc/cpuinfo``):
    what the machine code of a cache entry depends on, known without asking LLVM; "" if unknown."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as f:
            first = f.read(1 << 16).split("\n\n", 1)[0]
    except OSError:
        return ""
    fields = dict(line.split(":", 1) for line in first.splitlines() if ":" in line)
    fields = {k.strip(): v.strip() for k, v in fields.items()}
    parts = [fields.get(k, "") for k in ("vendor_id", "cpu family", "model", "model name", "flags")]
    return "|".join(parts) if parts[-1] else ""


@functools.lru_cache(maxsize=1)
def _libc() -> ctypes.CDLL:
    libc = ctypes.CDLL(None, use_errno=True)
    libc.mmap.restype = ctypes.c_void_p
    libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int,
                          ctypes.c_long]
    libc.mprotect.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
    libc.munmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
    return libc


def _symbol(name: str) -> int | None:
    """The address of a function the process already has (the C and maths libraries), or None."""
    try:
        return ctypes.cast(getattr(_libc(), name), ctypes.c_void_p).value
    except AttributeError:
        return None


symbol = _symbol  # (public: the stitcher's trampolines call such functions)


def executable(code: bytes | bytearray | memoryview) -> Image | None:
    """``code`` (position-independent machine code) in fresh executable, read-only pages; its
    address is the image's ``base``.  None where this process cannot map code."""
    if not supported() or not len(code):
        return None
    size = (len(code) + _PAGE - 1) // _PAGE * _PAGE
    libc = _libc()
    base = libc.mmap(None, size, _PROT_READ | _PROT_WRITE, _MAP_PRIVATE | _MAP_ANONYMOUS, -1, 0)
    if base is None or base == ctypes.c_void_p(-1).value:
        return None
    # a writable buffer (a NumPy array of bytes) is copied in place, without a copy as bytes
    source = code if isinstance(code, bytes) else (ctypes.c_char * len(code)).from_buffer(code)
    ctypes.memmove(base, source, len(code))
    if libc.mprotect(base, size, _PROT_READ | _PROT_EXEC) != 0:
        libc.munmap(base, size)
        return None
    return Image(base, size, {})


def load(data: bytes) -> Image | None:
    """The functions of the relocatable object ``data``, loaded; None if this loader cannot be
    sure of loading it exactly as a linker would (the caller then uses MCJIT)."""
    if not supported():
        return None
    try:
        return _load(memoryview(data))
    except (struct.error, IndexError, ValueError, UnicodeDecodeError):
        return None


def _load(data: memoryview) -> Image | None:
    if bytes(data[:4]) != b"\x7fELF" or data[4] != 2 or data[5] != 1:  # 64-bit, little-endian
        return None
    e_type, e_machine = struct.unpack_from("<HH", data, 16)
    shoff, = struct.unpack_from("<Q", data, 40)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", data, 58)
    if e_type != _ET_REL or e_machine != _EM_X86_64 or shentsize != 64 or not shnum:
        return None
    sections = [struct.unpack_from("<IIQQQQIIQQ", data, shoff + 64 * k) for k in range(shnum)]
    # name, type, flags, addr, offset, size, link, info, addralign, entsize

    # Lay out the allocated sections in one block of pages, each at its alignment.
    place: dict[int, int] = {}
    size = 0
    for k, (_, kind, flags, _, _, length, _, _, align, _) in enumerate(sections):
        if flags & _SHF_ALLOC and length and kind != _SHT_X86_64_UNWIND:
            if flags & _SHF_WRITE or kind not in (_SHT_PROGBITS, _SHT_NOBITS):
                return None  # writable data would need pages of its own
            align = max(align, 1)
            size = (size + align - 1) // align * align
            place[k] = size
            size += length
    if not place:
        return None
    size = (size + _PAGE - 1) // _PAGE * _PAGE
    image = bytearray(size)
    for k, at in place.items():
        _, kind, _, _, offset, length = sections[k][:6]
        if kind == _SHT_PROGBITS:
            image[at:at + length] = data[offset:offset + length]

    libc = _libc()
    base = libc.mmap(None, size, _PROT_READ | _PROT_WRITE, _MAP_PRIVATE | _MAP_ANONYMOUS, -1, 0)
    if base is None or base == ctypes.c_void_p(-1).value:
        return None
    try:
        functions = _relocate(data, sections, place, base, image)
        if functions is None:
            raise ValueError
        ctypes.memmove(base, (ctypes.c_char * size).from_buffer(image), size)
        if libc.mprotect(base, size, _PROT_READ | _PROT_EXEC) != 0:
            raise ValueError
    except BaseException:
        libc.munmap(base, size)
        raise
    return Image(base, size, functions)


def _relocate(data: memoryview, sections: list[tuple], place: dict[int, int], base: int,
              image: bytearray) -> dict[str, int] | None:
    """Write every relocation into ``image`` (to run at ``base``); the defined functions'
    addresses, or None if a relocation or symbol is not one this loader knows."""
    symtabs = [k for k, s in enumerate(sections) if s[1] == _SHT_SYMTAB]
    if len(symtabs) != 1:
        return None
    _, _, _, _, sym_off, sym_size, strtab, _, _, sym_ent = sections[symtabs[0]]
    str_off = sections[strtab][4]

    def name_at(offset: int) -> str:
        start = str_off + offset
        end = bytes(data[start:start + 256]).index(b"\0")
        return bytes(data[start:start + end]).decode()

    addresses: list[int | None] = []
    functions: dict[str, int] = {}
    for k in range(sym_size // sym_ent):
        st_name, st_info, _, shndx, value, _ = struct.unpack_from("<IBBHQQ", data, sym_off + sym_ent * k)
        if shndx == _SHN_UNDEF:
            addresses.append(_symbol(name_at(st_name)) if st_name else 0)
        elif shndx == _SHN_ABS:
            addresses.append(value)
        elif shndx in place:
            addresses.append(base + place[shndx] + value)
            if st_info & 0xF == 2 and st_info >> 4 == 1:  # a global function
                functions[name_at(st_name)] = addresses[-1]
        else:
            addresses.append(None)  # in a section not loaded: fine unless a relocation names it

    for _, kind, _, _, offset, length, link, target, _, entsize in sections:
        if kind == _SHT_REL or (kind == _SHT_RELA and link != symtabs[0]):
            return None
        if kind != _SHT_RELA or target not in place:
            continue
        for r in range(length // entsize):
            r_offset, r_info, addend = struct.unpack_from("<QQq", data, offset + entsize * r)
            symbol = addresses[r_info >> 32]
            if symbol is None:
                return None
            at = place[target] + r_offset
            if (r_info & 0xFFFFFFFF) == _R_X86_64_64:
                struct.pack_into("<Q", image, at, (symbol + addend) & 0xFFFFFFFFFFFFFFFF)
            elif (r_info & 0xFFFFFFFF) in (_R_X86_64_PC32, _R_X86_64_PLT32):
                relative = symbol + addend - (base + at)
                if not -2**31 <= relative < 2**31:
                    return None
                struct.pack_into("<i", image, at, relative)
            else:
                return None
    return functions
