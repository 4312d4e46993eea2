"""symad's L-BFGS: the iteration in machine code, the objective's evaluations in between.

L-BFGS-B without bounds is L-BFGS with Moré and Thuente's line search
(:mod:`symad.native.lbfgs_ir` has the iteration and why); here it runs between the
evaluations, which are the objective's compiled code called from a short loop.  Nothing else
runs per evaluation: no Python work on the vectors, no call of scipy's routine with its
seventeen arguments, no driver step.  The driver sees an iterate only where one of its stopping
rules may hold, where its callback, path or time limit asks for each one, or at ``max_iter``;
the iterates are the same either way.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from typing import NamedTuple

import numpy as np

from symad import native
from symad.core.errors import SymadError
from symad.optimize.lbfgsb_steps import MEMORY, STALLED
from symad.optimize.problem import Problem

_MARGIN = 1e-6  # the machine code's stopping tests are looser than the driver's by this (rounding)
UNBOUNDED_F, EXPLODED_X = 1e300, 1e150  # the driver's
RECHECK_CALLS = 1024  # evaluations between two looks at which code serves the objective


class Stops(NamedTuple):
    """What the driver stops at: ``tol`` on the gradient's 2-norm, ``xtol`` on a step's length
    (relative to ``1 + |x|``), and after ``limit`` iterates; ``each``: yield every iterate (for a
    callback, a path or a time limit)."""

    tol: float
    xtol: float
    limit: int
    each: bool


def lbfgs_steps(p: Problem, x: np.ndarray, f: float, g: np.ndarray, stops: Stops,
                memory: int = MEMORY) -> Iterator[tuple[np.ndarray, float, np.ndarray, float, int]]:
    """L-BFGS's iterates from ``x`` (``f``, ``g`` its value and gradient), ``memory`` corrections
    kept: yields ``(x, f, g, step length, iterates since the last yield)`` where the driver
    should look (see :class:`Stops`); returns (ends) with a status and its message where f stalls,
    or with a message where a line search fails."""
    if p.bounded:
        raise SymadError("method l-bfgs takes no bounds: use method='l-bfgs-b' (scipy's routine, whose "
                         "Cauchy point and subspace minimisation keep to them)")
    w = native.lbfgs_record(x.size, int(memory), F=f, TOL2=(stops.tol * (1 + _MARGIN)) ** 2,
                            XTOL_STOP=stops.xtol * (1 + _MARGIN), UNBOUNDED=-UNBOUNDED_F,
                            BIG_X2=(EXPLODED_X * (1 - _MARGIN)) ** 2)
    step = native.lbfgs_step(w)
    if step is None:
        raise SymadError("method l-bfgs runs machine code: it needs llvmlite (pip install llvmlite), and NumPy's "
                         "and CPython's layouts as symad reads them; method='l-bfgs-b' runs scipy's routine")
    xs, gs = np.array(x, dtype=np.float64), np.array(g, dtype=np.float64)
    fg, each, limit = p.fg_into, stops.each, stops.limit
    task_fg, new_x, check = native.LbfgsTask.FG, native.LbfgsTask.NEW_X, native.LbfgsTask.NEW_X_CHECK
    at_f, at_ss = native.LBFGS_SLOT["F"], native.LBFGS_SLOT["SS"]
    taken = total = calls = 0
    call = p.point_call()  # the compiled code itself where the objective has it (counted here)
    while True:
        task = step(xs, gs)
        if task == task_fg:
            if call is not None:
                w[at_f] = call(xs, gs)
                calls += 1
                if not calls % RECHECK_CALLS:  # optimised code may have replaced the quick code since
                    call = p.point_call()
            else:
                w[at_f] = fg(xs, gs)
        elif task == new_x or task == check:
            taken += 1
            total += 1
            if each or task == check or total >= limit:
                p.nfev, p.njev, calls = p.nfev + calls, p.njev + calls, 0
                yield xs.copy(), float(w[at_f]), gs.copy(), math.sqrt(w[at_ss]), taken
                taken, call = 0, p.point_call()  # (a faster tier may serve by now)
        else:
            p.nfev, p.njev = p.nfev + calls, p.njev + calls
            if taken:  # the iterates since the last yield: the last one is the run's
                yield xs.copy(), float(w[at_f]), gs.copy(), math.sqrt(w[at_ss]), taken
            return _end(int(task))


def _end(task: int) -> tuple[int, str] | str:
    """How a run ends other than by the driver's rules: a status and its message, or a message
    (status 6, a failed line search)."""
    if task == native.LbfgsTask.STALLED:
        return STALLED
    if task == native.LbfgsTask.FAILED:
        return (f"line search failed (L-BFGS: no acceptable point in {native.LBFGS_LINE_STEPS} evaluations along "
                "its direction, or a value that is not finite there)")
    return "line search failed (L-BFGS: -g is no descent direction: the gradient is 0 or not finite)"
