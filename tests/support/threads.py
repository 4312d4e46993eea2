"""Calls from several threads at once, checked bit for bit against the results of one thread."""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np


def assert_threads_agree(call: Callable[[Any], tuple[float, np.ndarray]], points: Sequence[Any],
                         rounds: int, threads: int = 4) -> None:
    """``call(point)`` (a value and a gradient) from ``threads`` threads at once, ``rounds`` calls
    each over ``points`` in turn: every result the same bits as ``call`` gave each point first."""
    want = [call(p) for p in points]
    errors: list[int] = []

    def work(k: int) -> None:
        for r in range(rounds):
            at = (k + r) % len(points)
            value, grad = call(points[at])
            if value != want[at][0] or not np.array_equal(grad, want[at][1]):
                errors.append(k)

    workers = [threading.Thread(target=work, args=(k,)) for k in range(threads)]
    for t in workers:
        t.start()
    for t in workers:
        t.join()
    assert not errors, f"threads {sorted(set(errors))} got other results"
