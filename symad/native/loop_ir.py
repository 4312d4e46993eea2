"""LLVM IR of the loops that sums, maps and loop nests run (:mod:`symad.schedule.loop_nest`): ``map``
and its clamped ``edge`` twin, a loop nest's ``nest``, and a whole program's ``prog`` with its loops
inside.  Each step is written as :func:`symad.native.ir.op_lines` writes it (the op table's
lowering), every sum added in the canonical order (:func:`symad.backends.arrays.blocked_sum`)."""

from __future__ import annotations

from collections.abc import Callable

from symad.native import fastcall
from symad.native.ir import hex_double, load_line, op_lines, row_constants, step_lines
from symad.schedule.loop_nest import BLOCK, INNER_LANES, Entry, LoopNest, LoopProgram, Scope
from symad.schedule.schedule import Schedule


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
        names, entry = row_constants(schedule, sources)
        body: list[str] = []
        for node, (kind, i) in zip(schedule.inputs, sources):
            if kind == "w":
                continue
            if kind == "row":  # the row's index: the first row's plus the row number
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
        body += step_lines(schedule, schedule.steps, names, "", declared)
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


# ===================================================================== loop nests
def nest_ir(nest: LoopNest) -> str:
    """LLVM IR of ``nest(w, bases, start, end, out)`` for a :class:`~symad.schedule.loop_nest.LoopNest`:
    the top-level loop over rows ``start`` … ``end - 1`` (index ``low + row``), its body with the
    loops inside it run as inner loops.  A top-level ``sum`` writes its rows' sum to ``out[0]``, an
    ``each`` its value at row ``r`` to ``out[r]``.  ``w[k]`` is capture ``k``; ``bases[v]`` the address
    of vector ``v``'s first entry.  Every sum adds in the canonical order: the top-level one in two
    lanes from 0.0 by the parity of the offset (a row's from ``start``, which the caller keeps even),
    then lane one plus two; a sum inside in :data:`~symad.schedule.loop_nest.INNER_LANES` lanes."""
    declared: dict[str, int] = {}
    names: dict[int, str] = {}
    entry = _inputs_and_vectors(nest.captures, "c", len(nest.vectors), names)
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
    lines = _allocas_first(entry + ["  br label %head", *head, "row:", *body, *tail, *done])
    return ("; a loop nest, optimised whatever its size\n" + decls
            + "\ndefine void @nest(ptr noalias %w, ptr noalias %bases, i64 %start, i64 %end, ptr noalias %out) {\n"
            + "entry:\n" + _with_helpers("\n".join(lines) + "\n  ret void\n}\n") + "\nattributes #0 = { nobuiltin }\n")


def _inputs_and_vectors(inputs: list[int], tag: str, vectors: int, names: dict[int, str]) -> list[str]:
    """Entry lines loading ``w[k]`` for each input node (named ``%{tag}{k}`` in ``names``) and each
    vector's first entry's address ``%b{v}`` from ``bases``."""
    lines: list[str] = []
    for k, node in enumerate(inputs):
        names[node] = f"%{tag}{k}"
        load_line(lines, names[node], "%w", k)
    for v in range(vectors):
        lines += [f"  %b{v}a = getelementptr ptr, ptr %bases, i64 {v}", f"  %b{v} = load ptr, ptr %b{v}a"]
    return lines


def _scope_lines(scope: Scope, index: str, indices: dict[int, str], names: dict[int, str], lines: list[str],
                 block: list[str], p: str, declared: dict[str, int], clamp: bool = True,
                 hoisted: Hoisted | None = None) -> str:
    """Lines of one scope's body at the i64 index ``index`` (``indices``: every open level's), appended
    to ``lines``; returns the IR value of the body.  ``block[0]`` tracks the block the lines end in.
    ``clamp``: the entries' indices may leave their vectors (a guarded term's), and are clamped; the
    loops inside read as their scope does.  ``hoisted``: sums inside already computed for every
    index (:func:`_hoist`), read from their arrays."""
    names = dict(names)
    names.update((node, hex_double(c)) for node, c in scope.consts.items())
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
        if inner is not None and hoisted and node in hoisted:
            array, low = hoisted[node]
            lines += [f"  %{p}h{node}o = sub i64 {index}, {low}",
                      f"  %{p}h{node}a = getelementptr double, ptr {array}, i64 %{p}h{node}o",
                      f"  %{p}h{node} = load double, ptr %{p}h{node}a"]
            names[node] = f"%{p}h{node}"
            continue
        if inner is not None:
            reduced = _inner_product if inner.op == "prod" else _inner_sum
            names[node] = reduced(inner, indices, names, lines, block, f"{p}{node}x", declared, clamp=clamp)
            continue
        r = f"%{p}v{node}"
        lines += op_lines(op, [names[a] for a in args], r, f"%{p}t{node}", declared)
        names[node] = r
    return names[scope.body]


def _index_nodes(scope: Scope) -> list[tuple[int, str | None]]:
    """The scope's own index leaf (named by the caller); other levels' leaves are captures."""
    return [(scope.index_node, None)] if scope.index_node is not None else []


def _inner_product(scope: Scope, indices: dict[int, str], names: dict[int, str], lines: list[str],
                   block: list[str], p: str, declared: dict[str, int], clamp: bool = True) -> str:
    """A product inside a body (one block of factors at most: :func:`symad.schedule.loop_nest.loop_nest`)
    as a loop in the canonical order of :func:`symad.backends.arrays.blocked_prod`: from 1.0, each
    factor in turn, one lane."""
    return _inner_sum(scope, indices, names, lines, block, p, declared, clamp=clamp, lanes=1, reduce="fmul",
                      identity="1.0")


