"""symad's own loader of object code: the same machine code as MCJIT loads, or a refusal."""

import ctypes
import gc
import os
import struct
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from symad import Graph, parse
from symad.native import codegen, elf, fastcall
from symad.native import ir as llvm_ir
from symad.native import jit as native

pytestmark = [
    pytest.mark.skipif(not native.available(), reason="llvmlite not installed"),
    pytest.mark.skipif(not elf.supported(), reason="the loader serves Linux on x86-64 only"),
]

TEXT = "sin(x)^2/sqrt(1+y) + atan2(y, x) + exp(-x*y) + x^y + abs(x - y)"


def object_code(text: str, opt: int) -> tuple[bytes, object]:
    schedule = parse(text, Graph()).compile(backend="python").value_grad_program().schedule
    ir_text = llvm_ir.module_ir(schedule, chunked=opt > 0, data_offset=fastcall.array_data_offset())
    return codegen.object_code(ir_text, native._target_machine_for(opt), opt, schedule.size), schedule


def run_point(image, n_in: int, n_out: int, x: np.ndarray) -> np.ndarray:
    point = native.POINT(image.get_function_address("point"))
    out0, rest = np.zeros(1), np.zeros(max(n_out - 1, 1))
    point(x.ctypes.data, out0.ctypes.data, rest.ctypes.data)
    return np.concatenate([out0, rest[:n_out - 1]])


@pytest.mark.parametrize("opt", [0, 2])
def test_loaded_code_computes_what_mcjit_loaded_code_does_bit_for_bit(opt, monkeypatch):
    stored, schedule = object_code(TEXT, opt)
    mine = elf.load(stored)
    assert isinstance(mine, elf.Image)
    monkeypatch.setattr(elf, "load", lambda data: None)
    theirs = native._load(stored, opt)
    assert not isinstance(theirs, elf.Image)
    n_in, n_out = len(schedule.inputs), len(schedule.outputs)
    for x in np.random.default_rng(5).uniform(-2, 2, size=(100, n_in)):
        x = np.ascontiguousarray(x)
        np.testing.assert_array_equal(run_point(mine, n_in, n_out, x), run_point(theirs, n_in, n_out, x))
    assert mine.get_function_address("no such function") == 0


def test_functions_through_mcjit_give_the_python_backends_numbers(monkeypatch):
    """Where the loader refuses, MCJIT loads the code: the numbers are the same."""
    monkeypatch.setattr(elf, "load", lambda data: None)
    monkeypatch.setattr(native, "_cache", {})
    e = parse(TEXT, Graph())
    fn, fp = e.compile(backend="native"), e.compile(backend="python")
    for p in np.random.default_rng(2).uniform(0.2, 2, size=(50, 2)):
        vn, gn = fn.value_and_grad(p)
        vp, gp = fp.value_and_grad(p)
        np.testing.assert_array_equal(np.array([vn, *gn]), np.array([vp, *gp]))


def relocations(data: bytes) -> list[int]:
    """The file offsets of every relocation entry's r_info field."""
    shoff, = struct.unpack_from("<Q", data, 40)
    shnum, = struct.unpack_from("<H", data, 60)
    found = []
    for k in range(shnum):
        _, kind, _, _, offset, size, _, _, _, entsize = struct.unpack_from("<IIQQQQIIQQ", data, shoff + 64 * k)
        if kind == 4:
            found += [offset + entsize * r + 8 for r in range(size // entsize)]
    return found


def section_flags(data: bytes) -> list[int]:
    shoff, = struct.unpack_from("<Q", data, 40)
    shnum, = struct.unpack_from("<H", data, 60)
    return [shoff + 64 * k + 8 for k in range(shnum)]


def test_what_it_cannot_be_sure_of_it_refuses():
    stored, _ = object_code("x*y + sin(x)", 0)
    assert elf.load(stored) is not None
    assert elf.load(b"") is None
    assert elf.load(b"not an object file at all" * 10) is None
    assert elf.load(stored[:100]) is None  # cut short
    other_machine = bytearray(stored)
    struct.pack_into("<H", other_machine, 18, 183)  # AArch64
    assert elf.load(bytes(other_machine)) is None
    unknown = bytearray(stored)
    at = relocations(stored)[0]
    info, = struct.unpack_from("<Q", unknown, at)
    struct.pack_into("<Q", unknown, at, (info & ~0xFFFFFFFF) | 10)  # R_X86_64_32: not one it applies
    assert elf.load(bytes(unknown)) is None
    writable = bytearray(stored)
    for at in section_flags(stored):
        flags, = struct.unpack_from("<Q", writable, at)
        if flags & 0x2:
            struct.pack_into("<Q", writable, at, flags | 0x1)
    assert elf.load(bytes(writable)) is None


def test_an_unknown_symbol_is_refused(monkeypatch):
    stored, _ = object_code("sin(x) + y", 0)
    monkeypatch.setattr(elf, "_symbol", lambda name: None)
    assert elf.load(stored) is None


def test_the_pages_are_executable_not_writable_and_freed_with_the_image():
    stored, _ = object_code("x*y", 0)
    image = elf.load(stored)
    address = image.get_function_address("point")
    maps = open("/proc/self/maps").read().splitlines()
    mapping = next(line for line in maps
                   if int(line.split("-")[0], 16) <= address < int(line.split()[0].split("-")[1], 16))
    assert mapping.split()[1].startswith("r-x")
    finalizer = image._unmap
    del image
    gc.collect()
    assert not finalizer.alive
    assert ctypes.sizeof(ctypes.c_void_p) == 8


def test_a_process_running_cached_code_never_loads_llvm(tmp_path):
    """Once the interpreter's code is on disk, a new process computes values and gradients
    without importing llvmlite's binding to LLVM (no LLVM library mapped)."""
    script = textwrap.dedent("""
        import sys
        import numpy as np
        import symad
        f = symad.compile("+".join(f"100*(x{i+1}-x{i}^2)^2+(1-x{i})^2" for i in range(20)))
        v, g = f.value_and_grad(np.full(21, 0.5))
        assert f._value_grad.vm is not None, "served by the instructions"
        print(v, "llvmlite.binding" in sys.modules)
    """)
    env = dict(os.environ, SYMAD_CACHE_DIR=str(tmp_path / "cache"))
    first = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=120)
    assert first.returncode == 0, first.stderr
    again = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=120)
    assert again.returncode == 0, again.stderr
    assert first.stdout.split()[0] == again.stdout.split()[0] == "130.0"
    assert first.stdout.split()[1] == "True"  # the first compiled the interpreter
    assert again.stdout.split()[1] == "False"


def test_cpu_identity_names_the_cpu_flags():
    identity = elf.cpu_identity()
    assert identity.count("|") == 4 and len(identity.split("|")[-1]) > 20
