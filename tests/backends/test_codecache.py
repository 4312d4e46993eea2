"""The on-disk code cache loads only entries it can trust, reads them boundedly, and writes them cleanly."""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys
import textwrap
import threading
import warnings
from pathlib import Path

import pytest
from support.cli_helpers import fresh_python

import symad
from symad.native import cache as codecache
from symad.native import jit as native

NOBODY = 65534
PAYLOAD = b"\x7fELF not really machine code" * 10
posix_only = pytest.mark.skipif(not hasattr(os, "geteuid"), reason="POSIX owners and modes")
as_root = pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0, reason="chown needs root")
pytestmark = posix_only


@pytest.fixture
def cache(tmp_path, monkeypatch):
    """A fresh cache directory (not yet created), with the once-per-path warnings forgotten."""
    monkeypatch.setattr(codecache, "_dir", [])
    monkeypatch.setattr(codecache, "_warned", set(), raising=False)
    monkeypatch.setattr(codecache, "_max_mb", [])
    monkeypatch.setattr(codecache, "_usage", {})
    monkeypatch.delenv("SYMAD_CACHE_DIR", raising=False)
    monkeypatch.delenv("SYMAD_CACHE_MAX_MB", raising=False)
    folder = tmp_path / "cache"
    codecache.set_cache_dir(folder)
    return folder


def entry(folder: Path, name: str) -> Path:
    return folder / f"{name}.o"


def refused(name: str, match: str) -> None:
    """``load(name)`` returns nothing and warns, naming why."""
    with pytest.warns(UserWarning, match=match):
        assert codecache.load(name) is None


# ---------------------------------------------------------------- what is trusted


def test_a_good_entry_round_trips_and_is_private(cache):
    name = codecache.key("ir", "O2")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert codecache.load(name) is None  # no directory yet: a plain miss, no warning
        codecache.store(name, PAYLOAD)
        assert codecache.load(name) == PAYLOAD
    assert stat.S_IMODE(entry(cache, name).stat().st_mode) == 0o600


def test_the_directory_and_missing_parents_are_created_0700(tmp_path, cache):
    deep = tmp_path / "a" / "b" / "cache"
    codecache.set_cache_dir(deep)
    codecache.store("k", PAYLOAD)
    for folder in (tmp_path / "a", tmp_path / "a" / "b", deep):
        assert stat.S_IMODE(folder.stat().st_mode) == 0o700, folder
    assert codecache.load("k") == PAYLOAD


def test_an_empty_directory_name_means_off(cache, monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)
    codecache.set_cache_dir("")
    assert codecache.cache_dir() is None
    codecache.store("k", PAYLOAD)
    assert list(tmp_path.iterdir()) == []  # nothing written to the working directory
    monkeypatch.setattr(codecache, "_dir", [])
    monkeypatch.setenv("SYMAD_CACHE_DIR", "")
    assert codecache.cache_dir() is None


def test_a_world_writable_directory_is_refused(cache):
    codecache.store("k", PAYLOAD)
    os.chmod(cache, 0o777)
    refused("k", rf"{cache}.*writable by (group|others)")


def test_a_group_writable_directory_is_refused(cache):
    codecache.store("k", PAYLOAD)
    os.chmod(cache, 0o770)
    refused("k", "writable by group")


@as_root
def test_a_foreign_owned_directory_is_refused(cache):
    codecache.store("k", PAYLOAD)
    os.chown(cache, NOBODY, NOBODY)
    refused("k", rf"{cache}.*owned by uid {NOBODY}")


def test_a_world_writable_parent_is_refused_but_a_root_owned_sticky_one_is_allowed(tmp_path, cache):
    parent = tmp_path / "shared"
    codecache.set_cache_dir(parent / "cache")
    codecache.store("k", PAYLOAD)
    os.chmod(parent, 0o777)
    refused("k", rf"directory {parent} above it is writable")
    if os.geteuid() == 0:  # a root-owned sticky directory, like /tmp
        os.chmod(parent, 0o1777)
        codecache._warned.clear()
        assert codecache.load("k") == PAYLOAD


@as_root
def test_a_foreign_owned_entry_is_refused(cache):
    codecache.store("k", PAYLOAD)
    os.chown(entry(cache, "k"), NOBODY, NOBODY)
    refused("k", rf"{entry(cache, 'k')}.*owned by uid {NOBODY}")


def test_a_group_writable_entry_is_refused(cache):
    codecache.store("k", PAYLOAD)
    os.chmod(entry(cache, "k"), 0o620)
    refused("k", rf"{entry(cache, 'k')}.*writable by group")


def test_a_symlinked_entry_is_refused(cache, tmp_path):
    codecache.store("k", PAYLOAD)
    elsewhere = tmp_path / "elsewhere.o"
    entry(cache, "k").rename(elsewhere)  # a well-formed entry, owned by us: only the link is wrong
    entry(cache, "k").symlink_to(elsewhere)
    refused("k", "symbolic link")