def _inner_sum(scope: Scope, indices: dict[int, str], names: dict[int, str], lines: list[str], block: list[str],
               p: str, declared: dict[str, int], first: str | None = None, last_index: str | None = None,
               clamp: bool = True, lanes: int = INNER_LANES, hoisted: Hoisted | None = None,
               start: list[str] | None = None, kept: list[str] | None = None, reduce: str = "fadd",
               identity: str = "0.0") -> str:
    """A sum as a loop in the canonical order (``lanes`` lanes from 0.0, lane ``l`` adding the terms
    at offsets ``l``, ``l + lanes``, ... from ``first``; then the lanes added as a tree of adjacent
    pairs); returns its IR value.  The index runs from ``first`` to ``last_index`` (IR values; by
    default the scope's whole range).  The loop takes ``lanes`` terms a step, the body written once a
    lane (independent additions, which the SLP vectoriser packs into vector registers), then the
    last terms one at a time, each to its lane.  A sum taken in parts: the lanes start from
    ``start`` (IR values) and, with ``kept``, are appended to it, not added (every part but the
    last a multiple of ``lanes`` terms long).  A whole range longer than a block runs a block at
    a time (:func:`_blocked_sum`).  ``reduce`` and ``identity``: the lanes' operation and start
    (``fmul`` from 1.0 for a product's one lane)."""
    if first is None and last_index is None and scope.high - scope.low + 1 > BLOCK:
        return _blocked_sum(scope, indices, names, lines, block, p, declared, clamp, lanes, hoisted)
    first = str(scope.low) if first is None else first
    last_index = str(scope.high) if last_index is None else last_index
    before = block[0]
    j, q = f"%{p}J", f"%{p}"
    lines += [f"  {q}N1 = sub i64 {last_index}, {first}", f"  {q}N2 = add i64 {q}N1, 1",
              f"  {q}N3 = icmp slt i64 {q}N2, 0", f"  {q}N = select i1 {q}N3, i64 0, i64 {q}N2",
              f"  {q}R = and i64 {q}N, {lanes - 1}", f"  {q}G = sub i64 {q}N, {q}R",
              f"  {q}E = add i64 {first}, {q}G", f"  br label %L{p}H"]
    body: list[str] = [f"L{p}B:"]
    block[0] = f"L{p}B"
    sums = []
    for lane in range(lanes):
        at = f"{q}J{lane}i"
        body.append(f"  {at} = add i64 {j}, {lane}")
        value = _scope_lines(scope, at, {**indices, scope.level: at}, names, body, block, f"{p}M{lane}", declared,
                             clamp, hoisted)
        body.append(f"  {q}S{lane}n = {reduce} double {q}S{lane}, {value}")
        sums.append(f"{q}S{lane}")
    last = block[0]
    body += [f"  {q}Jn = add i64 {j}, {lanes}", f"  br label %L{p}H"]
    lines += [f"L{p}H:", f"  {j} = phi i64 [{first}, %{before}], [{q}Jn, %{last}]"]
    lines += [f"  {s} = phi double [{a}, %{before}], [{s}n, %{last}]"
              for s, a in zip(sums, start or [identity] * lanes)]
    lines += [f"  {q}go = icmp slt i64 {j}, {q}E", f"  br i1 {q}go, label %L{p}B, label %L{p}T", *body]
    # the last terms (fewer than the lanes), one a step, each to its lane
    k = f"{q}K"
    tail: list[str] = [f"L{p}U:"]
    block[0] = f"L{p}U"
    value = _scope_lines(scope, k, {**indices, scope.level: k}, names, tail, block, f"{p}T", declared, clamp, hoisted)
    end = block[0]
    tail.append(f"  {q}Kl = sub i64 {k}, {q}E")
    for lane in range(lanes):
        tail += [f"  {q}Q{lane}s = {reduce} double {q}Q{lane}, {value}", f"  {q}Q{lane}c = icmp eq i64 {q}Kl, {lane}",
                 f"  {q}Q{lane}n = select i1 {q}Q{lane}c, double {q}Q{lane}s, double {q}Q{lane}"]
    tail += [f"  {q}Kn = add i64 {k}, 1", f"  br label %L{p}T"]
    lines += [f"L{p}T:", f"  {k} = phi i64 [{q}E, %L{p}H], [{q}Kn, %{end}]"]
    lines += [f"  {q}Q{lane} = phi double [{q}S{lane}, %L{p}H], [{q}Q{lane}n, %{end}]" for lane in range(lanes)]
    lines += [f"  {q}Kgo = icmp sle i64 {k}, {last_index}", f"  br i1 {q}Kgo, label %L{p}U, label %L{p}X", *tail,
              f"L{p}X:"]
    block[0] = f"L{p}X"
    if kept is not None:
        kept += [f"{q}Q{lane}" for lane in range(lanes)]
        return kept[-lanes]
    return lanes_added(lines, [f"{q}Q{lane}" for lane in range(lanes)], f"{q}P")


def lanes_added(lines: list[str], parts: list[str], name: str) -> str:
    """The lanes' sums ``parts`` added as a tree of adjacent pairs, ((0 + 1) + (2 + 3)) + ((4 + 5) + (6 + 7)),
    into registers ``name1``, ``name2``, ...: the canonical order of every evaluator; the last one's name."""
    fresh = 0
    while len(parts) > 1:
        paired = []
        for a, b in zip(parts[::2], parts[1::2]):
            fresh += 1
            lines.append(f"  {name}{fresh} = fadd double {a}, {b}")
            paired.append(f"{name}{fresh}")
        parts = paired
    return parts[0]


