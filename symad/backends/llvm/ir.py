"""LLVM IR text for a schedule: ``point``, the fused ``batch`` loop, and the ``call`` entry.

The IR is written as text directly (faster than building it through an API), each
op as its entry in :data:`symad.core.ops.OPS` lowers it (inline IR, or a call of an
intrinsic or C library function).  :mod:`symad.backends.llvm.jit` compiles it.
"""

from __future__ import annotations

import struct

from symad.backends.schedule import Schedule
from symad.core.ops import OPS, Inline
from symad.core.semantics import small_power_step


def _hex(value: float) -> str:
    """An LLVM double literal with the exact bits of ``value``."""
    return f"0x{struct.unpack('<Q', struct.pack('<d', value))[0]:016X}"


QUICK_OPS = 200  # up to this size LLVM's IR passes gain nothing measurable: only instruction selection runs


def op_lines(op: str, vals: list[str], r: str, t: str, power: int | None, declared: dict[str, int]) -> list[str]:
    """IR lines computing ``op`` of the IR values ``vals`` into ``r`` (temporaries named from
    ``t``): the op table's lowering, or, for ``x^k`` with a small constant ``k`` (``power``),
    the products every evaluator computes; intrinsics and C functions called go into ``declared``."""
    if power is not None:
        lines, prev = [], vals[0]
        for j in range(abs(power) - 1):
            cur = r if power > 0 and j == abs(power) - 2 else f"{t}m{j}"
            lines.append(f"  {cur} = fmul double {prev}, {vals[0]}")
            prev = cur
        if power < 0:
            lines.append(f"  {r} = fdiv double 1.0, {prev}")
        return lines
    lowering = OPS[op].llvm
    if isinstance(lowering, Inline):
        return ["  " + ln for ln in lowering.template.format(*vals, r=r, t=t).split("\n")]
    declared[lowering.symbol] = OPS[op].arity
    params = ", ".join(f"double {v}" for v in vals)
    return [f"  {r} = call double @{lowering.symbol}({params}){' #0' if lowering.opaque else ''}"]


def _steps(schedule: Schedule, steps: list, names: dict[int, str], p: str, declared: dict[str, int]) -> list[str]:
    """IR lines for ``steps``; ``names`` maps the nodes already available to IR values (extended)."""
    lines: list[str] = []
    consts = schedule.consts
    for node, op, args in steps:
        k = None if all(a in consts for a in args) else small_power_step(consts, op, args)
        r = f"%{p}v{node}"
        lines += op_lines(op, [names[a] for a in args], r, f"%{p}t{node}", k, declared)
        names[node] = r
    return lines


def _load(lines: list[str], name: str, base: str, index: int) -> None:
    lines.append(f"  {name}a = getelementptr double, ptr {base}, i64 {index}")
    lines.append(f"  {name} = load double, ptr {name}a")


def _store(lines: list[str], value: str, base: str, index: int, tag: str) -> None:
    lines.append(f"  %{tag} = getelementptr double, ptr {base}, i64 {index}")
    lines.append(f"  store double {value}, ptr %{tag}")


def _store_outputs(lines: list[str], values: list[str], out0: str, rest: str, p: str) -> None:
    """Output 0 to ``*out0``, output k ≥ 1 to ``rest[k-1]``."""
    for k, value in enumerate(values):
        _store(lines, value, rest if k else out0, k - 1 if k else 0, f"{p}o{k}")


def _body(schedule: Schedule, p: str, inp: str, out0: str, rest: str, declared: dict[str, int]) -> list[str]:
    """IR lines computing the outputs at ``inp`` (see :func:`_store_outputs`); SSA names start with ``%{p}``."""
    names: dict[int, str] = {node: _hex(c) for node, c in schedule.consts.items()}
    lines: list[str] = []
    for k, node in enumerate(schedule.inputs):
        _load(lines, f"%{p}v{node}", inp, k)
        names[node] = f"%{p}v{node}"
    lines += _steps(schedule, schedule.steps, names, p, declared)
    _store_outputs(lines, [names[node] for node in schedule.outputs], out0, rest, p)
    return lines


