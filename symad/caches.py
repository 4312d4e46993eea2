"""One call to drop what symad keeps between calls: :func:`clear_caches`."""

from __future__ import annotations

from symad import native
from symad.expr import forget_default_graph


def clear_caches() -> None:
    """Forget compiled native code (freed once no Function uses it) and the default graph
    (its nodes are freed once no expression uses them); later calls compile again.

    Nothing else grows with use: a graph lives as long as an expression or function
    of it, and at most ``symad.native.CACHE_PROGRAMS`` native programs are kept.
    """
    native.clear_cache()
    forget_default_graph()
