"""An optional on-disk cache of native machine code, so a program compiles once across runs.

Off unless a directory is given: ``SYMAD_CACHE_DIR`` in the environment, or
:func:`set_cache_dir`.  An entry is keyed by a hash of everything the machine code
depends on (the LLVM IR text, the optimisation level, the CPU and its features,
the llvmlite version), so a changed expression, symad or machine never reads a
stale entry.  Entries are written atomically and carry a checksum of their
contents: a truncated or damaged file is ignored and recompiled, never loaded.

Loading an entry runs its machine code: point the cache only at a directory that
you alone can write.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
from pathlib import Path

_MAGIC = b"symad-object-1\n"
_dir: list[Path | None] = []  # set once: from the environment, or by set_cache_dir


def cache_dir() -> Path | None:
    """The cache directory, or None when the disk cache is off (the default)."""
    if not _dir:
        env = os.environ.get("SYMAD_CACHE_DIR")
        _dir.append(Path(env).expanduser() if env else None)
    return _dir[0]


def set_cache_dir(path: str | os.PathLike[str] | None) -> None:
    """Keep native code in ``path`` (created if need be) from now on; None turns the cache off."""
    _dir[:] = [Path(path).expanduser() if path is not None else None]


def key(*parts: str) -> str:
    """The entry name for everything the machine code depends on."""
    h = hashlib.sha256()
    for part in parts:
        h.update(part.encode())
        h.update(b"\0")
    return h.hexdigest()


def load(name: str) -> bytes | None:
    """The object code stored under ``name``, if present and intact."""
    folder = cache_dir()
    if folder is None:
        return None
    try:
        blob = (folder / f"{name}.o").read_bytes()
    except OSError:
        return None
    head = len(_MAGIC) + 32
    if len(blob) < head or not blob.startswith(_MAGIC):
        return None
    payload = blob[head:]
    return payload if hashlib.sha256(payload).digest() == blob[len(_MAGIC):head] else None


def store(name: str, payload: bytes) -> None:
    """Store object code under ``name`` (atomically; a cache that cannot be written is skipped)."""
    folder = cache_dir()
    if folder is None:
        return
    try:
        folder.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=folder, prefix=".tmp-", suffix=".o")
        with os.fdopen(fd, "wb") as fh:
            fh.write(_MAGIC + hashlib.sha256(payload).digest() + payload)
        os.replace(tmp, folder / f"{name}.o")
    except OSError:
        pass  # a read-only or full disk costs a recompile next time, nothing else
