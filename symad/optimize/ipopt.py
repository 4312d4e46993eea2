"""Constrained minimisation by IPOPT (through cyipopt), given symad's exact sparse derivatives.

IPOPT, an interior-point method, takes the objective's value and gradient, the constraints'
values and their Jacobian, and the Hessian of the Lagrangian ``σ∇²f + Σ λ_i ∇²c_i``, both
matrices as a pattern fixed once and values aligned with it at each point
(:mod:`symad.optimize.sparse`): its cost grows with the nonzeros, not with ``n²``.  A constraint
``("eq", c)`` is ``0 ≤ c ≤ 0`` for IPOPT and ``("ineq", c)`` is ``0 ≤ c``; bounds are its
variable bounds.  Its Lagrangian is ``f + Σ μ_i c_i``, so symad's multipliers (with
``∇f = Σ λ_i ∇c_i``) are ``λ = -μ``.
"""

from __future__ import annotations

import importlib
import importlib.machinery
import importlib.util
import math
import os
import sys
import tempfile
import threading
import time
import types
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any

import numpy as np

from symad.core.errors import PointError, SymadError
from symad.optimize.nlp import FEASIBLE, NLP, build, jacobian_t, violation
from symad.optimize.result import OptimizeResult

# IPOPT's return statuses (its ApplicationReturnStatus), by number.
STATUS = {
    0: "Solve_Succeeded", 1: "Solved_To_Acceptable_Level", 2: "Infeasible_Problem_Detected",
    3: "Search_Direction_Becomes_Too_Small", 4: "Diverging_Iterates", 5: "User_Requested_Stop",
    6: "Feasible_Point_Found", -1: "Maximum_Iterations_Exceeded", -2: "Restoration_Failed",
    -3: "Error_In_Step_Computation", -4: "Maximum_CpuTime_Exceeded", -5: "Maximum_WallTime_Exceeded",
    -10: "Not_Enough_Degrees_Of_Freedom", -11: "Invalid_Problem_Definition", -12: "Invalid_Option",
    -13: "Invalid_Number_Detected", -100: "Unrecoverable_Exception", -101: "NonIpopt_Exception_Thrown",
    -102: "Insufficient_Memory", -199: "Internal_Error",
}
SOLVED = (0, 1)
# What a status means, said before IPOPT's own message.
SAYS = {0: "optimality conditions met to tol",
        1: "optimality conditions met to IPOPT's acceptable tolerances only (not to tol)",
        2: "infeasible: IPOPT found no point meeting the constraints and bounds",
        4: "diverged: the iterates grew without bound (unbounded below?)",
        -1: "maximum number of iterations reached",
        -13: "non-finite: a value or derivative is not finite (overflow, or outside the domain)"}
INSTALL = 'method="ipopt" needs cyipopt, which is not installed: pip install "symad[ipopt]" (on Debian it ' \
          "builds against apt-get install coinor-libipopt-dev liblapack-dev libblas-dev pkg-config)"


def cyipopt_module() -> Any:
    """A module with cyipopt's ``Problem``, or a SymadError naming the install command.

    Only cyipopt's compiled wrapper is loaded: its package's ``__init__`` also imports its
    scipy-style interface, and with it ``scipy.optimize`` (most of the import's time), which
    ``method="ipopt"`` never uses.  The package stands in ``sys.modules`` meanwhile as a
    :class:`_DeferredPackage`, which runs that ``__init__`` the first time anyone asks it for a
    name it does not have (``import cyipopt; cyipopt.minimize_ipopt``), so nothing changes for
    code that imports cyipopt itself."""
    if "cyipopt" in sys.modules and sys.modules["cyipopt"] is None:  # an import of it is blocked
        raise SymadError(INSTALL)
    try:
        return _wrapper()
    except ImportError:
        raise SymadError(INSTALL) from None


# Where cyipopt's compiled wrapper is: in its package (cyipopt built from source), or a module of
# its own (the cyipopt-wheels layout, where cyipopt/ipopt_wrapper.py is a Python shim importing the
# scipy interface, and a top-level ipopt_wrapper.py is cyipopt's deprecated shim in the other).
WRAPPERS = ("cyipopt.ipopt_wrapper", "ipopt_wrapper")


