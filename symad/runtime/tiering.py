"""Tiered execution: interpret the first calls, then run instructions, then compiled code.

A :class:`TieredProgram` is one set of outputs of a function (its value, or its
value and gradient).  With backend ``auto``:

1. the first call builds the program's :class:`~symad.schedule.schedule.Schedule`; a large
   one (:func:`~symad.runtime.policy.stitched`) gets its compiled program at once, whose first
   native code is stitched from stencils in about the time instructions take to build; else it
   flattens it into instructions for the shared interpreter
   (:class:`~symad.backends.vm.VMProgram`: about a microsecond a step to build,
   nanoseconds a step to run), which serves the calls from then on; with
   ``background=False`` (one-shot callers) the first call is interpreted by a
   :class:`~symad.backends.tape.Tape` instead (no gradient expression, no code built),
   and the instructions serve from the second;
2. once those calls have cost about what compiling would (ski rental: compiling
   pays only for a loop that goes on), a task of the background pool
   (:func:`symad.runtime.background.submit`) compiles a
   :class:`~symad.runtime.program.Program`, which replaces the instructions when ready;
   the task holds the program weakly, so a function dropped before its turn costs nothing.

Programs under ``NATIVE_MIN_OPS`` operations skip the interpreter where this process has not
loaded it yet (:func:`~symad.runtime.policy.native_points`): their Python code is compiled at
the second call (a fraction of a millisecond; a background thread would wait for the GIL while
the caller's loop runs).  Other backends
compile on first use.  A batch of ``NATIVE_BATCH_POINTS`` or more waits for the
compiled program: its fused loop repays the compile at once.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from symad import native
from symad.backends.tape import Tape
from symad.backends.vm import VMProgram
from symad.core import forksafe
from symad.core.dag import Graph
from symad.runtime import background, policy
from symad.runtime.program import Program
from symad.schedule.schedule import Schedule

COMPILE_AFTER_CALLS = 1  # calls a one-shot Function (background=False) runs on the tape
# Ski rental: a program is compiled once the interpreter's calls have cost what its first
# native compile is expected to (policy.compile_seconds; the interpreter ~0.6 µs a call
# plus ~5 ns an instruction).
VM_CALL_S, VM_S_PER_OP = 0.6e-6, 5e-9


class TieredProgram:
    """Outputs of ``graph`` at points, interpreted until compiled.

    ``outputs()`` gives the output nodes (built once, for the schedule the instructions
    and compiled code share); ``tape()`` the shared interpreter, whose sweep gives the
    value and, if ``with_grad``, the partials (None for outputs a tape does not give, such
    as several values: then small programs are compiled at once, as Python code);
    ``compiled_hook`` runs once the program is ready.  ``background=False`` (one-shot
    callers such as the command line): the tape, then instructions, and nothing compiled
    in the background.
    """

    def __init__(self, graph: Graph, outputs: Callable[[], list[int]], inputs: Sequence[int], backend: str, *,
                 tape: Callable[[], Tape] | None, with_grad: bool, background: bool = True,
                 compiled_hook: Callable[[], None] | None = None, n_grads: int | None = None):
        self.graph, self.inputs, self.backend = graph, list(inputs), backend
        self.output_nodes, self.tape, self.with_grad = outputs, tape, with_grad
        # the tape's partials kept: those of the first n_grads inputs (the others are parameters)
        self.n_grads = len(self.inputs) if n_grads is None else n_grads
        self.background, self.compiled_hook = background, compiled_hook
        self.program: Program | None = None
        self.vm: VMProgram | None = None
        self._small_vm: bool | None = None
        self.schedule: Schedule | None = None
        self.floats: Any = None  # the program's Python code on floats, when points run in Python
        self.vm_calls, self.vm_calls_before_compile = 0, 0
        self.calls = 0
        self.thread: background.Task | None = None  # the compile, queued, running or done
        self.error: Exception | None = None
        self._lock = threading.Lock()
        forksafe.register(self)

    def compiled(self) -> Program:
        """The compiled program, built now (or awaited) if need be."""
        while self.program is None:
            # A caller waits for it: compiled here, in-process (no worker to start), unless a
            # background compile is already under way (a queued one runs here).
            self.start(abandonable=False).join()
            if self.error is not None:
                raise self.error
        return self.program

    def prepare(self) -> Program:
        """The compiled program, with its optimised native code and its batches' code ready."""
        program = self.compiled()
        program.wait_native()
        program.prepare_batches()
        return program

    def start(self, abandonable: bool = True) -> background.Task:
        """Start compiling (once); the compile's task.  An ``abandonable`` compile (nobody waits
        for it) is queued for the background pool, runs its LLVM part in the worker process
        and is dropped at exit; else the task runs when joined."""
        with self._lock:
            task = self.thread
            if task is None or (self.program is None and self.error is None and not task.is_alive()):
                # None yet, or one that ended without a result: dropped at exit, or run by the
                # parent of this forked process (its program never arrives here).
                task = self.thread = background.submit(self._build) if abandonable else background.task(self._build)
            return task

    def _schedule(self) -> Schedule:
        if self.schedule is None:
            self.schedule = Schedule.build(self.graph, self.output_nodes(), self.inputs)
        return self.schedule

    def _build(self) -> None:
        if self.program is not None:
            return
        try:
            program = Program.from_schedule(self._schedule(), self.backend, background=self.background)
            if not program.prefer_native_points:
                self.floats = program.run_float
            self.program = program
            if self.compiled_hook is not None:
                self.compiled_hook()
        except background.Abandoned:  # the process is exiting; compiled() would build it again
            pass
        except Exception as err:  # noqa: BLE001 - the tape keeps serving; compiled() raises it
            self.error = err

    def outputs(self, x: np.ndarray, batch: bool) -> np.ndarray:
        """The outputs at one point (a vector) or at a batch of points (rows)."""
        program = self.program
        if program is None:
            if self.backend != "auto" or (batch and len(x) >= policy.NATIVE_BATCH_POINTS):
                program = self.compiled()
            elif self.vm is not None:
                self.count_vm_call()
                return self.vm.batch(x) if batch else self.vm.point(x)
            else:
                return self._interpret(x, batch)
        return program.batch(x) if batch else program.point(x)

    def vm_call(self) -> Any:
        """The instructions' ``call(x, rest) -> output 0`` (this call counted), or None."""
        vm = self.vm
        if vm is None:
            return None
        self.count_vm_call()
        return vm.call

    def count_vm_call(self) -> None:
        """One more call served by the instructions: compile in the background once they
        have cost about what the compile will."""
        self.vm_calls += 1
        if self.vm_calls == self.vm_calls_before_compile and self.background:
            self.start()

    def _interpret(self, x: np.ndarray, batch: bool) -> np.ndarray:
        self.calls += 1
        # A function kept for a loop (background compiles allowed) runs on instructions from its
        # first call; a one-shot caller's (background=False) first call runs on the tape, which
        # builds no gradient expression.
        if (self.background or self.calls > COMPILE_AFTER_CALLS or self.tape is None) and self._start_vm():
            return self.outputs(x, batch)
        if self.tape is None:
            return self.compiled().outputs(x, batch)
        if self.background and self.calls > COMPILE_AFTER_CALLS:
            if self._small_vm is False and native.interpreter_ready():
                self._small_vm = None  # loaded since (for another program): the instructions serve next
            elif self._small_vm is False:
                with self._lock:  # a small program's Python code: a fraction of a millisecond, now
                    self._build()
            else:
                self.start()
        tape = self.tape()
        if not batch:
            value, grads = tape.sweep(x.tolist(), self.with_grad)
            return np.array([value, *grads[:self.n_grads]], dtype=float)
        value, grads = tape.sweep(list(x.T), self.with_grad)
        grads = grads[:self.n_grads]
        out = np.empty((len(x), 1 + len(grads)))
        for k, column in enumerate([value, *grads]):
            out[:, k] = column
        return out

    def _small_on_instructions(self) -> bool:
        """Whether a small program runs on the instructions: where this process has loaded the
        interpreter already (asked once a program)."""
        if self._small_vm is None:
            self._small_vm = native.interpreter_ready()
        return self._small_vm

    def _start_vm(self) -> bool:
        """Build the instructions (for programs large enough that Python code is slower) and
        serve calls with them; whether they were built."""
        if self.vm is not None:
            return True
        if not native.available():
            return False
        try:
            schedule = self._schedule()
            if not policy.machine_code_points(schedule.size, self._small_on_instructions):
                return False
            if self.backend == "auto" and policy.stitched(schedule.size):
                # Stitched machine code costs about what the instructions do to build: it serves
                # from the first call (the program compiles -O2 code in the background when it pays).
                self.compiled()
                return True
            vm = VMProgram(schedule)
        except Exception:  # noqa: BLE001 - the tape keeps serving; a compile reports the error
            return False
        size = schedule.size
        self.vm_calls_before_compile = max(1, round(policy.compile_seconds(size, policy.first_native_opt(size))
                                                    / (VM_CALL_S + VM_S_PER_OP * size)))
        self.vm = vm
        return True
