"""One measurement in a fresh process: build one peer on one workload, check it, time it.

Run by :mod:`benchmarks.peers.suite`; prints one JSON object per line on stdout as each
phase ends (so a measurement killed at its time limit still reports what it
finished).  Peak memory is VmHWM from ``/proc/self/status``, reset through
``/proc/self/clear_refs`` just before the phase it measures, so it counts that
phase and not the imports before it.
"""

from __future__ import annotations

import argparse
import sys
import time
import traceback
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # this checkout's symad and benchmarks

from benchmarks.harness import TIMING_POINTS, emit, proc_status, reset_peak, time_batch, time_calls  # noqa: E402

CHECK_POINTS = 8  # points compared with symad's results before anything is timed
RTOL = 1e-9


def compare(value: Any, grad: Any, ref_value: np.ndarray, ref_grad: np.ndarray) -> float:
    """Largest error relative to the reference's scale (per output); inf on a shape mismatch."""
    value, grad = np.asarray(value, dtype=float), np.asarray(grad, dtype=float)
    if value.shape != ref_value.shape or grad.shape != ref_grad.shape:
        return float("inf")
    worst = 0.0
    for got, want in ((value, ref_value), (grad, ref_grad)):
        scale = np.maximum(np.abs(want), max(float(np.max(np.abs(want), initial=0.0)), 1.0) * 1e-3)
        with np.errstate(all="ignore"):
            err = np.abs(got - want) / scale
        err = np.where(np.isnan(got) & np.isnan(want), 0.0, err)
        worst = max(worst, float(np.max(err, initial=0.0)))
    return worst


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--peer", required=True)
    ap.add_argument("--variant", default="")
    ap.add_argument("--workload", required=True)
    ap.add_argument("--size", type=int, required=True)
    ap.add_argument("--batch", type=int, default=0)
    ap.add_argument("--ref", help="reference .npz written by symad's measurement")
    ap.add_argument("--write-ref", help="write this measurement's results as the reference .npz")
    ap.add_argument("--min-time", type=float, default=0.02, help="seconds per timing loop")
    ap.add_argument("--repeats", type=int, default=15)
    ap.add_argument("--scaling", action="store_true", help="symad build phases only (scaling curve)")
    ap.add_argument("--build-only", action="store_true", help="stop after the build phase (a repeat of it)")
    args = ap.parse_args(argv)

    from benchmarks.peers import adapters, workloads

    phase = "import"
    try:
        t0 = time.perf_counter()
        w = workloads.make(args.workload, args.size, args.batch)
        for mod in next(p for p in adapters.peers() if p.name == args.peer).requires:
            __import__(mod)
        if args.peer == "symad":
            try:  # symad's native backend imports llvmlite lazily: an import, not part of the build
                import llvmlite.binding  # noqa: F401
            except ImportError:
                pass
        import symad

        # `import symad` is lazy (its names load on first use): load what a build uses here, as
        # an import, and let Lark build its parser tables (once per process): not part of any build.
        symad.Function, symad.parse, symad.compile  # noqa: B018
        symad.to_postfix("x")
        emit(phase="import", import_s=time.perf_counter() - t0, text_chars=len(w.text))
        if args.scaling:
            phase = "build"
            return scaling(w)

        batch = args.batch > 0
        P = workloads.points(w, args.batch if batch else TIMING_POINTS)
        pts = [row.copy() for row in P]
        first = P if batch else pts[0]

        phase = "build"
        compiled_before = _native_compile_s(args.peer)
        rss0 = reset_peak()
        t0 = time.perf_counter()
        impl = adapters.BUILDERS[args.peer](w, args.variant, batch)
        value, grad = impl.vg(first)
        build_s = time.perf_counter() - t0
        hwm = proc_status()["VmHWM"]
        extra = {}
        if compiled_before is not None:  # symad: the part of the build spent compiling native code
            extra["native_compile_s"] = _native_compile_s(args.peer) - compiled_before
        emit(phase="build", build_s=build_s, build_peak_kib=hwm - rss0, vmhwm_kib=hwm, **extra)
        if args.build_only:
            return 0

        phase = "info"
        info = {k: v for k, v in impl.info.items() if isinstance(v, (int, float, str))}
        fn = impl.info.get("function")
        if fn is not None:
            # Tiered building: symad answers the first call by interpreting and compiles once the
            # function is called again. Compile now, and time and measure the build up to compiled
            # (optimised) code for both programs, before the steady-state per-call timing below.
            if hasattr(fn, "prepare"):
                fn.prepare()
            else:
                program = fn.value_grad_program()
                if hasattr(program, "wait_native"):
                    program.wait_native()
            info["native_ready_s"] = time.perf_counter() - t0
            info["compiled_peak_kib"] = proc_status()["VmHWM"] - rss0
        if args.peer == "symad":
            stats = impl.info["expr"].stats()
            info.update(
                dag_nodes=stats["dag_nodes"],
                gradient_nodes=stats["gradient_nodes"],
                tree_nodes=stats["tree_nodes"],
            )
            backend = getattr(impl.info["function"], "backend", None)
            if isinstance(backend, str):
                info["backend"] = backend
        emit(phase="info", **info)

        phase = "check"
        check_at = P if batch else np.array(pts[:CHECK_POINTS])
        if batch:
            values, grads = np.asarray(value, dtype=float), np.asarray(grad, dtype=float)
        else:
            # a peer that needs seconds per call is checked at fewer points, within the phase's limit
            k = CHECK_POINTS if build_s < 2.0 else 3
            check_at = check_at[:k]
            results = [impl.vg(p) for p in pts[:k]]
            values = np.array([r[0] for r in results], dtype=float)
            grads = np.array([np.asarray(r[1], dtype=float) for r in results])
        if args.write_ref:
            np.savez(args.write_ref, points=check_at, values=values, grads=grads)
            emit(phase="check", check="reference")
        elif not args.ref:
            emit(phase="check", check="no reference (symad's own measurement failed)")
            return 0
        else:
            ref = np.load(args.ref)
            k = min(len(values), len(ref["values"]))  # a slow peer (or reference) checks fewer points
            err = compare(values[:k], grads[:k], ref["values"][:k], ref["grads"][:k])
            ok = err <= RTOL
            emit(phase="check", check="ok" if ok else "mismatch", max_rel_err=err)
            if not ok:
                return 0
            del ref

        phase = "time"
        if fn is not None and not hasattr(fn, "prepare"):
            impl.v(first)
            program = fn.value_program()
            if hasattr(program, "wait_native"):
                program.wait_native()
        if batch:
            rss0 = reset_peak()
            vg = time_batch(impl.vg, P, args.repeats)
            peak = proc_status()["VmHWM"] - rss0
            v = time_batch(impl.v, P, args.repeats)
            emit(phase="time", batch_vg=vg, batch_v=v, batch_peak_kib=peak)
        else:
            vg = time_calls(impl.vg, pts, args.min_time, args.repeats)
            v = time_calls(impl.v, pts, args.min_time, args.repeats)
            emit(phase="time", vg=vg, v=v)
        return 0
    except Exception as err:  # noqa: BLE001 - reported to the orchestrator, which records it
        emit(
            phase=phase,
            error=f"{type(err).__name__}: {str(err)[:300]}",
            traceback=traceback.format_exc()[-2000:],
        )
        return 0


