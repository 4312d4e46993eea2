"""LLVM IR text for a schedule: ``point``, the fused ``batch`` loop, and the ``call`` entry.

The IR is written as text directly (faster than building it through an API), each
step of the lowered schedule as its op's entry in the op table lowers it
(:data:`symad.schedule.lowering.PRIMITIVES`: inline IR, or a call of an intrinsic or C
library function).  :mod:`symad.native.jit` compiles it.
"""

from __future__ import annotations

import struct
from collections.abc import Callable

from symad.core.ops import Inline
from symad.schedule.loop_nest import BLOCK, LoopNest, LoopProgram, Scope
from symad.schedule.lowering import PRIMITIVES
from symad.schedule.schedule import Schedule


def _hex(value: float) -> str:
    """An LLVM double literal with the exact bits of ``value``."""
    return f"0x{struct.unpack('<Q', struct.pack('<d', value))[0]:016X}"


QUICK_OPS = 200  # up to this size LLVM's IR passes gain nothing measurable: only instruction selection runs


def op_lines(op: str, vals: list[str], r: str, t: str, declared: dict[str, int]) -> list[str]:
    """IR lines computing primitive ``op`` of the IR values ``vals`` into ``r`` (temporaries named
    from ``t``): the op table's lowering; intrinsics and C functions called go into ``declared``."""
    spec = PRIMITIVES[op]
    lowering = spec.llvm
    if isinstance(lowering, Inline):
        declared.update(lowering.calls)
        return ["  " + ln for ln in lowering.template.format(*vals, r=r, t=t).split("\n")]
    declared[lowering.symbol] = spec.arity
    params = ", ".join(f"double {v}" for v in vals)
    return [f"  {r} = call double @{lowering.symbol}({params}){' #0' if lowering.opaque else ''}"]


def _steps(schedule: Schedule, steps: list, names: dict[int, str], p: str, declared: dict[str, int]) -> list[str]:
    """IR lines for ``steps``; ``names`` maps the nodes already available to IR values (extended)."""
    lines: list[str] = []
    for node, op, args in steps:
        r = f"%{p}v{node}"
        lines += op_lines(op, [names[a] for a in args], r, f"%{p}t{node}", declared)
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
    ``data_offset`` (see :func:`symad.native.jit.array_data_offset`) adds the ``call`` entry.
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


