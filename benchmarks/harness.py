"""What every benchmark suite repeats: fresh-process workers, timing, provenance, tables.

A suite (``benchmarks/<suite>/``) measures each figure in a fresh process: its worker prints
one JSON object per line as each phase ends (:func:`emit`), and :func:`run_worker` merges the
lines and enforces a time limit per phase, so a worker killed at its limit still reports what
it finished.  Configurations are measured in turn (:func:`in_turn`), so a burst of load on a
shared machine falls on all alike.  Each report records where and when it was measured
(:func:`machine`, :func:`revision`, :func:`load`, :func:`now`), renders its tables in one format
(:func:`table`, :func:`fmt_time`, :func:`fmt_mem`, :func:`fmt_ratio`) and is written, or written
again from its figures, by :func:`write` and :func:`rerender`.  Standard library only: a worker
imports this before it times anything.
"""

from __future__ import annotations

import datetime
import json
import math
import os
import platform
import queue
import signal
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Hashable, Iterable, Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
IMPORT_ALLOWANCE_S = 120.0  # importing JAX or PyTorch on a loaded machine is slow; not part of any figure
TIMING_POINTS = 32  # distinct points cycled through by the per-point timing loops


# ============================================================================ fresh processes
def bytecode_env(env: dict[str, str]) -> dict[str, str]:
    """``env`` with bytecode caches as an installed package has them: symad's and the harness's
    modules compiled once now, and ``PYTHONDONTWRITEBYTECODE`` dropped.  Without this, a
    developer's setting would have every fresh process compile symad's source while the peers,
    installed by pip, read theirs from caches."""
    env = dict(env)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    subprocess.run([sys.executable, "-m", "compileall", "-q", "symad", "benchmarks"], cwd=str(ROOT), env=env,
                   check=True, capture_output=True)
    return env


def run_worker(script: Path, args: list[str], timeout: float, last_phase: str = "time",
               env: dict[str, str] | None = None) -> dict[str, Any]:
    """Run one worker (a script, in a fresh process); merge its JSON lines; enforce ``timeout`` on
    each phase after the imports.  ``status`` is ok, timeout, error, mismatch or unchecked;
    ``exited_at`` is the wall clock (``time.time()``) when it had exited."""
    proc = subprocess.Popen([sys.executable, str(script), *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, start_new_session=True, cwd=str(ROOT), env=env)
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


def _next_phase(phase: str) -> str:
    order = ["import", "build", "info", "check", "time"]
    return order[min(order.index(phase) + 1, len(order) - 1)] if phase in order else phase


def _kill(proc: subprocess.Popen[str]) -> None:
    """End the worker we started (and anything it started: its own session)."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        proc.kill()


def emit(**fields: Any) -> None:
    """A worker's report of one phase: one JSON line, flushed at once."""
    print(json.dumps(fields), flush=True)


# ============================================================================ memory and timing
def proc_status() -> dict[str, int]:
    """VmRSS and VmHWM in KiB (zeros where /proc is missing)."""
    out = {"VmRSS": 0, "VmHWM": 0}
    try:
        with open("/proc/self/status") as fh:
            for line in fh:
                key = line.split(":", 1)[0]
                if key in out:
                    out[key] = int(line.split()[1])
    except OSError:
        pass
    return out


def reset_peak() -> int:
    """Reset VmHWM to the current RSS (Linux ≥ 4.0); returns that RSS in KiB."""
    try:
        with open("/proc/self/clear_refs", "w") as fh:
            fh.write("5")
    except OSError:
        pass
    return proc_status()["VmRSS"]


def time_calls(fn: Callable[[Any], Any], pts: Sequence[Any], min_time: float, repeats: int) -> dict[str, Any]:
    """Median time of one call over ``repeats`` timing loops of ``inner`` calls each.

    Each loop cycles through distinct points (every call sees a new point) and lasts
    at least ``min_time``; the cost of the bare loop is measured and subtracted.
    """
    t0 = time.perf_counter()
    for p in pts[:3]:
        fn(p)
    if time.perf_counter() - t0 > 1.5:  # half a second a call or more: a few samples say enough
        repeats = min(repeats, 3)
    inner = 1
    while True:
        seq = [pts[i % len(pts)] for i in range(inner)]
        t0 = time.perf_counter()
        for p in seq:
            fn(p)
        dt = time.perf_counter() - t0
        if dt >= min_time or inner >= 1 << 22:
            break
        inner = min(1 << 22, max(inner * 2, int(inner * min_time / max(dt, 1e-9) * 1.1)))
    samples = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        for p in seq:
            fn(p)
        t1 = time.perf_counter()
        for _ in seq:
            pass
        t2 = time.perf_counter()
        samples.append(max((t1 - t0) - (t2 - t1), 0.0) / inner)
    return {"median_s": statistics.median(samples), "min_s": min(samples), "inner": inner, "repeats": repeats}


def time_batch(fn: Callable[[Any], Any], batch: Any, repeats: int) -> dict[str, Any]:
    """Median time of ``repeats`` calls on one batch."""
    samples = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn(batch)
        samples.append(time.perf_counter() - t0)
    return {"median_s": statistics.median(samples), "min_s": min(samples), "inner": 1, "repeats": repeats}


def in_turn(names: Iterable[Hashable], repeats: int, sample: Callable[[Any], dict[str, Any]],
            stop: Callable[[Any, list[dict[str, Any]]], bool] | None = None) -> dict[Any, list[dict[str, Any]]]:
    """Every configuration sampled once, then again, until each has ``repeats`` samples: a burst
    of load on a shared machine falls on all alike.  ``stop(name, its samples)`` true: sample that
    one no more (it failed, or one sample says enough)."""
    samples: dict[Any, list[dict[str, Any]]] = {name: [] for name in names}
    active = list(samples)
    for _ in range(repeats):
        for name in list(active):
            samples[name].append(sample(name))
            if stop is not None and stop(name, samples[name]):
                active.remove(name)
    return samples


def median_of(samples: Iterable[dict[str, Any]], key: str) -> float | None:
    """The median of ``key`` over the samples that have it as a number (None if none does)."""
    vals = [s[key] for s in samples if isinstance(s.get(key), (int, float))]
    return statistics.median(vals) if vals else None


# ============================================================================ provenance
def machine() -> str:
    """The CPU model, its cores and the kernel."""
    model = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return f"{model}, {os.cpu_count()} cores, {platform.system()} {platform.release()}"


def revision() -> str:
    """The checkout's commit, marked when symad/ differs from it."""
    try:
        head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True,
                              timeout=10).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--", "symad"], cwd=ROOT, capture_output=True,
                               text=True, timeout=10).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return ""
    return head + (" + uncommitted changes in symad/" if head and dirty else "")


