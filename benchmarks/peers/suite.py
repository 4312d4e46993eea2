"""symad beside its peers on the same workloads, each measurement in a fresh process; writes the report.

    python -m benchmarks.peers                 # everything (tens of minutes); writes peers.json and peers.md here
    python -m benchmarks.peers --quick         # small sizes, few repetitions: a smoke run
    python -m benchmarks.peers --only rosenbrock --peers symad,casadi --timeout 30

It ends with the first-call suite (:mod:`benchmarks.first_call`: time to solution, the first
1,000 calls, ...; ``--no-first-call`` skips it), which writes its own report.

Each measurement (one peer on one workload at one size) is a subprocess running
``benchmarks/peers/worker.py``, which reports JSON lines as its phases end.  A phase
that runs past ``--timeout`` seconds is killed and recorded as a timeout; a peer
that timed out building a family at one size is recorded as timed out at the
larger sizes without running (``--no-skip`` runs them anyway).  The peers are
benchmark-only dependencies: ``pip install '.[bench]'``; a peer that is not
installed is recorded as unavailable.
"""

from __future__ import annotations

import argparse
import platform
import statistics
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from benchmarks import harness  # noqa: E402
from benchmarks.first_call import suite as first_call  # noqa: E402
from benchmarks.peers import adapters, report, workloads  # noqa: E402

FOLDER = Path(__file__).resolve().parent
WORKER = FOLDER / "worker.py"


BUILD_REPEAT_BELOW_S = 2.0  # a build this quick is at the mercy of the machine's hiccups: time it again