# ===================================================================== sums over rows of data
def rows_ir(schedule: Schedule, sources: list[tuple[str, int]]) -> str:
    """LLVM IR of ``rows(w, cols, strides, idx, start, end, out)``: the schedule's outputs summed
    over rows ``start`` … ``end - 1`` of data into ``out``.

    ``sources[k]`` says where input ``k`` comes from: ``("w", i)`` is ``w[i]``, the same in
    every row; ``("col", j)`` is row ``r`` of column ``j``, ``cols[j][r * strides[j]]`` (a
    column is read in place, at any stride); ``("row", i)`` is the row's index, ``w[i] + r`` (an
    index counted in the loop, not read).  With ``idx`` (not null) the rows are
    ``idx[start]`` … ``idx[end - 1]`` instead: a mini-batch.

    Rows go two at a time, their instructions interleaved (one row's chain of dependent
    operations leaves the processor idle; two independent ones fill it), each lane summing
    its own rows in order; a last odd row joins the first lane, and the lanes' sums are
    added at the end: a fixed order, so the same rows give the same bits.
    """
    declared: dict[str, int] = {}
    shared: dict[int, str] = {node: _hex(c) for node, c in schedule.consts.items()}
    entry: list[str] = []
    for node, (kind, i) in zip(schedule.inputs, sources):
        if kind == "w":
            shared[node] = f"%w{node}"
            _load(entry, shared[node], "%w", i)
        elif kind == "row":  # the row's index: w[i] (the first row's) plus the row number
            _load(entry, f"%w{node}s", "%w", i)
        else:
            entry += [f"  %cp{i}a = getelementptr ptr, ptr %cols, i64 {i}", f"  %cp{i} = load ptr, ptr %cp{i}a",
                      f"  %cs{i}a = getelementptr i64, ptr %strides, i64 {i}", f"  %cs{i} = load i64, ptr %cs{i}a"]

    def row(p: str, r: str) -> tuple[list[str], list[str]]:
        """One row's lines (SSA names prefixed ``p``, the row index in ``r``) and its outputs."""
        names, lines = dict(shared), []
        for node, (kind, i) in zip(schedule.inputs, sources):
            if kind == "row":
                names[node] = f"%{p}v{node}"
                lines += [f"  %{p}v{node}r = sitofp i64 {r} to double",
                          f"  %{p}v{node} = fadd double %w{node}s, %{p}v{node}r"]
            elif kind == "col":
                names[node] = f"%{p}v{node}"
                lines += [f"  %{p}o{node} = mul i64 {r}, %cs{i}",
                          f"  %{p}v{node}a = getelementptr double, ptr %cp{i}, i64 %{p}o{node}",
                          f"  %{p}v{node} = load double, ptr %{p}v{node}a"]
        lines += _steps(schedule, schedule.steps, names, p, declared)
        return lines, [names[node] for node in schedule.outputs]

    def pick(label: str, p: str, at: str, then: str, come_from: str) -> str:
        """Blocks giving ``%{p}r``: ``idx[at]`` for a mini-batch, else ``at``."""
        return (f"  br i1 %indexed, label %{label}pick, label %{label}go\n"
                f"{label}pick:\n  %{p}ip = getelementptr i64, ptr %idx, i64 {at}\n"
                f"  %{p}picked = load i64, ptr %{p}ip\n  br label %{label}go\n"
                f"{label}go:\n  %{p}r = phi i64 [%{p}picked, %{label}pick], [{at}, %{come_from}]\n" + then)

    n = range(len(schedule.outputs))
    a_lines, a_out = row("a", "%ar")
    b_lines, b_out = row("b", "%br")
    t_lines, t_out = row("t", "%tr")
    pair = [line for both in zip(a_lines, b_lines) for line in both]  # the same shape: interleave them
    text = (
        "define void @rows(ptr noalias %w, ptr noalias %cols, ptr noalias %strides, ptr noalias %idx,"
        " i64 %start, i64 %end, ptr noalias %out) {\nentry:\n" + "\n".join(entry) + "\n"
        "  %indexed = icmp ne ptr %idx, null\n"
        "  %s1 = add i64 %start, 1\n  %twomore = icmp slt i64 %s1, %end\n"
        "  br i1 %twomore, label %pairs, label %last\n"
        "pairs:\n  %i = phi i64 [%start, %entry], [%i2, %pgo]\n"
        + "".join(f"  %aacc{k} = phi double [0.0, %entry], [%asum{k}, %pgo]\n"
                  f"  %bacc{k} = phi double [0.0, %entry], [%bsum{k}, %pgo]\n" for k in n)
        + "  %i1 = add i64 %i, 1\n"
        "  br i1 %indexed, label %ppick, label %pgo\n"
        "ppick:\n  %aip = getelementptr i64, ptr %idx, i64 %i\n  %apicked = load i64, ptr %aip\n"
        "  %bip = getelementptr i64, ptr %idx, i64 %i1\n  %bpicked = load i64, ptr %bip\n  br label %pgo\n"
        "pgo:\n  %ar = phi i64 [%apicked, %ppick], [%i, %pairs]\n"
        "  %br = phi i64 [%bpicked, %ppick], [%i1, %pairs]\n" + "\n".join(pair) + "\n"
        + "".join(f"  %asum{k} = fadd double %aacc{k}, {a_out[k]}\n"
                  f"  %bsum{k} = fadd double %bacc{k}, {b_out[k]}\n" for k in n)
        + "  %i2 = add i64 %i, 2\n  %i3 = add i64 %i, 3\n  %again = icmp slt i64 %i3, %end\n"
        "  br i1 %again, label %pairs, label %last\n"
        "last:\n  %j = phi i64 [%start, %entry], [%i2, %pgo]\n"
        + "".join(f"  %la{k} = phi double [0.0, %entry], [%asum{k}, %pgo]\n"
                  f"  %lb{k} = phi double [0.0, %entry], [%bsum{k}, %pgo]\n" for k in n)
        + "  %odd = icmp slt i64 %j, %end\n  br i1 %odd, label %tail, label %done\n"
        "tail:\n" + pick("t", "t", "%j", "\n".join(t_lines) + "\n", "tail")
        + "".join(f"  %tsum{k} = fadd double %la{k}, {t_out[k]}\n" for k in n)
        + "  br label %done\n"
        "done:\n"
        + "".join(f"  %fa{k} = phi double [%la{k}, %last], [%tsum{k}, %tgo]\n" for k in n)
        + "".join(f"  %fin{k} = fadd double %fa{k}, %lb{k}\n" for k in n))
    store: list[str] = []
    for k in n:
        _store(store, f"%fin{k}", "%out", k, f"o{k}")
    decls = "".join(f"declare double @{fn}({', '.join(['double'] * m)})\n" for fn, m in declared.items())
    return decls + "\n" + text + "\n".join(store) + "\n  ret void\n}\n\nattributes #0 = { nobuiltin }\n"