def test_an_entry_renamed_to_another_key_is_refused(cache):
    """Code stored for one expression is never run for another, even if the file is ours."""
    codecache.store("first", PAYLOAD)
    codecache.store("second", b"other code" * 10)
    shutil.copyfile(entry(cache, "second"), entry(cache, "first"))
    assert codecache.load("first") is None
    assert codecache.load("second") == b"other code" * 10


def test_a_refusal_warns_once_per_path(cache):
    codecache.store("k", PAYLOAD)
    os.chmod(entry(cache, "k"), 0o666)
    refused("k", "writable by")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert codecache.load("k") is None


def test_names_cannot_leave_the_directory(cache):
    with pytest.raises(ValueError):
        codecache.load("../elsewhere")
    with pytest.raises(ValueError):
        codecache.store("a/b", PAYLOAD)


# ---------------------------------------------------------------- bounded reads


def test_a_fifo_entry_returns_promptly(cache):
    codecache.store("other", PAYLOAD)  # the directory exists and is trusted
    fifo = entry(cache, "k")
    os.mkfifo(fifo, 0o600)
    result: list = []
    worker = threading.Thread(target=lambda: result.append(codecache.load("k")), daemon=True)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        worker.start()
        worker.join(timeout=10)
    if worker.is_alive():  # unblock the stuck reader before failing
        os.close(os.open(fifo, os.O_RDWR | os.O_NONBLOCK))
        worker.join(timeout=10)
        pytest.fail("load() blocked on a FIFO")
    assert result == [None]
    assert any("not a regular file" in str(w.message) for w in caught)


def run_with_memory_cap(script: str, env: dict[str, str]) -> subprocess.CompletedProcess:
    """``script`` in a fresh interpreter limited to 1 GiB of address space and 60 s."""
    prelude = "import resource; resource.setrlimit(resource.RLIMIT_AS, (2**30, 2**30))\n"
    return subprocess.run([sys.executable, "-c", prelude + textwrap.dedent(script)], env=env,
                          capture_output=True, text=True, timeout=60)


def child_env(folder: Path) -> dict[str, str]:
    """The environment of a fresh process using this checkout of symad and ``folder`` as its cache."""
    root = str(Path(symad.__file__).resolve().parent.parent)
    path = os.pathsep.join(p for p in (root, os.environ.get("PYTHONPATH", "")) if p)
    return {**os.environ, "PYTHONPATH": path, "SYMAD_CACHE_DIR": str(folder), "PYTHONWARNINGS": "default"}


def test_an_entry_linked_to_dev_zero_is_refused_without_reading(cache):
    codecache.store("other", PAYLOAD)
    entry(cache, "k").symlink_to("/dev/zero")
    done = run_with_memory_cap("""
        from symad.native import cache as codecache
        print(codecache.load("k"))
    """, child_env(cache))
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "None"
    assert "symbolic link" in done.stderr


@as_root
def test_a_device_entry_is_refused_without_reading(cache):
    codecache.store("other", PAYLOAD)
    try:
        os.mknod(entry(cache, "k"), stat.S_IFCHR | 0o600, os.makedev(1, 5))  # another /dev/zero
    except OSError:
        pytest.skip("cannot make device nodes here")
    done = run_with_memory_cap("""
        from symad.native import cache as codecache
        print(codecache.load("k"))
    """, child_env(cache))
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "None"
    assert "not a regular file" in done.stderr


def test_an_entry_larger_than_the_cap_is_refused(cache, monkeypatch):
    codecache.store("k", PAYLOAD)
    monkeypatch.setattr(codecache, "MAX_ENTRY_BYTES", 100)
    refused("k", "larger than 100 bytes")


# ---------------------------------------------------------------- clean writes


def test_a_failed_rename_leaves_no_temporary_file(cache, monkeypatch):
    codecache.store("first", PAYLOAD)

    def full(*args, **kwargs):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", full)
    codecache.store("k", PAYLOAD)
    monkeypatch.undo()
    assert sorted(p.name for p in cache.iterdir()) == ["first.o"]


def test_a_failed_write_leaves_no_temporary_file(cache, monkeypatch):
    codecache.store("first", PAYLOAD)
    real = os.fdopen

    class Full:
        def __init__(self, fh):
            self.fh = fh

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            self.fh.close()

        def write(self, data):
            raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "fdopen", lambda *a, **k: Full(real(*a, **k)))
    codecache.store("k", PAYLOAD)
    monkeypatch.undo()
    assert sorted(p.name for p in cache.iterdir()) == ["first.o"]


# ---------------------------------------------------------------- a bounded size


