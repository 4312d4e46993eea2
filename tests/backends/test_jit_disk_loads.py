"""Machine code found in the disk cache is loaded on the thread that asks for it: no compile
thread, no wait for the compile lock (a compile in flight), the cache's trust rules all the same,
one program a key however many threads ask, and the same bits as the code compiled."""

from __future__ import annotations

import json
import os
import sys
import textwrap
import threading
from pathlib import Path

import numpy as np
import pytest
from support.cli_helpers import fresh_python

from symad import Graph, parse
from symad.native import cache as codecache
from symad.native import elf
from symad.native import jit as native
from symad.runtime import background

pytestmark = [pytest.mark.skipif(not native.available(), reason="llvmlite not installed"),
              pytest.mark.skipif(not hasattr(os, "geteuid"), reason="POSIX owners and modes")]
own_loader = pytest.mark.skipif(not elf.supported(), reason="symad's loader: Linux on x86-64")
TEXT = "sin(x)*y + 100*(y - x^2)^2 + cos(x*y)^3 + log1p(x^2)"


@pytest.fixture
def cache(tmp_path, monkeypatch):
    """A fresh cache directory, the in-memory programs forgotten before and after."""
    monkeypatch.setattr(codecache, "_dir", [])
    monkeypatch.setattr(codecache, "_warned", set())
    monkeypatch.setattr(codecache, "_usage", {})
    monkeypatch.delenv("SYMAD_CACHE_DIR", raising=False)
    folder = tmp_path / "cache"
    codecache.set_cache_dir(folder)
    native.clear_cache()
    yield folder
    native.clear_cache()


@pytest.fixture
def threads_started(monkeypatch):
    """The names of the compile threads started from now on."""
    started: list[str] = []
    start = background.start

    def counted(target, name="symad-compile-foreground"):
        started.append(name)
        return start(target, name)

    monkeypatch.setattr(background, "start", counted)
    return started


def schedule(text: str = TEXT):
    return parse(text, Graph()).compile(backend="python").value_grad_program().schedule


def outputs(program: native.NativeProgram, points: np.ndarray) -> np.ndarray:
    points = np.ascontiguousarray(points, dtype=np.float64)
    out = np.empty((len(points), program.n_out))
    program.batch(points.ctypes.data, out.ctypes.data, len(points))
    return out


POINTS = np.random.default_rng(3).uniform(-2, 2, (50, 2))


def asked_while_the_lock_is_held(ask) -> list:
    """``[ask()]``, asked from another thread while this one holds the compile lock (a compile
    in flight); fails if the answer waited for the lock."""
    got: list = []
    with native._compile_lock:
        asker = threading.Thread(target=lambda: got.append(ask()), daemon=True)
        asker.start()
        asker.join(30)
        assert not asker.is_alive(), "the load waited for the compile lock"
    return got


def compiled_then_forgotten(s) -> tuple[native.NativeProgram, dict]:
    """``s`` compiled (and stored on disk), then dropped from memory; the stats after."""
    program = native.compile(s)
    native.clear_cache()
    return program, native.compile_stats()


@own_loader
def test_a_disk_hit_is_loaded_on_the_calling_thread_while_a_compile_holds_the_lock(cache, threads_started):
    s = schedule()
    first, before = compiled_then_forgotten(s)
    assert threads_started and list(cache.glob("*.o"))  # the miss compiled in a thread, and was stored
    threads_started.clear()
    got = asked_while_the_lock_is_held(lambda: native.compile(s))
    assert threads_started == []
    after = native.compile_stats()
    assert after["loaded"] - before["loaded"] == 1 and after["compiles"] - before["compiles"] == 1
    assert isinstance(got[0].engine, elf.Image)
    assert np.array_equal(outputs(got[0], POINTS), outputs(first, POINTS))  # the same bits
    assert native.compile(s) is got[0]  # kept in memory


def test_a_miss_compiles_in_a_thread_of_its_own_and_stores_the_code(cache, threads_started):
    before = native.compile_stats()
    native.compile(schedule("exp(x) - y^3*x"))
    assert threads_started == ["symad-compile-foreground"]
    assert native.compile_stats()["loaded"] == before["loaded"]
    assert len(list(cache.glob("*.o"))) == 1


def test_without_a_cache_nothing_is_looked_up(cache, threads_started, monkeypatch):
    codecache.set_cache_dir("")
    monkeypatch.setattr(codecache, "load", lambda *a, **k: pytest.fail("looked up with the cache off"))
    program = native.compile(schedule("x*y + 2"))
    assert threads_started and outputs(program, POINTS)[:, 0].tolist() == (POINTS[:, 0] * POINTS[:, 1] + 2).tolist()
    assert not cache.exists()


@own_loader
def test_threads_asking_for_the_same_key_get_one_program(cache):
    s = schedule()
    first, _ = compiled_then_forgotten(s)
    ready = threading.Barrier(4)
    got: list[native.NativeProgram] = []

    def ask() -> None:
        ready.wait()
        got.append(native.compile(s))

    askers = [threading.Thread(target=ask) for _ in range(4)]
    for t in askers:
        t.start()
    for t in askers:
        t.join(60)
    assert len(got) == 4 and all(p is got[0] for p in got)
    assert np.array_equal(outputs(got[0], POINTS), outputs(first, POINTS))