def map_ir(schedule: Schedule, sources: list[tuple[str, int]]) -> str:
    """LLVM IR of ``map(w, cols, start, end, out, ld)``: the schedule's outputs at each row
    ``r`` of ``start`` … ``end - 1``, output ``k`` stored at ``out[k*ld + r]`` (an ``each``'s values),
    and of ``edge(w, cols, lims, start, end, out, ld)``, the same with column ``j`` read at row
    ``r`` clamped into ``lims[2j] … lims[2j+1]`` (the rows where an entry would read past an end of
    its vector read the nearest entry, as the NumPy evaluator does: only a guarded term reads there).

    ``sources`` as for :func:`rows_ir` (and ``("row", i)``: the row's index, ``w[i]`` plus the row
    number), every column read at unit stride (``cols[j][r]``), so ``map`` is a plain counted loop
    over contiguous arrays, the shape LLVM's vectorisers take."""
    declared: dict[str, int] = {}
    functions = []
    for name, clamped in (("map", False), ("edge", True)):
        names: dict[int, str] = {node: _hex(c) for node, c in schedule.consts.items()}
        entry: list[str] = []
        body: list[str] = []
        for node, (kind, i) in zip(schedule.inputs, sources):
            if kind == "w":
                names[node] = f"%w{node}"
                _load(entry, names[node], "%w", i)
            elif kind == "row":  # the row's index: w[i] (the first row's) plus the row number
                _load(entry, f"%w{node}s", "%w", i)
                names[node] = f"%v{node}"
                body += [f"  %v{node}r = sitofp i64 %r to double", f"  %v{node} = fadd double %w{node}s, %v{node}r"]
            else:
                entry += [f"  %cp{i}a = getelementptr ptr, ptr %cols, i64 {i}", f"  %cp{i} = load ptr, ptr %cp{i}a"]
                at = "%r"
                if clamped:
                    entry += [f"  %lo{i}a = getelementptr i64, ptr %lims, i64 {2 * i}",
                              f"  %lo{i} = load i64, ptr %lo{i}a",
                              f"  %hi{i}a = getelementptr i64, ptr %lims, i64 {2 * i + 1}",
                              f"  %hi{i} = load i64, ptr %hi{i}a"]
                    body += [f"  %r{i}l = icmp slt i64 %r, %lo{i}", f"  %r{i}a = select i1 %r{i}l, i64 %lo{i}, i64 %r",
                             f"  %r{i}h = icmp sgt i64 %r{i}a, %hi{i}",
                             f"  %r{i}c = select i1 %r{i}h, i64 %hi{i}, i64 %r{i}a"]
                    at = f"%r{i}c"
                names[node] = f"%v{node}"
                body += [f"  %v{node}a = getelementptr double, ptr %cp{i}, i64 {at}",
                         f"  %v{node} = load double, ptr %v{node}a"]
        body += _steps(schedule, schedule.steps, names, "", declared)
        for k, node in enumerate(schedule.outputs):
            body += [f"  %oo{k} = mul i64 %ld, {k}",
                     f"  %oi{k} = add i64 %oo{k}, %r",
                     f"  %op{k} = getelementptr double, ptr %out, i64 %oi{k}",
                     f"  store double {names[node]}, ptr %op{k}"]
        lims = " ptr noalias %lims," if clamped else ""
        functions.append(
            f"define void @{name}(ptr noalias %w, ptr noalias %cols,{lims} i64 %start, i64 %end, ptr noalias %out,"
            " i64 %ld) {\nentry:\n" + "\n".join(entry) + "\n"
            "  %any = icmp slt i64 %start, %end\n  br i1 %any, label %loop, label %done\n"
            "loop:\n  %r = phi i64 [%start, %entry], [%next, %loop]\n" + "\n".join(body) + "\n"
            "  %next = add i64 %r, 1\n  %more = icmp slt i64 %next, %end\n"
            "  br i1 %more, label %loop, label %done\n"
            "done:\n  ret void\n}\n")
    decls = "".join(f"declare double @{fn}({', '.join(['double'] * m)})\n" for fn, m in declared.items())
    return ("; the map loop and its edges, optimised whatever their size\n" + decls + "\n"
            + "\n".join(functions) + "\nattributes #0 = { nobuiltin }\n")


# ===================================================================== the interpreter
# An instruction names two operands: a step of three (a select) is two instructions, the first
# a copy of its first operand into the destination, where the second reads it.
COPY = "copy"


def interpreter_opcodes() -> dict[str, int]:
    """The interpreter's instruction set: each primitive op (of a lowered schedule), and
    :data:`COPY`; each with its opcode."""
    return {op: i for i, op in enumerate([*PRIMITIVES, COPY])}



# The interpreter's program record (see symad.backends.vm): eight-byte fields.
_PROGRAM_FIELDS = ("code", "n_code", "values", "n_in", "outs", "n_out")