def entry_bytes(name: str, payload: bytes = PAYLOAD) -> int:
    return len(b"symad-object-2\n" + name.encode() + b"\n") + 32 + len(payload)


def aged(folder: Path, names: list[str]) -> None:
    """Give ``names`` (in this order) modification times a minute apart, an hour ago."""
    for k, name in enumerate(names):
        moment = 1_700_000_000 + 60 * k
        os.utime(entry(folder, name), (moment, moment))


def test_a_directory_is_kept_under_its_bound_least_recently_used_first(cache):
    """Entries were never evicted (7,246 files, 30 MB, after 20 s of objectives in a loop)."""
    size = entry_bytes("k00")
    codecache.set_cache_max_mb(10.5 * size / 1e6)  # room for ten entries
    names = [f"k{k:02d}" for k in range(10)]
    for name in names:
        codecache.store(name, PAYLOAD)
    aged(cache, names)
    assert codecache.load("k00") == PAYLOAD  # used: now the most recent
    codecache.store("k10", PAYLOAD)  # past the bound: back under three quarters of it
    left = sorted(p.stem for p in cache.glob("*.o"))
    assert "k00" in left and "k10" in left and "k01" not in left and "k02" not in left
    assert len(left) * size <= 0.75 * 10.5 * size
    for name in [f"m{k:03d}" for k in range(200)]:
        codecache.store(name, PAYLOAD)
        assert sum(p.stat().st_size for p in cache.glob("*.o")) <= codecache.max_bytes()


def test_eviction_leaves_files_being_written_and_files_not_its_own(cache):
    codecache.set_cache_max_mb(2 * entry_bytes("k0") / 1e6)
    codecache.store("k0", PAYLOAD)
    writing, stale = cache / ".tmp-writing.o", cache / ".tmp-killed.o"
    writing.write_bytes(PAYLOAD * 100)
    stale.write_bytes(PAYLOAD)
    os.utime(stale, (1_000_000_000, 1_000_000_000))  # left by a process killed long ago
    (cache / "notes.txt").write_bytes(PAYLOAD * 100)
    for k in range(1, 5):
        codecache.store(f"k{k}", PAYLOAD)
    assert writing.exists() and (cache / "notes.txt").exists() and not stale.exists()
    assert len(list(cache.glob("k*.o"))) <= 2


def test_the_directory_is_scanned_every_so_many_stores_not_on_each(cache, monkeypatch):
    scans = []
    real = codecache.evict
    monkeypatch.setattr(codecache, "evict", lambda folder, limit=None: scans.append(1) or real(folder, limit))
    for k in range(2 * codecache.SCAN_EVERY + 5):
        codecache.store(f"k{k}", PAYLOAD)
    assert len(scans) == 3  # the process's first store, then every SCAN_EVERY
    codecache.set_cache_max_mb(3 * entry_bytes("k0") / 1e6)
    for k in range(5):
        codecache.store(f"n{k}", PAYLOAD)  # the stores pass the bound: scanned at once
    assert len(list(cache.glob("*.o"))) <= 3


def test_the_size_bound_is_set_by_environment_or_setter(cache, monkeypatch):
    assert codecache.max_bytes() == codecache.DEFAULT_MAX_MB * 10**6
    monkeypatch.setenv("SYMAD_CACHE_MAX_MB", "1.5")
    assert codecache.max_bytes() == 1_500_000
    codecache.set_cache_max_mb(2)
    assert codecache.max_bytes() == 2_000_000
    codecache.set_cache_max_mb(None)
    monkeypatch.setenv("SYMAD_CACHE_MAX_MB", "lots")
    with pytest.warns(codecache.CacheWarning, match="SYMAD_CACHE_MAX_MB.*'lots' is not a positive number"):
        assert codecache.max_bytes() == codecache.DEFAULT_MAX_MB * 10**6
    for bad in (0, -1, float("nan"), "5", True):
        with pytest.raises(symad.SymadError, match="positive number of megabytes"):
            codecache.set_cache_max_mb(bad)


def test_an_entry_larger_than_the_bound_is_not_kept(cache):
    codecache.store("small", PAYLOAD)
    codecache.set_cache_max_mb(entry_bytes("big", PAYLOAD * 2) / 2e6)
    codecache.store("big", PAYLOAD * 2)
    assert codecache.load("big") is None and codecache.load("small") == PAYLOAD


# ---------------------------------------------------------------- end to end: planted code never runs

CHILD = """
    import json, sys
    import symad
    from symad.native import jit as native
    f = symad.compile(sys.argv[1], backend="native")
    print(json.dumps({"value": f.value([0.5, 2.0]), "loaded": native.compile_stats()["loaded"]}))
"""
FIRST, SECOND = "sin(x)*y + x^2", "cos(x) - y*x"


