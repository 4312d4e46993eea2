"""The interpreted first tier (symad.backends.tape) and the tiering of Function(backend="auto")."""

from __future__ import annotations

import threading

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from support.expressions import expressions, points
from support.properties import graph_invariants, property_test, text_variables

import symad
from symad.backends.tape import Tape
from symad.core.dag import Graph
from symad.native import jit as native
from symad.runtime import policy
from symad.runtime.program import faster
from symad.runtime.tiering import COMPILE_AFTER_CALLS

COMPILED = ["python", "native"] if native.available() else ["python"]


def tape_of(e: symad.Expr, names: list[str]) -> Tape:
    return Tape(e.graph, e.id, [e.graph.var(n) for n in names])


def outputs(value, grad) -> np.ndarray:
    return np.array([value, *grad], dtype=float)


def assert_same(got: np.ndarray, want: np.ndarray, backend: str, context) -> None:
    """Bit for bit, nan matching nan, whichever backend (one semantics: docs/reference/numerics.md)."""
    assert np.array_equal(got, want, equal_nan=True), (context, backend, got, want)


@pytest.mark.parametrize("text", [
    "(x+y)+x*(x+y)", "sin(x)^2/sqrt(1+y)", "x^3*y^-2 + x^4 - y^-3 + x^0.5*y^2.5 + x^-1",
    "atan2(y,x) + max(x,y)*min(x,2) + abs(x-y)", "tanh(x)*cosh(y) + sinh(x*y) + exp(-x)*log(y)",
    "x/y - y/x + 1/(x*y)", "asin(x/3) + acos(y/4) + atan(x*y) + tan(x)", "2^x*x^y", "sign(x)*step(y) + x",
    "log(x, 2)", "1/(x-x) + y", "log(x-1) * y",
    # partials the symbolic gradient folds to numbers: 1/c, out*log(1) → 0, step(x - x) → 0.5
    "asin(1^x)*y", "x/inf + y/4 + 1/(1-x)", "min(x, x)*max(y, y)/(x-1)",
    # a zero partial (sign) cuts the chain: asin's partial at 1 (1/0) must not run and force NumPy
    "sinh(atan(asin(sign(x)))) + y",
])
def test_tape_gives_the_compiled_numbers_bit_for_bit(text):
    e = symad.parse(text, Graph())
    names = ["x", "y"]
    tape = tape_of(e, names)
    fns = [e.compile(names, backend=b) for b in COMPILED]
    rng = np.random.default_rng(1)
    pts = [*rng.uniform(-3, 3, (40, 2)), np.array([0.0, 0.0]), np.array([1.0, 0.0]), np.array([-0.0, 1.0]),
           np.array([np.inf, 1.0]), np.array([1.0, np.nan])]
    for p in pts:
        got = outputs(*tape.value_and_grad(p.tolist()))
        for fn in fns:
            assert_same(got, outputs(*fn.value_and_grad(p)), fn.backend, (text, p))
        assert np.array_equal(got[:1], [tape.value(p.tolist())], equal_nan=True)
    X = rng.uniform(-3, 3, (50, 2))
    value, grad = tape.value_and_grad(list(X.T))
    got = np.stack(np.broadcast_arrays(value, *grad), axis=-1)
    for fn in fns:
        v, g = fn.value_and_grad(X)
        assert_same(got, np.column_stack([v, g]), fn.backend, text)


@pytest.mark.slow
def test_tape_matches_compiled_code_on_random_expressions(property_tally):
    """The tape and the compiled backends agree to the last bit (nan with nan) at random points."""
    tally = property_tally("random expressions: interpreted tape vs compiled backends")

    @property_test(600)
    @given(text=expressions(sums=True), data=st.data())
    def check(text, data):
        e = symad.parse(text, Graph())
        names = list(text_variables(text))
        point = data.draw(points(tuple(names), special=data.draw(st.booleans())), label="point")
        x = np.array([point[n] for n in names], dtype=float)
        tally.tried += 1
        got = outputs(*tape_of(e, names).value_and_grad(x.tolist()))
        for backend in COMPILED:
            want = outputs(*e.compile(names, backend=backend).value_and_grad(x))
            try:
                assert_same(got, want, backend, (text, point))
            except AssertionError:
                tally.mismatch(f"{text} at {point} ({backend})")
                raise
        tally.count(text)

    check()