def interpreter_ir(data_offset: int | None) -> str:
    """LLVM IR of an interpreter of flat instruction arrays, generated once from the op table.

    An instruction is four i32 ``(opcode, destination, a, b)`` over one array of values
    (an op of three arguments is two: see :data:`COPY`)
    (inputs first, then constants, then every result); each opcode runs its op's lowering
    (:func:`op_lines`), so the interpreter computes the bits compiled code does.

    * ``run(code, n, values)``: the ``n`` instructions in order;
    * ``batch(program, values, rows, out, n_points)``: a row of inputs in, a row of outputs out;
    * ``call(program, x, rest) -> output 0``: ``batch`` of one point on the data of two NumPy
      arrays (see :func:`_call_ir`), for a caller that keeps the GIL (``values`` is shared);
    * ``rows(program, values, colin, ncol, cols, strides, idx, start, end, out, acc)``: the
      outputs summed over rows of data, the same bits as :func:`rows_ir`'s loop; ``colin`` holds
      ``ncol`` pairs (value slot, column) placing the data (``values`` holds the rest),
      ``acc`` is scratch for ``2 * n_out`` sums.
    """
    declared: dict[str, int] = {}
    cases, bodies = [], []
    for op, code in interpreter_opcodes().items():
        if op == COPY:
            cases.append(f"i32 {code}, label %op{code}")
            bodies.append(f"op{code}:\n  store double %x, ptr %pd\n  br label %latch")
            continue
        arity = PRIMITIVES[op].arity
        vals = ["%x", "%y"][:arity]
        first = []
        if arity == 3:
            first, vals = [f"  %z{code} = load double, ptr %pd"], [f"%z{code}", "%x", "%y"]
        lines = first + op_lines(op, vals, f"%r{code}", f"%c{code}t", declared)
        cases.append(f"i32 {code}, label %op{code}")
        bodies.append(f"op{code}:\n" + "\n".join(lines) + f"\n  store double %r{code}, ptr %pd\n  br label %latch")
    decls = "".join(f"declare double @{fn}({', '.join(['double'] * n)})\n" for fn, n in declared.items())
    run = ("define void @run(ptr noalias %code, i64 %n, ptr noalias %v) {\n"
           "entry:\n  %any = icmp sgt i64 %n, 0\n  br i1 %any, label %body, label %exit\n"
           "body:\n  %i = phi i64 [0, %entry], [%next, %latch]\n"
           "  %ip = getelementptr [4 x i32], ptr %code, i64 %i\n"
           "  %opc = load i32, ptr %ip\n"
           "  %dp = getelementptr i32, ptr %ip, i64 1\n  %d32 = load i32, ptr %dp\n"
           "  %ap = getelementptr i32, ptr %ip, i64 2\n  %a32 = load i32, ptr %ap\n"
           "  %bp = getelementptr i32, ptr %ip, i64 3\n  %b32 = load i32, ptr %bp\n"
           "  %d = sext i32 %d32 to i64\n  %a = sext i32 %a32 to i64\n  %b = sext i32 %b32 to i64\n"
           "  %pd = getelementptr double, ptr %v, i64 %d\n"
           "  %pa = getelementptr double, ptr %v, i64 %a\n  %x = load double, ptr %pa\n"
           "  %pb = getelementptr double, ptr %v, i64 %b\n  %y = load double, ptr %pb\n"
           f"  switch i32 %opc, label %latch [ {' '.join(cases)} ]\n"
           + "\n".join(bodies) + "\n"
           "latch:\n  %next = add i64 %i, 1\n  %more = icmp slt i64 %next, %n\n"
           "  br i1 %more, label %body, label %exit\n"
           "exit:\n  ret void\n}\n")
    fields = "".join(f"  %f{k}p = getelementptr i64, ptr %prog, i64 {k}\n  %{name} = load i64, ptr %f{k}p\n"
                     for k, name in enumerate(_PROGRAM_FIELDS))
    pointers = "".join(f"  %{name}_p = inttoptr i64 %{name} to ptr\n" for name in ("code", "outs"))
    # one point: inputs from %xin into values, run, outputs 1.. to %rest, output 0 returned
    point = ("define double @point(ptr %prog, ptr %vals, ptr %xin, ptr %rest) {\nentry:\n" + fields + pointers +
             "  %inb = mul i64 %n_in, 8\n"
             "  call void @llvm.memcpy.p0.p0.i64(ptr %vals, ptr %xin, i64 %inb, i1 false)\n"
             "  call void @run(ptr %code_p, i64 %n_code, ptr %vals)\n"
             "  %many = icmp sgt i64 %n_out, 1\n  br i1 %many, label %copy, label %done\n"
             "copy:\n  %k = phi i64 [1, %entry], [%k1, %copy]\n"
             "  %sp = getelementptr i64, ptr %outs_p, i64 %k\n  %s = load i64, ptr %sp\n"
             "  %vp = getelementptr double, ptr %vals, i64 %s\n  %val = load double, ptr %vp\n"
             "  %km = sub i64 %k, 1\n  %rp = getelementptr double, ptr %rest, i64 %km\n"
             "  store double %val, ptr %rp\n"
             "  %k1 = add i64 %k, 1\n  %again = icmp slt i64 %k1, %n_out\n"
             "  br i1 %again, label %copy, label %done\n"
             "done:\n  %s0 = load i64, ptr %outs_p\n  %v0p = getelementptr double, ptr %vals, i64 %s0\n"
             "  %v0 = load double, ptr %v0p\n  ret double %v0\n}\n")
    batch = ("define void @batch(ptr %prog, ptr %vals, ptr %rows, ptr %out, i64 %np) {\nentry:\n" + fields +
             "  %any = icmp sgt i64 %np, 0\n  br i1 %any, label %loop, label %done\n"
             "loop:\n  %i = phi i64 [0, %entry], [%next, %loop]\n"
             "  %ri = mul i64 %i, %n_in\n  %ro = mul i64 %i, %n_out\n"
             "  %pi = getelementptr double, ptr %rows, i64 %ri\n"
             "  %po = getelementptr double, ptr %out, i64 %ro\n"
             "  %pr = getelementptr double, ptr %po, i64 1\n"
             "  %first = call double @point(ptr %prog, ptr %vals, ptr %pi, ptr %pr)\n"
             "  store double %first, ptr %po\n"
             "  %next = add i64 %i, 1\n  %more = icmp slt i64 %next, %np\n"
             "  br i1 %more, label %loop, label %done\n"
             "done:\n  ret void\n}\n")
    call = ""
    if data_offset is not None:
        call = ("define double @call(ptr %prog, ptr %xo, ptr %ro) {\nentry:\n"
                "  %vf = getelementptr i64, ptr %prog, i64 2\n  %vi = load i64, ptr %vf\n"
                "  %vals = inttoptr i64 %vi to ptr\n"
                f"  %xa = getelementptr i8, ptr %xo, i64 {data_offset}\n  %x = load ptr, ptr %xa\n"
                f"  %ra = getelementptr i8, ptr %ro, i64 {data_offset}\n  %r = load ptr, ptr %ra\n"
                "  %value = call double @point(ptr %prog, ptr %vals, ptr %x, ptr %r)\n  ret double %value\n}\n")
    rows = ("define void @rows(ptr %prog, ptr noalias %vals, ptr %colin, i64 %ncol, ptr %cols, ptr %strides,"
            " ptr %idx, i64 %start, i64 %end, ptr noalias %out, ptr noalias %acc) {\nentry:\n" + fields + pointers
            + _INTERPRETED_ROWS)
    return (decls + "declare void @llvm.memcpy.p0.p0.i64(ptr, ptr, i64, i1)\n"
            "declare void @llvm.memset.p0.i64(ptr, i8, i64, i1)\n\n" + run + "\n" + point + "\n"
            + batch + "\n" + rows + "\n" + call + "\nattributes #0 = { nobuiltin }\n")


