"""Tiered execution: interpret the first calls, compile in the background, then run compiled code.

A :class:`TieredProgram` is one set of outputs of a function (its value, or its
value and gradient).  With backend ``auto`` the first call is interpreted by a
:class:`~symad.backends.tape.Tape` (no code to build); a later call starts
compiling a :class:`~symad.backends.program.Program` in a background thread,
and calls are interpreted until it is ready.  Other backends compile on first
use.  A batch of ``NATIVE_BATCH_POINTS`` or more waits for the compiled
program: its fused loop repays the compile at once.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from symad.backends import background
from symad.backends.program import NATIVE_BATCH_POINTS, Program
from symad.backends.tape import Tape
from symad.core import forksafe
from symad.core.graph import Graph

COMPILE_AFTER_CALLS = 1  # `auto` compiles a program once it has been interpreted this many times


class TieredProgram:
    """Outputs of ``graph`` at points, interpreted until compiled.

    ``outputs()`` gives the output nodes (called in the compile thread, so a gradient
    is built there, not on the caller's first call); ``tape()`` the shared interpreter,
    whose sweep gives the value and, if ``with_grad``, the partials; ``compiled_hook``
    runs once the program is ready.  ``background=False`` (one-shot callers such as the
    command line) interprets every ``auto`` call rather than compile for later ones.
    """

    def __init__(self, graph: Graph, outputs: Callable[[], list[int]], inputs: Sequence[int], backend: str, *,
                 tape: Callable[[], Tape], with_grad: bool, background: bool = True,
                 compiled_hook: Callable[[], None] | None = None):
        self.graph, self.inputs, self.backend = graph, list(inputs), backend
        self.output_nodes, self.tape, self.with_grad = outputs, tape, with_grad
        self.background, self.compiled_hook = background, compiled_hook
        self.program: Program | None = None
        self.floats: Any = None  # the program's Python code on floats, when points run in Python
        self.calls = 0
        self.thread: threading.Thread | None = None
        self.error: Exception | None = None
        self._lock = threading.Lock()
        forksafe.register(self)

    def compiled(self) -> Program:
        """The compiled program, built now (or awaited) if need be."""
        while self.program is None:
            thread = self.start()
            thread.join()
            if self.error is not None:
                raise self.error
        return self.program

    def start(self) -> threading.Thread:
        """Start compiling in the background (once); the compile thread."""
        with self._lock:
            thread = self.thread
            if thread is None or (self.program is None and self.error is None and not thread.is_alive()):
                # None yet, or one that ended without a result: a thread of the parent
                # process, in a child forked while it ran (its program never arrives here).
                thread = self.thread = background.start(self._build)
            return thread

    def _build(self) -> None:
        if self.program is not None:
            return
        try:
            program = Program(self.graph, self.output_nodes(), self.inputs, self.backend,
                              background=self.background)
            if not program.prefer_native_points:
                self.floats = program.run_float
            self.program = program
            if self.compiled_hook is not None:
                self.compiled_hook()
        except Exception as err:  # noqa: BLE001 - the tape keeps serving; compiled() raises it
            self.error = err

    def outputs(self, x: np.ndarray, batch: bool) -> np.ndarray:
        """The outputs at one point (a vector) or at a batch of points (rows)."""
        program = self.program
        if program is None:
            if self.backend != "auto" or (batch and len(x) >= NATIVE_BATCH_POINTS):
                program = self.compiled()
            else:
                return self._interpret(x, batch)
        return program.batch(x) if batch else program.point(x)

    def _interpret(self, x: np.ndarray, batch: bool) -> np.ndarray:
        self.calls += 1
        if self.calls > COMPILE_AFTER_CALLS and self.background:
            self.start()
        tape = self.tape()
        if not batch:
            value, grads = tape.sweep(x.tolist(), self.with_grad)
            return np.array([value, *grads], dtype=float)
        value, grads = tape.sweep(list(x.T), self.with_grad)
        out = np.empty((len(x), 1 + len(grads)))
        for k, column in enumerate([value, *grads]):
            out[:, k] = column
        return out
