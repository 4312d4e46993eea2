"""An optional on-disk cache of native machine code, so a program compiles once across runs.

Off unless a directory is given: ``SYMAD_CACHE_DIR`` in the environment, or
:func:`set_cache_dir` (an empty string, in either, means off).  An entry is named
by a hash of everything the machine code depends on (the LLVM IR text, the
optimisation level, the CPU and its features, the llvmlite version), so a changed
expression, symad or machine never reads a stale entry.

Loading an entry runs its machine code, so the cache trusts exactly this: **the
files that you (the effective user) own and that only you can write, in a
directory that you own and only you can write, reached through directories that
only you or root can change.**  Nothing else is loaded:

* the cache directory must be owned by the effective uid and not writable by
  group or others; every directory above it (symbolic links resolved) must be
  owned by that uid or root and not writable by group or others, except a
  root-owned sticky directory such as ``/tmp``;
* an entry must be a regular file (not a symbolic link, FIFO or device) owned by
  the effective uid, not writable by group or others, and at most
  :data:`MAX_ENTRY_BYTES` long; these are checked on the open file, so the file
  checked is the file read;
* an entry records the name it was stored under and a checksum of its contents:
  an entry copied or renamed to another name, or truncated or damaged, is not
  loaded.

**Size.** Each cache directory is kept under a size bound: :data:`DEFAULT_MAX_MB` (256 MB)
unless ``SYMAD_CACHE_MAX_MB`` or :func:`set_cache_max_mb` says otherwise.  A load marks
its entry used (its modification time); when a directory passes the bound, the entries
used least recently are deleted until it is back under three quarters of it.  The
directory is scanned on a process's first store, every :data:`SCAN_EVERY` stores, and when
the stores since the last scan pass the bound, never on every store.  Only entries are
deleted, never a file being written (a temporary file is deleted only once it is a day
old: what a killed process left); an entry larger than the bound is not kept.

An entry or directory refused for its owner, mode or kind is reported once per
path with a :class:`CacheWarning`, and the program is compiled instead; a damaged
entry is recompiled silently.  The checksum is not a signature: anything that
runs as you (or as root) can write an entry that will be loaded.  The directory is
created with mode 0700 and entries with mode 0600.  On a system without POSIX
owners and modes (Windows) the disk cache cannot make these checks and stays off.
"""

from __future__ import annotations

import errno
import hashlib
import os
import re
import stat
import tempfile
import threading
import time
import warnings
from pathlib import Path

from symad.core import forksafe
from symad.core.errors import SymadError

MAX_ENTRY_BYTES = 256 * 2**20
"""The largest entry loaded (256 MiB); a larger file is refused without being read."""

DEFAULT_MAX_MB = 256
"""The size bound of a cache directory, in megabytes (10^6 bytes), unless set otherwise."""
SCAN_EVERY = 100
"""Stores between two scans of a directory for its size (besides when the stores pass the bound)."""
STALE_TEMP_SECONDS = 86400  # a temporary file this old is what a killed process left

_MAGIC = b"symad-object-2\n"
_NAME = re.compile(r"[A-Za-z0-9_-]{1,200}")
_POSIX = hasattr(os, "geteuid") and hasattr(os, "O_NOFOLLOW") and os.open in os.supports_dir_fd
_dir: list[Path | None] = []  # set by set_cache_dir (else the environment says)
_warned: set[str] = set()  # paths already reported as refused
_max_mb: list[float] = []  # set by set_cache_max_mb
_usage: dict[str, tuple[int, int]] = {}  # directory: (stores since its last scan, its size then + those stores)
_usage_lock = threading.Lock()
forksafe.hold_across_fork(_usage_lock)


class CacheWarning(UserWarning):
    """A cache directory or entry was refused (not trusted); the program is compiled instead."""


def cache_dir() -> Path | None:
    """The cache directory, or None when the disk cache is off (the default)."""
    if _dir:
        return _dir[0]
    # Read at each use, not kept: a kept "unset" would read as "turned off" (see shared_dir).
    env = os.environ.get("SYMAD_CACHE_DIR")
    return Path(env).expanduser() if env else None


def set_cache_dir(path: str | os.PathLike[str] | None) -> None:
    """Keep native code in ``path`` (created, mode 0700, if need be) from now on.

    None or an empty string turns the cache off, as does an empty ``SYMAD_CACHE_DIR``.
    """
    on = path is not None and os.fspath(path) != ""
    _dir[:] = [Path(path).expanduser() if on else None]  # type: ignore[arg-type]


def set_cache_max_mb(megabytes: float | None) -> None:
    """Keep each cache directory under ``megabytes`` (10^6 bytes) from now on, deleting the
    entries used least recently; None: as ``SYMAD_CACHE_MAX_MB`` says, else :data:`DEFAULT_MAX_MB`."""
    if megabytes is None:
        _max_mb.clear()
        return
    if isinstance(megabytes, bool) or not isinstance(megabytes, (int, float)) or not 0 < megabytes < float("inf"):
        raise SymadError(f"the code cache's size bound must be a positive number of megabytes, not {megabytes!r}")
    _max_mb[:] = [float(megabytes)]


