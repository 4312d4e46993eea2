"""``python -m symad.native.build_stencils FOLDER``: compile the stencils into the code cache FOLDER
(and write their tables there).

Started by :func:`symad.native.remote.build_stencils` as a process of its own, which outlives
its parent: a short run that first needed the stencils still leaves them, compiled once a
machine, for the next (:func:`symad.native.jit.stencils_ready`).  Processes started together
compile them once: the first takes a lock file in FOLDER, the others end at once.
"""

from __future__ import annotations

import fcntl
import os
import sys

from symad.native import cache, jit

LOCK_NAME = "stencils.lock"


def build(folder: str) -> None:
    """The stencils and their entries compiled (unless already there) into the code cache ``folder``,
    by one process at a time (another already at it: nothing to do)."""
    cache.set_cache_dir(folder)
    with open(os.path.join(folder, LOCK_NAME), "a") as lock:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            return
        objects = jit.stencil_objects(compile_missing=True)
        if objects is not None:  # and their tables, which a process reads without parsing the object code
            jit.keep_stencil_tables(objects[0])


if __name__ == "__main__":
    build(sys.argv[1])
