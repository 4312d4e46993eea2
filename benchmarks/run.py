"""Run symad and its peers on the same workloads, each measurement in a fresh process; write the report.

    python -m benchmarks.run                 # everything (tens of minutes); writes docs/benchmarks.{md,json}
    python -m benchmarks.run --quick         # small sizes, few repetitions: a smoke run
    python -m benchmarks.run --only rosenbrock --peers symad,casadi --timeout 30

It ends with the first-call suite (:mod:`benchmarks.first_call`, issue #15: time to solution,
the first 1,000 calls, ...; ``--no-first-call`` skips it), whose targets benchmarks.md shows.

Each measurement (one peer on one workload at one size) is a subprocess running
``benchmarks/worker.py``, which reports JSON lines as its phases end.  A phase
that runs past ``--timeout`` seconds is killed and recorded as a timeout; a peer
that timed out building a family at one size is recorded as timed out at the
larger sizes without running (``--no-skip`` runs them anyway).  The peers are
benchmark-only dependencies: ``pip install '.[bench]'``; a peer that is not
installed is recorded as unavailable.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import queue
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks import peers as peers_mod  # noqa: E402
from benchmarks import report, workloads  # noqa: E402

IMPORT_ALLOWANCE_S = 120.0  # importing JAX or PyTorch on a loaded machine is slow; not part of any figure


def bytecode_env(env: dict[str, str]) -> dict[str, str]:
    """``env`` with bytecode caches as an installed package has them: symad's and the harness's
    modules compiled once now, and ``PYTHONDONTWRITEBYTECODE`` dropped.  Without this, a
    developer's setting would have every fresh process compile symad's source (~50 ms) while
    the peers, installed by pip, read theirs from caches."""
    env = dict(env)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    subprocess.run([sys.executable, "-m", "compileall", "-q", "symad", "benchmarks"], cwd=str(ROOT), env=env,
                   check=True, capture_output=True)
    return env


def run_worker(
    args: list[str],
    timeout: float,
    last_phase: str = "time",
    script: str = "worker.py",
    env: dict[str, str] | None = None,
) -> dict[str, Any]:
    """Run one worker (``benchmarks/<script>``); merge its JSON lines; enforce ``timeout`` on each
    phase after the imports.  ``exited_at`` is the wall clock (``time.time()``) when it had exited."""
    cmd = [sys.executable, str(ROOT / "benchmarks" / script), *args]
    proc = subprocess.Popen(
        cmd,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
        cwd=str(ROOT),
        env=env,
    )
    lines: queue.Queue[str | None] = queue.Queue()
    err_chunks: list[str] = []

    def pump_out() -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            lines.put(line)
        lines.put(None)

    def pump_err() -> None:
        assert proc.stderr is not None
        err_chunks.append(proc.stderr.read())

    threads = [threading.Thread(target=pump_out, daemon=True), threading.Thread(target=pump_err, daemon=True)]
    for t in threads:
        t.start()
    result: dict[str, Any] = {"phases": []}
    deadline = time.monotonic() + IMPORT_ALLOWANCE_S
    phase = "import"
    while True:
        try:
            line = lines.get(timeout=max(deadline - time.monotonic(), 0.0))
        except queue.Empty:
            _kill(proc)
            result["status"] = "timeout"
            result["timeout_phase"] = _next_phase(phase)
            break
        if line is None:
            break
        try:
            record = json.loads(line)
        except json.JSONDecodeError:
            continue
        phase = record.pop("phase", phase)
        result["phases"].append(phase)
        if "error" in record:
            result["status"] = "error"
            result["error_phase"] = phase
        for key, value in record.items():
            if key == "traceback":
                result["traceback"] = value
            elif phase == "info":
                result.setdefault("info", {})[key] = value
            else:
                result[key] = value
        deadline = time.monotonic() + timeout  # every later phase gets its own limit
    proc.wait()
    result["exited_at"] = time.time()
    for t in threads:
        t.join(timeout=5)
    stderr = "".join(err_chunks).strip()
    if "status" not in result:
        if result.get("check") == "mismatch":
            result["status"] = "mismatch"
        elif str(result.get("check", "")).startswith("no reference"):
            result["status"] = "unchecked"
        elif last_phase in result["phases"]:
            result["status"] = "ok"
        else:
            result["status"] = "error"
            result["error"] = f"worker exited with status {proc.returncode}: {stderr[-300:]}"
    return result


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
        r = run_worker([*args, "--build-only"], timeout, last_phase="build")
        if r.get("status") == "ok" and "build_s" in r:
            samples.append((r["build_s"], r.get("build_peak_kib", 0), r.get("native_compile_s")))
    m["build_samples_s"] = [round(s[0], 6) for s in samples]
    m["build_s"] = statistics.median(s[0] for s in samples)
    m["build_peak_kib"] = statistics.median(s[1] for s in samples)
    if all(s[2] is not None for s in samples):
        m["native_compile_s"] = statistics.median(s[2] for s in samples)


def _next_phase(phase: str) -> str:
    order = ["import", "build", "info", "check", "time"]
    return order[min(order.index(phase) + 1, len(order) - 1)] if phase in order else phase


def _kill(proc: subprocess.Popen[str]) -> None:
    """End the worker we started (and anything it started: its own session)."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        proc.kill()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        prog="python -m benchmarks.run",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    ap.add_argument("--quick", action="store_true", help="small sizes and few repetitions (a smoke run)")
    ap.add_argument("--only", help="one workload family: " + ", ".join(workloads.FAMILIES) + ", or scaling")
    ap.add_argument("--peers", help="comma-separated peer names (symad is always run first), e.g. symad,casadi")
    ap.add_argument("--timeout", type=float, default=90.0, help="seconds per phase of one measurement (90)")
    ap.add_argument("--out-dir", type=Path, default=ROOT / "docs", help="where benchmarks.md/.json go (docs/)")
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
        help="skip the first-call suite (benchmarks.first_call: first_call.md/.json, issue #15's targets)",
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
    all_peers = [p for p in peers_mod.peers() if wanted is None or p.name in wanted]
    cases = workloads.workloads(args.quick, None if args.only == "scaling" else args.only)
    if args.only == "scaling":
        cases = []

    started = time.time()
    meta: dict[str, Any] = {
        "command": command_line(argv if argv is not None else sys.argv[1:]),
        "date": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "quick": args.quick,
        "timeout_s": args.timeout,
        "repeats": repeats,
        "min_loop_s": min_time,
        "batch_repeats": batch_repeats,
        "python": platform.python_version(),
        "machine": _machine(),
        "versions": peers_mod.versions(),
        "revision": _revision(),
        "load_before": _load(),
        "peers": [
            {"id": p.id, "label": p.label, "reference_only": p.reference_only, "builds": p.builds} for p in all_peers
        ],
    }
    measurements: list[dict[str, Any]] = []
    timed_out_at: dict[tuple[str, str], int] = {}
    pool = ThreadPoolExecutor(max(args.jobs, 1))

    def measure(peer: peers_mod.Peer, w: workloads.Workload, ref: Path) -> dict[str, Any]:
        m: dict[str, Any] = {
            "peer": peer.id,
            "label": peer.label,
            "workload": w.name,
            "size": w.size,
            "batch": w.batch,
            "key": w.key,
            "text_chars": len(w.text),
        }
        why = peers_mod.available(peer)
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
            m.update(run_worker(wargs, args.timeout))
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
                        m.update(run_worker(wargs, limit, last_phase="info"))
                        failed = m["status"] != "ok"
                    scaling.append(m)
                    print(
                        f"scaling {family} {n}: {m['status']} {m.get('build_s', '')} {m.get('error', '')}"[:200],
                        file=sys.stderr,
                        flush=True,
                    )
    pool.shutdown()

    meta["load_after"] = _load()
    meta["wall_s"] = time.time() - started
    first: dict[str, Any] | None = None
    if not args.no_first_call and args.only is None:
        from benchmarks import first_call  # (it imports this module)

        fargs = argparse.Namespace(
            quick=args.quick,
            only=None,
            peers=args.peers,
            repeats=3,
            solve_repeats=5,
            timeout=None,
            baseline=ROOT / "docs" / "benchmarks.json",  # the committed figures, before this run replaces them
        )
        first = first_call.run_suite(fargs, meta["command"] + "  (its first-call part: benchmarks.first_call)")
    data = {"meta": meta, "measurements": measurements, "scaling": scaling}
    args.out_dir.mkdir(parents=True, exist_ok=True)
    (args.out_dir / "benchmarks.json").write_text(json.dumps(data, indent=1, default=str) + "\n")
    if first is not None:
        first_call.write(first, args.out_dir)  # first_call.md/.json, and benchmarks.md with its targets
    else:
        (args.out_dir / "benchmarks.md").write_text(report.render_beside(args.out_dir))
    print(f"wrote {args.out_dir / 'benchmarks.md'} and benchmarks.json", file=sys.stderr)
    return 0


def command_line(argv: list[str]) -> str:
    """The command as run, less where it wrote (``--out-dir``), which does not change what it measures."""
    kept, skip = [], False
    for a in argv:
        if skip:
            skip = False
        elif a == "--out-dir":
            skip = True
        elif not a.startswith("--out-dir="):
            kept.append(a)
    return " ".join(["python -m benchmarks.run", *kept])


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


def _machine() -> str:
    model = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return f"{model}, {os.cpu_count()} cores, {platform.system()} {platform.release()}"


def _revision() -> str:
    """The checkout's commit, marked '+changes' when the work tree differs from it."""
    try:
        head = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True, timeout=10
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--", "symad"],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=10,
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return ""
    return head + (" + uncommitted changes in symad/" if head and dirty else "")


def _load() -> list[float]:
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except OSError:
        return []


if __name__ == "__main__":
    sys.exit(main())
