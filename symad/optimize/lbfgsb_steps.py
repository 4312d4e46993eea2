"""scipy's L-BFGS-B one iterate at a time: its reverse-communication routine driven directly.

L-BFGS-B (Byrd, Lu, Nocedal and Zhu) is scipy's compiled routine ``setulb``: called in a loop,
it asks for f and g at a point, or says it has taken an iterate, or that it stopped.  Driving it
here, rather than through ``scipy.optimize.minimize``, gives symad's driver the iterates (its
stopping rules, time limit and callback apply as to every method) and skips two costs a solve
pays for nothing:

* ``import scipy.optimize`` (every solver, sparse linear algebra, statistics helpers): the routine's
  extension module is loaded on its own, by file, when scipy.optimize is not imported already;
* BLAS threads: the routine's BLAS work is on vectors of the variables and ``2m × 2m`` matrices,
  too small for threads to help, and OpenBLAS's threads wait for work by spinning, so on a machine
  whose cores are busy a solve took many times longer.  The BLAS libraries run on one thread during
  a solve (threadpoolctl), and get their threads back as it ends.

The same routine, options and points as ``scipy.optimize.minimize(method="L-BFGS-B")`` with its
own tests off: the same iterates.  scipy lays the routine out this way from 1.15 (its C version).
"""

from __future__ import annotations

import importlib.machinery
import importlib.util
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np

from symad.core.errors import SymadError
from symad.optimize.vectors import norm

Step = tuple[np.ndarray, float, np.ndarray, float]  # x, f, gradient, length of the step

MEMORY = 10  # corrections kept (scipy's maxcor)
LINE_STEPS = 20  # most evaluations of one line search (scipy's maxls)
_FG, _NEW_X, _CONVERGENCE = 3, 1, 4  # the routine's task codes (scipy's status_messages)
_ABNORMAL = 8  # the line search ended without a lower point
STALLED = (1, "stalled: f no longer decreases (L-BFGS-B's own test), but the gradient norm is above tol")
_REASONS = {601: "rounding errors prevent progress", 602: "the step reached its largest length",
            603: "the step reached its smallest length", 604: "the line search's x tolerance was met"}
_NEEDS = "method l-bfgs-b runs scipy's L-BFGS-B routine (scipy 1.15 or later): pip install \"symad[scipy]\""
_routine: list[Callable[..., None]] = []


def routine() -> Callable[..., None]:
    """scipy's ``setulb``: from ``scipy.optimize._lbfgsb`` if scipy.optimize is imported already,
    else its extension module loaded alone; a SymadError naming the install when it is absent or
    laid out otherwise."""
    if _routine:
        return _routine[0]
    module = sys.modules.get("scipy.optimize._lbfgsb")
    if module is None and "scipy.optimize" in sys.modules:
        module = importlib.import_module("scipy.optimize._lbfgsb")
    if module is None:
        module = _load_alone()
    setulb = getattr(module, "setulb", None)
    if setulb is None or not _takes_this_layout(setulb):
        raise SymadError(_NEEDS + f" (found scipy laid out otherwise: {getattr(module, '__file__', '?')})")
    _routine.append(setulb)
    return setulb


def _load_alone() -> Any:
    spec = importlib.util.find_spec("scipy")  # the package's place: nothing of it is imported
    if spec is None or not spec.submodule_search_locations:
        raise SymadError(_NEEDS)
    for folder in spec.submodule_search_locations:
        for suffix in importlib.machinery.EXTENSION_SUFFIXES:
            path = Path(folder) / "optimize" / f"_lbfgsb{suffix}"
            if path.is_file():
                loader = importlib.machinery.ExtensionFileLoader("scipy.optimize._lbfgsb", str(path))
                found = importlib.util.spec_from_file_location("scipy.optimize._lbfgsb", path, loader=loader)
                module = importlib.util.module_from_spec(found)  # type: ignore[arg-type]
                loader.exec_module(module)
                # not left in sys.modules without its package: a later `import scipy.optimize` loads
                # it as usual (and sets its attribute on the package)
                if sys.modules.get("scipy.optimize._lbfgsb") is module:
                    del sys.modules["scipy.optimize._lbfgsb"]
                return module
    raise SymadError(_NEEDS)


def _takes_this_layout(setulb: Callable[..., None]) -> bool:
    """One call of the routine on a one-variable problem: True where it asks for f and g at the
    start point, as scipy 1.15-1.17's C routine does (an older Fortran one takes other arguments)."""
    try:
        work = _Work(np.zeros(1), np.full(1, -np.inf), np.full(1, np.inf), 1)
        work.call(setulb, 0.0, np.zeros(1))
    except (TypeError, ValueError):
        return False
    return int(work.task[0]) == _FG