def repeat_build(m: dict[str, Any], wargs: list[str], repeats: int, timeout: float) -> None:
    """Time a quick build again in fresh processes and report the median (build time and peak memory).

    A single build of a few milliseconds can take several times longer when the kernel
    stalls a page fault (the machine is shared): the median of fresh processes is robust.
    """
    if repeats <= 1 or m.get("status") != "ok" or m.get("build_s", BUILD_REPEAT_BELOW_S) >= BUILD_REPEAT_BELOW_S:
        return
    args = list(wargs)
    if "--write-ref" in args:  # the reference is symad's first run's
        k = args.index("--write-ref")
        del args[k : k + 2]
    samples = [(m["build_s"], m.get("build_peak_kib", 0), m.get("native_compile_s"))]
    for _ in range(repeats - 1):
        r = harness.run_worker(WORKER, [*args, "--build-only"], timeout, last_phase="build")
        if r.get("status") == "ok" and "build_s" in r:
            samples.append((r["build_s"], r.get("build_peak_kib", 0), r.get("native_compile_s")))
    m["build_samples_s"] = [round(s[0], 6) for s in samples]
    m["build_s"] = statistics.median(s[0] for s in samples)
    m["build_peak_kib"] = statistics.median(s[1] for s in samples)
    if all(s[2] is not None for s in samples):
        m["native_compile_s"] = statistics.median(s[2] for s in samples)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        prog="python -m benchmarks.peers",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    ap.add_argument("--quick", action="store_true", help="small sizes and few repetitions (a smoke run)")
    ap.add_argument("--only", help="one workload family: " + ", ".join(workloads.FAMILIES) + ", or scaling")
    ap.add_argument("--peers", help="comma-separated peer names (symad is always run first), e.g. symad,casadi")
    ap.add_argument("--timeout", type=float, default=90.0, help="seconds per phase of one measurement (90)")
    ap.add_argument("--out-dir", type=Path, help="where peers.md/.json go (default: here, benchmarks/peers/; the "
                    "first-call part's report goes there too, else to benchmarks/first_call/)")
    ap.add_argument(
        "--no-skip",
        action="store_true",
        help="run a peer at larger sizes even after it timed out at a smaller one",
    )
    ap.add_argument(
        "--build-repeats",
        type=int,
        default=3,
        help="fresh processes whose build is timed, median reported, for builds under 2 s (3; 1 in --quick)",
    )
    ap.add_argument("--no-scaling", action="store_true", help="skip symad's build-scaling curve")
    ap.add_argument(
        "--no-first-call",
        action="store_true",
        help="skip the first-call suite (benchmarks.first_call: its report and figures)",
    )
    ap.add_argument(
        "--scaling-timeout",
        type=float,
        default=600.0,
        help="seconds per phase of one scaling measurement (600)",
    )
    ap.add_argument(
        "--jobs",
        type=int,
        default=1,
        help="measurements run at once (default 1; more only for smoke runs: they disturb each other)",
    )
    args = ap.parse_args(argv)

    repeats, min_time = (3, 0.002) if args.quick else (15, 0.02)
    batch_repeats = 3 if args.quick else 7
    wanted = set(args.peers.split(",")) | {"symad"} if args.peers else None
    all_peers = [p for p in adapters.peers() if wanted is None or p.name in wanted]
    cases = workloads.workloads(args.quick, None if args.only == "scaling" else args.only)
    if args.only == "scaling":
        cases = []

    started = time.time()
    meta: dict[str, Any] = {
        "command": harness.command_line("python -m benchmarks.peers", argv if argv is not None else sys.argv[1:]),
        "date": harness.now(),
        "quick": args.quick,
        "timeout_s": args.timeout,
        "repeats": repeats,
        "min_loop_s": min_time,
        "batch_repeats": batch_repeats,
        "python": platform.python_version(),
        "machine": harness.machine(),
        "versions": adapters.versions(),
        "revision": harness.revision(),
        "load_before": harness.load(),
        "peers": [
            {"id": p.id, "label": p.label, "reference_only": p.reference_only, "builds": p.builds} for p in all_peers
        ],
    }
    measurements: list[dict[str, Any]] = []
    timed_out_at: dict[tuple[str, str], int] = {}
    pool = ThreadPoolExecutor(max(args.jobs, 1))

    def measure(peer: adapters.Peer, w: workloads.Workload, ref: Path) -> dict[str, Any]:
        m: dict[str, Any] = {
            "peer": peer.id,
            "label": peer.label,
            "workload": w.name,
            "size": w.size,
            "batch": w.batch,
            "key": w.key,
            "text_chars": len(w.text),
        }
        why = adapters.available(peer)
        earlier = timed_out_at.get((peer.id, w.name))
        if why:
            m.update(status="unavailable", error=why)
        elif earlier is not None and not args.no_skip:
            m.update(
                status="timeout",
                timeout_phase="build",
                skipped=True,
                note=f"not run: did not build within {args.timeout:g} s at size {earlier}",
            )
        else:
            wargs = [
                "--peer",
                peer.name,
                "--variant",
                peer.variant,
                "--workload",
                w.name,
                "--size",
                str(w.size),
                "--batch",
                str(w.batch),
                "--repeats",
                str(batch_repeats if w.batch else repeats),
                "--min-time",
                str(min_time),
            ]
            if peer.id == "symad":  # the reference every other result is checked against
                wargs += ["--write-ref", str(ref)]
            elif ref.exists():
                wargs += ["--ref", str(ref)]
            t0 = time.monotonic()
            m.update(harness.run_worker(WORKER, wargs, args.timeout))
            repeat_build(m, wargs, 1 if args.quick else args.build_repeats, args.timeout)
            m["wall_s"] = round(time.monotonic() - t0, 3)
        if m["status"] == "ok" and m.get("check") == "reference":
            m["check"] = "is the reference"
        _progress(m)
        return m

    with tempfile.TemporaryDirectory(prefix="symad-bench-") as tmp:
        for w in cases:
            ref = Path(tmp) / f"ref-{w.name}-{w.size}-{w.batch}.npz"
            todo = [p for p in all_peers if p.applies(w)]
            first = [measure(todo[0], w, ref)] if todo and todo[0].id == "symad" else []
            others = todo[len(first) :]
            rest = list(pool.map(measure, others, [w] * len(others), [ref] * len(others)))
            for m in first + rest:
                if m["status"] == "timeout" and m.get("timeout_phase") == "build" and not m.get("skipped"):
                    timed_out_at[(m["peer"], w.name)] = w.size
            measurements += first + rest
        scaling: list[dict[str, Any]] = []
        if not args.no_scaling and (args.only in (None, "scaling")):
            for family, (sizes, quick_sizes) in workloads.SCALING.items():
                failed = False
                for n in quick_sizes if args.quick else sizes:
                    w = workloads.make(family, n)
                    m = {"family": family, "n": n, "text_chars": len(w.text)}
                    if failed:
                        m.update(status="timeout", note="not run: a smaller size did not finish")
                    else:
                        wargs = ["--peer", "symad", "--workload", family, "--size", str(n), "--scaling"]
                        limit = max(args.timeout, args.scaling_timeout)
                        m.update(harness.run_worker(WORKER, wargs, limit, last_phase="info"))
                        failed = m["status"] != "ok"
                    scaling.append(m)
                    print(
                        f"scaling {family} {n}: {m['status']} {m.get('build_s', '')} {m.get('error', '')}"[:200],
                        file=sys.stderr,
                        flush=True,
                    )
    pool.shutdown()

    meta["load_after"] = harness.load()
    meta["wall_s"] = time.time() - started
    first: dict[str, Any] | None = None
    if not args.no_first_call and args.only is None:
        fargs = argparse.Namespace(
            quick=args.quick,
            only=None,
            peers=args.peers,
            repeats=3,
            solve_repeats=5,
            timeout=None,
            baseline=FOLDER / "peers.json",  # the committed figures, before this run replaces them
        )
        first = first_call.run_suite(fargs, meta["command"] + "  (its first-call part: benchmarks.first_call)")
    data = {"meta": meta, "measurements": measurements, "scaling": scaling}
    harness.write(args.out_dir or FOLDER, "peers", data, report.render(data))
    if first is not None:
        first_call.write(first, args.out_dir or first_call.FOLDER)
    return 0


def _progress(m: dict[str, Any]) -> None:
    figure = ""
    if "vg" in m:
        figure = f"vg {m['vg']['median_s'] * 1e6:.2f} µs"
    elif "batch_vg" in m:
        figure = f"batch {m['batch_vg']['median_s'] * 1e3:.2f} ms"
    build = f"build {m['build_s']:.3g} s" if "build_s" in m else ""
    extra = m.get("error") or m.get("note") or (f"timeout in {m['timeout_phase']}" if "timeout_phase" in m else "")
    print(
        f"{m['key']:<28} {m['label']:<26} {m['status']:<11} {build:<16} {figure} {extra}"[:200],
        file=sys.stderr,
        flush=True,
    )

