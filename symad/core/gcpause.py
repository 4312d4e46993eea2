"""Python's cyclic garbage collector paused while symad builds a large structure.

A build (parsing, a sweep, a tape, a schedule) allocates millions of small lists and tuples
that all stay alive, and creates no garbage cycles.  The collector still walks them again and
again as they pile up: at 3x10^5 variables, text to a first gradient took 29 s with it and
11 s without.  Inside :func:`paused` it does not run; it runs as usual after.
"""

from __future__ import annotations

import functools
import gc
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

F = TypeVar("F", bound=Callable[..., Any])


@contextmanager
def paused() -> Iterator[None]:
    """No cyclic collection inside the block (nested and concurrent uses are fine: the
    collector is enabled again only by the block that disabled it)."""
    if not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


def without_gc(fn: F) -> F:
    """``fn`` run inside :func:`paused`."""
    @functools.wraps(fn)
    def run(*args: Any, **kwargs: Any) -> Any:
        with paused():
            return fn(*args, **kwargs)
    return run  # type: ignore[return-value]
