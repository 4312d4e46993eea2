"""IR text to object code for this machine: the part of native compilation that needs only llvmlite.

Used in-process by :mod:`symad.backends.llvm.jit` and in the compile worker process
(:mod:`symad.backends.llvm.worker`), which must start fast: this module imports
nothing of symad's and llvmlite only when called.
"""

from __future__ import annotations

import functools
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


def optimized_module(text: str, tm: Any, opt: int, size: int) -> Any:
    """The IR parsed, checked and (at ``opt`` > 0, past ``QUICK_OPS`` operations) optimised."""
    import llvmlite.binding as llvm

    module = llvm.parse_assembly(text)
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


def object_code(text: str, tm: Any, opt: int, size: int) -> bytes:
    """The object code of the IR ``text`` (a program of ``size`` operations) for ``tm``."""
    return tm.emit_object(optimized_module(text, tm, opt, size))
