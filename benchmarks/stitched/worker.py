"""One measurement of the copy-and-patch tier in a fresh process, run by :mod:`benchmarks.stitched.suite`.

Tasks (``--task``), each printing one JSON object per phase (:func:`benchmarks.harness.run_worker`):

* ``codegen``: for a random expression's value-and-gradient program of about ``--size``
  operations, the time (wall and this process's CPU) to stitch its machine code (after a first,
  small program, which loads the stencils: timed apart), to build the
  instruction VM's program, and (up to ``--max-compile`` operations) to compile -O0 code
  (LLVM's fast instruction selection) whole and as two halves (what two cores would each do);
* ``percall``: one call's time on each tier of one workload's program, the tiers in turn:
  stitched, -O2, -O0, the instruction VM;
* ``hotloop``: ``value_and_grad`` in a loop for ``--window`` seconds, each call timed: symad's
  from its first call (``compile()`` and that call, which builds the gradient and the code,
  are timed apart), a peer's after its build and a warm-up (its steady state): the calls
  made, their median in the window and in its last third;
* ``solveparts``: a solve (text to the L-BFGS-B optimum) timed by parts: the first evaluation,
  the time inside the peer's function over the others, and scipy's own (the rest).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))


def emit(**fields: Any) -> None:
    print(json.dumps(fields), flush=True)


def random_text(size: int, n_vars: int = 100, seed: int = 3) -> str:
    """A sum of random terms over ``n_vars`` variables whose value-and-gradient program has about
    ``size`` operations (about 14 operations a term: arithmetic and a function each)."""
    import numpy as np

    rng = np.random.default_rng(seed)
    functions = ("sin", "cos", "exp", "tanh", "sqrt", "log")
    terms = []
    for k in range(max(1, size // 14)):
        a, b, c = (f"x{i}" for i in rng.integers(1, n_vars + 1, 3))
        f = functions[k % len(functions)]
        inner = f"1+{a}^2" if f in ("sqrt", "log") else f"{a}*{b}"
        terms.append(f"{rng.integers(1, 9)}*{f}({inner})*{c}-{b}/({rng.integers(2, 9)}+{c}^2)")
    return "+".join(terms)


def workload_text(name: str, size: int) -> str:
    from benchmarks.peers import workloads

    if name == "random":
        return random_text(size)
    return workloads.make(name, size).text


def schedule_of(text: str) -> Any:
    import symad

    e = symad.parse(text)
    return e.compile(backend="python").value_grad_program().schedule


def codegen(args: argparse.Namespace) -> None:
    from symad.backends.vm import VMProgram
    from symad.native import jit
    schedule = schedule_of(random_text(args.size))
    warm = schedule_of(random_text(300, seed=4))
    t, c = time.perf_counter(), time.process_time()
    jit.stitch(warm)  # the stencils loaded and a first program stitched (once a process)
    first_s, first_cpu_s = time.perf_counter() - t, time.process_time() - c
    emit(phase="build", ops=schedule.size, first_stitch_s=first_s, first_stitch_cpu_s=first_cpu_s)
    t, c = time.perf_counter(), time.process_time()
    program = jit.stitch(schedule)
    stitch_s, stitch_cpu_s = time.perf_counter() - t, time.process_time() - c
    t, c = time.perf_counter(), time.process_time()
    VMProgram(schedule)
    vm_s, vm_cpu_s = time.perf_counter() - t, time.process_time() - c
    out: dict[str, Any] = {"stitch_s": stitch_s, "stitch_cpu_s": stitch_cpu_s, "vm_s": vm_s, "vm_cpu_s": vm_cpu_s,
                           "code_bytes": program.size}
    if schedule.size <= args.max_compile:
        from symad.native import codegen as cg
        from symad.native import ir

        t = time.perf_counter()
        text = ir.module_ir(schedule, chunked=False)
        tm = jit._target_machine_for(0)
        cg.object_code(text, tm, 0, schedule.size)
        out["o0_s"] = time.perf_counter() - t
        t = time.perf_counter()
        cg.object_code(ir.module_ir(schedule, chunked=True), tm, 0, schedule.size)
        out["o0_chunked_s"] = time.perf_counter() - t
    emit(phase="codegen", **out)


def percall(args: argparse.Namespace) -> None:
    import numpy as np

    from symad.backends.vm import VMProgram
    from symad.native import jit

    schedule = schedule_of(workload_text(args.workload, args.size))
    t = time.perf_counter()
    jit._load_stencils()  # once a process: read from the shared code cache and parsed
    load_s = time.perf_counter() - t
    t = time.perf_counter()
    stitched = jit.stitch(schedule)
    stitch_s = time.perf_counter() - t
    t = time.perf_counter()
    o2 = jit.compile(schedule, opt=2)
    o2_s = time.perf_counter() - t
    t = time.perf_counter()
    o0 = jit.compile(schedule, opt=0)
    o0_s = time.perf_counter() - t
    vm = VMProgram(schedule)
    emit(phase="build", ops=schedule.size, stencils_load_s=load_s, stitch_build_s=stitch_s, o2_compile_s=o2_s,
         o0_compile_s=o0_s)
    tiers = {"stitched": stitched.call, "o2": o2.call, "o0": o0.call, "vm": vm.call}
    rng = np.random.default_rng(1)
    x = rng.uniform(-1, 1, len(schedule.inputs))
    rest = np.empty(len(schedule.outputs) - 1)
    want = np.array([o2.call(x, rest), *rest])
    for name, call in tiers.items():
        got = np.array([call(x, rest), *rest])
        if got.tobytes() != want.tobytes() and not np.isnan(want).any():
            emit(phase="percall", error=f"{name} gives other bits than -O2")
            return
    reps = max(20, int(2e6 / max(1, schedule.size)))
    times: dict[str, list[float]] = {name: [] for name in tiers}
    for _ in range(args.repeats):
        for name, call in tiers.items():  # in turn: the machine's noise reaches every tier alike
            t = time.perf_counter()
            for _ in range(reps):
                call(x, rest)
            times[name].append((time.perf_counter() - t) / reps)
    # The code alone: a batch of points through each native tier's batch entry (no Python call a
    # point: the stitched call's entry is a METH_FASTCALL builtin, -O2's and the VM's go through ctypes)
    rows = rng.uniform(-1, 1, (max(4, int(2e5 / max(1, schedule.size))), len(schedule.inputs)))
    out = np.empty((len(rows), len(schedule.outputs)))
    alone: dict[str, list[float]] = {"stitched": [], "o2": []}
    for _ in range(args.repeats):
        for name, program in (("stitched", stitched), ("o2", o2)):
            t = time.perf_counter()
            program.batch(rows.ctypes.data, out.ctypes.data, len(rows))
            alone[name].append((time.perf_counter() - t) / len(rows))
    emit(phase="percall", **{f"{name}_call_s": statistics.median(v) for name, v in times.items()},
         **{f"{name}_best_s": min(v) for name, v in times.items()},
         **{f"{name}_alone_s": min(v) for name, v in alone.items()},
         **(library_calls_alone(schedule, args.repeats) if args.workload == "random" else {}))


C_LIBRARY = ("sin", "cos", "tan", "exp", "log", "sinh", "cosh", "tanh", "pow")  # the calls every tier makes


def library_calls_alone(schedule: Any, repeats: int) -> dict[str, float]:
    """A call of a program of ``schedule``'s C library calls alone (the same functions, as many,
    on arguments like its own: a product of two of its inputs, 1 + a square for log), summed
    (stitched code, fastest block of ``repeats``), and how many calls: what any native code of
    the schedule that gives the C library's bits spends before its other operations."""
    import numpy as np

    import symad
    from symad.native import jit
    from symad.schedule.schedule import Schedule

    calls = [op for _, op, _ in schedule.steps if op in C_LIBRARY]
    e = symad.parse("+".join(f"{op}(y{k})" for k, op in enumerate(calls)))
    program = jit.stitch(Schedule.build(e.graph, [e.id], [e.graph.var(v) for v in e.variables]))
    rng = np.random.default_rng(2)
    y = rng.uniform(-1, 1, len(e.variables)) * rng.uniform(-1, 1, len(e.variables))
    where = {v: k for k, v in enumerate(e.variables)}
    for k, op in enumerate(calls):
        if op == "log":
            y[where[f"y{k}"]] = 1 + y[where[f"y{k}"]] ** 2
    rest = np.empty(0)
    reps = max(20, int(2e6 / max(1, len(calls) * 20)))
    best = float("inf")
    for _ in range(max(1, repeats) * 7):
        t = time.perf_counter()
        for _ in range(reps):
            program.call(y, rest)
        best = min(best, (time.perf_counter() - t) / reps)
    return {"libm_s": best, "libm_calls": len(calls)}


