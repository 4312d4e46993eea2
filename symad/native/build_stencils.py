"""``python -m symad.native.build_stencils FOLDER``: compile the stencils into the code cache FOLDER.

Started by :func:`symad.native.remote.build_stencils` as a process of its own, which outlives
its parent: a short run that first needed the stencils still leaves them, compiled once a
machine, for the next (:func:`symad.native.jit.stencils_ready`).
"""

from __future__ import annotations

import sys

from symad.native import cache, jit


def build(folder: str) -> None:
    """The stencils and their entries compiled (unless already there) into the code cache ``folder``."""
    cache.set_cache_dir(folder)
    jit.stencil_objects(compile_missing=True)


if __name__ == "__main__":
    build(sys.argv[1])