def test_code_symads_loader_refuses_is_loaded_by_mcjit_under_the_lock(cache, monkeypatch, threads_started):
    s = schedule()
    first, before = compiled_then_forgotten(s)
    monkeypatch.setattr(elf, "load", lambda data: None)
    threads_started.clear()
    program = native.compile(s)
    assert not isinstance(program.engine, elf.Image)
    assert threads_started == ["symad-compile-foreground"]  # as a compile: the lock, interruptibly
    assert native.compile_stats()["loaded"] - before["loaded"] == 1
    assert np.array_equal(outputs(program, POINTS), outputs(first, POINTS))


@own_loader
def test_an_entry_the_cache_does_not_trust_is_compiled_instead(cache):
    s = schedule()
    first, before = compiled_then_forgotten(s)
    (entry,) = cache.glob("*.o")
    entry.chmod(0o620)  # group-writable: refused by the cache's rules, on this path too
    with pytest.warns(codecache.CacheWarning, match="writable by group"):
        program = native.compile(s)
    assert native.compile_stats()["loaded"] == before["loaded"]
    assert np.array_equal(outputs(program, POINTS), outputs(first, POINTS))


@own_loader
def test_the_interpreter_is_loaded_on_the_calling_thread(cache, monkeypatch, threads_started):
    monkeypatch.setattr(native, "_interpreter", [])
    compiled = native.interpreter()  # compiled (or loaded) into the shared cache, the test's directory
    assert list(cache.glob("*.o"))
    monkeypatch.setattr(native, "_interpreter", [])
    threads_started.clear()
    (loaded,) = asked_while_the_lock_is_held(native.interpreter)
    assert threads_started == [] and isinstance(loaded.engine, elf.Image)
    assert loaded is not compiled and native.interpreter() is loaded


@own_loader
def test_the_cached_interpreter_is_found_by_its_sources_without_writing_its_ir(cache, monkeypatch):
    """Writing the interpreter's IR traces the special functions' kernels (milliseconds a process):
    the cached code is looked up by the source text of the code that writes it instead."""
    monkeypatch.setattr(native, "_interpreter", [])
    native.interpreter()  # into the shared cache, the test's directory
    monkeypatch.setattr(native, "_interpreter", [])
    monkeypatch.setattr(native, "_interpreter_text", lambda: pytest.fail("the IR was written for a lookup"))
    loaded = native.interpreter()
    assert isinstance(loaded.engine, elf.Image) and " sources " in native._interpreter_key()
    # the key follows those sources: another file among them, another key
    key = native._interpreter_key()
    native._interpreter_key.cache_clear()
    monkeypatch.setattr(native, "_INTERPRETER_SOURCES", (*native._INTERPRETER_SOURCES, "symad.native.cache"))
    try:
        assert native._interpreter_key() != key
    finally:
        native._interpreter_key.cache_clear()


LOOPS = """
    import json, sys
    import numpy as np
    import symad
    from symad.indexed_function import IndexedFunction
    from symad.native import jit
    from symad.runtime import background
    started = []
    start = background.start
    background.start = lambda target, name="": started.append(name) or start(target, name)
    f = IndexedFunction(symad.parse("sum(i = 1..2000, (x[i+1] - x[i]^2)^2 + sin(i*x[i]))"))  # a loop
    x = np.linspace(-1.5, 1.5, 2001)
    value, grad = f.value_and_grad(x)
    f._whole  # its code: compiled in the background (NumPy serves the calls meanwhile), waited for here
    print(json.dumps({"value": float(value).hex(), "grad": [float(g).hex() for g in np.ravel(grad)],
                      "stats": jit.compile_stats(), "threads": len(started),
                      "modules": [m for m in ("symad.native.remote", "symad.native.stencils", "symad.native.stitcher",
                                              "subprocess", "llvmlite.binding") if m in sys.modules]}))
"""


def loops_child(folder: Path) -> dict:
    out = fresh_python(textwrap.dedent(LOOPS), env=dict(os.environ, SYMAD_CACHE_DIR=str(folder)))
    return json.loads(out.strip().splitlines()[-1])


@own_loader
def test_a_loops_program_run_again_loads_its_code_without_a_thread_and_gives_the_same_bits(tmp_path):
    """In fresh processes: the first compiles its loops' code (in the background), the second loads
    it before its first call, starting no thread and importing nothing it needs only to compile or
    to stitch code."""
    folder = tmp_path / "cache"
    first = loops_child(folder)
    assert first["stats"]["compiles"] > first["stats"]["loaded"]
    again = loops_child(folder)
    assert again["stats"]["loaded"] == again["stats"]["compiles"] > 0 and again["threads"] == 0
    assert again["modules"] == []  # nor the compile worker's client, the stitcher or LLVM imported
    assert (again["value"], again["grad"]) == (first["value"], first["grad"])


def test_a_module_imported_at_first_use_is_imported_once():
    name = "symad.native.stitcher"
    module = background.module(name)
    assert module is sys.modules[name] and background.module(name) is module
    assert background.imported(name) is module and background.imported("symad.no_such_module") is None
