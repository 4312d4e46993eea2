"""Python code generation: a (lowered) schedule as one straight-line Python function, compiled.

Temporaries are register-allocated (a register is reused after its last use, so
NumPy batches don't keep one array per node alive).  The code runs against two
namespaces: ``math`` on plain floats (fastest for a single point of a small
expression) and NumPy ufuncs for batches and IEEE semantics (a float evaluation
that raises is redone with NumPy, so ``1/0 → inf`` and ``log(-1) → nan``
whichever path ran).  The source contains only symad's own identifiers and
``repr`` of floats, never user text.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from symad.schedule.lowering import PRIMITIVES, Step
from symad.schedule.schedule import ChunkPlan, Schedule

# The namespaces the code runs in: each op's function as f_<name>, on floats and on NumPy values.
PY_NAMESPACE: dict[str, Any] = {"inf": math.inf, "nan": math.nan}
NP_NAMESPACE: dict[str, Any] = {"inf": math.inf, "nan": math.nan}
for _name, _spec in PRIMITIVES.items():
    PY_NAMESPACE[f"f_{_name}"] = _spec.py
    NP_NAMESPACE[f"f_{_name}"] = _spec.np


def _literal(value: float) -> str:
    if math.isnan(value):
        return "nan"
    if math.isinf(value):
        return "inf" if value > 0 else "(-inf)"
    return repr(value) if math.copysign(1.0, value) > 0 else f"({value!r})"


def _straight_line(steps: list[Step], names: dict[int, str],
                   consts: dict[int, float], live_after: set[int], store: dict[int, str]) -> list[str]:
    """Python lines computing ``steps``; ``names`` maps nodes defined earlier to their text.

    Registers ``r0, r1, ...`` are reused after a value's last use (values in
    ``live_after`` are never released); a node in ``store`` is also written there.  A value
    used once, by the next step alone, is written inside it, ``r1 = (x * x) * x``: no
    register, the same operations in the same order (so a lowered power costs what
    ``x * x * x`` did); only one level deep, so no line nests deeply.
    """
    last_use: dict[int, int] = {}
    uses: dict[int, int] = {}
    for p, (_, _, args) in enumerate(steps):
        for a in args:
            last_use[a] = p
            uses[a] = uses.get(a, 0) + 1
    for node in live_after:
        last_use[node] = len(steps)
    free: list[str] = []
    n_registers = 0
    lines = []
    inline = False  # whether the step before is written inside this one
    for p, (node, op, args) in enumerate(steps):
        spec = PRIMITIVES[op]
        arg_names = [names[a] for a in args]
        # Numbers alone (`1.0 / 0.0`, kept unfolded because the result is not finite)
        # go through the op's function: Python's operators would raise even when
        # the NumPy namespace is in use.
        if spec.code and not all(a in consts for a in args):
            text = spec.code.format(*arg_names)
        else:
            text = f"f_{op}({', '.join(arg_names)})"
        for a in set(args):
            if last_use.get(a) == p and names[a][0] == "r":
                free.append(names[a])
        inline = (not inline and uses.get(node) == 1 and last_use[node] == p + 1
                  and node not in live_after and node not in store)
        if inline:
            names[node] = f"({text})"
            continue
        if free:
            reg = free.pop()
        else:
            reg = f"r{n_registers}"
            n_registers += 1
        names[node] = reg
        lines.append(f"    {reg} = {text}")
        if node in store:
            lines.append(f"    {store[node]} = {reg}")
    return lines


def _guarded(head: str, lines: list[str], guard: str | None, args: str) -> str:
    """A function of ``head`` and body ``lines``; with ``guard``, one that returns
    ``guard(args)`` where Python's float arithmetic raises (``1/0``, ``log(-1)``), so that a
    caller gets the IEEE results (inf, nan) with no wrapper of its own (a ``try`` costs
    nothing until it catches)."""
    if guard is None:
        return head + "".join(ln + "\n" for ln in lines)
    return (head + "    try:\n" + "".join("    " + ln + "\n" for ln in lines)
            + f"    except (ArithmeticError, ValueError):\n        return {guard}({args})\n")


def python_source(inputs: list[int], outputs: list[int], steps: list[Step], consts: dict[int, float],
                  plan: ChunkPlan | None = None, guard: str | None = None) -> str:
    """The program as Python source: ``program(a0, a1, ...)`` returning the outputs' tuple;
    with a chunk ``plan``, one function per chunk, values crossing chunks in the list ``s``.
    ``guard`` names the function the program hands its arguments to where Python's float
    arithmetic raises (see :func:`_guarded`)."""
    literals = {node: _literal(c) for node, c in consts.items()}
    if plan is None:
        names = {v: f"a{k}" for k, v in enumerate(inputs)}
        names.update(literals)
        lines = _straight_line(steps, names, consts, set(outputs), {})
        params = ", ".join(f"a{k}" for k in range(len(inputs)))
        result = ", ".join(names[n] for n in outputs)
        return _guarded(f"def program({params}):\n", [*lines, f"    return ({result},)"], guard, params)
    chunks, chunk_of, slot = plan.chunks, plan.chunk_of, plan.slot
    index = {v: k for k, v in enumerate(inputs)}
    parts = []
    for c, chunk in enumerate(chunks):
        names = dict(literals)
        head = []
        for _, _, args in chunk:
            for a in args:
                if a in names or chunk_of.get(a) == c:
                    continue
                if a in index:
                    names[a] = f"a{index[a]}"
                    head.append(f"    a{index[a]} = a[{index[a]}]")
                else:
                    names[a] = f"v{slot[a]}"
                    head.append(f"    v{slot[a]} = s[{slot[a]}]")
        store = {node: f"s[{slot[node]}]" for node, _, _ in chunk if node in slot}
        lines = head + _straight_line(chunk, names, consts, set(), store)
        parts.append(f"def chunk{c}(a, s):\n" + "".join(ln + "\n" for ln in lines) + "    return None\n")

    def ref(node: int) -> str:
        if node in literals:
            return literals[node]
        return f"a[{index[node]}]" if node in index else f"s[{slot[node]}]"

    calls = [f"    chunk{c}(a, s)" for c in range(len(chunks))]
    result = ", ".join(ref(n) for n in outputs)
    body = [f"    s = [0.0] * {len(slot)}", *calls, f"    return ({result},)"]
    parts.append(_guarded("def program(*a):\n", body, guard, "*a"))
    return "\n".join(parts)




def schedule_source(schedule: Schedule, guard: str | None = None) -> str:
    """A schedule's program as Python source (in chunks when the schedule is chunked)."""
    return python_source(schedule.inputs, schedule.outputs, schedule.steps, schedule.consts,
                         schedule.chunks() if schedule.chunked else None, guard)


def _unreachable(*xs: Any) -> Any:
    raise AssertionError("NumPy arithmetic raised under np.errstate(all='ignore')")


def python_functions(schedule: Schedule) -> tuple[Any, Any]:
    """The schedule's program compiled twice: on floats (IEEE results, as NumPy gives them, where
    Python's arithmetic would raise) and on NumPy values."""
    code = compile(schedule_source(schedule, guard="_ieee"), "<symad>", "exec")
    py_ns, np_ns = dict(PY_NAMESPACE), dict(NP_NAMESPACE)
    np_ns["_ieee"] = _unreachable

    def ieee(*xs: float) -> tuple[float, ...]:
        with np.errstate(all="ignore"):
            return tuple([float(v) for v in np_ns["program"](*[np.float64(x) for x in xs])])

    py_ns["_ieee"] = ieee
    exec(code, py_ns)  # generated from the op table, never from user text
    exec(code, np_ns)
    return py_ns["program"], np_ns["program"]
