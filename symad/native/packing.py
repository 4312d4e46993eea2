"""Packing: the steps of a stitched program that run four at a time in vector stencils.

A written-out problem repeats itself: the partials of Rosenbrock's terms are the same few steps on
neighbouring variables.  As LLVM's SLP vectoriser does, packs grow down from seeds: four
neighbouring outputs computed by one op, and four terms of one shape that a written-out sum adds
one by one.  A pack's operands, lane by lane, are read as one vector, so each operand is one of

* one slot for every lane (a broadcast);
* four neighbouring inputs, in order or last first;
* four constants, copied to four new slots of the frame's template (a constant block);
* four steps of one op that has vector stencils: a pack of its own, and so on down;
* four lanes of packs already found, neighbours in their layout (in order or last first).

Each pack belongs to a seed and a path (the operand positions followed from the seed); the
packs of one path are laid out seed after seed, so four lanes across two neighbouring packs are
neighbours too: a term read by its own partial and by its neighbour's is one vector read either
way.  A vector is never read from four slots that four scalar stencils stored (the load would
wait for the stores to reach the cache): a pack whose operand pack is dropped is dropped too.

A pack runs right after the last step it reads; a sum's terms where their first lane ran, so
that their work stays between the links of the sum's chain, and the other packs spread among
those links (a chain of additions is a chain of latencies, which the processor overlaps with
work placed between its links).  It is kept only where every step reading one of its lanes
still runs after it.  Each lane computes the bits of its scalar step (the vector stencils are the
op table's lowerings lane by lane: IEEE arithmetic alone).

Everything is NumPy over the packs of one level of the growth at a time.  Irregular code gains
nothing and should pay little: a program whose seeds hold under a twentieth of its steps is not
searched, nor one with many seeds most of whose operands do not read as vectors.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from symad.native.stencils import BROADCAST, LANES, REVERSED, VECTOR

_MAX_LEVELS = 64  # packs grown this many levels down at most
_MAX_DROPS = 16  # rounds of dropping packs that would run after a reader (see find)
_MAX_CHAIN = 256  # packs reading packs reading packs ...: no packs past this many (their placing costs rounds)
_MIN_SEEDED = 0.05  # the share of a program's steps its seeds must hold for a search
_MIN_GROWN = 0.5  # the share of the seeds whose operands must all read as vectors for a search on,
_FEW = 16  # where there are this many seeds or more (fewer are searched quickly)
_STEP = np.arange(LANES)  # a lane's offset from the first


@dataclass
class Packs:
    """What :func:`find` found, in the slots of :func:`symad.native.stitcher.layout` before its
    outputs are put one after another (step ``i``'s result in slot ``base + i``).

    ``groups`` (rows of :data:`LANES` steps) are the packs; ``kinds`` (a row of three, unused
    ones ``VECTOR``) say how each operand is read and ``slots`` the slot it is read from (a
    :data:`VECTOR` operand: its first lane's); ``const_values`` are the constant blocks, in slots
    ``base + n`` on (``n`` the number of steps).  A pack runs right after step ``after`` (-1:
    first), after the packs there of lower ``depth``.  The packs' lanes are laid out one after
    another in the order of ``path`` then ``seed`` (the outputs' packs, path 0, are outputs already)."""

    groups: np.ndarray
    kinds: np.ndarray
    slots: np.ndarray
    const_values: np.ndarray
    after: np.ndarray
    depth: np.ndarray
    path: np.ndarray
    seed: np.ndarray


def find(operands: np.ndarray, arity: np.ndarray, op_ids: np.ndarray, vectorizable: np.ndarray,
         outs: np.ndarray, n_in: int, frame: np.ndarray, add: int = -1) -> Packs | None:
    """The packs of a program (see the module's text): ``operands`` (a row of three slots a step,
    unused ones repeating the first), each step's ``arity`` and op number, ``vectorizable`` by op
    number, the outputs' slots (each a step of its own, all distinct), ``n_in`` inputs and the
    frame's template (inputs, then constants, then a slot a step); None where there are none.
    ``add``: the op number of addition, whose chains (a written-out sum) seed packs too.

    Each pack belongs to a seed (the four outputs or sum terms it grew from) and a path (the
    operand positions followed from the seed).  The packs of one path, seed after seed, are laid out one after
    another, so that four lanes across two neighbouring seeds' packs are neighbours too: a term of
    a written-out sum read by its own partial and by its neighbour's (Rosenbrock's ``x[i+1]``
    and ``x[i]``) is one vector read either way."""
    n = len(arity)
    base = len(frame) - n
    seeds = outs[1:1 + (len(outs) - 1) // LANES * LANES].reshape(-1, LANES) - base
    numbers = np.flatnonzero(_isomorphic(seeds, op_ids, vectorizable))  # (a seed's number: its outputs' place)
    is_output = np.zeros(n, dtype=bool)
    is_output[outs - base] = True
    terms, term_seed, term_path, span = _sum_terms(operands, arity, op_ids, vectorizable, add, base, n_in,
                                                   is_output, _MIN_SEEDED * n - LANES * len(numbers))
    if LANES * (len(numbers) + len(terms)) < _MIN_SEEDED * n:
        return None  # (too irregular a program to pay for the search)
    top = n // LANES + 1
    groups = np.zeros((top, LANES), dtype=np.int64)
    kinds = np.full((top, 3), VECTOR, dtype=np.int64)
    slots = np.zeros((top, 3), dtype=np.int64)
    needs = np.full((top, 6), -1, dtype=np.int64)  # the packs whose results a pack reads
    ok = np.zeros(top, dtype=bool)
    g_seed = np.zeros(top, dtype=np.int64)
    g_path = np.zeros(top, dtype=np.int64)
    group_of = np.full(n, -1, dtype=np.int64)
    place = np.full(n, -1, dtype=np.int64)  # a step's place in its path: LANES * seed + lane
    taken = is_output.copy()  # outputs, and steps in a pack
    consts: list[np.ndarray] = []
    n_groups, n_paths = 0, 1 + (int(term_path.max()) + 1 if len(terms) else 0)

    def new_groups(rows: np.ndarray, seed: np.ndarray, path: np.ndarray) -> np.ndarray:
        nonlocal n_groups
        ids = n_groups + np.arange(len(rows))
        groups[ids], g_seed[ids], g_path[ids] = rows, seed, path
        group_of[rows] = ids[:, None]
        place[rows] = LANES * seed[:, None] + np.arange(LANES)
        taken[rows] = True
        n_groups += len(rows)
        return ids

    level = np.concatenate([new_groups(seeds[numbers], numbers, np.zeros(len(numbers), dtype=np.int64)),
                            new_groups(terms, term_seed, 1 + term_path)])
    for _ in range(_MAX_LEVELS):
        if not len(level):
            break
        lanes = groups[level]
        ok[level] = True
        grown = []
        arity_of = arity[lanes[:, 0]]
        if level[0] == 0 and len(level) >= _FEW and not _mostly_lined_up(operands[lanes, :3], arity_of, op_ids,
                                                                          vectorizable, n_in, base):
            return None  # (seeds of steps that do not line up: an irregular program)
        for k in range(int(arity_of.max())):
            has = arity_of > k
            o = operands[lanes, k]  # (packs, LANES) slots
            lane0 = o[:, :1]
            same = (o == lane0).all(axis=1) & has
            inputs = (o == lane0 + _STEP).all(axis=1) & (o[:, -1] < n_in) & has
            backwards = (o == lane0 - _STEP).all(axis=1) & (o[:, 0] < n_in) & has  # (read last first)
            lowest, highest = o.min(axis=1), o.max(axis=1)
            constant = (lowest >= n_in) & (highest < base) & ~same & has
            steps = (lowest >= base) & ~same & has
            vector = inputs
            if steps.any():
                s = np.where(steps[:, None], o - base, 0)
                g = group_of[s]
                # four places in a row along one path: one pack's lanes, or two neighbouring seeds'
                existing = steps & (g >= 0).all(axis=1) & (g_path[g] == g_path[g[:, :1]]).all(axis=1)
                placed = place[s] - place[s[:, :1]]
                backwards = backwards | (existing & (placed == -_STEP).all(axis=1))
                existing &= (placed == _STEP).all(axis=1) | backwards
                rows = level[existing]
                needs[rows, 2 * k], needs[rows, 2 * k + 1] = g[existing, 0], g[existing, -1]
                fresh = steps & ~existing & ~taken[s].any(axis=1) & _isomorphic(s, op_ids, vectorizable)
                ordered = np.sort(s, axis=1)
                fresh &= (ordered[:, 1:] != ordered[:, :-1]).all(axis=1)
                if fresh.any():  # no lane reading another (a vector stencil computes them at once)
                    reads = operands[s[fresh], :3][:, :, :, None] - base  # (rows, LANES, 3, 1)
                    fresh[fresh] = ~(reads == s[fresh][:, None, None, :]).any(axis=(1, 2, 3))
                rows = np.flatnonzero(fresh)
                if len(rows):  # a step two rows would claim goes to the first
                    flat = s[rows].reshape(-1)
                    owner = np.full(n, len(flat), dtype=np.int64)
                    np.minimum.at(owner, flat, np.arange(len(flat)))
                    claimed = (owner[flat] == np.arange(len(flat))).reshape(-1, LANES).all(axis=1)
                    fresh[rows[~claimed]] = False
                    rows = rows[claimed]
                    path = n_paths + _compact(g_path[level[rows]])
                    n_paths = int(path.max()) + 1
                    ids = new_groups(s[rows], g_seed[level[rows]], path)
                    needs[level[rows], 2 * k] = ids
                    grown.append(ids)
                vector = vector | existing | fresh
            rows = np.flatnonzero(constant)
            if len(rows):
                at = sum(map(len, consts))
                consts.append(frame[o[rows]].reshape(-1))
                slots[level[rows], k] = base + n + at + LANES * np.arange(len(rows))
            kinds[level[same], k] = BROADCAST
            kinds[level[backwards], k] = REVERSED
            read = same | vector | backwards
            slots[level[read], k] = np.where(backwards[read], o[read, -1], o[read, 0])
            ok[level] &= ~has | read | constant
        if level[0] == 0 and len(level) >= _FEW and ok[level].sum() < _MIN_GROWN * len(level):
            return None  # (seeds of steps that do not line up: an irregular program)
        level = np.concatenate(grown) if grown else np.zeros(0, dtype=np.int64)
    groups, kinds, slots, needs, ok, g_seed, g_path = (
        a[:n_groups] for a in (groups, kinds, slots, needs, ok, g_seed, g_path))
    if not ok.any():
        return None
    terms_seeded = np.zeros(n_groups, dtype=bool)
    terms_seeded[len(numbers):len(numbers) + len(terms)] = True
    packed, after, depth = _placed(operands, arity, groups, needs, ok, base, terms_seeded, span)
    if not packed.any():
        return None
    const_values = np.concatenate(consts) if consts else np.zeros(0)
    return Packs(groups[packed], kinds[packed], slots[packed], const_values, after[packed], depth[packed],
                 g_path[packed], g_seed[packed])


def _sum_terms(operands: np.ndarray, arity: np.ndarray, op_ids: np.ndarray, vectorizable: np.ndarray, add: int,
               base: int, n_in: int, is_output: np.ndarray,
               floor: float) -> tuple[np.ndarray, np.ndarray, np.ndarray, tuple[int, int] | None]:
    """Seeds from written-out sums: the terms a chain of additions adds one by one (an addition
    one of whose operands is an addition, a link: the other is a term), four at a time among the
    terms of one shape (their op, and the op, input or constant each operand comes from), in the
    order they run; each seed's number in its shape, the shape's number (a path), and the steps
    of the first and last links (None: no chain).  No seeds where there are fewer than ``floor`` terms."""
    if add < 0:
        return np.zeros((0, LANES), dtype=np.int64), np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64), None
    links = np.flatnonzero(op_ids == add)
    a, b = operands[links, 0] - base, operands[links, 1] - base
    chained_a = (a >= 0) & (op_ids[np.maximum(a, 0)] == add)
    chained = chained_a | ((b >= 0) & (op_ids[np.maximum(b, 0)] == add))
    span = (int(links[chained][0]), int(links[chained][-1])) if chained.any() else None
    none = np.zeros((0, LANES), dtype=np.int64), np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64), span
    term = np.where(chained_a, b, a)
    term = term[chained & (term >= 0)]
    term = term[~is_output[term] & vectorizable[op_ids[term]]]
    if len(term) < max(LANES, floor):
        return none
    slots = operands[term, :3]
    kind = np.where(slots < n_in, 0, np.where(slots < base, 1, op_ids[np.maximum(slots - base, 0)] + 2))
    kind = np.where(np.arange(3) < arity[term][:, None], kind, -1)
    order = np.lexsort((term, kind[:, 2], kind[:, 1], kind[:, 0], op_ids[term]))
    term, shape = term[order], np.column_stack([op_ids[term], kind])[order]
    fresh = np.ones(len(term), dtype=bool)
    fresh[1:] = term[1:] != term[:-1]  # (a term of two sums once)
    term, shape = term[fresh], shape[fresh]
    starts = np.ones(len(term), dtype=bool)
    starts[1:] = (shape[1:] != shape[:-1]).any(axis=1)
    run = np.cumsum(starts) - 1
    first = np.flatnonzero(starts)
    at = np.arange(len(term)) - first[run]
    length = np.diff(np.append(first, len(term)))[run]
    whole = at < length // LANES * LANES
    term, run, at = term[whole], run[whole], at[whole]
    if not len(term):
        return none
    return term.reshape(-1, LANES), at[::LANES] // LANES, _compact(run[::LANES]), span


def _compact(keys: np.ndarray) -> np.ndarray:
    """``keys`` (small non-negative integers) numbered 0, 1, ... in the order of their values
    (not np.unique: NumPy's first call of it imports numpy.ma, milliseconds)."""
    present = np.bincount(keys) > 0
    return (np.cumsum(present) - 1)[keys]


def _mostly_lined_up(o: np.ndarray, arity: np.ndarray, op_ids: np.ndarray, vectorizable: np.ndarray, n_in: int,
                     base: int) -> bool:
    """Whether at least :data:`_MIN_GROWN` of the seeds (their lanes' operand slots ``o``, of
    shape (seeds, LANES, 3)) could read every operand as a vector: one slot, neighbouring inputs
    or constants, or steps of one op with vector stencils (a quick look, before any claim)."""
    first = o[:, :1, :]
    same = (o == first).all(axis=1)
    step = _STEP[:, None]
    inputs = ((o == first + step).all(axis=1) | (o == first - step).all(axis=1)) & (o.max(axis=1) < n_in)
    constant = (o.min(axis=1) >= n_in) & (o.max(axis=1) < base)
    steps = o.min(axis=1) >= base
    ops = op_ids[np.maximum(o - base, 0)]
    alike = (ops == ops[:, :1, :]).all(axis=1) & vectorizable[ops[:, 0, :]]
    fine = same | inputs | constant | (steps & alike) | (np.arange(3) >= arity[:, None])
    return bool(fine.all(axis=1).sum() >= _MIN_GROWN * len(o))


def _isomorphic(rows: np.ndarray, op_ids: np.ndarray, vectorizable: np.ndarray) -> np.ndarray:
    """Which rows of steps are of one op, one with vector stencils."""
    ops = op_ids[rows]
    return (ops == ops[:, :1]).all(axis=1) & vectorizable[ops[:, 0]]


def _placed(operands: np.ndarray, arity: np.ndarray, groups: np.ndarray, needs: np.ndarray, ok: np.ndarray,
            base: int, terms: np.ndarray, span: tuple[int, int] | None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Which packs are kept, and where each runs: right after step ``after`` (-1: first), after the
    packs there of lower ``depth``.

    A pack runs right after the last step it reads (or reads through the packs it reads), a sum's
    term (``terms``) where its first lane ran.  It is kept where every operand it reads from other
    packs is a pack kept (never four slots stored by four scalar stencils: a vector load of those
    waits for the stores to reach the cache) and every step reading one of its lanes runs later;
    dropping a pack can drop others: rounds until none drops (at most :data:`_MAX_DROPS`).  Then,
    where the program adds a sum link by link (its links at steps ``span``), the other packs are
    spread among the links, each as near its share of the way as what it reads and what reads it
    allow: a chain of additions is a chain of latencies, which the processor overlaps with the
    packs' work only where they come between its links."""
    n = len(arity)
    present = np.arange(3) < arity[:, None]
    reader = np.broadcast_to(np.arange(n)[:, None], (n, 3))[present]
    producer = operands[:, :3][present] - base
    reader, producer = reader[producer >= 0], producer[producer >= 0]
    lane_in = (np.arange(3) < arity[groups][:, :, None])  # (packs, LANES, 3)
    lane_from = np.where(lane_in, operands[groups, :3] - base, -1)
    none = (np.zeros(len(groups), dtype=bool), np.zeros(len(groups), dtype=np.int64),
            np.zeros(len(groups), dtype=np.int64))
    kept = ok.copy()
    for _ in range(_MAX_DROPS):
        while True:  # (along chains of packs reading packs)
            reads_kept = ((needs < 0) | kept[needs]).all(axis=1)
            if not (kept & ~reads_kept).any():
                break
            kept &= reads_kept
        pack_of = np.full(n, -1, dtype=np.int64)
        pack_of[groups[kept]] = np.flatnonzero(kept)[:, None]
        from_pack = pack_of[np.maximum(lane_from, 0)]
        reads_pack = (lane_from >= 0) & (from_pack >= 0)
        scalar_from = np.where((lane_from >= 0) & (from_pack < 0), lane_from, -1).max(axis=(1, 2))
        first_read = np.full(n, n, dtype=np.int64)  # each step's first reader not in a pack
        scalar_reader = pack_of[reader] < 0
        np.minimum.at(first_read, producer[scalar_reader], reader[scalar_reader])
        read_at = first_read[groups].min(axis=1)
        floor = np.maximum(scalar_from, np.where(terms, np.minimum(groups.min(axis=1) - 1, read_at - 1), -1))
        edges = _edges(reads_pack, from_pack)
        placed = _propagated(floor, *edges)
        if placed is None:  # packs reading each other round a cycle: no order runs them
            return none
        after, depth = placed
        late = kept & (read_at <= after)
        if late.any():
            kept &= ~late
            continue
        spread = np.flatnonzero(kept & ~terms)
        if span is None or not len(spread):
            return kept, after, depth
        latest = _latest(read_at - 1, *edges)
        if latest is None:
            return kept, after, depth
        order = spread[np.lexsort((depth[spread], after[spread]))]
        share = span[0] + np.arange(len(order)) * (span[1] - span[0]) // len(order)
        floor[order] = np.minimum(np.maximum(share, after[order]), latest[order])
        spread_out = _propagated(floor, *edges)
        if spread_out is None or (kept & (read_at <= spread_out[0])).any():  # (never, but checked)
            return kept, after, depth
        return (kept, *spread_out)
    return none


def _edges(reads_pack: np.ndarray, from_pack: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Which pack reads which (``reads_pack``: the lanes' operands that are ``from_pack``'s), each
    pair once, in order of reader: the readers and the packs read."""
    count = len(from_pack)
    reader = np.broadcast_to(np.arange(count)[:, None, None], reads_pack.shape)[reads_pack]
    pair = np.sort(reader * count + from_pack[reads_pack])
    if len(pair):
        pair = pair[np.append(True, pair[1:] != pair[:-1])]
    return pair // count, pair % count


def _propagated(floor: np.ndarray, reader: np.ndarray, read: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
    """Each pack's place: after ``floor`` and after every pack it reads (``reader`` reads ``read``,
    in order of reader), at a ``depth`` one more than that of the packs it reads at the same place;
    None where packs read each other round a cycle (or along a chain longer than :data:`_MAX_CHAIN`)."""
    after, depth = floor.copy(), np.zeros(len(floor), dtype=np.int64)
    if not len(reader):
        return after, depth
    first = np.flatnonzero(np.append(True, reader[1:] != reader[:-1]))
    readers = reader[first]
    for _ in range(min(len(floor) + 1, _MAX_CHAIN)):  # along chains of packs reading packs
        theirs = after[read]
        new_after = floor.copy()
        new_after[readers] = np.maximum(floor[readers], np.maximum.reduceat(theirs, first))
        at_same = np.where(theirs == new_after[reader], depth[read] + 1, 0)
        new_depth = np.zeros(len(floor), dtype=np.int64)
        new_depth[readers] = np.maximum.reduceat(at_same, first)
        if (new_after == after).all() and (new_depth == depth).all():
            return after, depth
        after, depth = new_after, new_depth
    return None


def _latest(latest: np.ndarray, reader: np.ndarray, read: np.ndarray) -> np.ndarray | None:
    """The latest place each pack can run: ``latest`` (before its steps' readers), and before the
    packs reading it (``reader`` reads ``read``) can run; None along a chain of packs longer than
    :data:`_MAX_CHAIN`."""
    latest = latest.copy()
    if not len(reader):
        return latest
    order = np.argsort(read, kind="stable")
    reader, read = reader[order], read[order]
    first = np.flatnonzero(np.append(True, read[1:] != read[:-1]))
    reads = read[first]
    for _ in range(min(len(latest) + 1, _MAX_CHAIN)):
        bound = np.minimum(latest[reads], np.minimum.reduceat(latest[reader], first))
        if (bound == latest[reads]).all():
            return latest
        latest[reads] = bound
    return None