def _native_compile_s(peer: str) -> float | None:
    """Seconds symad has spent compiling native code in this process (None for other peers)."""
    if peer != "symad":
        return None
    stats = getattr(sys.modules.get("symad.native.jit"), "compile_stats", None)
    return float(stats()["seconds"]) if callable(stats) else None


def scaling(w: Any) -> int:
    """symad's build time, by phase, and its peak memory, for the scaling curve."""
    import symad

    limits = getattr(getattr(symad, "limits", None), "LIMITS", None)
    if limits is not None and hasattr(limits, "max_input_chars"):  # a guard for untrusted text, not for this
        limits.max_input_chars = max(limits.max_input_chars, len(w.text))
    pt = np.full(len(w.variables), 0.75)
    rss0 = reset_peak()
    t0 = time.perf_counter()
    expr = symad.parse(w.text)
    t1 = time.perf_counter()
    fn = symad.compile(expr)
    fn.value_and_grad(pt)
    t2 = time.perf_counter()
    hwm = proc_status()["VmHWM"]
    emit(
        phase="build",
        build_s=t2 - t0,
        parse_s=t1 - t0,
        compile_first_s=t2 - t1,
        build_peak_kib=hwm - rss0,
        vmhwm_kib=hwm,
    )
    stats = expr.stats()
    emit(phase="info", dag_nodes=stats["dag_nodes"], gradient_nodes=stats["gradient_nodes"])
    return 0


if __name__ == "__main__":
    sys.exit(main())