# The body of the interpreter's `rows`: rows_ir's loop, one row at a time.  Row `start + k` adds
# its outputs to lane k % 2 (`acc`: two lanes of n_out sums), in row order, and the lanes are
# added at the end: the additions of the compiled loop, in its order, so the same bits.
_INTERPRETED_ROWS = """\
  %lanes = mul i64 %n_out, 16
  call void @llvm.memset.p0.i64(ptr %acc, i8 0, i64 %lanes, i1 false)
  %indexed = icmp ne ptr %idx, null
  %anyrow = icmp slt i64 %start, %end
  br i1 %anyrow, label %row, label %finish
row:
  %r = phi i64 [%start, %entry], [%r1, %summed]
  br i1 %indexed, label %pick, label %go
pick:
  %ip = getelementptr i64, ptr %idx, i64 %r
  %picked = load i64, ptr %ip
  br label %go
go:
  %rr = phi i64 [%picked, %pick], [%r, %row]
  %anycol = icmp sgt i64 %ncol, 0
  br i1 %anycol, label %column, label %compute
column:
  %c = phi i64 [0, %go], [%c1, %column]
  %slotp = getelementptr [2 x i64], ptr %colin, i64 %c
  %slot = load i64, ptr %slotp
  %jp = getelementptr i64, ptr %slotp, i64 1
  %j = load i64, ptr %jp
  %cpp = getelementptr ptr, ptr %cols, i64 %j
  %cp = load ptr, ptr %cpp
  %csp = getelementptr i64, ptr %strides, i64 %j
  %cs = load i64, ptr %csp
  %off = mul i64 %rr, %cs
  %vp = getelementptr double, ptr %cp, i64 %off
  %v = load double, ptr %vp
  %dp = getelementptr double, ptr %vals, i64 %slot
  store double %v, ptr %dp
  %c1 = add i64 %c, 1
  %morecol = icmp slt i64 %c1, %ncol
  br i1 %morecol, label %column, label %compute
compute:
  call void @run(ptr %code_p, i64 %n_code, ptr %vals)
  %k0 = sub i64 %r, %start
  %lane = and i64 %k0, 1
  %base = mul i64 %lane, %n_out
  %anyout = icmp sgt i64 %n_out, 0
  br i1 %anyout, label %add, label %summed
add:
  %k = phi i64 [0, %compute], [%k1, %add]
  %op = getelementptr i64, ptr %outs_p, i64 %k
  %o = load i64, ptr %op
  %ovp = getelementptr double, ptr %vals, i64 %o
  %ov = load double, ptr %ovp
  %ai = add i64 %base, %k
  %ap = getelementptr double, ptr %acc, i64 %ai
  %a = load double, ptr %ap
  %s = fadd double %a, %ov
  store double %s, ptr %ap
  %k1 = add i64 %k, 1
  %moreout = icmp slt i64 %k1, %n_out
  br i1 %moreout, label %add, label %summed
summed:
  %r1 = add i64 %r, 1
  %morerow = icmp slt i64 %r1, %end
  br i1 %morerow, label %row, label %finish
finish:
  %anyfin = icmp sgt i64 %n_out, 0
  br i1 %anyfin, label %total, label %done
total:
  %f = phi i64 [0, %finish], [%f1, %total]
  %lap = getelementptr double, ptr %acc, i64 %f
  %la = load double, ptr %lap
  %fb = add i64 %f, %n_out
  %lbp = getelementptr double, ptr %acc, i64 %fb
  %lb = load double, ptr %lbp
  %fin = fadd double %la, %lb
  %outp = getelementptr double, ptr %out, i64 %f
  store double %fin, ptr %outp
  %f1 = add i64 %f, 1
  %morefin = icmp slt i64 %f1, %n_out
  br i1 %morefin, label %total, label %done
done:
  ret void
}
"""


