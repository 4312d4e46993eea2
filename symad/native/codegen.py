"""IR text to object code for this machine: the part of native compilation that needs only llvmlite.

Used in-process by :mod:`symad.native.jit` and in the compile worker process
(:mod:`symad.native.worker`), which must start fast: this module imports
nothing of symad's and llvmlite only when called.
"""

from __future__ import annotations

import collections
import functools
import platform
import re
from typing import Any

QUICK_OPS = 200  # up to this size LLVM's IR passes gain nothing measurable: only instruction selection runs


@functools.lru_cache(maxsize=1)
def host_cpu() -> tuple[str, str]:
    """This machine's CPU name and features, as LLVM names them (asked once: it costs ~1 ms)."""
    import llvmlite.binding as llvm

    llvm.initialize_native_target()
    return llvm.get_host_cpu_name(), llvm.get_host_cpu_features().flatten()


def new_target_machine(opt: int) -> Any:
    """A target machine for this CPU at optimisation level ``opt``."""
    import llvmlite.binding as llvm

    llvm.initialize_native_target()
    llvm.initialize_native_asmprinter()
    target = llvm.Target.from_default_triple()
    # This machine's own instruction set (AVX and the like): code runs where it is compiled
    # (the disk cache keys its entries by CPU).  Without fast-math flags LLVM fuses no
    # multiply-add, so the numbers stay those of the other backends.
    cpu, features = host_cpu()
    return target.create_target_machine(cpu=cpu, features=features, opt=opt, codemodel="jitdefault")


def stencil_target_machine() -> Any:
    """A target machine for stencils (:mod:`symad.native.stencils`): this CPU, the small code model
    and static relocations, so that a hole is a 32-bit displacement in the instruction reading it."""
    import llvmlite.binding as llvm

    llvm.initialize_native_target()
    llvm.initialize_native_asmprinter()
    cpu, features = host_cpu()
    return llvm.Target.from_default_triple().create_target_machine(
        cpu=cpu, features=features, opt=2, reloc="static", codemodel="small")


def x86() -> bool:
    """Whether this machine is x86-64 (where selects need :func:`blend_selects`)."""
    return platform.machine() in ("x86_64", "AMD64")


def host_avx512() -> bool:
    """Whether this machine has AVX-512, where a select LLVM's IR passes leave is a masked move."""
    return "+avx512f" in host_cpu()[1].split(",")


_SELECT = re.compile(r"^ *(%\S+) = select i1 (\S+), double (\S+), double (\S+)$", re.MULTILINE)
_ORDERED_FCMP = re.compile(r"^ *(%\S+) = fcmp o[lg][te] double ", re.MULTILINE)  # olt ole ogt oge
_NAME = re.compile(r"%[\w.]+")


def blend_selects(text: str, all_selects: bool = True) -> str:
    """IR ``text`` with scalar selects of doubles written as selects of two-lane vectors (lane 0
    used), which x86 compiles to blends; unless ``all_selects``, not those whose condition is
    one ``<``/``>`` comparison of doubles used nowhere else (x86 compiles these to a compare
    and a blend already).

    A condition is data, which no branch predictor can guess, but x86 code generation without
    AVX-512 (and with it, without IR passes) turns other scalar selects of doubles (a condition
    of two comparisons, one a vectoriser packed, one shared by a branch's value and its
    adjoints, a test of a number against 0) into jumps, wrong for about every other point of a
    batch.  Done after LLVM's IR passes, so that its vectoriser packs selects as it packs
    arithmetic.  The same bits: both arms are computed anyway."""
    if " = select i1 " not in text:
        return text
    single = set() if all_selects else set(_ORDERED_FCMP.findall(text))
    if single:
        uses = collections.Counter(_NAME.findall(text))
        single = {c for c in single if uses[c] == 2}  # its definition and one use

    def vector(m: re.Match) -> str:
        r, c, a, b = m.groups()
        if c in single:
            return m.group(0)
        return (f"  {r}.c = insertelement <2 x i1> poison, i1 {c}, i32 0\n"
                f"  {r}.a = insertelement <2 x double> poison, double {a}, i32 0\n"
                f"  {r}.b = insertelement <2 x double> poison, double {b}, i32 0\n"
                f"  {r}.v = select <2 x i1> {r}.c, <2 x double> {r}.a, <2 x double> {r}.b\n"
                f"  {r} = extractelement <2 x double> {r}.v, i32 0")

    return _SELECT.sub(vector, text)


def optimized_module(text: str, tm: Any, opt: int, size: int, avx512: bool | None = None) -> Any:
    """The IR parsed, checked and (at ``opt`` > 0, past ``QUICK_OPS`` operations) optimised, its
    selects written as :func:`blend_selects` writes them where x86 code generation would turn
    some into jumps: without IR passes, and after them on a CPU without AVX-512 (``avx512``:
    default, this machine's, :func:`host_avx512`)."""
    import llvmlite.binding as llvm

    passes = opt and size > QUICK_OPS
    module = llvm.parse_assembly(blend_selects(text) if x86() and not passes else text)
    module.triple = tm.triple
    module.data_layout = str(tm.target_data)
    module.verify()
    if passes:
        pto = llvm.create_pipeline_tuning_options(speed_level=opt)
        # Pack isomorphic neighbouring operations (the terms of a sum) into vector instructions:
        # a quarter off the run time of a large program, for half as much again compile time.
        pto.slp_vectorization = True
        pb = llvm.create_pass_builder(tm, pto)
        pb.getModulePassManager().run(module, pb)
        if x86() and not (host_avx512() if avx512 is None else avx512):
            module = llvm.parse_assembly(blend_selects(str(module), all_selects=False))
            module.verify()
    return module


def object_code(text: str, tm: Any, opt: int, size: int) -> bytes:
    """The object code of the IR ``text`` (a program of ``size`` operations) for ``tm``."""
    return tm.emit_object(optimized_module(text, tm, opt, size))
