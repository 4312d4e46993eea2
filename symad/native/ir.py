"""LLVM IR text for a schedule: ``point``, the fused ``batch`` loop, and the ``call`` entry.

The IR is written as text directly (faster than building it through an API), each
step of the lowered schedule as its op's entry in the op table lowers it
(:data:`symad.schedule.lowering.PRIMITIVES`: inline IR, or a call of an intrinsic or C
library function).  :mod:`symad.native.jit` compiles it.
"""

from __future__ import annotations

import struct

from symad.core.ops import Inline
from symad.native.fastcall import fast_entry_ir
from symad.schedule.lowering import PRIMITIVES
from symad.schedule.schedule import Schedule


def hex_double(value: float) -> str:
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


def step_lines(schedule: Schedule, steps: list, names: dict[int, str], p: str, declared: dict[str, int]) -> list[str]:
    """IR lines for ``steps``; ``names`` maps the nodes already available to IR values (extended)."""
    lines: list[str] = []
    for node, op, args in steps:
        r = f"%{p}v{node}"
        lines += op_lines(op, [names[a] for a in args], r, f"%{p}t{node}", declared)
        names[node] = r
    return lines


def load_line(lines: list[str], name: str, base: str, index: int) -> None:
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
    names: dict[int, str] = {node: hex_double(c) for node, c in schedule.consts.items()}
    lines: list[str] = []
    for k, node in enumerate(schedule.inputs):
        load_line(lines, f"%{p}v{node}", inp, k)
        names[node] = f"%{p}v{node}"
    lines += step_lines(schedule, schedule.steps, names, p, declared)
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
        names: dict[int, str] = {node: hex_double(v) for node, v in schedule.consts.items()}
        lines: list[str] = []
        for _, _, args in chunk:
            for a in args:
                if a in names or chunk_of.get(a) == c:
                    continue
                names[a] = f"%v{a}"
                load_line(lines, names[a], "%s" if a in slot else "%in", slot[a] if a in slot else position[a])
        lines += step_lines(schedule, chunk, names, "", declared)
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
            values.append(hex_double(schedule.consts[node]))
        else:
            values.append(f"%r{k}")
            load_line(body, values[-1], "%s" if node in slot else "%in", slot[node] if node in slot else position[node])
    _store_outputs(body, values, "%out0", "%rest", "")
    return body, definitions


def module_ir(schedule: Schedule, chunked: bool = False, data_offset: int | None = None) -> str:
    """LLVM IR text of ``point(in, out)`` and ``batch(in, out, n)`` (written directly: fast).

    ``chunked`` splits a large ``point`` into functions (see :func:`_chunked_point`);
    ``data_offset`` (see :func:`symad.native.fastcall.array_data_offset`) adds the ``call`` entry.
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
    ``offset`` bytes into each; returns output 0.  With one output, ``rest`` is not read.  And
    ``fast``, the same as a builtin function's entry (:mod:`symad.native.fastcall`)."""
    if offset is None:
        return ""
    rest = (f"  %ra = getelementptr i8, ptr %ro, i64 {offset}\n  %r = load ptr, ptr %ra\n" if n_out > 1 else "")
    return ("\ndefine double @call(ptr %xo, ptr %ro) {\nentry:\n"
            f"  %xa = getelementptr i8, ptr %xo, i64 {offset}\n  %x = load ptr, ptr %xa\n{rest}"
            "  %v = alloca double\n"
            f"  call void @point(ptr %x, ptr %v, ptr {'%r' if n_out > 1 else 'null'})\n"
            "  %value = load double, ptr %v\n  ret double %value\n}\n" + fast_entry_ir(with_context=False))


# ===================================================================== sums over rows of data
def row_constants(schedule: Schedule, sources: list[tuple[str, int]]) -> tuple[dict[int, str], list[str]]:
    """A row loop's values the same in every row (``("w", i)``: ``w[i]``; the constants) by node, and
    the entry lines loading them (``("row", i)``'s first index too, as ``%w{node}s``)."""
    names: dict[int, str] = {node: hex_double(c) for node, c in schedule.consts.items()}
    entry: list[str] = []
    for node, (kind, i) in zip(schedule.inputs, sources):
        if kind == "w":
            names[node] = f"%w{node}"
            load_line(entry, names[node], "%w", i)
        elif kind == "row":  # the row's index: w[i] (the first row's) plus the row number
            load_line(entry, f"%w{node}s", "%w", i)
    return names, entry


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
    shared, entry = row_constants(schedule, sources)
    for i in (i for kind, i in sources if kind == "col"):
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
        lines += step_lines(schedule, schedule.steps, names, p, declared)
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
                "  %value = call double @point(ptr %prog, ptr %vals, ptr %x, ptr %r)\n  ret double %value\n}\n"
                + fast_entry_ir(with_context=True))
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
