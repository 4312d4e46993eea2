"""Compile threads: started, waited for interruptibly, and settled at exit.

LLVM compiles run in threads (llvmlite releases the interpreter lock), either in
the background while calls are interpreted, or in the foreground with the caller
waiting.  A thread still inside LLVM while the interpreter tears down aborts the
process, so exit waits for them; a Ctrl-C (now, or the one that ended the
script) ends the process at once with status 130 instead, without teardown.
"""

from __future__ import annotations

import atexit
import importlib
import os
import signal
import sys
import threading
from collections.abc import Callable
from typing import Any, TypeVar

from symad.core import forksafe

T = TypeVar("T")
_threads: list[threading.Thread] = []
_threads_lock = threading.Lock()  # compiles start from several threads (a caller's, a compile's)
forksafe.hold_across_fork(_threads_lock)


# Modules a compile imports on first use (only to compile: code from the disk cache or the
# compile worker loads without them), held by a lock that a fork waits for: a child forked
# half-way through an import in a compile thread would keep a half-initialised module for ever.
_COMPILE_IMPORTS = ("llvmlite", "llvmlite.binding")  # symad's own modules are imported at its import
_imported: list[bool] = []
_import_lock = threading.Lock()
forksafe.hold_across_fork(_import_lock)


def import_compile_modules() -> None:
    """Import llvmlite's binding to LLVM (where installed), fork-safely; once."""
    if _imported:
        return
    with _import_lock:
        if not _imported:
            for name in _COMPILE_IMPORTS:
                try:
                    importlib.import_module(name)
                except ImportError:  # llvmlite is optional: the native backend is then off
                    pass
            _imported.append(True)


def start(target: Callable[[], Any], name: str = "symad-compile", *, abandonable: bool = False) -> threading.Thread:
    """Run ``target`` in a daemon thread, waited for at exit unless ``abandonable`` (a compile
    whose result only speeds up later calls: at exit it is dropped, see :func:`on_exit`)."""

    def run() -> None:
        _local.abandonable = abandonable
        target()

    thread = threading.Thread(target=run, daemon=True, name=name)
    thread.symad_abandonable = abandonable  # type: ignore[attr-defined]
    with _threads_lock:
        _threads[:] = [t for t in _threads if t.is_alive()]
        _threads.append(thread)
    thread.start()
    return thread


def in_abandonable_thread() -> bool:
    """Whether this thread runs a compile that may be dropped at exit."""
    return getattr(_local, "abandonable", False)


_local = threading.local()


def run_interruptibly(work: Callable[[], T]) -> T:
    """``work()``, but from the main thread in a thread of its own, so that a Ctrl-C
    interrupts the wait at once (a long call into LLVM would hold it back); the work
    itself finishes in the background."""
    if threading.current_thread() is not threading.main_thread():
        return work()
    result: list[Any] = []

    def run() -> None:
        try:
            result.append((True, work()))
        except BaseException as err:  # noqa: BLE001 - handed to the waiting thread
            result.append((False, err))

    start(run, name="symad-compile-foreground").join()
    ok, value = result[0]
    if not ok:
        raise value
    return value


def alive() -> list[threading.Thread]:
    """The compile threads still running."""
    with _threads_lock:
        return [t for t in _threads if t.is_alive()]


def flush_streams() -> None:
    """Flush stdout and stderr, whatever state they are in."""
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except Exception:  # noqa: BLE001 - a closed pipe: nothing more to say
            pass


def exit_now(status: int) -> None:
    """End the process at once, streams and logs flushed, without tearing down LLVM
    under a compile thread."""
    flush_streams()
    if "logging" in sys.modules:
        sys.modules["logging"].shutdown()
    os._exit(status)


def _at_shutdown() -> None:
    # First thing at exit (before other libraries' exit hooks, where a KeyboardInterrupt
    # would be printed and ignored): while compiles run, Ctrl-C means "exit now".
    if alive() and threading.current_thread() is threading.main_thread() \
            and signal.getsignal(signal.SIGINT) is signal.default_int_handler:
        signal.signal(signal.SIGINT, lambda *_: exit_now(130))


if hasattr(threading, "_register_atexit"):  # runs as the interpreter starts to exit, before atexit
    threading._register_atexit(_at_shutdown)


_when_settled: list[Callable[[], None]] = []
_on_exit: list[Callable[[], None]] = []


def when_settled(action: Callable[[], None]) -> None:
    """Run ``action`` at exit once no compile thread is left to wait for (before modules are
    torn down)."""
    _when_settled.append(action)


def on_exit(action: Callable[[], None]) -> None:
    """Run ``action`` at exit, once the compiles that are waited for have ended, to drop the
    abandonable ones: it must leave no thread inside LLVM (the process then exits without
    waiting for them)."""
    _on_exit.append(action)


@atexit.register
def _settle() -> None:
    try:
        if getattr(sys, "last_type", None) is KeyboardInterrupt and (_threads or "llvmlite.binding" in sys.modules):
            raise KeyboardInterrupt  # what a compile cut short left behind must not be torn down either
        while True:
            # again after each wait: a compile may start another
            running = [t for t in alive() if not getattr(t, "symad_abandonable", False)]
            if not running:
                break
            for thread in running:
                thread.join()
        for action in _on_exit:
            action()
    except KeyboardInterrupt:
        exit_now(130)
    for action in _when_settled:
        action()


forksafe.after_fork_in_child(_threads.clear)  # a child has none of its parent's threads
