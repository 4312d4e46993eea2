"""Public API of the pictures (implemented in :mod:`symad.tools.viz`)."""

from symad.tools.viz import MAX_NODES, DotNotFoundError, to_digraph, write

__all__ = ["MAX_NODES", "DotNotFoundError", "to_digraph", "write"]