def solveparts(args: argparse.Namespace) -> None:
    """Where a solve's time goes (Rosenbrock written out, scipy's L-BFGS-B, the first-call suite's
    options): the first evaluation (symad builds its gradient and code in it), the time inside the
    peer's function over the other evaluations, and the rest: scipy's own (its wrapper and L-BFGS-B)."""
    import numpy as np
    from scipy.optimize import minimize

    from benchmarks.first_call.worker import SOLVE_OPTIONS
    from benchmarks.peers import adapters, workloads

    w = workloads.make(args.workload, args.size)
    x0 = workloads.start(w)
    t = time.perf_counter()
    impl = adapters.BUILDERS[args.peer](w, "", False)
    build_s = time.perf_counter() - t
    vg = impl.vg
    inside: list[float] = []

    def fun(x: Any) -> Any:
        t = time.perf_counter()
        r = vg(x)
        inside.append(time.perf_counter() - t)
        return r

    t = time.perf_counter()
    r = minimize(fun, x0, jac=True, method="L-BFGS-B", options=SOLVE_OPTIONS)
    solve_s = time.perf_counter() - t
    rest = float(np.sum(inside[1:]))
    emit(phase="solveparts", build_s=build_s, solve_s=solve_s, first_eval_s=inside[0], in_fun_s=rest,
         nfev=len(inside), scipy_s=solve_s - inside[0] - rest,
         per_eval_fun_s=rest / max(1, len(inside) - 1), per_eval_scipy_s=(solve_s - inside[0] - rest) / len(inside),
         success=bool(r.success))