class _Work:
    """The routine's arrays for ``n`` variables and ``m`` corrections (its workspace is in place)."""

    def __init__(self, x: np.ndarray, lower: np.ndarray, upper: np.ndarray, m: int):
        n = x.size
        self.x, self.m = np.array(x, dtype=np.float64), m
        self.lower = np.where(np.isfinite(lower), lower, 0.0).astype(np.float64)
        self.upper = np.where(np.isfinite(upper), upper, 0.0).astype(np.float64)
        # bound kinds: 0 none, 1 lower only, 2 both, 3 upper only
        self.kind = (np.isfinite(lower).astype(np.int32) + 3 * np.isfinite(upper).astype(np.int32))
        self.kind[self.kind == 4] = 2
        self.f, self.g = np.zeros((), dtype=np.float64), np.zeros(n, dtype=np.float64)
        self.wa = np.zeros(2 * m * n + 5 * n + 11 * m * m + 8 * m, dtype=np.float64)
        self.iwa = np.zeros(3 * n, dtype=np.int32)
        self.task, self.line_task = np.zeros(2, dtype=np.int32), np.zeros(2, dtype=np.int32)
        self.lsave, self.isave = np.zeros(4, dtype=np.int32), np.zeros(44, dtype=np.int32)
        self.dsave = np.zeros(29, dtype=np.float64)

    def call(self, setulb: Callable[..., None], f: float, g: np.ndarray) -> None:
        self.f[()] = f
        self.g[:] = g
        # factr = pgtol = 0: the routine's own tests off, symad's driver judges convergence
        setulb(self.m, self.x, self.lower, self.upper, self.kind, self.f, self.g, 0.0, 0.0, self.wa, self.iwa,
               self.task, self.lsave, self.isave, self.dsave, LINE_STEPS, self.line_task)


_blas: dict[str, Any] = {"owner": None, "limits": None}  # the thread holding the limit, and threadpoolctl's limits
_blas_lock = threading.Lock()


@contextmanager
def one_blas_thread() -> Iterator[None]:
    """The loaded BLAS libraries on one thread while in the block.  The limit is the process's, and
    OpenBLAS raises a count again only from the thread that lowered it: so the first solve to enter
    sets it and gives the threads back as it leaves, on its own thread; a solve entering meanwhile
    runs under that limit (and, outliving it, with the threads back).  Nothing where threadpoolctl
    is not installed."""
    mine = False
    with _blas_lock:
        if _blas["owner"] is None:
            try:
                from threadpoolctl import threadpool_limits
            except ImportError:
                pass
            else:
                _blas["limits"] = threadpool_limits(limits=1, user_api="blas")
                _blas["owner"], mine = threading.get_ident(), True
    try:
        yield
    finally:
        if mine:
            with _blas_lock:
                _blas["limits"].restore_original_limits()
                _blas["owner"] = _blas["limits"] = None


def lbfgsb_steps(fg: Callable[[np.ndarray], tuple[float, np.ndarray]], x: np.ndarray, f: float, g: np.ndarray,
                 lower: np.ndarray, upper: np.ndarray, memory: int = MEMORY) -> Iterator[Step]:
    """L-BFGS-B's iterates from ``x`` (inside the box ``lower``, ``upper``; ``f``, ``g`` its value
    and gradient), keeping ``memory`` corrections: yields ``(x, f, g, step length)`` at each
    iterate; returns (ends) with :data:`STALLED` (a status and its message) where an iterate no
    longer lowers f, or with a message where its line search fails."""
    setulb = routine()
    work = _Work(x, lower, upper, int(memory))
    last, first = work.x.copy(), True
    with one_blas_thread():
        work.call(setulb, f, g)
        while True:
            task = int(work.task[0])
            if task == _FG:
                if not (first and np.array_equal(work.x, last)):  # the first request is for the start
                    f, g = fg(work.x.copy())
                first = False
                work.call(setulb, f, g)
            elif task == _NEW_X:
                here = work.x.copy()
                step, last = norm(here - last), here
                yield here, float(work.f), work.g.copy(), step
                work.call(setulb, float(work.f), work.g)
            elif task == _CONVERGENCE:  # with its tests off: this iterate did not lower f at all
                here = work.x.copy()
                if not np.array_equal(here, last):
                    yield here, float(work.f), work.g.copy(), norm(here - last)
                return STALLED
            elif task == _ABNORMAL:
                return (f"line search failed (L-BFGS-B: no lower point in {LINE_STEPS} evaluations along "
                        "its direction, or a value that is not finite there)")
            else:
                why = _REASONS.get(int(work.task[1]), f"its task codes {task}, {int(work.task[1])}")
                return f"line search failed (L-BFGS-B: {why})"
