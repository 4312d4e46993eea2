"""Run the checkout's ``symad`` command and measure its wall time and peak memory.

Used by ``tests/core/test_limits.py`` and ``benchmarks/huge_inputs/``.  Peak
memory is the child's own maximum resident set size, read with ``os.wait4``
(the ``rusage`` of exactly that process, unlike ``RUSAGE_CHILDREN``, which
is the maximum over every child so far).
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path


@dataclass
class Measured:
    """One finished run of ``symad``."""

    args: list[str]
    status: int  # exit status; -N if killed by signal N
    stdout: str
    stderr: str
    seconds: float
    peak_mb: float  # peak resident set size of the process, MiB
    timed_out: bool = False


CHECKOUT = Path(__file__).resolve().parents[2]  # the repository these tests belong to


def symad_executable() -> list[str]:
    """The checkout's ``symad`` command: this interpreter running ``-m symad``, never whatever
    ``symad`` is first on PATH (an older install, a shell shim that would be timed too).  With
    :func:`checkout_env` (or from the checkout's root, where ``-m`` looks first) it runs this
    checkout's package.  The installed console script has its own end-to-end test
    (``tests/test_packaging.py``)."""
    return [sys.executable, "-m", "symad"]


def checkout_env(**extra: str) -> dict[str, str]:
    """This process's environment, with the checkout first on ``PYTHONPATH`` and ``extra`` set."""
    path = os.pathsep.join(p for p in (str(CHECKOUT), os.environ.get("PYTHONPATH", "")) if p)
    return dict(os.environ, PYTHONPATH=path, **extra)


def run_measured(args: list[str], stdin: str | Path | None = None, timeout: float = 600) -> Measured:
    """Run ``symad ARGS`` (stdin from a file path or a string) and measure it.

    On timeout the process is killed and ``timed_out`` is set.
    """
    return measure_process(symad_executable() + list(args), stdin, timeout, env=checkout_env())


def python_measured(code: str, timeout: float = 600) -> Measured:
    """Run ``python -c CODE`` in a fresh interpreter and measure it."""
    return measure_process([sys.executable, "-c", code], None, timeout)


def _vm_hwm_kb(pid: int) -> int:
    """The process's own peak resident memory (VmHWM, KiB), or 0 if it cannot be read."""
    try:
        with open(f"/proc/{pid}/status") as fh:
            for line in fh:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1])
    except (OSError, ValueError):
        pass
    return 0


def measure_process(command: list[str], stdin: str | Path | None = None, timeout: float = 600,
                    env: dict[str, str] | None = None) -> Measured:
    """Run ``command`` with stdin from a file path or a string (and ``env``, by default this
    process's environment); its status, output, time and peak memory."""
    with tempfile.TemporaryDirectory() as tmp:
        out_path, err_path = Path(tmp, "out"), Path(tmp, "err")
        if isinstance(stdin, str):
            in_path = Path(tmp, "in")
            in_path.write_text(stdin, encoding="utf-8")
        else:
            in_path = stdin
        with open(out_path, "wb") as out, open(err_path, "wb") as err, \
                (open(in_path, "rb") if in_path else open(os.devnull, "rb")) as inp:
            start = time.perf_counter()
            proc = subprocess.Popen(command, stdin=inp, stdout=out, stderr=err, env=env)
            deadline = start + timeout
            timed_out = False
            hwm_kb = 0
            while True:
                hwm_kb = max(hwm_kb, _vm_hwm_kb(proc.pid))
                pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
                if pid:
                    break
                if time.perf_counter() > deadline:
                    proc.kill()
                    pid, status, usage = os.wait4(proc.pid, 0)
                    timed_out = True
                    break
                time.sleep(0.02)
            seconds = time.perf_counter() - start
            proc.returncode = os.waitstatus_to_exitcode(status)
        # ru_maxrss of a child starts from its parent's peak at fork on this kernel (a large
        # pytest process inflates it), so prefer the child's own VmHWM, polled while it ran.
        peak_mb = (hwm_kb or usage.ru_maxrss) / 1024
        return Measured(list(command), proc.returncode, out_path.read_text(errors="replace"),
                        err_path.read_text(errors="replace"), seconds, peak_mb, timed_out)