# ===================================================================== loop nests
def nest_ir(nest: LoopNest) -> str:
    """LLVM IR of ``nest(w, bases, start, end, out)`` for a :class:`~symad.schedule.loop_nest.LoopNest`:
    the top-level loop over rows ``start`` … ``end - 1`` (index ``low + row``), its body with the
    loops inside it run as inner loops.  A top-level ``sum`` writes its rows' sum to ``out[0]``, an
    ``each`` its value at row ``r`` to ``out[r]``.  ``w[k]`` is capture ``k``; ``bases[v]`` the address
    of vector ``v``'s first entry.  Every sum adds in the canonical order: two lanes from 0.0 by the
    parity of the offset (a row's from ``start``, which the caller keeps even), then lane one plus two."""
    declared: dict[str, int] = {}
    names: dict[int, str] = {}
    entry: list[str] = []
    for k, node in enumerate(nest.captures):
        names[node] = f"%c{k}"
        _load(entry, names[node], "%w", k)
    for v in range(len(nest.vectors)):
        entry += [f"  %b{v}a = getelementptr ptr, ptr %bases, i64 {v}", f"  %b{v} = load ptr, ptr %b{v}a"]
    root = nest.root
    body: list[str] = [f"  %i = add i64 %r, {root.low}"]
    block = ["row"]  # the block the lines being written end in
    value = _scope_lines(root, "%i", {root.level: "%i"}, names, body, block, "s", declared)
    sums = root.op == "sum"
    tail = []
    if sums:
        tail += ["  %roff = sub i64 %r, %start", "  %rpar = and i64 %roff, 1", "  %rodd = icmp ne i64 %rpar, 0",
                 f"  %sa = fadd double %la, {value}", f"  %sb = fadd double %lb, {value}",
                 "  %la2 = select i1 %rodd, double %la, double %sa", "  %lb2 = select i1 %rodd, double %sb, double %lb"]
    else:
        tail += ["  %op = getelementptr double, ptr %out, i64 %r", f"  store double {value}, ptr %op"]
    tail += ["  %rn = add i64 %r, 1", "  br label %head"]
    last = block[0]
    head = ["head:", f"  %r = phi i64 [%start, %entry], [%rn, %{last}]"]
    if sums:
        head += [f"  %la = phi double [0.0, %entry], [%la2, %{last}]",
                 f"  %lb = phi double [0.0, %entry], [%lb2, %{last}]"]
    head += ["  %more = icmp slt i64 %r, %end", "  br i1 %more, label %row, label %done"]
    done = ["done:"]
    if sums:
        done += ["  %fin = fadd double %la, %lb", "  store double %fin, ptr %out"]
    decls = "".join(f"declare double @{fn}({', '.join(['double'] * m)})\n" for fn, m in declared.items())
    return ("; a loop nest, optimised whatever its size\n" + decls
            + "\ndefine void @nest(ptr noalias %w, ptr noalias %bases, i64 %start, i64 %end, ptr noalias %out) {\n"
            + "entry:\n" + "\n".join(entry) + "\n  br label %head\n" + "\n".join(head) + "\nrow:\n"
            + "\n".join(body + tail) + "\n" + "\n".join(done) + "\n  ret void\n}\n\nattributes #0 = { nobuiltin }\n")


def _scope_lines(scope: Scope, index: str, indices: dict[int, str], names: dict[int, str], lines: list[str],
                 block: list[str], p: str, declared: dict[str, int], clamp: bool = True) -> str:
    """Lines of one scope's body at the i64 index ``index`` (``indices``: every open level's), appended
    to ``lines``; returns the IR value of the body.  ``block[0]`` tracks the block the lines end in.
    ``clamp``: the entries' indices may leave their vectors (a guarded term's), and are clamped; the
    loops inside read as their scope does."""
    names = dict(names)
    names.update((node, _hex(c)) for node, c in scope.consts.items())
    graph_index = f"%{p}d"
    lines.append(f"  {graph_index} = sitofp i64 {index} to double")
    for n, name in _index_nodes(scope):
        names[n] = name if name is not None else graph_index
    for k, e in enumerate(scope.entries):
        offset = "0"
        for d, ((coef, const), (lo, hi), stride) in enumerate(zip(e.indices, e.bounds, e.strides)):
            at = f"%{p}e{k}d{d}"
            term = str(const)
            for level, c in coef.items():
                lines.append(f"  {at}m{level} = mul i64 {indices[level]}, {c}")
                lines.append(f"  {at}s{level} = add i64 {term}, {at}m{level}")
                term = f"{at}s{level}"
            if clamp:  # into the vector, as the NumPy evaluator reads: only a guarded term reads past an end
                lines += [f"  {at}lo = icmp slt i64 {term}, {lo}",
                          f"  {at}c1 = select i1 {at}lo, i64 {lo}, i64 {term}",
                          f"  {at}hi = icmp sgt i64 {at}c1, {hi}",
                          f"  {at}c2 = select i1 {at}hi, i64 {hi}, i64 {at}c1"]
                term = f"{at}c2"
            lines += [f"  {at}z = sub i64 {term}, {lo}", f"  {at}w = mul i64 {at}z, {stride}",
                      f"  {at}o = add i64 {offset}, {at}w"]
            offset = f"{at}o"
        lines += [f"  %{p}e{k}a = getelementptr double, ptr %b{e.vector}, i64 {offset}",
                  f"  %{p}e{k} = load double, ptr %{p}e{k}a"]
        names[e.node] = f"%{p}e{k}"
    for node, op, args in scope.steps:
        inner = scope.inner.get(node)
        if inner is not None:
            names[node] = _inner_sum(inner, indices, names, lines, block, f"{p}{node}x", declared, clamp=clamp)
            continue
        r = f"%{p}v{node}"
        lines += op_lines(op, [names[a] for a in args], r, f"%{p}t{node}", declared)
        names[node] = r
    return names[scope.body]


def _index_nodes(scope: Scope) -> list[tuple[int, str | None]]:
    """The scope's own index leaf (named by the caller); other levels' leaves are captures."""
    return [(scope.index_node, None)] if scope.index_node is not None else []


