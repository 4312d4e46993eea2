"""One first-call measurement in a fresh process (issue #15), run by :mod:`benchmarks.first_call.suite`.

Tasks (``--task``):

* ``solve``: text → ``scipy.optimize.minimize(method="L-BFGS-B", jac=True)`` converged, timed
  from this script's first line (nothing but the standard library loaded): the imports a user's
  script would make (NumPy, SciPy's ``minimize``, the peer), the build, the solve.  The last line
  carries the wall-clock moment it was printed, so the driver can time the process's exit.
* ``calls``: the build and the first 1,000 ``value_and_grad`` calls at distinct points.
* ``pernode``: time per call over the number of nodes or instructions: symad's tape (call 1),
  its instructions (call 2 on), its compiled code; CasADi's SX virtual machine.
* ``tiny``: per-point value and gradient of a small expression after warm-up, in each peer's
  fastest call form and in the shared NumPy form.

Like the peers suite's worker it prints one JSON object per line as each phase ends.  Only the
standard library is imported at the top: ``solve`` times every other import.
"""

from __future__ import annotations

import time

T_START = time.perf_counter()

import argparse  # noqa: E402
import json  # noqa: E402
import statistics  # noqa: E402
import sys  # noqa: E402
import traceback  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
SOLVE_OPTIONS = {"gtol": 1e-8, "maxiter": 100_000, "maxfun": 1_000_000}  # every peer's, ftol SciPy's default
CHECKPOINTS = (1, 2, 10, 100, 1000)  # calls after which ``calls`` records the time so far
REQUIRES = {"jax": ("jax", "jaxlib")}  # what a peer's user imports, where it is not the peer's name


# Each task's phases, in order: a worker that stops (an error, the driver's time limit) stopped
# in the phase after the last one it reported.
PHASES = {"solve": ("import", "build", "solve"), "calls": ("import", "calls"),
          "pernode": ("import", "pernode"), "tiny": ("import", "tiny")}
_reported: list[str] = []


def emit(**fields: Any) -> None:
    if "phase" in fields and "error" not in fields:
        _reported.append(fields["phase"])
    print(json.dumps(fields), flush=True)


def phase_after(task: str, reported: list[str]) -> str:
    """The phase a worker of ``task`` was in, having reported ``reported``."""
    order = PHASES[task]
    done = [p for p in reported if p in order]
    return order[min(order.index(done[-1]) + 1, len(order) - 1)] if done else order[0]


OWN_METHODS = {"minimize": "l-bfgs", "minimize-lbfgsb": "l-bfgs-b"}  # --variant: symad.minimize's method


def solve_own(args: argparse.Namespace) -> int:
    """symad's own forms: ``symad.minimize(text, x0, method=...)``, ``l-bfgs`` (symad's L-BFGS, its
    iteration in machine code) or ``l-bfgs-b`` (scipy's L-BFGS-B routine driven by symad's
    driver); the imports a user's script makes (NumPy, symad), the build (the text parsed, the
    gradient built and compiled: minimize's ``setup_time``), the solve.  Its stopping rule is
    symad's: the gradient's 2-norm at most 1e-8, which implies the shared form's ``gtol`` (its
    largest entry at most 1e-8); the shared form also stops where f no longer falls by scipy's
    ``ftol``, so this form is the stricter."""
    import numpy as np

    t_np = time.perf_counter()
    sys.path.insert(0, str(ROOT))
    from benchmarks.peers import workloads

    t_bench = time.perf_counter()
    import symad

    import_s = time.perf_counter() - t_bench + (t_np - T_START)
    emit(phase="import", import_s=import_s, numpy_scipy_s=t_np - T_START, peer_import_s=time.perf_counter() - t_bench,
         reader_import_s=0.0)
    w = workloads.make(args.workload, args.size)
    x0 = workloads.start(w)
    t1 = time.perf_counter()
    method = OWN_METHODS[args.variant]
    r = symad.minimize(w.text, x0, variables=list(w.variables), method=method, tol=1e-8, max_iter=100_000)
    wall = time.perf_counter() - t1
    emit(phase="build", build_s=r.setup_time)
    emit(phase="solve", solve_s=wall - r.setup_time, total_s=import_s + wall, nit=int(r.nit), nfev=int(r.nfev),
         calls=int(r.nfev), fun=float(r.fun), grad_inf=float(np.max(np.abs(r.jac), initial=0.0)),
         success=bool(r.success), message=str(r.message)[:120], done_at=time.time(), form=f"symad.minimize {method}")
    return 0