def load() -> list[float]:
    """The load average over 1, 5 and 15 minutes."""
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except OSError:
        return []


def now() -> str:
    """The date and time, UTC, as the reports print it."""
    return datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC")


def without_option(argv: Sequence[str], option: str) -> list[str]:
    """The arguments less ``option VALUE`` (or ``option=VALUE``)."""
    kept, skip = [], False
    for a in argv:
        if skip:
            skip = False
        elif a == option:
            skip = True
        elif not a.startswith(option + "="):
            kept.append(a)
    return kept


def command_line(prog: str, argv: Sequence[str]) -> str:
    """The command as run, less where it wrote (``--out-dir``), which does not change what it measures."""
    return " ".join([prog, *without_option(argv, "--out-dir")])


def write(folder: Path, name: str, data: Any, page: str) -> None:
    """``name``.json (the figures) and ``name``.md (the page) in ``folder``."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{name}.json").write_text(json.dumps(data, indent=1, default=str) + "\n",
                                         encoding="utf-8")
    (folder / f"{name}.md").write_text(page, encoding="utf-8")
    print(f"wrote {folder / name}.md and {name}.json", file=sys.stderr)


# ============================================================================ tables
def fmt_time(s: float | None) -> str:
    """Seconds with a unit, three significant digits."""
    if s is None or not math.isfinite(s):
        return "—"
    s = float(f"{s:.3g}")  # rounded first: 999.7 µs is 1 ms, not "1e+03 µs"
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("µs", 1e-6), ("ns", 1e-9)):
        if s >= scale or unit == "ns":
            v = s / scale
            return f"{v:.3g} {unit}" if v < 1000 else f"{v:.0f} {unit}"
    return "—"


def fmt_mem(kib: float | None) -> str:
    """KiB with a unit."""
    if kib is None:
        return "—"
    if kib < 1024:
        return f"{kib:.0f} KiB"
    return f"{kib / 1024:.3g} MiB" if kib < 1024 * 1000 else f"{kib / 1024:.0f} MiB"


def fmt_ratio(r: float | None) -> str:
    """A ratio, with three digits near the thresholds (1, 1.5, 3), so "1.5, not met" cannot happen."""
    if r is None or not math.isfinite(r):
        return "—"
    if r >= 100:
        return f"{r:.0f}"
    if r >= 0.995:
        return f"{r:.3g}" if r < 10 else f"{r:.1f}".rstrip("0").rstrip(".")
    return f"{r:.2g}"


def table(header: list[str], rows: Iterable[list[str]]) -> str:
    """A Markdown table."""
    out = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    out += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(out) + "\n"


def rerender(folder: Path, name: str, render: Callable[[Any], str]) -> int:
    """Write ``name``.md in ``folder`` again from ``name``.json (after a change to the page's layout;
    nothing is measured)."""
    data = json.loads((folder / f"{name}.json").read_text(encoding="utf-8"))
    (folder / f"{name}.md").write_text(render(data), encoding="utf-8")
    print(f"wrote {folder / name}.md", file=sys.stderr)
    return 0