def _inner_sum(scope: Scope, indices: dict[int, str], names: dict[int, str], lines: list[str], block: list[str],
               p: str, declared: dict[str, int], first: str | None = None, last_index: str | None = None,
               clamp: bool = True) -> str:
    """A sum inside a body, as an inner loop in the canonical order (two lanes from 0.0 by the parity
    of the offset from ``first``); returns its IR value.  The index runs from ``first`` to
    ``last_index`` (IR values; by default the scope's whole range)."""
    first = str(scope.low) if first is None else first
    last_index = str(scope.high) if last_index is None else last_index
    before = block[0]
    j = f"%{p}j"
    body: list[str] = [f"L{p}b:"]
    block[0] = f"L{p}b"
    value = _scope_lines(scope, j, {**indices, scope.level: j}, names, body, block, p, declared, clamp)
    last = block[0]
    body += [f"  %{p}off = sub i64 {j}, {first}", f"  %{p}par = and i64 %{p}off, 1",
             f"  %{p}odd = icmp ne i64 %{p}par, 0", f"  %{p}sa = fadd double %{p}a, {value}",
             f"  %{p}sb = fadd double %{p}b, {value}", f"  %{p}a2 = select i1 %{p}odd, double %{p}a, double %{p}sa",
             f"  %{p}b2 = select i1 %{p}odd, double %{p}sb, double %{p}b", f"  %{p}jn = add i64 {j}, 1",
             f"  br label %L{p}h"]
    lines += [f"  br label %L{p}h", f"L{p}h:",
              f"  {j} = phi i64 [{first}, %{before}], [%{p}jn, %{last}]",
              f"  %{p}a = phi double [0.0, %{before}], [%{p}a2, %{last}]",
              f"  %{p}b = phi double [0.0, %{before}], [%{p}b2, %{last}]",
              f"  %{p}go = icmp sle i64 {j}, {last_index}", f"  br i1 %{p}go, label %L{p}b, label %L{p}x",
              *body, f"L{p}x:", f"  %{p}res = fadd double %{p}a, %{p}b"]
    block[0] = f"L{p}x"
    return f"%{p}res"


# ===================================================================== a whole program with loops
def program_ir(program: LoopProgram) -> str:
    """LLVM IR of ``prog(w, bases, outs)`` for a :class:`~symad.schedule.loop_nest.LoopProgram`: the
    top level's steps, each loop at the top run inside (a sum over blocks of :data:`BLOCK` rows,
    each block in the canonical two lanes, the blocks' sums added as NumPy's pairwise sum adds them;
    an ``each`` stored row by row), output ``k`` stored at ``outs[k]`` (a number, or an ``each``'s
    array).  ``w[k]`` is variable ``k``; ``bases[v]`` vector ``v``'s first entry.  One call computes
    the value and the whole gradient: no per-loop call, no thread."""
    declared: dict[str, int] = {}
    top = program.top
    names: dict[int, str] = {node: _hex(c) for node, c in top.consts.items()}
    lines: list[str] = []
    for k, node in enumerate(program.variables):
        names[node] = f"%x{k}"
        _load(lines, names[node], "%w", k)
    for v in range(len(program.vectors)):
        lines += [f"  %b{v}a = getelementptr ptr, ptr %bases, i64 {v}", f"  %b{v} = load ptr, ptr %b{v}a"]
    for k in range(len(program.outputs)):
        lines += [f"  %out{k}a = getelementptr ptr, ptr %outs, i64 {k}", f"  %out{k} = load ptr, ptr %out{k}a"]
    block = ["entry"]
    for k, e in enumerate(top.entries):  # entries at constant indices (x[3] beside a loop), clamped
        offset = sum((min(max(const, lo), hi) - lo) * stride
                     for (_, const), (lo, hi), stride in zip(e.indices, e.bounds, e.strides))
        lines += [f"  %te{k}a = getelementptr double, ptr %b{e.vector}, i64 {offset}",
                  f"  %te{k} = load double, ptr %te{k}a"]
        names[e.node] = f"%te{k}"
    arrays = {node for node, kind in zip(program.outputs, program.kinds) if kind == "each"}
    for node, op, args in top.steps:
        inner = top.inner.get(node)
        if inner is None:
            r = f"%tv{node}"
            lines += op_lines(op, [names[a] for a in args], r, f"%tt{node}", declared)
            names[node] = r
        elif inner.op == "each":
            slot = program.outputs.index(node)
            names[node] = _top_each(inner, names, lines, block, f"w{node}", declared, f"%out{slot}")
        else:
            names[node] = _top_sum(inner, names, lines, block, f"u{node}", declared)
    for k, node in enumerate(program.outputs):
        if node not in arrays:
            lines.append(f"  store double {names[node]}, ptr %out{k}")
    decls = "".join(f"declare double @{fn}({', '.join(['double'] * m)})\n" for fn, m in declared.items())
    return ("; a program with loops, optimised whatever its size\n" + decls
            + "\ndefine void @prog(ptr noalias %w, ptr noalias %bases, ptr noalias %outs) {\nentry:\n"
            + "\n".join(lines) + "\n  ret void\n}\n\nattributes #0 = { nobuiltin }\n")