def _compiled(spec: Any) -> bool:
    return isinstance(getattr(spec, "loader", None), importlib.machinery.ExtensionFileLoader)


def _wrapper() -> Any:
    for name in WRAPPERS:
        loaded = sys.modules.get(name)
        if _compiled(getattr(loaded, "__spec__", None)) and hasattr(loaded, "Problem"):
            return loaded
    if "cyipopt" not in sys.modules:
        spec = importlib.util.find_spec("cyipopt")
        if spec is None:
            raise ImportError("cyipopt")
        if spec.submodule_search_locations is not None and spec.loader is not None:
            sys.modules["cyipopt"] = _DeferredPackage(spec)
    for name in WRAPPERS:
        try:
            if _compiled(importlib.util.find_spec(name)):
                wrapper = importlib.import_module(name)
                if hasattr(wrapper, "Problem"):
                    return wrapper
        except (ImportError, ValueError):  # (ValueError: a module in sys.modules without a spec)
            pass
    # another layout of the package: the whole of it, as it asks to be imported
    package = sys.modules.get("cyipopt")
    if isinstance(package, _DeferredPackage):
        del sys.modules["cyipopt"]
        sys.modules.pop("cyipopt.ipopt_wrapper", None)
    return importlib.import_module("cyipopt")


class _DeferredPackage(types.ModuleType):
    """A package whose ``__init__`` runs at the first look-up of a name it does not have; its
    submodules import as usual meanwhile (its ``__path__`` and ``__spec__`` are the real ones)."""

    _lock = threading.Lock()

    def __init__(self, spec: Any):
        super().__init__(spec.name)
        self.__spec__, self.__loader__ = spec, spec.loader
        self.__path__ = list(spec.submodule_search_locations)
        self.__file__, self.__package__ = spec.origin, spec.name

    def __getattr__(self, name: str) -> Any:
        with _DeferredPackage._lock:
            if type(self) is _DeferredPackage:  # (not yet run by another thread meanwhile)
                self.__class__ = types.ModuleType  # a plain module from here on, also while __init__ runs
                self.__spec__.loader.exec_module(self)
        try:
            return self.__dict__[name]
        except KeyError:
            raise AttributeError(f"module {self.__name__!r} has no attribute {name!r}") from None


class _Callbacks:
    """The problem in cyipopt's calling conventions (``objective``, ``gradient``, ``constraints``,
    ``jacobian``, ``hessian`` and their structures, ``intermediate``); ``evaluation_time`` adds
    up the seconds spent in them (IPOPT's own work is the rest of its solve)."""

    def __init__(self, nlp: NLP, intermediate: Callable[..., bool]):
        self.nlp, self.intermediate = nlp, intermediate
        self._fg_at: tuple[bytes, float, np.ndarray] | None = None
        self.last_x: np.ndarray | None = None
        self.evaluation_time = 0.0

    def _timed(self, call: Callable[..., Any], *args: Any) -> Any:
        t = time.perf_counter()
        try:
            return call(*args)
        finally:
            self.evaluation_time += time.perf_counter() - t

    def fg(self, x: np.ndarray) -> tuple[float, np.ndarray]:
        """Value and gradient from one call, kept for the point (IPOPT asks for each in turn)."""
        key = x.tobytes()
        if self._fg_at is None or self._fg_at[0] != key:
            f, g = self.nlp.fg(x)
            self._fg_at = (key, float(f), g)
            self.last_x = x.copy()
        return self._fg_at[1], self._fg_at[2]

    def objective(self, x: np.ndarray) -> float:
        return self._timed(self.fg, x)[0]

    def gradient(self, x: np.ndarray) -> np.ndarray:
        return self._timed(self.fg, x)[1]

    def constraints(self, x: np.ndarray) -> np.ndarray:
        return self._timed(self.nlp.values, x)

    def jacobianstructure(self) -> tuple[np.ndarray, np.ndarray]:
        return self.nlp.jacobian

    def jacobian(self, x: np.ndarray) -> np.ndarray:
        return self._timed(self.nlp.jacobian_values, x)

    def hessianstructure(self) -> tuple[np.ndarray, np.ndarray]:
        return self.nlp.union.rows, self.nlp.union.cols

    def hessian(self, x: np.ndarray, mu: np.ndarray, sigma: float) -> np.ndarray:
        # IPOPT's multipliers μ: its Lagrangian f + Σ μ_i c_i
        return self._timed(self.nlp.hessian_values, x, sigma, mu)


