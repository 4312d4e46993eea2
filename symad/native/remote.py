"""The parent's side of the compile worker (:mod:`symad.native.worker`).

:func:`object_code` asks the worker, started on first use, to compile IR text;
:func:`abandon` (at exit) kills it, so a compile nobody will use never holds the
process back.  Without a worker (it could not start, or died) callers compile
in-process.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

from symad.core import forksafe
from symad.runtime.background import Abandoned

__all__ = ["Abandoned", "abandon", "build_stencils", "object_code"]

_proc: list[Any] = []  # the worker's Popen, once started
_state = {"broken": False, "exiting": False}
_lock = threading.Lock()  # one request at a time


def build_stencils(folder: str) -> bool:
    """Start a process of its own that compiles the stencils (:mod:`symad.native.stencils`) into the
    code cache ``folder`` and ends: unlike the worker, it outlives this process, so that a short
    run still leaves the stencils for the next (a compile of a second or more, once a machine);
    whether it started."""
    if not sys.executable:
        return False
    env = dict(os.environ)
    root = str(Path(__file__).resolve().parents[2])
    env["PYTHONPATH"] = root + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    try:
        subprocess.Popen([sys.executable, "-m", "symad.native.build_stencils", folder],
                         stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env,
                         start_new_session=True, close_fds=True)
    except OSError:
        return False
    return True


def _worker() -> Any:
    if _proc:
        return _proc[0]
    if _state["broken"] or not sys.executable:
        return None
    env = dict(os.environ)
    root = str(Path(__file__).resolve().parents[2])  # where this copy of symad is imported from
    env["PYTHONPATH"] = root + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    try:
        proc = subprocess.Popen([sys.executable, "-m", "symad.native.worker"], stdin=subprocess.PIPE,
                                stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env,
                                start_new_session=True)  # a Ctrl-C is the parent's to handle
    except OSError:
        _state["broken"] = True
        return None
    _proc.append(proc)
    return proc


def object_code(text: str, opt: int, size: int) -> bytes | None:
    """Object code for the IR ``text`` from the worker; None if there is no worker (the
    caller compiles in-process).  Raises :class:`Abandoned` when the process is exiting."""
    with _lock:
        if _state["exiting"]:
            raise Abandoned
        proc = _worker()
        if proc is None:
            return None
        try:
            data = text.encode()
            proc.stdin.write(b"%d %d %d\n" % (opt, size, len(data)))
            proc.stdin.write(data)
            proc.stdin.flush()
            status, length = proc.stdout.readline().split()
            payload = proc.stdout.read(int(length))
            if len(payload) != int(length):
                raise EOFError
        except (OSError, ValueError, EOFError):
            if _state["exiting"]:
                raise Abandoned from None
            _stop()
            _state["broken"] = True  # it died: compile in-process from now on
            return None
        return payload if status == b"ok" else None


def _stop() -> None:
    for proc in _proc:
        try:
            proc.kill()
        except OSError:
            pass
    _proc.clear()


def abandon() -> None:
    """Drop any compile in flight and stop the worker (at exit)."""
    _state["exiting"] = True
    for proc in list(_proc):  # not under _lock: a request in flight holds it
        try:
            proc.kill()
            proc.wait(timeout=1)  # reaped: a killed process ends at once
            proc.stdin.close()
            proc.stdout.close()
        except (OSError, ValueError, subprocess.TimeoutExpired):
            pass


def _after_fork() -> None:
    global _lock
    _proc.clear()  # the parent's worker stays the parent's
    _lock = threading.Lock()


forksafe.after_fork_in_child(_after_fork)
