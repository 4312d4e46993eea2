"""Compile threads: a small pool for background compiles, foreground threads waited for
interruptibly, and what is left settled at exit.

LLVM compiles run in threads (llvmlite releases the interpreter lock), either in
the background while calls are interpreted, or in the foreground with the caller
waiting.  Background compiles are tasks of one pool of :data:`POOL_THREADS` threads
shared by every function and objective (:func:`submit`): a task whose owner was dropped
is skipped, and at exit the queue is dropped and a task under way is abandoned (its
LLVM part runs in the compile worker, which is killed), so exit waits for none of them.
A foreground thread still inside LLVM while the interpreter tears down would abort the
process, so exit waits for those; a Ctrl-C (now, or the one that ended the script) ends
the process at once with status 130 instead, without teardown.  No lock is held across
exit: a process that forks in an exit hook (``subprocess``, a process pool) never waits
on one.
"""

from __future__ import annotations

import atexit
import importlib
import os
import signal
import sys
import threading
import weakref
from collections import deque
from collections.abc import Callable
from types import ModuleType
from typing import Any, TypeVar

from symad.core import forksafe

T = TypeVar("T")
_threads: list[threading.Thread] = []
_threads_lock = threading.Lock()  # compiles start from several threads (a caller's, a compile's)
forksafe.hold_across_fork(_threads_lock)


# Modules a compile imports on first use (only to compile: code from the disk cache or the
# compile worker loads without them), held by a lock that a fork waits for: a child forked
# half-way through an import in a compile thread would keep a half-initialised module for ever.
_COMPILE_IMPORTS = ("llvmlite", "llvmlite.binding")
_imported: list[bool] = []
_import_lock = threading.Lock()
forksafe.hold_across_fork(_import_lock)
_modules: dict[str, ModuleType] = {}  # imported by module()


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


def module(name: str) -> ModuleType:
    """The module ``name``, imported at its first use under the lock a fork waits for (as the
    compile modules are): for the parts of the native runtime that most processes never run
    (the compile worker's client, the stitcher), which code loaded from the disk cache needs not."""
    found = _modules.get(name)
    if found is None:
        with _import_lock:
            found = _modules[name] = importlib.import_module(name)
    return found


def imported(name: str) -> ModuleType | None:
    """The module ``name`` if :func:`module` has imported it, else None."""
    return _modules.get(name)


def start(target: Callable[[], Any], name: str = "symad-compile-foreground") -> threading.Thread:
    """Run ``target`` in a daemon thread of its own, waited for at exit (a compile a caller
    waits for; background compiles go to the pool: :func:`submit`).  Raises RuntimeError if
    no thread can be started."""
    thread = threading.Thread(target=target, daemon=True, name=name)
    with _threads_lock:
        _threads[:] = [t for t in _threads if t.is_alive()]
        _threads.append(thread)
    try:
        thread.start()
    except RuntimeError:  # can't start new thread
        with _threads_lock:
            _threads.remove(thread)
        raise
    return thread


def in_abandonable_thread() -> bool:
    """Whether this thread runs a compile that may be dropped at exit (a pool task)."""
    return getattr(_local, "abandonable", False)


_local = threading.local()


def run_interruptibly(work: Callable[[], T]) -> T:
    """``work()``, but from the main thread in a thread of its own, so that a Ctrl-C
    interrupts the wait at once (a long call into LLVM would hold it back); the work
    itself finishes in the background.  Where no thread can be started, ``work()`` here."""
    if threading.current_thread() is not threading.main_thread():
        return work()
    result: list[Any] = []

    def run() -> None:
        try:
            result.append((True, work()))
        except BaseException as err:  # noqa: BLE001 - handed to the waiting thread
            result.append((False, err))

    try:
        thread = start(run)
    except RuntimeError:
        return work()
    thread.join()
    ok, value = result[0]
    if not ok:
        raise value
    return value


# ------------------------------------------------------------------ the pool
# Background compiles (those nobody waits for) share POOL_THREADS threads, whatever the number
# of functions: a loop creating functions or objectives queues work, never threads.  A task
# holds its owner (a function's tier, an objective's sums) by a weak reference, so the work
# of an owner dropped before its turn is skipped; at exit the queue is dropped.
POOL_THREADS = 2
POOL_IDLE_SECONDS = 10.0  # a pool thread with nothing to do for this long ends
_pool_lock = threading.Lock()
_pool_ready = threading.Condition(_pool_lock)
_queue: deque[Task] = deque()
_running: set[Task] = set()  # tasks started, in a pool thread or in a joining caller
_pool_state = {"threads": 0, "idle": 0, "closed": False}
forksafe.hold_across_fork(_pool_lock)


class Abandoned(Exception):
    """The process is exiting: a background compile was dropped."""