def max_bytes() -> int:
    """The size bound of a cache directory, in bytes (see :func:`set_cache_max_mb`)."""
    if _max_mb:
        return int(_max_mb[0] * 1e6)
    env = os.environ.get("SYMAD_CACHE_MAX_MB", "")
    if env:
        try:
            megabytes = float(env)
        except ValueError:
            megabytes = 0.0
        if 0 < megabytes < float("inf"):
            return int(megabytes * 1e6)
        _refuse("SYMAD_CACHE_MAX_MB", f"{env!r} is not a positive number of megabytes; "
                                      f"using {DEFAULT_MAX_MB}", compiling=False)
    return int(DEFAULT_MAX_MB * 1e6)


def key(*parts: str) -> str:
    """The entry name for everything the machine code depends on."""
    h = hashlib.sha256()
    for part in parts:
        h.update(part.encode())
        h.update(b"\0")
    return h.hexdigest()


def shared_dir() -> Path | None:
    """Where code shared by every program is kept (the instruction interpreter's: one file of
    a few KB per machine and llvmlite version): the cache directory if one is set, else the
    user's cache directory (``$XDG_CACHE_HOME/symad``, by default ``~/.cache/symad``); None
    when the cache is turned off (an empty ``SYMAD_CACHE_DIR``, ``set_cache_dir("")``) or on
    a system without POSIX owners and modes."""
    if not _POSIX:
        return None
    if _dir or "SYMAD_CACHE_DIR" in os.environ:
        return cache_dir()
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "symad" if os.path.isabs(base) else None


def writable(folder: Path) -> bool:
    """Whether entries can be stored in ``folder`` (created if need be) and will be trusted."""
    dir_fd = _open_trusted_dir(folder, create=True) if _POSIX else None
    if dir_fd is None:
        return False
    os.close(dir_fd)
    return os.access(folder, os.W_OK)


def load(name: str, folder: Path | None = None) -> bytes | None:
    """The object code stored under ``name`` (in ``folder``, by default the cache directory),
    if present, intact and trusted (see the module's notes)."""
    folder = cache_dir() if folder is None else folder
    if folder is None:
        return None
    _check_name(name)
    dir_fd = _open_trusted_dir(folder, create=False)
    if dir_fd is None:
        return None
    try:
        blob = _read_entry(dir_fd, folder / f"{name}.o")
        if blob is None:
            return None
        label = _MAGIC + name.encode() + b"\n"
        head = len(label) + 32
        if len(blob) < head or not blob.startswith(label):
            return None  # damaged, another format, or another name's entry
        payload = blob[head:]
        if _checksum(label, payload) != blob[len(label):head]:
            return None
        try:
            os.utime(f"{name}.o", dir_fd=dir_fd, follow_symlinks=False)  # used now: evicted last
        except OSError:
            pass
        return payload
    finally:
        os.close(dir_fd)


def store(name: str, payload: bytes, folder: Path | None = None) -> None:
    """Store object code under ``name`` (in ``folder``, by default the cache directory;
    atomically; a cache that cannot be written is skipped)."""
    folder = cache_dir() if folder is None else folder
    if folder is None:
        return
    _check_name(name)
    label = _MAGIC + name.encode() + b"\n"
    blob = label + _checksum(label, bytes(payload)) + bytes(payload)
    limit = max_bytes()
    if len(blob) > limit:
        return  # it would evict everything else, and then itself
    dir_fd = _open_trusted_dir(folder, create=True)
    if dir_fd is None:
        return
    os.close(dir_fd)
    tmp = None
    try:
        fd, tmp = tempfile.mkstemp(dir=folder, prefix=".tmp-", suffix=".o")  # mode 0600
        with os.fdopen(fd, "wb") as fh:
            fh.write(blob)
        os.replace(tmp, folder / f"{name}.o")
        tmp = None
    except OSError:
        return  # a read-only or full disk costs a recompile next time, nothing else
    finally:
        if tmp is not None:
            try:
                os.unlink(tmp)
            except OSError:
                pass
    _stored(folder, len(blob), limit)


def _stored(folder: Path, size: int, limit: int) -> None:
    """Count a store of ``size`` bytes in ``folder``; scan and evict when due."""
    where = str(folder)
    with _usage_lock:
        stores, estimate = _usage.get(where, (SCAN_EVERY, 0))  # a process's first store scans
        stores, estimate = stores + 1, estimate + size
        _usage[where] = (stores, estimate)
    if stores >= SCAN_EVERY or estimate > limit:
        total = evict(folder, limit)
        with _usage_lock:
            _usage[where] = (0, total)


