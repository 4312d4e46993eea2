"""Where symad's time goes on a workload: pyinstrument over the build and over repeated calls.

    python -m benchmarks.profile rosenbrock 1000            # build, then per-point calls
    python -m benchmarks.profile normalise 200 --backend python
    python -m benchmarks.profile rosenbrock2d_batch 2 --batch 1000000

Needs pyinstrument (``pip install '.[bench]'``).  Prints pyinstrument's call
tree for each phase, trimmed to frames above ``--min-percent`` of the phase.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))


def main(argv: list[str] | None = None) -> int:
    from pyinstrument import Profiler

    import symad
    from benchmarks.peers import workloads

    ap = argparse.ArgumentParser(
        prog="python -m benchmarks.profile",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    ap.add_argument("workload", choices=[*workloads.FAMILIES, *workloads.SCALING])
    ap.add_argument("size", type=int)
    ap.add_argument("--batch", type=int, default=0, help="points per call (rosenbrock2d_batch)")
    ap.add_argument("--backend", default=None, help="force a symad backend")
    ap.add_argument("--seconds", type=float, default=3.0, help="how long to profile the calls")
    ap.add_argument("--min-percent", type=float, default=2.0)
    args = ap.parse_args(argv)
    if args.workload == "rosenbrock2d_batch" and not args.batch:
        args.batch = 1_000_000
    w = workloads.make(args.workload, args.size, args.batch)
    limits = getattr(getattr(symad, "limits", None), "LIMITS", None)
    if limits is not None and hasattr(limits, "max_input_chars"):
        limits.max_input_chars = max(limits.max_input_chars, len(w.text))
    symad.to_postfix("x")  # Lark's one-time load
    try:
        import llvmlite.binding  # noqa: F401
    except ImportError:
        pass
    P = workloads.points(w, args.batch or 32)
    pts = P if args.batch else [row.copy() for row in P]

    prof = Profiler(interval=0.0005)
    t0 = time.perf_counter()
    with prof:
        expr = symad.parse(w.text)
        fn = symad.Function(expr, backend=args.backend) if args.backend else symad.compile(expr)
        fn.value_and_grad(pts if args.batch else pts[0])
    build = time.perf_counter() - t0
    program = fn.value_grad_program()
    if hasattr(program, "wait_native"):
        program.wait_native()
    print(f"== build: {w.key}, {len(w.text):,} chars, {build:.3f} s to the first value and gradient")
    print(
        prof.output_text(
            unicode=True,
            color=False,
            show_all=False,
            short_mode=False,
            time="percent_of_total",
            flat=False,
            processor_options={"filter_threshold": args.min_percent / 100},
        )
    )

    prof = Profiler(interval=0.0001)
    calls = 0
    with prof:
        t0 = time.perf_counter()
        while time.perf_counter() - t0 < args.seconds:
            if args.batch:
                fn.value_and_grad(pts)
                calls += 1
            else:
                for p in pts:
                    fn.value_and_grad(p)
                calls += len(pts)
    per = (time.perf_counter() - t0) / calls
    print(f"== calls: {calls:,} value_and_grad calls, {per * 1e6:.2f} µs each (under the profiler)")
    print(
        prof.output_text(
            unicode=True,
            color=False,
            show_all=False,
            time="percent_of_total",
            processor_options={"filter_threshold": args.min_percent / 100},
        )
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