def test_auto_tiers_instructions_then_compiled_code():
    """A function kept for a loop runs on instructions from its first call (no compile yet);
    once they have served what a compile costs, compiled code takes over; the same bits."""
    e = symad.parse("sin(x)*y + 100*(y-x^2)^2 + exp(x*y)/(1+x^2)", Graph())
    want = e.compile(backend="python").value_and_grad(x=1.0, y=2.0)
    f = e.compile()
    tiers = f._value_grad
    first = f.value_and_grad(x=1.0, y=2.0)
    assert outputs(*first).tolist() == outputs(*want).tolist()
    assert tiers.vm is not None and tiers.thread is None and f._tape is None  # instructions only
    assert tiers.vm.size >= policy.NATIVE_MIN_OPS
    x = np.array([1.0, 2.0])
    while tiers.vm_calls < tiers.vm_calls_before_compile - 1:
        assert outputs(*f.value_and_grad(x)).tolist() == outputs(*first).tolist()
    assert tiers.thread is None
    f.value_and_grad(x)
    assert tiers.thread is not None  # paid for: compiling in the background
    f.prepare()
    assert tiers.program is not None and f._value.program is not None
    assert outputs(*f.value_and_grad(x=1.0, y=2.0)).tolist() == outputs(*first).tolist()


def test_a_one_shot_function_interprets_first_and_never_compiles_in_the_background():
    e = symad.parse("sin(x)*y + 100*(y-x^2)^2 + exp(x*y)/(1+x^2)", Graph())
    f = e.compile(background=False)
    tiers = f._value_grad
    first = f.value_and_grad(x=1.0, y=2.0)
    assert tiers.vm is None and tiers.program is None and f._tape is not None  # the tape: nothing built
    for _ in range(COMPILE_AFTER_CALLS):
        assert outputs(*f.value_and_grad(x=1.0, y=2.0)).tolist() == outputs(*first).tolist()
    assert tiers.vm is not None
    x = np.array([1.0, 2.0])
    for _ in range(tiers.vm_calls_before_compile + 1):
        f.value_and_grad(x)
    assert tiers.thread is None and tiers.program is None


def test_auto_compiles_a_small_program_at_the_second_call(monkeypatch):
    """Under NATIVE_MIN_OPS operations, in a process that has not loaded the interpreter, Python
    code is compiled at the second call, on the caller's thread (a fraction of a millisecond: a
    background thread waited for the GIL while the caller's loop ran, so calls 2 to ~1,500 ran on
    the tape); where the interpreter is loaded, the instructions serve (test_native.py)."""
    import symad.native

    monkeypatch.setattr(symad.native, "interpreter_ready", lambda: False)
    f = symad.parse("x*y + 1", Graph()).compile()
    tiers = f._value_grad
    f.value_and_grad(x=1.0, y=2.0)
    assert tiers.thread is None and tiers.program is None
    assert f.value_and_grad(x=1.0, y=2.0)[0] == 3.0
    assert tiers.vm is None and tiers.thread is None  # no background work
    assert tiers.program is not None and tiers.program.size < policy.NATIVE_MIN_OPS
    assert tiers.floats is not None and f.value_and_grad(np.array([1.0, 2.0]))[1].tolist() == [2.0, 1.0]


