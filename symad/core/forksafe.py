"""Locks that survive ``fork``: a child process gets every symad lock back unlocked.

``fork`` copies only the thread that calls it.  A lock that another thread held at
that moment stays locked in the child for ever, so its first compile or batch would
hang.  Objects with a ``_lock`` attribute register here and the child gets fresh
locks; locks guarding state that must not be copied half-changed are instead held
across the fork (:func:`hold_across_fork`), so the child sees the state whole.  A lock held
across forks must only ever be held for a moment: never for ever (not even from exit on,
where an exit hook may still fork, start a subprocess or a process pool).
"""

from __future__ import annotations

import os
import threading
import weakref
from collections.abc import Callable

_holders: weakref.WeakSet = weakref.WeakSet()


def register(holder: object) -> None:
    """Give ``holder._lock`` back unlocked in a forked child."""
    _holders.add(holder)


def hold_across_fork(*locks: threading.Lock) -> None:
    """Acquire ``locks`` (in this order) before a fork and release them after, in both
    processes: the fork waits until no thread is inside them."""

    def before() -> None:
        for lock in locks:
            lock.acquire()

    def after() -> None:
        for lock in reversed(locks):
            lock.release()

    os.register_at_fork(before=before, after_in_parent=after, after_in_child=after)


def after_fork_in_child(action: Callable[[], None]) -> None:
    """Run ``action`` in a forked child before it does anything else."""
    os.register_at_fork(after_in_child=action)


def _fresh_locks() -> None:
    for holder in list(_holders):
        holder._lock = threading.Lock()  # type: ignore[attr-defined]


os.register_at_fork(after_in_child=_fresh_locks)