class Task:
    """A piece of background work: ``target`` (a bound method, whose object is held weakly)
    run once, by a pool thread or by the first thread to :meth:`join` it before it starts."""

    def __init__(self, target: Callable[[], Any]):
        owner = getattr(target, "__self__", None)
        self._target: Callable[[], Callable[[], Any] | None] = \
            weakref.WeakMethod(target) if owner is not None else (lambda: target)  # type: ignore[arg-type]
        self._started = False
        self._done = threading.Event()

    def _claim(self) -> Callable[[], Any] | None:
        """The target, marked started, if nobody started it yet and its owner lives (under _pool_lock)."""
        if self._started:
            return None
        self._started = True
        target = self._target()
        if target is None:
            self._done.set()  # its owner is gone: nothing to do
        else:
            _running.add(self)
        return target

    def _run(self, target: Callable[[], Any], abandonable: bool) -> None:
        before = in_abandonable_thread()
        _local.abandonable = abandonable
        try:
            target()
        except Abandoned:
            pass
        except Exception as err:  # noqa: BLE001 - (the targets keep their own errors)
            if not abandonable:
                raise
            # reported as a thread's error is, and the pool thread goes on
            threading.excepthook(threading.ExceptHookArgs((type(err), err, err.__traceback__,
                                                          threading.current_thread())))
        finally:
            _local.abandonable = before
            with _pool_lock:
                _running.discard(self)
            self._done.set()

    def join(self, timeout: float | None = None) -> None:
        """Wait for the task; one not yet started runs here and now (as a compile its caller
        waits for, in-process)."""
        with _pool_lock:
            target = self._claim()
        if target is not None:
            self._run(target, abandonable=False)
        else:
            self._done.wait(timeout)

    def wait(self, timeout: float | None = None) -> bool:
        """Wait for the task without running it here; whether it has ended."""
        return self._done.wait(timeout)

    def is_alive(self) -> bool:
        """Whether the task is queued or running."""
        return not self._done.is_set()

    def _drop(self) -> None:
        self._started = True
        self._done.set()


def task(target: Callable[[], Any]) -> Task:
    """A task that runs when joined (not queued)."""
    return Task(target)


def submit(target: Callable[[], Any]) -> Task:
    """Queue ``target`` (a bound method, its object held weakly) for the pool, as an abandonable
    compile; the task.  Once the process is exiting the task is dropped at once."""
    job = Task(target)
    with _pool_lock:
        if _pool_state["closed"]:
            job._drop()
            return job
        _queue.append(job)
        if _pool_state["idle"]:
            _pool_ready.notify()
        if len(_queue) > _pool_state["idle"] and _pool_state["threads"] < POOL_THREADS:
            _add_pool_thread()
    return job


def _add_pool_thread() -> None:
    # Under _pool_lock.  A thread that cannot start leaves the work queued: the next submit
    # tries again, and a caller that needs the result runs it by joining.
    thread = threading.Thread(target=_pool_work, daemon=True, name="symad-compile")
    try:
        thread.start()
    except RuntimeError:
        return
    _pool_state["threads"] += 1


def _pool_work() -> None:
    while True:
        with _pool_lock:
            while not _queue and not _pool_state["closed"]:
                _pool_state["idle"] += 1
                woken = _pool_ready.wait(POOL_IDLE_SECONDS)
                _pool_state["idle"] -= 1
                if not woken and not _queue:
                    break
            if not _queue or _pool_state["closed"]:
                _pool_state["threads"] -= 1
                return
            job = _queue.popleft()
            target = job._claim()
        if target is not None:
            job._run(target, abandonable=True)
            del target


def pool_threads() -> int:
    """The pool's threads now."""
    with _pool_lock:
        return _pool_state["threads"]


def _close_pool() -> None:
    """At exit: drop the queued tasks; none starts from now on."""
    with _pool_lock:
        _pool_state["closed"] = True
        while _queue:
            _queue.popleft()._drop()
        _pool_ready.notify_all()


def _reset_pool_after_fork() -> None:
    # A child has none of its parent's threads: the work they queued or ran never ends
    # there, so its tasks end now (their owners start again if need be).
    global _pool_ready
    _pool_ready = threading.Condition(_pool_lock)
    for job in [*_queue, *_running]:
        job._done = threading.Event()
        job._drop()
    _queue.clear()
    _running.clear()
    _pool_state.update(threads=0, idle=0)


def alive() -> list[threading.Thread]:
    """The foreground compile threads still running."""
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
    if (alive() or _running) and threading.current_thread() is threading.main_thread() \
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
    """Run ``action`` at exit, once the pool's queue is dropped and the foreground compiles
    have ended, to abandon the pool's tasks under way: it must leave no thread inside LLVM
    (the process then exits without waiting for them) and no lock held."""
    _on_exit.append(action)


@atexit.register
def _settle() -> None:
    busy = bool(_threads or _running) or "llvmlite.binding" in sys.modules
    _close_pool()  # clears _running: what was running is read before
    try:
        if getattr(sys, "last_type", None) is KeyboardInterrupt and busy:
            raise KeyboardInterrupt  # what a compile cut short left behind must not be torn down either
        while True:
            # again after each wait: a compile may start another
            running = alive()
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


def _after_fork() -> None:
    _threads.clear()  # a child has none of its parent's threads
    _reset_pool_after_fork()


forksafe.after_fork_in_child(_after_fork)