def test_a_small_program_takes_the_instructions_once_another_program_loaded_them(monkeypatch):
    """Decided at its first call without the interpreter, a small program does not build its
    Python code (whose Program would then compile -O2 code on the caller's thread) once another
    program has loaded the interpreter: the instructions serve it from then on."""
    import symad.native

    ready = [False]
    monkeypatch.setattr(symad.native, "interpreter_ready", lambda: ready[0])
    f = symad.parse("x*y + 1", Graph()).compile()
    tiers = f._value_grad
    x = np.array([1.0, 2.0])
    f.value_and_grad(x)
    ready[0] = True  # another program loaded it
    for _ in range(3):
        assert f.value_and_grad(x)[0] == 3.0
    assert tiers.program is None and tiers.thread is None and tiers.vm is not None


def test_forced_backends_compile_on_first_use():
    e = symad.parse("x*y", Graph())
    for backend in COMPILED:
        f = e.compile(backend=backend)
        f.value_and_grad(x=1.0, y=2.0)
        assert f._value_grad.program is not None and f._tape is None


def test_a_large_batch_waits_for_compiled_code_and_a_small_one_does_not():
    e = symad.parse("100*(y-x^2)^2 + (1-x)^2", Graph())
    f = e.compile()
    small = np.random.default_rng(2).uniform(-2, 2, (10, 2))
    f.value_and_grad(small)
    assert f._value_grad.program is None
    big = np.random.default_rng(3).uniform(-2, 2, (policy.NATIVE_BATCH_POINTS, 2))
    v, g = f.value_and_grad(big)
    assert f._value_grad.program is not None
    want_v, want_g = e.compile(backend="python").value_and_grad(big)
    assert np.array_equal(v, want_v) and np.array_equal(g, want_g)


def test_a_program_over_the_limit_keeps_the_interpreter_serving():
    e = symad.parse("sin(x)*cos(y) + x*y", Graph())
    f = e.compile()
    with symad.core.limits.override(max_program_ops=5):  # the value has 5 operations; with the gradient more
        want = f.value_and_grad(x=1.0, y=2.0)
        got = f.value_and_grad(x=1.0, y=2.0)  # starts the compile, which fails on the limit
        f._value_grad.thread.join()
        assert outputs(*got).tolist() == outputs(*want).tolist()
        with pytest.raises(symad.LimitError, match="over the limit of 5"):
            f.value_grad_program()
        assert outputs(*f.value_and_grad(x=1.0, y=2.0)).tolist() == outputs(*want).tolist()


def test_background_gradient_and_foreground_parsing_keep_one_node_per_key(monkeypatch):
    """The background compile adds gradient nodes while this thread parses into the same graph."""
    g = Graph()
    fns = [symad.parse(f"sin(x{k})*x{k + 1}^3/(1+x{k}^2) + exp(x{k + 2}*x{k})", g).compile() for k in range(30)]
    for fn in fns:
        fn.value_and_grad(np.ones(len(fn.variables)))
        fn.value_and_grad(np.ones(len(fn.variables)))  # starts a background compile
    for k in range(300):
        symad.parse(f"cos(x{k % 40})*x{k % 7}^3/(1+x{k % 40}^2) + exp(x{k % 5}*x{k % 40})", g).grad()
    for fn in fns:
        fn.prepare()
    assert graph_invariants(g) == []
    for fn in fns:
        x = np.linspace(0.5, 1.5, len(fn.variables))
        want = fn.expr.compile(backend="python").value_and_grad(x)
        assert outputs(*fn.value_and_grad(x)).tolist() == outputs(*want).tolist()