def evict(folder: Path, limit: int | None = None) -> int:
    """Delete the entries of ``folder`` used least recently until they take at most three
    quarters of ``limit`` bytes (by default :func:`max_bytes`), if they take more than
    ``limit``; the bytes of the entries left.  Temporary files a day old go too."""
    limit = max_bytes() if limit is None else limit
    dir_fd = _open_trusted_dir(folder, create=False) if _POSIX else None
    if dir_fd is None:
        return 0
    try:
        entries, stale = [], []
        now, uid = time.time(), os.geteuid()
        with os.scandir(dir_fd) as found:
            for item in found:
                name = item.name
                if not name.endswith(".o"):
                    continue
                try:
                    st = item.stat(follow_symlinks=False)
                except OSError:
                    continue  # deleted meanwhile
                if not stat.S_ISREG(st.st_mode) or st.st_uid != uid:
                    continue  # not ours to delete (and never loaded)
                if _NAME.fullmatch(name[:-2]):
                    entries.append((st.st_mtime_ns, name, st.st_size))
                elif name.startswith(".tmp-") and now - st.st_mtime > STALE_TEMP_SECONDS:
                    stale.append(name)
        total = sum(size for _, _, size in entries)
        if total > limit:
            entries.sort()  # least recently used first
            for _, name, size in entries:
                if total <= limit * 3 // 4:
                    break
                if _unlink(name, dir_fd):
                    total -= size
        for name in stale:
            _unlink(name, dir_fd)
        return total
    except OSError:
        return 0
    finally:
        os.close(dir_fd)


def _unlink(name: str, dir_fd: int) -> bool:
    try:
        os.unlink(name, dir_fd=dir_fd)
        return True
    except FileNotFoundError:
        return True  # another process evicted it
    except OSError:
        return False


def _checksum(label: bytes, payload: bytes) -> bytes:
    return hashlib.sha256(label + payload).digest()


def _check_name(name: str) -> None:
    if not isinstance(name, str) or not _NAME.fullmatch(name):
        raise ValueError(f"not a cache entry name: {name!r}")


def _refuse(path: Path | str, reason: str, compiling: bool = True) -> None:
    """Report (once per path) that the cache will not use ``path``."""
    where = str(path)
    if where not in _warned:
        _warned.add(where)
        warnings.warn(f"symad code cache: not using {where}: {reason}{'; compiling instead' * compiling}",
                      CacheWarning, stacklevel=4)


def _untrusted(st: os.stat_result, what: str) -> str | None:
    """Why a file or directory with this status must not be trusted, or None."""
    if st.st_uid != os.geteuid():
        return f"{what} is owned by uid {st.st_uid}, not by this user (uid {os.geteuid()})"
    if st.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        return f"{what} is writable by {'group' if st.st_mode & stat.S_IWGRP else 'others'} " \
               f"(mode {stat.S_IMODE(st.st_mode):04o})"
    return None


def _open_trusted_dir(folder: Path, create: bool) -> int | None:
    """A file descriptor of the cache directory if it and the directories above it are trusted."""
    if not _POSIX:
        _refuse(folder, "this system has no POSIX file owners and modes to check")
        return None
    real = Path(os.path.realpath(folder))
    for parent in real.parents:
        try:
            st = os.stat(parent)
        except OSError:
            continue  # does not exist yet (created below) or cannot be seen: the open fails
        sticky_root = st.st_uid == 0 and st.st_mode & stat.S_ISVTX
        if st.st_uid not in (0, os.geteuid()):
            _refuse(folder, f"the directory {parent} above it is owned by uid {st.st_uid}")
            return None
        if st.st_mode & (stat.S_IWGRP | stat.S_IWOTH) and not sticky_root:
            _refuse(folder, f"the directory {parent} above it is writable by group or others "
                            f"(mode {stat.S_IMODE(st.st_mode):04o})")
            return None
    if create:
        _make_dirs(real)
    try:
        fd = os.open(real, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        return None  # no cache yet, or not a directory we can open: nothing to load
    why = _untrusted(os.fstat(fd), "the cache directory")
    if why is not None:
        os.close(fd)
        _refuse(folder, why)
        return None
    return fd


def _make_dirs(real: Path) -> None:
    """Create ``real`` and any missing directories above it, each with mode 0700."""
    missing = []
    for path in (real, *real.parents):
        if os.path.lexists(path):
            break
        missing.append(path)
    for path in reversed(missing):
        try:
            os.mkdir(path, 0o700)
        except FileExistsError:
            pass
        except OSError:
            return


def _read_entry(dir_fd: int, path: Path) -> bytes | None:
    """The bytes of one entry, read only if it is a trusted regular file of bounded size."""
    flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC  # a FIFO cannot block the open
    try:
        fd = os.open(path.name, flags, dir_fd=dir_fd)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            _refuse(path, "the entry is a symbolic link")
        return None  # absent (the usual miss) or unreadable
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            _refuse(path, "the entry is not a regular file")
            return None
        why = _untrusted(st, "the entry")
        if why is not None:
            _refuse(path, why)
            return None
        if st.st_size > MAX_ENTRY_BYTES:
            _refuse(path, f"the entry is larger than {MAX_ENTRY_BYTES} bytes")
            return None
        chunks, left = [], st.st_size + 1  # one byte more shows a file that grew
        while left > 0:
            chunk = os.read(fd, left)
            if not chunk:
                break
            chunks.append(chunk)
            left -= len(chunk)
        blob = b"".join(chunks)
        return blob if len(blob) == st.st_size else None  # changed while read: not used
    except OSError:
        return None
    finally:
        os.close(fd)