def child(expression: str, folder: Path) -> tuple[dict, str]:
    done = subprocess.run([sys.executable, "-c", textwrap.dedent(CHILD), expression], env=child_env(folder),
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1]), done.stderr


def entries_of_each(folder: Path) -> tuple[Path, Path, float, float]:
    """Compile FIRST then SECOND in fresh processes: each one's single entry and value."""
    first, _ = child(FIRST, folder)
    (a,) = folder.glob("*.o")
    second, _ = child(SECOND, folder)
    (b,) = set(folder.glob("*.o")) - {a}
    assert first["value"] != second["value"]
    again, _ = child(FIRST, folder)  # the cache works: loaded, same number
    assert again == {"value": first["value"], "loaded": 1}
    return a, b, first["value"], second["value"]


native_only = pytest.mark.skipif(not native.available(), reason="llvmlite not installed")


@native_only
@pytest.mark.slow
def test_another_expressions_entry_copied_over_an_entry_is_not_run(cache):
    a, b, want, _ = entries_of_each(cache)
    shutil.copyfile(b, a)  # our own file, our own mode: only the name it was stored under differs
    got, _ = child(FIRST, cache)
    assert got == {"value": want, "loaded": 0}


@native_only
@as_root
@pytest.mark.slow
def test_a_planted_entry_owned_by_another_user_is_not_run(cache):
    """Another user's file under the right name, well-formed for it, holding other code: refused."""
    a, b, want, _ = entries_of_each(cache)
    planted = codecache.load(b.stem)
    assert planted is not None
    codecache.store(a.stem, planted)  # as symad would write it for that name...
    os.chown(a, NOBODY, NOBODY)  # ...but by someone else
    got, err = child(FIRST, cache)
    assert got == {"value": want, "loaded": 0}
    assert f"not using {a}" in err and f"owned by uid {NOBODY}" in err


# ---------------------------------------------------------------- the interpreter's shared code

INTERPRETER = """
    import json
    import numpy as np
    import symad
    from symad.native import jit as native
    text = "+".join(f"100*(x{i+1}-x{i}^2)^2+(1-x{i})^2" for i in range(1, 20))
    f = symad.compile(text)
    value, grad = f.value_and_grad(np.linspace(0.5, 1.5, 20))
    print(json.dumps({"value": value, "grad": grad.tolist(), "tier": "vm" if f._value_grad.vm else "other",
                      "stats": native.compile_stats()}))
"""


def interpreter_child(env: dict[str, str]) -> dict:
    return json.loads(fresh_python(textwrap.dedent(INTERPRETER), env=env).strip().splitlines()[-1])


@native_only
def test_the_interpreter_is_compiled_once_a_machine_and_loaded_after(tmp_path):
    """Without SYMAD_CACHE_DIR the interpreter's optimised code goes to the user's cache directory
    (XDG_CACHE_HOME): the first process compiles it, the next ones load it, with the same numbers."""
    env = {k: v for k, v in os.environ.items() if k != "SYMAD_CACHE_DIR"}
    env["XDG_CACHE_HOME"] = str(tmp_path / "xdg")
    first = interpreter_child(env)
    (entry_path,) = (tmp_path / "xdg" / "symad").glob("*.o")
    assert stat.S_IMODE(entry_path.stat().st_mode) == 0o600
    assert first["tier"] == "vm" and first["stats"]["loaded"] == 0
    second = interpreter_child(env)
    assert second["stats"]["loaded"] == 1
    assert (second["value"], second["grad"]) == (first["value"], first["grad"])


@native_only
def test_an_empty_cache_dir_keeps_the_interpreter_off_disk(tmp_path):
    """SYMAD_CACHE_DIR="" turns every disk cache off: the interpreter is compiled (quick code) in
    each process and nothing is written, not even to the user's cache directory."""
    env = dict(os.environ, SYMAD_CACHE_DIR="", XDG_CACHE_HOME=str(tmp_path / "xdg"))
    for _ in range(2):
        out = interpreter_child(env)
        assert out["stats"]["loaded"] == 0 and out["tier"] == "vm"
    assert not (tmp_path / "xdg").exists()


@native_only
def test_an_unwritable_cache_still_gives_an_interpreter(tmp_path):
    """A cache directory that is not trusted (group-writable) is not used: quick code, a warning
    at most, the same numbers."""
    folder = tmp_path / "shared"
    folder.mkdir(mode=0o770)
    folder.chmod(0o770)
    env = dict(os.environ, SYMAD_CACHE_DIR=str(folder))
    out = interpreter_child(env)
    assert out["tier"] == "vm" and not list(folder.glob("*.o"))
    reference = interpreter_child(dict(os.environ, SYMAD_CACHE_DIR=""))
    assert (out["value"], out["grad"]) == (reference["value"], reference["grad"])