def _chunked_point(schedule: Schedule, declared: dict[str, int]) -> tuple[list[str], list[str]]:
    """``point``'s body as calls to one function per chunk of the schedule's chunk plan, and their
    definitions (LLVM's instruction selection and register allocation take time and memory
    growing faster than linearly with the size of a basic block).  Values a later chunk
    needs pass through a stack array.
    """
    plan = schedule.chunks()
    chunks, chunk_of, slot = plan.chunks, plan.chunk_of, plan.slot
    position = {node: k for k, node in enumerate(schedule.inputs)}
    definitions: list[str] = []
    for c, chunk in enumerate(chunks):
        names: dict[int, str] = {node: _hex(v) for node, v in schedule.consts.items()}
        lines: list[str] = []
        for _, _, args in chunk:
            for a in args:
                if a in names or chunk_of.get(a) == c:
                    continue
                names[a] = f"%v{a}"
                _load(lines, names[a], "%s" if a in slot else "%in", slot[a] if a in slot else position[a])
        lines += _steps(schedule, chunk, names, "", declared)
        for node, _, _ in chunk:
            if node in slot:
                _store(lines, names[node], "%s", slot[node], f"q{node}")
        definitions.append(f"define internal void @chunk{c}(ptr noalias %in, ptr noalias %s) noinline {{\n"
                           "entry:\n" + "\n".join(lines) + "\n  ret void\n}\n")
    body = [f"  %s = alloca [{max(1, len(slot))} x double]"]
    body += [f"  call void @chunk{c}(ptr %in, ptr %s)" for c in range(len(chunks))]
    values = []
    for k, node in enumerate(schedule.outputs):
        if node in schedule.consts:
            values.append(_hex(schedule.consts[node]))
        else:
            values.append(f"%r{k}")
            _load(body, values[-1], "%s" if node in slot else "%in", slot[node] if node in slot else position[node])
    _store_outputs(body, values, "%out0", "%rest", "")
    return body, definitions


def module_ir(schedule: Schedule, chunked: bool = False, data_offset: int | None = None) -> str:
    """LLVM IR text of ``point(in, out)`` and ``batch(in, out, n)`` (written directly: fast).

    ``chunked`` splits a large ``point`` into functions (see :func:`_chunked_point`);
    ``data_offset`` (see :func:`symad.backends.llvm.jit.array_data_offset`) adds the ``call`` entry.
    """
    declared: dict[str, int] = {}
    definitions: list[str] = []
    if chunked and schedule.chunked:
        point, definitions = _chunked_point(schedule, declared)
    else:
        point = _body(schedule, "", "%in", "%out0", "%rest", declared)
    # A small body is repeated inside the loop, so that no IR pass is needed to inline
    # it; a large one is called, and LLVM's passes inline it if worthwhile (one copy of
    # a large body keeps compile time down).
    if schedule.size <= QUICK_OPS:
        loop_body = _body(schedule, "L", "%pi", "%po", "%pr", declared)
    else:
        loop_body = ["  call void @point(ptr %pi, ptr %po, ptr %pr)"]
    decls = "".join(f"declare double @{fn}({', '.join(['double'] * n)})\n" for fn, n in declared.items())
    n_in, n_out = len(schedule.inputs), len(schedule.outputs)
    return (f"{decls}\n" + "\n".join(definitions) + "\n"
            "define void @point(ptr noalias %in, ptr noalias %out0, ptr noalias %rest) {\nentry:\n"
            + "\n".join(point) + "\n  ret void\n}\n\n"
            "define void @batch(ptr noalias %in, ptr noalias %out, i64 %n) {\n"
            "entry:\n  %any = icmp sgt i64 %n, 0\n  br i1 %any, label %loop, label %done\n"
            "loop:\n  %i = phi i64 [0, %entry], [%next, %loop]\n"
            f"  %ri = mul i64 %i, {n_in}\n  %ro = mul i64 %i, {n_out}\n"
            "  %pi = getelementptr double, ptr %in, i64 %ri\n"
            "  %po = getelementptr double, ptr %out, i64 %ro\n"
            "  %pr = getelementptr double, ptr %po, i64 1\n"
            + "\n".join(loop_body) + "\n"
            "  %next = add i64 %i, 1\n  %more = icmp slt i64 %next, %n\n"
            "  br i1 %more, label %loop, label %done\n"
            "done:\n  ret void\n}\n" + _call_ir(n_out, data_offset) + "\nattributes #0 = { nobuiltin }\n")


def _call_ir(n_out: int, offset: int | None) -> str:
    """``call(x, rest)``: ``point`` on the data pointers of two NumPy array objects, found
    ``offset`` bytes into each; returns output 0.  With one output, ``rest`` is not read."""
    if offset is None:
        return ""
    rest = (f"  %ra = getelementptr i8, ptr %ro, i64 {offset}\n  %r = load ptr, ptr %ra\n" if n_out > 1 else "")
    return ("\ndefine double @call(ptr %xo, ptr %ro) {\nentry:\n"
            f"  %xa = getelementptr i8, ptr %xo, i64 {offset}\n  %x = load ptr, ptr %xa\n{rest}"
            "  %v = alloca double\n"
            f"  call void @point(ptr %x, ptr %v, ptr {'%r' if n_out > 1 else 'null'})\n"
            "  %value = load double, ptr %v\n  ret double %value\n}\n")