def hotloop(args: argparse.Namespace) -> None:
    import numpy as np

    from benchmarks.peers import adapters, workloads

    w = workloads.make(args.workload, args.size)
    x = workloads.start(w)
    t0 = time.perf_counter()
    impl = adapters.BUILDERS[args.peer](w, "", False)
    vg = impl.vg
    vg(x)  # the first call: with symad it builds the schedule and the code
    build_s = time.perf_counter() - t0
    emit(phase="build", build_s=build_s)
    if args.peer != "symad":  # a peer's steady state: after warm-up
        for _ in range(200):
            vg(x)
    stamps, durations = [], []
    start = time.perf_counter()
    end = start + args.window
    while True:
        t = time.perf_counter()
        if t >= end:
            break
        vg(x)
        stamps.append(t)
        durations.append(time.perf_counter() - t)
    durations_a, stamps_a = np.array(durations), np.array(stamps)
    last = durations_a[stamps_a >= end - args.window / 3]
    extra = {}
    fn = impl.info.get("function")
    if fn is not None:
        program = fn._value_grad.program
        extra["tier"] = type(program.native).__name__ if program is not None and program.native else "vm"
    emit(phase="hotloop", calls=len(durations), median_s=float(np.median(durations_a)) if len(durations) else None,
         last_third_median_s=float(np.median(last)) if len(last) else None, **extra)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--task", required=True, choices=["codegen", "percall", "hotloop", "solveparts"])
    ap.add_argument("--workload", default="rosenbrock")
    ap.add_argument("--size", type=int, default=1000)
    ap.add_argument("--peer", default="symad")
    ap.add_argument("--repeats", type=int, default=7)
    ap.add_argument("--window", type=float, default=0.3)
    ap.add_argument("--max-compile", type=int, default=100_000)
    args = ap.parse_args()
    emit(phase="import")
    {"codegen": codegen, "percall": percall, "hotloop": hotloop, "solveparts": solveparts}[args.task](args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