def test_graph_interning_is_thread_safe():
    g = Graph()
    x = g.var("x")

    def build(offset: int) -> None:
        for k in range(2000):
            g.make("add", g.make("mul", x, g.const(float(k % 500))), g.const(float(offset)))

    threads = [threading.Thread(target=build, args=(t % 2,)) for t in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert graph_invariants(g) == []


def test_quick_code_is_optimised_only_once_its_calls_have_paid(monkeypatch):
    """A program past NATIVE_SYNC_OPS gets quick -O0 code first; -O2 is compiled in the background
    only after the quick code's calls have cost what that compile will (ski rental), then swapped in."""
    from symad.runtime import program as program_mod
    monkeypatch.setattr(policy, "NATIVE_SYNC_OPS", 10)
    monkeypatch.setattr(policy, "compile_seconds",
                        lambda size, opt: 50 * (policy.CALL_S + policy.QUICK_S_PER_OP * size))
    monkeypatch.setattr(program_mod, "faster", lambda *args: True)  # (which is faster: the next test)
    e = symad.parse("+".join(f"(1-x{i})^2 + 100*(x{i + 1}-x{i}^2)^2" for i in range(4)), Graph())
    p = program_mod.Program(e.graph, [e.id], [e.graph.var(v) for v in e.variables], "auto")
    quick = p.native
    x = np.linspace(-1, 1, len(e.variables))
    want = p.point(x).tolist()
    for _ in range(48):
        assert p.point(x).tolist() == want
    assert p._compiling is None and p.native is quick  # 49 calls: not paid yet
    p.point(x)
    assert p._compiling is not None  # the 50th starts -O2
    p.wait_native()
    assert p.native is not quick and p.point(x).tolist() == want


@pytest.mark.parametrize("optimised_faster", [True, False])
def test_optimised_code_replaces_quick_code_only_where_it_runs_faster(monkeypatch, optimised_faster):
    """When -O2 code arrives, both codes are timed at a point of the calls that paid for it, and
    the faster serves (stitched code can beat -O2 code); the counting wrapper goes either way."""
    from symad.runtime import program as program_mod
    monkeypatch.setattr(policy, "NATIVE_SYNC_OPS", 10)
    monkeypatch.setattr(policy, "quick_calls_before_optimising", lambda size: 3)
    timed = []

    def faster(first, second, x, n_out):
        timed.append(x.copy())
        return optimised_faster

    monkeypatch.setattr(program_mod, "faster", faster)
    e = symad.parse("+".join(f"(1-x{i})^2 + 100*(x{i + 1}-x{i}^2)^2" for i in range(4)), Graph())
    p = program_mod.Program(e.graph, [e.id], [e.graph.var(v) for v in e.variables], "auto")
    quick = p.native
    x = np.linspace(-1, 1, len(e.variables))
    want = p.point(x).tolist()
    p.point(x)
    p.point(x)  # the third call starts -O2
    p.wait_native()
    assert len(timed) == 1 and timed[0].tolist() == x.tolist()
    assert (p.native is not quick) == optimised_faster
    assert p.call is p.native.call and p.point(x).tolist() == want


def test_the_faster_of_two_calls_is_found():
    """Two calls, one 300 times the other's time on a clock they advance (no real timing: the
    test cannot depend on the machine's load), and one the process waited through once: the
    faster one is found, either way round."""
    x = np.zeros(3)
    now = [0.0]
    waits = [1.0]  # one block of the quick call waits a whole second

    def clock():
        return now[0]

    def quick(x, rest):
        now[0] += 1e-7 + waits.pop() if waits else 1e-7
        return 0.0

    def slow(x, rest):
        now[0] += 3e-5
        return 0.0

    assert faster(quick, slow, x, 2, clock=clock)
    waits.append(1.0)
    assert not faster(slow, quick, x, 2, clock=clock)


def test_prepare_waits_for_optimised_code_however_few_the_calls(monkeypatch):
    """`prepare()` means compiled and optimised now: quick code's -O2 compile does not wait for
    calls to pay for it there."""
    monkeypatch.setattr(policy, "NATIVE_SYNC_OPS", 10)
    f = symad.parse("+".join(f"(1-x{i})^2 + 100*(x{i + 1}-x{i}^2)^2" for i in range(4)), Graph()).compile()
    f.prepare()
    program = f._value_grad.program
    assert program.size > 10 and program._compiling is not None and not program._compiling.is_alive()
    assert program.call is program.native.call  # the -O2 code's own entry, no counting wrapper
