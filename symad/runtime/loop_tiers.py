"""A whole program with loops served by NumPy while its machine code compiles in the background.

A function's program over loops (:class:`~symad.runtime.native_loops.WholeProgram`) takes LLVM a
few hundred milliseconds to compile the first time (later runs load it from the code cache).
Under the ``auto`` backend, a program of at most :data:`~symad.runtime.policy.LOOP_TIER_MAX_ROWS`
rows whose code is not at hand starts on NumPy arrays (:class:`~symad.backends.arrays.ArrayProgram`,
every loop one pass of array steps), while a task of the background pool
(:func:`symad.runtime.background.submit`) has the compile worker build its code, which serves
every call from then on.  Both add and multiply in the canonical order, so the switch changes no
bits; a compile cut short at exit is abandoned, as every background compile is.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from symad import native
from symad.backends.arrays import ArrayProgram
from symad.core.dag import Graph
from symad.core.errors import SymadError
from symad.runtime import background, policy
from symad.runtime.native_loops import WholeProgram, all_rows, planned_program, runs_tiled
from symad.schedule.loop_nest import NotCompiled


class LoopTier:
    """``run(scalars, vectors)`` of a whole program: NumPy's until its code is compiled."""

    def __init__(self, graph: Graph, roots: list[int], spans: Mapping[str, Any], planned: Any):
        self._plan = (graph, roots, spans, planned)
        self._interim = ArrayProgram(graph, roots)
        self._code: WholeProgram | None = None
        self._refused = False
        self._task = background.submit(self._compile)

    def _compile(self) -> None:
        graph, roots, spans, planned = self._plan
        try:
            self._code = WholeProgram(graph, roots, spans, planned=planned, remote=True)
        except (NotCompiled, SymadError):  # (what LLVM refuses: NumPy goes on serving)
            self._refused = True
        except background.Abandoned:  # the process is exiting
            raise
        except Exception:  # not tried again; reported as a pool task's error is
            self._refused = True
            raise

    def run(self, scalars: Mapping[int, float], vectors: Mapping[str, Any]) -> list[Any]:
        code = self._code
        if code is not None:
            return code.run(scalars, vectors)
        if not self._task.is_alive() and not self._refused:  # dropped (a fork's child): queued again
            self._task = background.submit(self._compile)
        return self._interim.run(scalars, vectors)

    def settled(self) -> WholeProgram | None:
        """The machine code, once compiled (waiting for it; a compile not started yet runs here)."""
        self._task.join()
        return self._code


def first_program(graph: Graph, roots: list[int], spans: Mapping[str, Any], backend: str
                  ) -> WholeProgram | LoopTier | None:
    """The program of ``roots`` (distinct) in one machine-code function where it compiles: its code
    now when it is at hand or the program is large (or the backend ``native``), else a
    :class:`LoopTier`; None where no whole program compiles."""
    if not native.available():
        return None
    try:
        planned = planned_program(graph, roots, spans, runs_tiled(graph, roots))
    except (NotCompiled, SymadError, KeyError):
        return None
    code = None
    if backend == "auto" and all_rows(graph, roots) <= policy.LOOP_TIER_MAX_ROWS:
        code = native.loaded_program(planned)
        if code is None:
            return LoopTier(graph, roots, spans, planned)
    try:  # (compiled here where no code was looked for: compile_program looks in the caches first)
        return WholeProgram(graph, roots, spans, planned=planned, code=code)
    except (NotCompiled, SymadError):
        return None