@contextmanager
def _captured_stdout() -> Iterator[list[str]]:
    """What IPOPT prints on the process's stdout (file descriptor 1) meanwhile, into a list."""
    out: list[str] = []
    sys.stdout.flush()  # what Python has yet to write goes where it was going, not into the capture
    with tempfile.TemporaryFile(mode="w+b") as sink:
        saved = os.dup(1)
        try:
            os.dup2(sink.fileno(), 1)
            yield out
        finally:
            os.dup2(saved, 1)
            os.close(saved)
            sink.seek(0)
            out.append(sink.read().decode(errors="replace"))


# symad's one change to IPOPT's defaults: MUMPS's permuting scaling off (ICNTL(6) = 0).  With the
# MUMPS Debian builds IPOPT with (5.5) it takes most of each iteration: benchmarks/optimal_control
# measured Van der Pol at N = 2,000 solving in 0.10 s instead of 0.25 s, with the same iterates
# there and on every Hock-Schittkowski problem of the tests; the MUMPS cyipopt's wheel bundles
# (5.5.1) is neither helped nor hurt (it then orders by QAMD).  A user's options win; an IPOPT
# built without MUMPS has no such option (left out).
MUMPS_DEFAULTS = {"mumps_permuting_scaling": 0}


def _set_options(nlp: Any, options: Mapping[str, Any]) -> None:
    """IPOPT's options, each checked as it is set: an unknown name or a value of the wrong type
    is a SymadError with IPOPT's reason (which IPOPT prints on stdout: captured)."""
    for name, value in options.items():
        if isinstance(value, bool) or not isinstance(value, (int, float, str)):
            raise SymadError(f"IPOPT option {name}: its value is a number or a string, not {value!r:.40}")
        if isinstance(value, float) and not math.isfinite(value):
            raise SymadError(f"IPOPT option {name}: its value must be finite, not {value}")
        with _captured_stdout() as said:
            try:
                nlp.add_option(str(name), value)
                ok = True
            except TypeError:
                ok = False
        if not ok:
            reason = next((ln.strip() for ln in said[0].splitlines() if ln.strip()), "")
            reason = reason.replace(f"Tried to set Option: {name}. ", "")
            raise SymadError(f"IPOPT option {name}={value!r}: {reason or 'refused by IPOPT'}")


def _set_quietly(nlp: Any, options: Mapping[str, Any]) -> None:
    """symad's own defaults: each set where this IPOPT has the option, else left out."""
    for name, value in options.items():
        with _captured_stdout():
            try:
                nlp.add_option(name, value)
            except TypeError:
                pass