def solve(args: argparse.Namespace) -> int:
    """Imports, build and solve, each timed; then exit as a script does."""
    if args.peer == "symad" and args.variant in OWN_METHODS:
        return solve_own(args)
    t0 = T_START
    import numpy as np
    from scipy.optimize import minimize

    t_np = time.perf_counter()
    sys.path.insert(0, str(ROOT))
    from benchmarks.peers import adapters as peers
    from benchmarks.peers import workloads

    t_bench = time.perf_counter()  # the harness's own modules: not a cost of any peer, left out
    for mod in REQUIRES.get(args.peer, (args.peer,)):  # (peers.peers() would import symad's compiler)
        __import__(mod)
    t_peer = time.perf_counter()
    reader_s = 0.0
    if args.peer != "symad":  # the other peers read the text through symad's parser
        import symad

        symad.to_postfix("x")
        reader_s = time.perf_counter() - t_peer
    import_s = (time.perf_counter() - t_bench) + (t_np - t0)
    emit(phase="import", import_s=import_s, numpy_scipy_s=t_np - t0, peer_import_s=t_peer - t_bench,
         reader_import_s=reader_s)

    w = workloads.make(args.workload, args.size)
    x0 = workloads.start(w)
    t1 = time.perf_counter()
    impl = peers.BUILDERS[args.peer](w, args.variant, False)
    if args.prepare:
        impl.info["function"].prepare()
    build_s = time.perf_counter() - t1
    emit(phase="build", build_s=build_s)

    calls = [0]

    def fun(x: Any) -> Any:
        calls[0] += 1
        return impl.vg(x)

    t2 = time.perf_counter()
    r = minimize(fun, x0, jac=True, method="L-BFGS-B", options=SOLVE_OPTIONS)
    solve_s = time.perf_counter() - t2
    extra: dict[str, Any] = {}
    fn = impl.info.get("function")
    if fn is not None:  # which of symad's tiers served the last call
        tiers = fn._value_grad
        extra["tier"] = "compiled" if tiers.program is not None else "instructions" if tiers.vm else "tape"
    emit(phase="solve", solve_s=solve_s, total_s=import_s + build_s + solve_s, nit=int(r.nit), nfev=int(r.nfev),
         calls=calls[0], fun=float(r.fun), grad_inf=float(np.max(np.abs(r.jac), initial=0.0)),
         success=bool(r.success), message=str(r.message)[:120], done_at=time.time(), **extra)
    return 0


def _import_phase(peer_name: str) -> tuple[Any, Any, Any]:
    """The imports, as the peers suite's worker makes them: not part of any figure; (the peers'
    adapters, the harness, the workloads)."""
    t0 = time.perf_counter()
    sys.path.insert(0, str(ROOT))
    from benchmarks import harness
    from benchmarks.peers import adapters as peers
    from benchmarks.peers import workloads

    for mod in next(p for p in peers.peers() if p.name == peer_name).requires:
        __import__(mod)
    if peer_name == "symad":
        try:  # llvmlite is imported by symad's compile thread: an import, as in the peers worker
            import llvmlite.binding  # noqa: F401
        except ImportError:
            pass
    import symad

    symad.Function, symad.parse, symad.compile  # noqa: B018
    symad.to_postfix("x")  # Lark's tables load once a process
    emit(phase="import", import_s=time.perf_counter() - t0)
    return peers, harness, workloads


def calls(args: argparse.Namespace) -> int:
    """The build (text → callable) and the first ``args.calls`` calls, each at a new point."""
    peers, _, workloads = _import_phase(args.peer)
    w = workloads.make(args.workload, args.size)
    pts = [row.copy() for row in workloads.points(w, args.calls)]
    marks = {k for k in CHECKPOINTS if k <= args.calls} | {args.calls}
    at: dict[str, float] = {}
    t0 = time.perf_counter()
    impl = peers.BUILDERS[args.peer](w, args.variant, False)
    if args.prepare:
        impl.info["function"].prepare()
    built = time.perf_counter() - t0
    vg = impl.vg
    for k, p in enumerate(pts, 1):
        vg(p)
        if k in marks:
            at[str(k)] = time.perf_counter() - t0
    total = time.perf_counter() - t0
    emit(phase="calls", build_s=built, total_s=total, after=at, calls=args.calls)
    return 0


def pernode(args: argparse.Namespace) -> int:
    """Time per call and the count it is divided by, for each tier of symad, or for CasADi."""
    peers, harness, workloads = _import_phase(args.peer)
    import numpy as np

    w = workloads.make(args.workload, args.size)
    pts = [row.copy() for row in workloads.points(w, harness.TIMING_POINTS)]
    rows: dict[str, Any] = {}

    def timed(fn: Any) -> float:
        return harness.time_calls(fn, pts, args.min_time, args.repeats)["median_s"]

    if args.peer == "casadi":
        impl = peers.BUILDERS["casadi"](w, args.variant, False)
        rows["casadi"] = {"per_call_s": timed(impl.vg), "count": impl.info["instructions_vg"]}
        emit(phase="pernode", rows=rows)
        return 0
    import symad

    expr = symad.parse(w.text)
    f = symad.Function(expr, background=False)  # stays on the instructions from call 2 on
    t0 = time.perf_counter()
    f.value_and_grad(pts[0])
    first = time.perf_counter() - t0
    tape = f.shared_tape()
    nodes = len(tape.forward)
    rows["tape_call1"] = {"per_call_s": first, "count": nodes}  # building the tape and one sweep
    rows["tape"] = {"per_call_s": timed(lambda p: tape.sweep(p.tolist(), True)), "count": nodes}
    from symad.native import jit
    t0 = time.perf_counter()
    jit.interpreter()  # machine code generated from the op table, once a process: what call 2 first waits for
    rows["interpreter_compile"] = {"per_call_s": time.perf_counter() - t0, "count": 1}
    t0 = time.perf_counter()
    f.value_and_grad(pts[1])
    second = time.perf_counter() - t0
    vm = f._value_grad.vm
    if vm is None:
        raise RuntimeError("call 2 did not start the instruction tier")
    rows["instructions_call2"] = {"per_call_s": second, "count": vm.size}  # gradient, schedule, flattening
    rows["instructions"] = {"per_call_s": timed(f.value_and_grad), "count": vm.size}
    if f._value_grad.program is not None:
        raise RuntimeError("the instruction tier was replaced while timed")
    g = symad.compile(expr).prepare()
    rows["compiled"] = {"per_call_s": timed(g.value_and_grad), "count": g.value_grad_program().size}
    assert np.allclose(g.value_and_grad(pts[2])[1], f.value_and_grad(pts[2])[1], rtol=1e-12)
    emit(phase="pernode", rows=rows)
    return 0