def _top_sum(scope: Scope, names: dict[int, str], lines: list[str], block: list[str], p: str,
             declared: dict[str, int]) -> str:
    """A top-level sum: its blocks of :data:`BLOCK` rows one after another, each block's sum into a
    stack array, then those added in NumPy's pairwise order."""
    count = scope.high - scope.low + 1
    blocks = -(-count // BLOCK)
    lines.append(f"  %{p}acc = alloca double, i64 {blocks}")
    before = block[0]
    lines += [f"  br label %K{p}h", f"K{p}h:", f"  %{p}k = phi i64 [0, %{before}], [%{p}kn, %K{p}e]",
              f"  %{p}more = icmp slt i64 %{p}k, {blocks}", f"  br i1 %{p}more, label %K{p}s, label %K{p}x",
              f"K{p}s:", f"  %{p}r0 = mul i64 %{p}k, {BLOCK}", f"  %{p}lo = add i64 %{p}r0, {scope.low}",
              f"  %{p}hi0 = add i64 %{p}lo, {BLOCK - 1}", f"  %{p}over = icmp sgt i64 %{p}hi0, {scope.high}",
              f"  %{p}hi = select i1 %{p}over, i64 {scope.high}, i64 %{p}hi0"]
    block[0] = f"K{p}s"
    # the entries of a sum of the expression lie inside their vectors (the vectors' spans are theirs)
    value = _inner_sum(scope, {}, names, lines, block, f"{p}i", declared, f"%{p}lo", f"%{p}hi", clamp=False)
    lines += [f"  %{p}at = getelementptr double, ptr %{p}acc, i64 %{p}k", f"  store double {value}, ptr %{p}at",
              f"  br label %K{p}e", f"K{p}e:", f"  %{p}kn = add i64 %{p}k, 1", f"  br label %K{p}h", f"K{p}x:"]
    block[0] = f"K{p}x"
    parts = []
    for b in range(blocks):
        lines += [f"  %{p}s{b}a = getelementptr double, ptr %{p}acc, i64 {b}",
                  f"  %{p}s{b} = load double, ptr %{p}s{b}a"]
        parts.append(f"%{p}s{b}")
    if blocks == 1:
        return parts[0]
    fresh = [0]

    def add(a: str, b: str) -> str:
        fresh[0] += 1
        r = f"%{p}p{fresh[0]}"
        lines.append(f"  {r} = fadd double {a}, {b}")
        return r

    return _pairwise(parts, add)


def _pairwise(values: list[str], add: Callable[[str, str], str]) -> str:
    """``values`` added as NumPy's pairwise sum adds a contiguous array of them: under 8 in order from
    0.0; up to 128 in eight interleaved partial sums combined as a tree, the rest after; beyond,
    the two halves (the first a multiple of 8) each so, then added."""
    n = len(values)
    if n < 8:
        total = "0.0"
        for v in values:
            total = add(total, v)
        return total
    if n <= 128:
        r = list(values[:8])
        i = 8
        while i < n - n % 8:
            r = [add(r[j], values[i + j]) for j in range(8)]
            i += 8
        total = add(add(add(r[0], r[1]), add(r[2], r[3])), add(add(r[4], r[5]), add(r[6], r[7])))
        for v in values[i:]:
            total = add(total, v)
        return total
    half = n // 2
    half -= half % 8
    return add(_pairwise(values[:half], add), _pairwise(values[half:], add))


def _top_each(scope: Scope, names: dict[int, str], lines: list[str], block: list[str], p: str,
              declared: dict[str, int], out: str) -> str:
    """A top-level each: its body at every row, stored in the output array ``out``.  The rows whose
    entries all lie inside their vectors run unclamped (the loop LLVM vectorises), the edge rows
    clamped."""
    low, high = scope.low, scope.high
    inside_lo, inside_hi = low, high
    for e in scope.entries:
        if len(e.indices) != 1 or e.indices[0][0] != {scope.level: 1}:
            inside_lo, inside_hi = high + 1, high  # an entry the rows do not simply shift: clamp everywhere
            break
        const = e.indices[0][1]
        (lo, hi), = e.bounds
        inside_lo, inside_hi = max(inside_lo, lo - const), min(inside_hi, hi - const)
    if inside_lo > inside_hi:
        _each_rows(scope, names, lines, block, f"{p}a", declared, out, low, high, True)
        return out
    for k, (first, last, clamp) in enumerate(((low, inside_lo - 1, True), (inside_lo, inside_hi, False),
                                              (inside_hi + 1, high, True))):
        if first <= last:
            _each_rows(scope, names, lines, block, f"{p}{k}", declared, out, first, last, clamp)
    return out


def _each_rows(scope: Scope, names: dict[int, str], lines: list[str], block: list[str], p: str,
               declared: dict[str, int], out: str, first: int, last: int, clamp: bool) -> None:
    """The rows ``first`` … ``last`` (indices) of a top-level each, stored in ``out``."""
    before = block[0]
    j = f"%{p}j"
    body: list[str] = [f"E{p}b:"]
    block[0] = f"E{p}b"
    value = _scope_lines(scope, j, {scope.level: j}, names, body, block, p, declared, clamp)
    end = block[0]
    body += [f"  %{p}r = sub i64 {j}, {scope.low}", f"  %{p}at = getelementptr double, ptr {out}, i64 %{p}r",
             f"  store double {value}, ptr %{p}at", f"  %{p}jn = add i64 {j}, 1", f"  br label %E{p}h"]
    lines += [f"  br label %E{p}h", f"E{p}h:", f"  {j} = phi i64 [{first}, %{before}], [%{p}jn, %{end}]",
              f"  %{p}go = icmp sle i64 {j}, {last}", f"  br i1 %{p}go, label %E{p}b, label %E{p}x",
              *body, f"E{p}x:"]
    block[0] = f"E{p}x"