def minimize_ipopt(fun: Any, x0: Any, constraints: Any, *, variables: Sequence[str] | None,
                   fixed: Mapping[str, float] | None, bounds: Any, tol: float, max_iter: int,
                   max_time: float | None, callback: Callable[[Any], Any] | None, background: bool,
                   params: Mapping[str, float] | None, options: Mapping[str, Any] | None) -> dict[str, Any]:
    """The fields of symad's ``OptimizeResult`` for a run of IPOPT (see ``minimize``)."""
    cyipopt = cyipopt_module()
    if options is not None and not isinstance(options, Mapping):
        raise SymadError(f"options is a dict of IPOPT's options by name, not {options!r:.60}")
    t0 = time.perf_counter()
    nlp = build(fun, constraints, variables, fixed, bounds, background, params)
    x = nlp.start(x0)
    if not np.isfinite(x).all():
        bad = [nlp.names[i] for i in np.flatnonzero(~np.isfinite(x))[:3]]
        raise PointError(f"the start point is not finite: {', '.join(bad)}")
    stopped: list[str] = []
    t1, iterations = math.inf, [0]

    def intermediate(alg_mod: int, nit: int, f: float, inf_pr: float, inf_du: float, mu: float, *rest: Any) -> bool:
        iterations[0] = nit
        if max_time is not None and time.perf_counter() - t1 >= max_time:
            stopped.append("time limit reached")
            return False
        if callback is not None:
            try:
                stop = callback(OptimizeResult(x=calls.last_x, fun=f, nit=nit, grad_norm=inf_du,
                                               constr_violation=inf_pr, barrier_parameter=mu))
            except StopIteration:
                stop = True
            if stop is True:
                stopped.append("stopped by the callback")
                return False
        return True

    calls = _Callbacks(nlp, intermediate)
    m = nlp.m
    with np.errstate(all="ignore"):  # compile, and look at the start, before the clock starts
        f0, g0 = calls.fg(x)
        c0 = nlp.values(x)
        nlp.jacobian_values(x)
        if (options or {}).get("hessian_approximation") != "limited-memory":  # (else IPOPT never asks)
            nlp.hessian_values(x, 1.0, np.ones(nlp.m))
        first = [name for name, v in (("f", np.asarray(f0)), ("its gradient", g0), ("a constraint", c0))
                 if not np.isfinite(v).all()]
    setup = time.perf_counter() - t0
    upper = np.where(nlp.eq, 0.0, math.inf)
    problem = cyipopt.Problem(n=len(x), m=m, problem_obj=calls, lb=nlp.lower, ub=nlp.upper, cl=np.zeros(m),
                              cu=upper)
    _set_options(problem, {"print_level": 0, "sb": "yes", "tol": tol, "max_iter": max_iter, **(options or {})})
    if (options or {}).get("linear_solver", "mumps") == "mumps":
        _set_quietly(problem, {k: v for k, v in MUMPS_DEFAULTS.items() if k not in (options or {})})
    calls.evaluation_time = 0.0
    t1 = time.perf_counter()
    if first:
        status, x_out = -13, x
        info: dict[str, Any] = {"status_msg": b"", "mult_g": np.full(m, math.nan), "mult_x_L": np.zeros(len(x)),
                                "mult_x_U": np.zeros(len(x))}
        said = f"non-finite at the start point: {' and '.join(first)} (change x0)"
    else:
        with np.errstate(all="ignore"):
            x_out, info = problem.solve(x)
        status, said = int(info["status"]), ""
    x = np.asarray(x_out, dtype=float)
    with np.errstate(all="ignore"):
        f, g = nlp.fg(x)
        values = nlp.values(x)
    worst = violation(nlp, x, values)
    name = STATUS.get(status, f"status {status}")
    ipopt_says = info["status_msg"].decode(errors="replace") if isinstance(info["status_msg"], bytes) else str(
        info["status_msg"])
    if stopped:
        message = stopped[0]
    else:
        message = f"{said or SAYS.get(status, '') or ipopt_says} (IPOPT: {name})"
    success = status in SOLVED and not stopped and worst <= FEASIBLE
    if status in SOLVED and worst > FEASIBLE:
        message += f" (but a constraint is violated by {worst:.3g})"
    out = {
        "x": x, "fun": float(f), "jac": g, "nit": iterations[0],
        "nfev": nlp.nfev, "njev": nlp.njev, "nhev": nlp.nhev,
        "success": bool(success), "status": status, "message": message,
        "ipopt_status": name, "ipopt_message": ipopt_says,
        "variables": list(nlp.names), "point": nlp.point(x), "method": "ipopt", "hessian": "sparse",
        "constraints": {"kinds": list(nlp.kinds), "values": values, "violation": worst},
        "bound_multipliers": (np.asarray(info["mult_x_L"], dtype=float), np.asarray(info["mult_x_U"], dtype=float)),
        "time": time.perf_counter() - t1, "setup_time": setup, "evaluation_time": calls.evaluation_time,
    }
    if m:
        multipliers = -np.asarray(info["mult_g"], dtype=float)
        out["multipliers"] = multipliers
        with np.errstate(all="ignore"):
            g = g - jacobian_t(nlp, x, multipliers)
    out["grad_norm"] = float(np.linalg.norm(nlp.pgrad(x, g)))
    return out
