"""A whole program with loops runs on NumPy while its machine code compiles in the background, under
``auto``, and the switch changes no bits; code in the cache, a large program or ``native`` get the
code at once."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import symad
from symad import native
from symad.runtime import policy
from symad.runtime.loop_tiers import LoopTier
from symad.runtime.native_loops import WholeProgram

pytestmark = pytest.mark.skipif(not native.available(), reason="no native code on this machine")

ROSENBROCK = "n = {n}; sum(i = 1..n-1, 100*(x[i+1] - x[i]^2)^2 + (1 - x[i])^2 + {c}*sin(x[i]))"
# a sum inside a body longer than a block (its blocks' sums in a stack array)
NESTED = "sum(i = 1..400, x[i]*sum(j = 1..9000, cos(y[j] - x[i])*{c}))"


@pytest.fixture
def fresh_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("SYMAD_CACHE_DIR", str(tmp_path / "cache"))
    native.clear_cache()
    yield
    native.clear_cache()


def bits(value: float, grad: np.ndarray) -> tuple[str, bytes]:
    return float(value).hex(), np.ascontiguousarray(grad).tobytes()


@pytest.mark.parametrize("text", [ROSENBROCK.format(n=20_000, c=0.31), NESTED.format(c=0.32)])
def test_numpy_serves_until_the_code_is_ready_with_the_same_bits(fresh_cache, text) -> None:
    f = symad.compile(text)
    assert isinstance(f._first, LoopTier)
    rng = np.random.default_rng(0)
    point = rng.uniform(-1, 1, f.size)
    first = bits(*f.value_and_grad(point))  # NumPy's, or the code's if the compile was quick
    assert isinstance(f._whole, WholeProgram)  # waited for
    assert bits(*f.value_and_grad(point)) == first


def test_prepare_waits_for_the_code(fresh_cache) -> None:
    f = symad.compile(ROSENBROCK.format(n=20_000, c=0.42))
    assert isinstance(f._first, LoopTier) and f.prepare() is f
    assert f._first._code is not None  # the calls from now on run on it


def test_the_interim_program_and_the_code_agree_bit_for_bit(fresh_cache) -> None:
    f = symad.compile(ROSENBROCK.format(n=30_000, c=0.34))
    tier = f._first
    assert isinstance(tier, LoopTier)
    x = np.random.default_rng(1).uniform(-2, 2, f.size)
    inputs = f.program_inputs(f.named(x, None, {}))
    numpy_parts = tier._interim.run(*inputs)
    code_parts = tier.settled().run(*inputs)
    for a, b in zip(numpy_parts, code_parts):
        assert np.asarray(a).tobytes() == np.asarray(b).tobytes()


def test_code_in_the_cache_a_large_program_and_native_get_the_code_at_once(fresh_cache, monkeypatch) -> None:
    text = ROSENBROCK.format(n=20_000, c=0.35)
    f = symad.compile(text)
    assert isinstance(f._first, LoopTier) and f._whole is not None  # compiled and stored
    native.clear_cache()  # (the disk cache still holds it)
    assert isinstance(symad.compile(text)._first, WholeProgram)
    assert isinstance(symad.compile(ROSENBROCK.format(n=20_000, c=0.36), backend="native")._first, WholeProgram)
    monkeypatch.setattr(policy, "LOOP_TIER_MAX_ROWS", 10_000)
    assert isinstance(symad.compile(ROSENBROCK.format(n=20_000, c=0.37))._first, WholeProgram)


def test_a_vector_functions_jacobian_values_are_the_same_before_and_after(fresh_cache) -> None:
    F = symad.compile(["each(i = 1..3000, x[i+1] - x[i]^2 + 0.38*y)", "sum(i = 1..3001, x[i]^2)"])
    x = np.random.default_rng(2).uniform(-1, 1, F.size)
    before = F.value_and_jacobian_values(x)
    tiers = [p for p in (F._program, F._entry_program, F._both) if isinstance(p, LoopTier)]
    assert tiers
    for tier in tiers:
        assert tier.settled() is not None
    after = F.value_and_jacobian_values(x)
    assert all(a.tobytes() == b.tobytes() for a, b in zip(before, after))


def test_a_script_ending_while_its_loops_compile_exits_at_once_and_silently(tmp_path) -> None:
    code = textwrap.dedent("""
        import numpy as np, symad
        f = symad.compile("n = 50000; sum(i = 1..n-1, 100*(x[i+1] - x[i]^2)^2 + (1 - x[i])^2 + 0.39*tanh(x[i]))")
        print(f.value_and_grad(np.full(50000, 0.5))[0])
    """)
    for _ in range(2):  # (the second may find the first's code, or compile again: both end at once)
        p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                           env=dict(os.environ, SYMAD_CACHE_DIR=str(tmp_path / "cache")))
        assert p.returncode == 0 and p.stderr == "", p.stderr


def test_a_forked_child_compiles_what_its_parent_had_not_finished(tmp_path) -> None:
    """A fork drops the parent's pool tasks in the child: the child queues the compile again (its
    code then takes over there too), whether or not the parent's had ended before the fork."""
    code = textwrap.dedent("""
        import os, numpy as np, symad
        f = symad.compile("n = 30000; sum(i = 1..n-1, 100*(x[i+1] - x[i]^2)^2 + (1 - x[i])^2 + 0.41*cos(x[i]))")
        x = np.full(30000, 0.5)
        want = f.value_and_grad(x)
        pid = os.fork()
        if pid == 0:
            got = f.value_and_grad(x)
            same = got[0] == want[0] and (got[1] == want[1]).all()
            os._exit(0 if same and f._whole is not None else 3)
        _, status = os.waitpid(pid, 0)
        print(os.waitstatus_to_exitcode(status))
    """)
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                       env=dict(os.environ, SYMAD_CACHE_DIR=str(tmp_path / "cache")))
    assert p.returncode == 0 and p.stdout.strip() == "0", (p.stdout, p.stderr)