def _blocked_sum(scope: Scope, indices: dict[int, str], names: dict[int, str], lines: list[str], block: list[str],
                 p: str, declared: dict[str, int], clamp: bool, lanes: int, hoisted: Hoisted | None) -> str:
    """A sum inside a loop's body over more than one block: a loop over its blocks of :data:`BLOCK`
    terms, each block's sum (:func:`_inner_sum` over the block's indices, in ``lanes`` lanes) stored
    in a stack array, then the blocks' sums added (:func:`_blocks_added`): the order of
    :func:`symad.backends.arrays.blocked_sum`, in code the same size whatever the range.  The array
    is its nesting level's (``%ib<level>``, the largest such sum's size): a sum runs its blocks and
    adds them before any other sum of its level starts, and the sums it encloses are of other
    levels."""
    blocks = -(-(scope.high - scope.low + 1) // BLOCK)
    acc = f"%ib{scope.level}"
    lines.append(f"  {acc} = alloca double, i64 {blocks}")  # moved to the function's entry (_allocas_first)

    def one(k: str) -> str:
        lo, hi = _block_bounds(lines, f"{p}B", k, scope.low, scope.high)
        return _inner_sum(scope, indices, names, lines, block, f"{p}Y", declared, lo, hi, clamp=clamp, lanes=lanes,
                          hoisted=hoisted)

    _blocks_loop(blocks, acc, lines, block, f"{p}B", one)
    return _blocks_added(acc, blocks, lines, f"{p}B")


def _block_bounds(lines: list[str], p: str, k: str, low: int, high: int) -> tuple[str, str]:
    """The first and last index of block ``k`` (an i64 IR value) of a range ``low`` … ``high``."""
    lines += [f"  %{p}r0 = mul i64 {k}, {BLOCK}", f"  %{p}lo = add i64 %{p}r0, {low}",
              f"  %{p}hi0 = add i64 %{p}lo, {BLOCK - 1}", f"  %{p}over = icmp sgt i64 %{p}hi0, {high}",
              f"  %{p}hi = select i1 %{p}over, i64 {high}, i64 %{p}hi0"]
    return f"%{p}lo", f"%{p}hi"


def _blocks_loop(blocks: int, acc: str, lines: list[str], block: list[str], p: str,
                 each: Callable[[str], str]) -> None:
    """A loop over blocks ``0`` … ``blocks - 1`` storing ``each(k)`` (the IR value of block ``k``'s
    sum, written by ``each`` at the i64 ``k``) at ``acc[k]``."""
    before = block[0]
    lines += [f"  br label %K{p}h", f"K{p}h:", f"  %{p}k = phi i64 [0, %{before}], [%{p}kn, %K{p}e]",
              f"  %{p}more = icmp slt i64 %{p}k, {blocks}", f"  br i1 %{p}more, label %K{p}s, label %K{p}x",
              f"K{p}s:"]
    block[0] = f"K{p}s"
    value = each(f"%{p}k")
    lines += [f"  %{p}at = getelementptr double, ptr {acc}, i64 %{p}k", f"  store double {value}, ptr %{p}at",
              f"  br label %K{p}e", f"K{p}e:", f"  %{p}kn = add i64 %{p}k, 1", f"  br label %K{p}h", f"K{p}x:"]
    block[0] = f"K{p}x"


# Up to this many blocks, their sums are added by code written out (loads and additions); more, by
# a call of ``@pairwise`` (:data:`PAIRWISE_IR`), the same order in code of a fixed size.
UNROLLED_BLOCKS = 8


def _blocks_added(acc: str, blocks: int, lines: list[str], p: str) -> str:
    """The ``blocks`` sums in the array ``acc`` added as NumPy's pairwise sum adds a contiguous array
    (:func:`_pairwise`); returns the IR value.  One block: its sum."""
    if blocks > UNROLLED_BLOCKS:
        lines.append(f"  %{p}all = call double @pairwise(ptr {acc}, i64 {blocks})")
        return f"%{p}all"
    parts = []
    for b in range(blocks):
        lines += [f"  %{p}s{b}a = getelementptr double, ptr {acc}, i64 {b}", f"  %{p}s{b} = load double, ptr %{p}s{b}a"]
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


def _pairwise_ir() -> str:
    """``double @pairwise(ptr a, i64 n)``: ``a[0]`` … ``a[n-1]`` added as :func:`_pairwise` adds them
    (NumPy's pairwise sum): under 8 in order from 0.0; up to 128 in eight interleaved partial sums
    added as a tree, the rest after; beyond, the two halves (the first a multiple of 8) each so,
    then added (a call for each: depth log2(n / 128))."""
    eight = [f"  %a{j}p = getelementptr double, ptr %a, i64 {j}\n  %r{j} = load double, ptr %a{j}p" for j in range(8)]
    heads = [f"  %e{j} = phi double [%r{j}, %eight], [%e{j}n, %eb]" for j in range(8)]
    steps = [f"  %e{j}o = add i64 %ei, {j}\n  %e{j}p = getelementptr double, ptr %a, i64 %e{j}o\n"
             f"  %e{j}v = load double, ptr %e{j}p\n  %e{j}n = fadd double %e{j}, %e{j}v" for j in range(8)]
    tree: list[str] = []
    total = lanes_added(tree, [f"%e{j}" for j in range(8)], "%t")
    return "\n".join([
        "define double @pairwise(ptr %a, i64 %n) {", "entry:", "  %few = icmp slt i64 %n, 8",
        "  br i1 %few, label %seq, label %many",
        "seq:", "  br label %sh",
        "sh:", "  %si = phi i64 [0, %seq], [%sin, %sb]", "  %ss = phi double [0.0, %seq], [%ssn, %sb]",
        "  %sgo = icmp slt i64 %si, %n", "  br i1 %sgo, label %sb, label %sx",
        "sb:", "  %sp = getelementptr double, ptr %a, i64 %si", "  %sv = load double, ptr %sp",
        "  %ssn = fadd double %ss, %sv", "  %sin = add i64 %si, 1", "  br label %sh",
        "sx:", "  ret double %ss",
        "many:", "  %big = icmp sgt i64 %n, 128", "  br i1 %big, label %halves, label %eight",
        "halves:", "  %h0 = lshr i64 %n, 1", "  %h = and i64 %h0, -8",
        "  %first = call double @pairwise(ptr %a, i64 %h)", "  %b = getelementptr double, ptr %a, i64 %h",
        "  %m = sub i64 %n, %h", "  %second = call double @pairwise(ptr %b, i64 %m)",
        "  %both = fadd double %first, %second", "  ret double %both",
        "eight:", *eight, "  %rem = and i64 %n, 7", "  %whole = sub i64 %n, %rem", "  br label %eh",
        "eh:", "  %ei = phi i64 [8, %eight], [%ein, %eb]", *heads, "  %ego = icmp slt i64 %ei, %whole",
        "  br i1 %ego, label %eb, label %et",
        "eb:", *steps, "  %ein = add i64 %ei, 8", "  br label %eh",
        "et:", *tree, "  br label %th",
        "th:", "  %ti = phi i64 [%ei, %et], [%tin, %tb]", f"  %ts = phi double [{total}, %et], [%tsn, %tb]",
        "  %tgo = icmp slt i64 %ti, %n", "  br i1 %tgo, label %tb, label %tx",
        "tb:", "  %tp = getelementptr double, ptr %a, i64 %ti", "  %tv = load double, ptr %tp",
        "  %tsn = fadd double %ts, %tv", "  %tin = add i64 %ti, 1", "  br label %th",
        "tx:", "  ret double %ts", "}", ""])


def _with_helpers(functions: str) -> str:
    """``functions`` (a module's definitions), with ``@pairwise`` defined if they call it."""
    return functions + ("\n" + _pairwise_ir() if "@pairwise(" in functions else "")


def _allocas_first(lines: list[str]) -> list[str]:
    """A function's lines (the entry block's first) with its stack arrays first (an alloca inside a
    loop would take more stack at every step), one array of each name: the largest (the arrays the
    sums inside of a nesting level share)."""
    sizes: dict[str, int] = {}
    rest = []
    for line in lines:
        name, eq, size = line.partition(" = alloca double, i64 ")
        if eq:
            sizes[name] = max(sizes.get(name, 0), int(size))
        else:
            rest.append(line)
    return [f"{name} = alloca double, i64 {size}" for name, size in sizes.items()] + rest


# ===================================================================== a whole program with loops
def program_ir(program: LoopProgram) -> str:
    """LLVM IR of ``prog(w, bases, outs)`` for a :class:`~symad.schedule.loop_nest.LoopProgram`: the
    top level's steps, each loop at the top run inside (a sum over blocks of :data:`BLOCK` rows,
    each block in the canonical two lanes, the blocks' sums added as NumPy's pairwise sum adds them;
    an ``each`` stored row by row), output ``k`` stored at ``outs[k]`` (a number, or an ``each``'s
    array).  ``w[k]`` is variable ``k``; ``bases[v]`` vector ``v``'s first entry.  One call computes
    the value and the whole gradient: no per-loop call, no thread.  The sums inside a loop at the
    top that read only its index are computed for all its rows first (:func:`_hoist`).  With
    ``program.array_offset``, ``call(x, g)`` too (:func:`_call_entry`).  A ``tiled`` program's
    code is :func:`_tiled_ir`'s instead."""
    if program.tiled:
        return _tiled_ir(program)
    declared: dict[str, int] = {}
    top = program.top
    lines, names = _program_entry(program)
    block = ["entry"]
    arrays = {node for node, kind in zip(program.outputs, program.kinds) if kind == "each"}
    computed: dict[int, tuple[str, int, int]] = {}  # sums inside computed for every row: array, rows
    stack = [HOIST_STACK_BYTES]  # what their arrays may still take
    for node, op, args in top.steps:
        inner = top.inner.get(node)
        if inner is None:
            r = f"%tv{node}"
            lines += op_lines(op, [names[a] for a in args], r, f"%tt{node}", declared)
            names[node] = r
            continue
        hoisted = _hoist(inner, names, lines, block, f"h{node}", declared, computed, stack)
        if inner.op == "each":
            slot = program.outputs.index(node)
            names[node] = _top_each(inner, names, lines, block, f"w{node}", declared, f"%out{slot}", hoisted)
        else:
            names[node] = _top_sum(inner, names, lines, block, f"u{node}", declared, hoisted)
    for k, node in enumerate(program.outputs):
        if node not in arrays:
            lines.append(f"  store double {names[node]}, ptr %out{k}")
    return ("; a program with loops, optimised whatever its size\n" + _declarations(declared)
            + "\ndefine void @prog(ptr noalias %w, ptr noalias %bases, ptr noalias %outs) {\nentry:\n"
            + _with_helpers("\n".join(_allocas_first(lines)) + "\n  ret void\n}\n") + _call_entry(program)
            + "\nattributes #0 = { nobuiltin }\n")


def _program_entry(program: LoopProgram) -> tuple[list[str], dict[int, str]]:
    """A program's entry lines (its variables, vectors, outputs and the entries it reads outside any
    loop, clamped into their vectors) and the IR names of those nodes and of its constants."""
    top = program.top
    names: dict[int, str] = {node: hex_double(c) for node, c in top.consts.items()}
    lines = _inputs_and_vectors(program.variables, "x", len(program.vectors), names)
    for k in range(len(program.outputs)):
        lines += [f"  %out{k}a = getelementptr ptr, ptr %outs, i64 {k}", f"  %out{k} = load ptr, ptr %out{k}a"]
    for k, e in enumerate(top.entries):  # entries at constant indices (x[3] beside a loop), clamped
        offset = sum((min(max(const, lo), hi) - lo) * stride
                     for (_, const), (lo, hi), stride in zip(e.indices, e.bounds, e.strides))
        lines += [f"  %te{k}a = getelementptr double, ptr %b{e.vector}, i64 {offset}",
                  f"  %te{k} = load double, ptr %te{k}a"]
        names[e.node] = f"%te{k}"
    return lines, names


def _declarations(declared: dict[str, int]) -> str:
    return "".join(f"declare double @{fn}({', '.join(['double'] * m)})\n" for fn, m in declared.items())


def _tiled_ir(program: LoopProgram) -> str:
    """LLVM IR of a tiled program (:attr:`~symad.schedule.loop_nest.LoopProgram.tiled`): two functions
    of ``(w, bases, outs)``, where ``outs`` holds the outputs, then the block sums' array, the next
    block's counter (an i64) and the sums' array.

    ``part`` takes blocks by an atomic increment of the counter until none is left (every thread
    calls it; whoever is slow takes fewer) and runs block ``b`` of every loop at the top together,
    in tiles of :data:`TILE_ROWS` rows, every loop's tile in turn while its entries are in cache: a
    map's rows ``b*BLOCK`` ... of it stored in its array, a sum's rows added in the canonical two
    lanes (carried from tile to tile) into ``partial[s*blocks + b]`` (``s``: its place among
    :attr:`~symad.schedule.loop_nest.LoopProgram.sums`).  ``prog`` then
    takes each sum's value from ``sums[s]`` (its blocks' sums added by the caller, as NumPy's
    pairwise sum adds them) and computes the steps after the loops.  The same bits on any
    number of threads, and the program's own (untiled) ones."""
    top, blocks, count = program.top, program.blocks, len(program.outputs)
    sums = program.sums
    declared: dict[str, int] = {}
    lines, names = _program_entry(program)
    lines += [f"  %parta = getelementptr ptr, ptr %outs, i64 {count}", "  %partial = load ptr, ptr %parta",
              f"  %nexta = getelementptr ptr, ptr %outs, i64 {count + 1}", "  %next = load ptr, ptr %nexta"]
    after = set(top.inner)  # the loops and the steps reading one: prog's
    for node, op, args in top.steps:
        if node in after or any(a in after for a in args):
            after.add(node)
            continue
        lines += op_lines(op, [names[a] for a in args], f"%tv{node}", f"%tt{node}", declared)
        names[node] = f"%tv{node}"
    lines += ["  br label %grab", "grab:", "  %b = atomicrmw add ptr %next, i64 1 monotonic",
              f"  %bgo = icmp slt i64 %b, {blocks}", "  br i1 %bgo, label %blk, label %done", "blk:"]
    loops = [(node, top.inner[node]) for node, _, _ in top.steps if node in top.inner]
    for node, inner in loops:  # the block's rows of each loop: index lo .. hi
        k = f"%k{node}"
        lines += [f"  {k}r = mul i64 %b, {BLOCK}", f"  {k}lo = add i64 {k}r, {inner.low}",
                  f"  {k}h = add i64 {k}lo, {BLOCK - 1}", f"  {k}o = icmp sgt i64 {k}h, {inner.high}",
                  f"  {k}hi = select i1 {k}o, i64 {inner.high}, i64 {k}h"]
    # the block in tiles of TILE_ROWS rows, every loop's tile in turn: a sum's chain of additions (its
    # lanes carried from tile to tile) and a map's vector work overlap in the processor
    body: list[str] = ["tile:"]
    block = ["tile"]
    lanes: dict[int, list[str]] = {}
    for node, inner in loops:
        lines_at = f"%k{node}t"
        body += [f"  {lines_at} = add i64 %k{node}lo, %c", f"  {lines_at}e0 = add i64 {lines_at}, {TILE_ROWS - 1}",
                 f"  {lines_at}o = icmp sgt i64 {lines_at}e0, %k{node}hi",
                 f"  {lines_at}e = select i1 {lines_at}o, i64 %k{node}hi, i64 {lines_at}e0"]
        if inner.op == "each":
            _top_each(inner, names, body, block, f"w{node}", declared, f"%out{program.outputs.index(node)}",
                      rows=(lines_at, f"{lines_at}e"))
        else:
            lanes[node] = []
            _inner_sum(inner, {}, names, body, block, f"u{node}i", declared, lines_at, f"{lines_at}e", clamp=False,
                       lanes=2, start=[f"%u{node}a", f"%u{node}b"], kept=lanes[node])
    body += ["  %cn = add i64 %c, " + str(TILE_ROWS), "  br label %tiles"]
    lines += ["  br label %tiles", "tiles:", f"  %c = phi i64 [0, %blk], [%cn, %{block[0]}]"]
    for node, (a, b) in lanes.items():
        lines += [f"  %u{node}a = phi double [0.0, %blk], [{a}, %{block[0]}]",
                  f"  %u{node}b = phi double [0.0, %blk], [{b}, %{block[0]}]"]
    lines += [f"  %cgo = icmp slt i64 %c, {BLOCK}", "  br i1 %cgo, label %tile, label %tiled", *body, "tiled:"]
    for node in lanes:
        lines += [f"  %u{node}v = fadd double %u{node}a, %u{node}b",
                  f"  %u{node}s = add i64 %b, {sums.index(node) * blocks}",
                  f"  %u{node}p = getelementptr double, ptr %partial, i64 %u{node}s",
                  f"  store double %u{node}v, ptr %u{node}p"]
    lines += ["  br label %grab", "done:"]
    part = lines

    lines, names = _program_entry(program)
    lines += [f"  %sumsa = getelementptr ptr, ptr %outs, i64 {count + 2}", "  %sums = load ptr, ptr %sumsa"]
    for node, op, args in top.steps:
        inner = top.inner.get(node)
        if inner is None:
            lines += op_lines(op, [names[a] for a in args], f"%tv{node}", f"%tt{node}", declared)
            names[node] = f"%tv{node}"
        elif inner.op == "each":
            names[node] = f"%out{program.outputs.index(node)}"
        else:
            lines += [f"  %s{node}a = getelementptr double, ptr %sums, i64 {sums.index(node)}",
                      f"  %s{node} = load double, ptr %s{node}a"]
            names[node] = f"%s{node}"
    for k, (node, kind) in enumerate(zip(program.outputs, program.kinds)):
        if kind != "each":
            lines.append(f"  store double {names[node]}, ptr %out{k}")
    head = "(ptr noalias %w, ptr noalias %bases, ptr noalias %outs) {\nentry:\n"
    functions = ("\ndefine void @part" + head + "\n".join(_allocas_first(part)) + "\n  ret void\n}\n"
                 + "\ndefine void @prog" + head + "\n".join(_allocas_first(lines)) + "\n  ret void\n}\n")
    return ("; a program with loops run block by block, optimised whatever its size\n" + _declarations(declared)
            + _with_helpers(functions) + "\nattributes #0 = { nobuiltin }\n")


def _call_entry(program: LoopProgram) -> str:
    """``call(x, g)`` of a program with :attr:`~symad.schedule.loop_nest.LoopProgram.call_entry`:
    ``prog`` on the data of two contiguous float64 NumPy arrays (the vector, the gradient to fill),
    their data pointers read from the array objects (no address taken in Python, nothing allocated
    but on the stack); returns the value.  The caller checks dtypes and shapes."""
    offset = fastcall.array_data_offset()
    if offset is None or not (program.call_entry and program.takes_call):
        return ""
    return ("\ndefine double @call(ptr %xo, ptr %go) {\nentry:\n"
            f"  %xa = getelementptr i8, ptr %xo, i64 {offset}\n  %x = load ptr, ptr %xa\n"
            f"  %ga = getelementptr i8, ptr %go, i64 {offset}\n  %g = load ptr, ptr %ga\n"
            "  %w = alloca double\n  %bases = alloca ptr\n  store ptr %x, ptr %bases\n"
            "  %v = alloca double\n  %outs = alloca ptr, i64 2\n  store ptr %v, ptr %outs\n"
            "  %o1 = getelementptr ptr, ptr %outs, i64 1\n  store ptr %g, ptr %o1\n"
            "  call void @prog(ptr %w, ptr %bases, ptr %outs)\n"
            "  %value = load double, ptr %v\n  ret double %value\n}\n" + fastcall.fast_entry_ir(with_context=False))


# A tiled program runs a block's rows in tiles of this many (even: a sum's two lanes keep their rows)
TILE_ROWS = 128
# A top-level loop of up to this many rows has its sums inside (those reading nothing of its body
# but its index) computed for all its rows before it (:func:`_hoist`): stack arrays of 8 bytes a
# row, eight of them where the sum runs across the rows, at most HOIST_STACK_BYTES in a program
# (a thread's stack is megabytes; the rest run inside their loops).
HOIST_MAX_ROWS = 8192
HOIST_STACK_BYTES = 1 << 20
Hoisted = dict[int, tuple[str, int]]  # a sum inside -> (its array, the row index of its first entry)


def _hoist(outer: Scope, names: dict[int, str], lines: list[str], block: list[str], p: str,
           declared: dict[str, int], computed: dict[int, tuple[str, int, int]], stack: list[int]) -> Hoisted:
    """The sums inside the top-level loop ``outer`` that read nothing of its body but its index,
    computed for all its rows before it: one loop nest a sum, which two loops sharing the sum (the
    rows' dot products ``sum(j, A[i,j]*x[j])`` of a value and of its gradient) share.  A sum reading
    its entries across the rows (``sum(i, x[i]*A[i,k])`` for each ``k``) runs with the loops swapped:
    for each ``i`` in turn, the terms of every row added to that row's lane of ``i``, a unit-stride
    loop over the rows that LLVM vectorises; each row's lanes hold what the loop inside would
    have, so the bits are the same."""
    hoisted: Hoisted = {}
    rows = outer.high - outer.low + 1
    if rows > HOIST_MAX_ROWS:
        return hoisted
    known = {**names, **{node: hex_double(c) for node, c in outer.consts.items()}}  # constants the loops share
    for node, inner in outer.inner.items():
        if inner.op != "sum" or inner.inner or any(c not in names and c != outer.index_node for c in inner.captures):
            continue
        done = computed.get(node)
        if done is not None and done[1] <= outer.low and outer.high <= done[2]:
            hoisted[node] = (done[0], done[1])
            continue
        q = f"{p}n{node}"
        clamp = not _inside(inner, outer)
        across = _across(inner, outer) and inner.high - inner.low < BLOCK  # (its lanes are one block's)
        size = 8 * rows * (INNER_LANES if across else 1)
        if size > stack[0]:
            continue
        stack[0] -= size
        if across:
            array = _sum_across(inner, outer, known, lines, block, q, declared, clamp)
        else:
            array = _sum_along(inner, outer, known, lines, block, q, declared, clamp)
        computed[node] = (array, outer.low, outer.high)
        hoisted[node] = (array, outer.low)
    return hoisted


def _strides(entry: Entry, level: int) -> int:
    """How far apart in memory ``entry`` reads for consecutive values of index ``level`` (elements)."""
    return sum(coef.get(level, 0) * stride for (coef, _), stride in zip(entry.indices, entry.strides))


def _across(inner: Scope, outer: Scope) -> bool:
    """Whether more of the sum's entries that move with both indices (``A[i,k]``; ``x[i]`` is read
    well either way) read consecutive elements along the rows than along the sum's own index."""
    both = [(abs(_strides(e, inner.level)), abs(_strides(e, outer.level))) for e in inner.entries]
    along = sum(own == 1 and row > 1 for own, row in both)
    across = sum(row == 1 and own > 1 for own, row in both)
    return across > along


def _inside(inner: Scope, outer: Scope) -> bool:
    """Whether every entry of the sum lies inside its vector at every row and index (no clamping)."""
    box = {outer.level: (outer.low, outer.high), inner.level: (inner.low, inner.high)}
    for e in inner.entries:
        for (coef, const), (lo, hi) in zip(e.indices, e.bounds):
            if any(level not in box for level in coef):
                return False
            least = const + sum(min(c * box[lv][0], c * box[lv][1]) for lv, c in coef.items())
            most = const + sum(max(c * box[lv][0], c * box[lv][1]) for lv, c in coef.items())
            if least < lo or most > hi:
                return False
    return True


def _row_loop(p: str, first: int, last: int, lines: list[str], block: list[str]) -> str:
    """The head of a counted loop over ``first`` … ``last``, its body opened; returns its i64 index.
    :func:`_close_loop` ends it."""
    before = block[0]
    lines += [f"  br label %R{p}h", f"R{p}h:", f"  %{p}k = phi i64 [{first}, %{before}], [%{p}kn, %R{p}e]",
              f"  %{p}go = icmp sle i64 %{p}k, {last}", f"  br i1 %{p}go, label %R{p}b, label %R{p}x", f"R{p}b:"]
    block[0] = f"R{p}b"
    return f"%{p}k"


def _close_loop(p: str, lines: list[str], block: list[str]) -> None:
    """The end of the loop :func:`_row_loop` opened with prefix ``p``."""
    lines += [f"  br label %R{p}e", f"R{p}e:", f"  %{p}kn = add i64 %{p}k, 1", f"  br label %R{p}h", f"R{p}x:"]
    block[0] = f"R{p}x"


def _sum_along(inner: Scope, outer: Scope, names: dict[int, str], lines: list[str], block: list[str], p: str,
               declared: dict[str, int], clamp: bool) -> str:
    """The sum at every row of ``outer``, row by row (its own loop innermost), into a stack array."""
    rows = outer.high - outer.low + 1
    lines.insert(0, f"  %{p}H = alloca double, i64 {rows}")
    k = _row_loop(p, outer.low, outer.high, lines, block)
    row_names = _with_index(names, outer, k, lines, p)
    value = _inner_sum(inner, {outer.level: k}, row_names, lines, block, f"{p}s", declared, clamp=clamp)
    lines += [f"  %{p}o = sub i64 {k}, {outer.low}", f"  %{p}a = getelementptr double, ptr %{p}H, i64 %{p}o",
              f"  store double {value}, ptr %{p}a"]
    _close_loop(p, lines, block)
    return f"%{p}H"


def _sum_across(inner: Scope, outer: Scope, names: dict[int, str], lines: list[str], block: list[str], p: str,
                declared: dict[str, int], clamp: bool) -> str:
    """The sum at every row of ``outer`` with the loops swapped: its lanes one stack array each over
    the rows, from 0.0; for each index ``i`` of the sum, every row's term added to lane ``i mod
    lanes`` of that row; then each row's lanes added as the loop inside adds them."""
    rows, lanes = outer.high - outer.low + 1, INNER_LANES
    lines.insert(0, f"  %{p}A = alloca double, i64 {rows * lanes}")
    z = _row_loop(f"{p}z", 0, rows * lanes - 1, lines, block)
    lines += [f"  %{p}za = getelementptr double, ptr %{p}A, i64 {z}", f"  store double 0.0, ptr %{p}za"]
    _close_loop(f"{p}z", lines, block)
    i = _row_loop(f"{p}i", inner.low, inner.high, lines, block)
    lines += [f"  %{p}io = sub i64 {i}, {inner.low}", f"  %{p}il = and i64 %{p}io, {lanes - 1}",
              f"  %{p}im = mul i64 %{p}il, {rows}", f"  %{p}lane = getelementptr double, ptr %{p}A, i64 %{p}im"]
    k = _row_loop(f"{p}r", outer.low, outer.high, lines, block)
    row_names = _with_index(names, outer, k, lines, f"{p}r")
    value = _scope_lines(inner, i, {outer.level: k, inner.level: i}, row_names, lines, block, f"{p}b", declared,
                         clamp)
    lines += [f"  %{p}ro = sub i64 {k}, {outer.low}", f"  %{p}ra = getelementptr double, ptr %{p}lane, i64 %{p}ro",
              f"  %{p}rv = load double, ptr %{p}ra", f"  %{p}rs = fadd double %{p}rv, {value}",
              f"  store double %{p}rs, ptr %{p}ra"]
    _close_loop(f"{p}r", lines, block)
    _close_loop(f"{p}i", lines, block)
    k = _row_loop(f"{p}t", 0, rows - 1, lines, block)  # each row's lanes, as a tree of adjacent pairs
    parts = []
    for lane in range(lanes):
        lines += [f"  %{p}t{lane}o = add i64 {k}, {lane * rows}",
                  f"  %{p}t{lane}a = getelementptr double, ptr %{p}A, i64 %{p}t{lane}o",
                  f"  %{p}t{lane} = load double, ptr %{p}t{lane}a"]
        parts.append(f"%{p}t{lane}")
    total = lanes_added(lines, parts, f"%{p}tp")
    lines.append(f"  store double {total}, ptr %{p}t0a")  # lane 0's array becomes the sums'
    _close_loop(f"{p}t", lines, block)
    return f"%{p}A"


def _with_index(names: dict[int, str], outer: Scope, k: str, lines: list[str], p: str) -> dict[int, str]:
    """``names`` with the outer loop's index leaf, if its body reads it, as the double of row ``k``."""
    if outer.index_node is None:
        return names
    lines.append(f"  %{p}kd = sitofp i64 {k} to double")
    return {**names, outer.index_node: f"%{p}kd"}


def _top_sum(scope: Scope, names: dict[int, str], lines: list[str], block: list[str], p: str,
             declared: dict[str, int], hoisted: Hoisted | None = None) -> str:
    """A top-level sum: its blocks of :data:`BLOCK` rows one after another, each block's sum into a
    stack array, then those added in NumPy's pairwise order."""
    blocks = -(-(scope.high - scope.low + 1) // BLOCK)
    lines.append(f"  %{p}acc = alloca double, i64 {blocks}")
    _blocks_loop(blocks, f"%{p}acc", lines, block, p,
                 lambda k: _sum_block(scope, names, lines, block, p, declared, k, hoisted))
    return _blocks_added(f"%{p}acc", blocks, lines, p)


def _sum_block(scope: Scope, names: dict[int, str], lines: list[str], block: list[str], p: str,
               declared: dict[str, int], k: str, hoisted: Hoisted | None = None) -> str:
    """The sum of block ``k`` (an i64 IR value; past the last block, 0.0) of a top-level sum, its
    rows in the canonical two lanes; returns its IR value."""
    lo, hi = _block_bounds(lines, p, k, scope.low, scope.high)
    # the entries of a sum of the expression lie inside their vectors (the vectors' spans are theirs)
    return _inner_sum(scope, {}, names, lines, block, f"{p}i", declared, lo, hi, clamp=False,
                      lanes=2, hoisted=hoisted)


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
              declared: dict[str, int], out: str, hoisted: Hoisted | None = None,
              rows: tuple[str, str] | None = None) -> str:
    """A top-level each: its body at every row (or at the indices ``rows[0]`` ... ``rows[1]``, i64 IR
    values), stored in the output array ``out``.  The rows whose entries all lie inside their
    vectors run unclamped (the loop LLVM vectorises), the edge rows clamped."""
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
        parts = [(low, high, True)]
    else:
        parts = [(low, inside_lo - 1, True), (inside_lo, inside_hi, False), (inside_hi + 1, high, True)]
    for k, (first, last, clamp) in enumerate(parts):
        if first > last:
            continue
        q = f"{p}a" if len(parts) == 1 else f"{p}{k}"
        at: tuple[str | int, str | int] = (first, last)
        if rows is not None:  # the part's rows inside the given ones
            lines += [f"  %{q}cf = icmp sgt i64 {rows[0]}, {first}",
                      f"  %{q}cF = select i1 %{q}cf, i64 {rows[0]}, i64 {first}",
                      f"  %{q}cl = icmp slt i64 {rows[1]}, {last}",
                      f"  %{q}cL = select i1 %{q}cl, i64 {rows[1]}, i64 {last}"]
            at = (f"%{q}cF", f"%{q}cL")
        _each_rows(scope, names, lines, block, q, declared, out, *at, clamp, hoisted)
    return out


def _each_rows(scope: Scope, names: dict[int, str], lines: list[str], block: list[str], p: str,
               declared: dict[str, int], out: str, first: int | str, last: int | str, clamp: bool,
               hoisted: Hoisted | None = None) -> None:
    """The rows ``first`` … ``last`` (indices) of a top-level each, stored in ``out``."""
    before = block[0]
    j = f"%{p}j"
    body: list[str] = [f"E{p}b:"]
    block[0] = f"E{p}b"
    value = _scope_lines(scope, j, {scope.level: j}, names, body, block, p, declared, clamp, hoisted)
    end = block[0]
    body += [f"  %{p}r = sub i64 {j}, {scope.low}", f"  %{p}at = getelementptr double, ptr {out}, i64 %{p}r",
             f"  store double {value}, ptr %{p}at", f"  %{p}jn = add i64 {j}, 1", f"  br label %E{p}h"]
    lines += [f"  br label %E{p}h", f"E{p}h:", f"  {j} = phi i64 [{first}, %{before}], [%{p}jn, %{end}]",
              f"  %{p}go = icmp sle i64 {j}, {last}", f"  br i1 %{p}go, label %E{p}b, label %E{p}x",
              *body, f"E{p}x:"]
    block[0] = f"E{p}x"
