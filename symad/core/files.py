"""Writing files whole or not at all: every file symad writes goes through :func:`write_atomically`.

The data goes to a temporary file beside the target, is flushed to the disk (fsync), and the
temporary file is renamed over the target (``os.replace``, atomic on POSIX and Windows): a
full disk, a file-size limit or a killed process leaves the old file as it was, never a
truncated one.  A process killed mid-write may leave its temporary file
(``.NAME.XXXXXXXX.tmp``, beside the target) behind, never a part of the target.
"""

from __future__ import annotations

import os
import secrets
import stat

from symad.core.errors import SymadError


def write_atomically(path: str | os.PathLike[str], data: str | bytes, encoding: str = "utf-8") -> None:
    """Write ``data`` (text, written in ``encoding``, or bytes) to ``path``, replacing it atomically.

    A symbolic link is written through (its target is replaced); a target that is not a
    regular file (``/dev/null``, a named pipe) is written directly, as it cannot be renamed
    over.  A new file gets the usual mode (0666 less the umask), a replaced one keeps its
    mode.  An error is a SymadError ``cannot write PATH: REASON``, the target untouched.

    >>> import pathlib, tempfile
    >>> p = pathlib.Path(tempfile.mkdtemp()) / "f.txt"
    >>> write_atomically(p, "x^2\\n"); p.read_text()
    'x^2\\n'
    """
    shown = os.fspath(path)
    raw = data.encode(encoding) if isinstance(data, str) else bytes(data)
    try:
        try:
            st: os.stat_result | None = os.stat(path)
        except FileNotFoundError:
            st = None
        if st is not None and not stat.S_ISREG(st.st_mode):
            with open(path, "wb") as fh:  # a device or a pipe (/dev/stdout): nothing to rename over
                fh.write(raw)
            return
        _replace(os.path.realpath(path), raw, None if st is None else stat.S_IMODE(st.st_mode))
    except OSError as err:
        raise SymadError(f"cannot write {shown}: {err.strerror or err}") from None


def _replace(target: str, raw: bytes, mode: int | None) -> None:
    """Write ``raw`` to a new temporary file beside ``target``, fsync it, rename it over ``target``."""
    folder, base = os.path.split(target)
    while True:
        temporary = os.path.join(folder, f".{base}.{secrets.token_hex(4)}.tmp")
        try:  # O_EXCL: never another's file; mode 0666 less the umask, as open() would give
            fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0), 0o666)
            break
        except FileExistsError:
            continue
    try:
        try:
            view = memoryview(raw)
            while view:
                view = view[os.write(fd, view):]
            if mode is not None:
                os.chmod(temporary, mode)
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(temporary, target)
    except BaseException:  # a full disk, a file-size limit, a Ctrl-C: the target stays as it was
        try:
            os.unlink(temporary)
        except OSError:
            pass
        raise
    _sync_folder(folder)


def _sync_folder(folder: str) -> None:
    """Flush the rename to the disk (POSIX; best effort: some file systems refuse)."""
    if not hasattr(os, "O_DIRECTORY"):
        return
    try:
        fd = os.open(folder or ".", os.O_RDONLY | os.O_DIRECTORY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)