def tiny(args: argparse.Namespace) -> int:
    """Per point after warm-up: symad's fastest call form and the shared NumPy form, and SymPy's
    (``--with sympy``, lambdify with ``cse`` if ``--variant cse``) in the same process.  The forms'
    timing loops take turns (one loop of each, ``args.repeats`` times): the machine's hiccups,
    which on this shared machine double a sub-microsecond figure for a while, fall on all alike."""
    peers, harness, workloads = _import_phase(args.peer)
    import symad

    w = workloads.make(args.workload, args.size)
    pts = [row.copy() for row in workloads.points(w, harness.TIMING_POINTS)]
    floats = [tuple(p.tolist()) for p in pts]
    forms: dict[tuple[str, str], tuple[Any, list[Any]]] = {}
    impl = peers.BUILDERS["symad"](w, "", False)
    f = impl.info["function"].prepare()
    forms["symad", "fastest"] = (f.value_and_grad, pts)  # f.value_and_grad(ndarray)
    forms["symad", "shared"] = (impl.vg, pts)
    if hasattr(f, "float_function"):  # floats in, a tuple of floats out (as SymPy's fastest form)
        ff = f.float_function()
        forms["symad", "floats"] = (lambda p: ff(*p), floats)
    if args.with_peer == "sympy":
        import sympy as sp

        from benchmarks.peers.translate import fold, sympy_dialect

        name = "sympy[cse]" if args.variant == "cse" else "sympy"
        xs = sp.symbols(w.variables)
        g = fold(symad.to_postfix(w.text), sympy_dialect(), dict(zip(w.variables, xs, strict=True)))
        fvg = sp.lambdify(xs, [g, *(sp.diff(g, x) for x in xs)], modules="math", cse=args.variant == "cse")
        forms[name, "fastest"] = (lambda p: fvg(*p), floats)  # floats in, a list of floats out
        forms[name, "shared"] = (peers.BUILDERS["sympy"](w, args.variant, False).vg, pts)
    elif args.with_peer:
        raise ValueError(f"tiny: no fastest form for {args.with_peer}")
    warm_until = time.perf_counter() + 0.3  # warm-up: every tier settled, caches warm
    while time.perf_counter() < warm_until:
        for fn, at in forms.values():
            for p in at:
                fn(p)
    samples: dict[tuple[str, str], list[float]] = {k: [] for k in forms}
    for _ in range(args.repeats):
        for k, (fn, at) in forms.items():
            samples[k].append(harness.time_calls(fn, at, args.min_time, 1)["median_s"])
    rows: dict[str, dict[str, float]] = {}
    for (peer, form), v in samples.items():
        rows.setdefault(peer, {})[form] = statistics.median(v)
    emit(phase="tiny", rows=rows)
    return 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--task", required=True, choices=["solve", "calls", "pernode", "tiny"])
    ap.add_argument("--peer", required=True)
    ap.add_argument("--variant", default="")
    ap.add_argument("--workload", required=True)
    ap.add_argument("--size", type=int, default=1)
    ap.add_argument("--with", dest="with_peer", default="", help="tiny: a peer timed in the same process")
    ap.add_argument("--prepare", action="store_true", help="symad: compile everything first (Function.prepare)")
    ap.add_argument("--calls", type=int, default=1000)
    ap.add_argument("--min-time", type=float, default=0.02)
    ap.add_argument("--repeats", type=int, default=15)
    args = ap.parse_args(argv)
    try:
        return {"solve": solve, "calls": calls, "pernode": pernode, "tiny": tiny}[args.task](args)
    except Exception as err:  # noqa: BLE001 - reported to the driver, which records it
        emit(phase=phase_after(args.task, _reported), error=f"{type(err).__name__}: {str(err)[:300]}",
             traceback=traceback.format_exc()[-2000:])
        return 0


if __name__ == "__main__":
    sys.exit(main())
