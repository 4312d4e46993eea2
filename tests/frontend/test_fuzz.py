"""Fuzzing: whatever text symad is given, it parses it or says where it went wrong.

Every input goes through :func:`support.fuzz_check.check_input`: it either parses (and
then prints, round-trips, differentiates and evaluates, raising nothing but
symad's own errors) or raises :class:`symad.ParseError` with a line and column
inside the input.  Inputs come from ``tests/support/fuzz_inputs.py``: valid text
(the tests' expression generator with definitions, whitespace, odd numbers and
names, and the Lark grammar's rules expanded at random), and hostile text.  A
sample also runs through the command line, which must exit 0 or 2 and never
print a traceback.

The budget is fixed and derandomized (the same inputs every run, about a
minute in all); the terminal summary prints how many inputs were tried (see
``tests/support/fuzz_counts.py``).  ``python benchmarks/fuzz_long.py --minutes 10``
runs the same property much longer, with fresh random inputs.
"""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support.cli_helpers import run
from support.fuzz_check import (
    caret_target,
    check_cli_result,
    check_input,
    check_position,
    cli_argvs,
    offset_of,
    run_cli_in_process,
    same_number,
    variables_of,
)
from support.fuzz_counts import COUNTS
from support.fuzz_inputs import CLI_CASES, fuzz_expressions, hostile_inputs, inputs, valid_expressions

from symad import Graph, ParseError, parse
from symad.native import jit

FUZZ = dict(deadline=None, derandomize=True, database=None, print_blob=False,
            suppress_health_check=list(HealthCheck))


def _run(text: str, backend: str = "python") -> None:
    try:
        outcome = check_input(text, backend)
    except Exception as err:
        COUNTS.crash(text, err)
        raise
    COUNTS.record(outcome)


# ---------------------------------------------------------------- the property
@settings(max_examples=700, **FUZZ)
@given(valid_expressions())
@pytest.mark.slow
def test_fuzz_grammar_derived_text(text):
    """Text derived from the grammar parses (or fails a semantic check with a position) and round-trips."""
    _run(text)


@settings(max_examples=1500, **FUZZ)
@given(hostile_inputs(max_depth=400))
@pytest.mark.slow
def test_fuzz_hostile_text(text):
    """Hostile text: parses, or a ParseError with a position; never another exception."""
    _run(text)


@settings(max_examples=100, **FUZZ)
@given(fuzz_expressions())
@pytest.mark.slow
def test_fuzz_native_backend_agrees(text):
    """The same property with compiled machine code (LLVM): same numbers as the reference evaluation."""
    if not jit.available():
        pytest.skip("llvmlite is not installed")
    _run(text, backend="native")


@pytest.mark.slow
def test_fuzz_budget_was_spent():
    """The fuzz tests above really ran inputs of both outcomes (a strategy that only fails to parse is useless)."""
    if COUNTS.tried < 1000:
        pytest.skip("run together with the fuzz tests above")
    assert COUNTS.parsed >= 0.25 * COUNTS.tried
    assert COUNTS.rejected >= 0.25 * COUNTS.tried


# ---------------------------------------------------------------- known inputs
LISTED = CLI_CASES + ("١", "x\r)", "\x00" * 3, "x" * 100_000, "1/0", "0/0", "0^-1", "x/0", "log(x, 1)")


@pytest.mark.parametrize("text", LISTED, ids=[f"{k}:{t[:20]!r}" for k, t in enumerate(LISTED)])
def test_listed_inputs(text):
    _run(text)


def test_error_positions_point_at_the_culprit():
    cases = {"x*(y+": (1, 6), "x +\n  * y": (2, 3), "x − y": (1, 3), "sin(x)\n+ foo(y)": (2, 3),
             "a = x;\na = y; a": (2, 1), "(x": (1, 3), "x\n\n)": (3, 1), "x\x00": (1, 2)}
    for text, (line, column) in cases.items():
        with pytest.raises(ParseError) as info:
            parse(text, Graph())
        check_position(text, info.value)
        assert (info.value.line, info.value.column) == (line, column), text


@settings(max_examples=200, **FUZZ)
@given(st.one_of(hostile_inputs(max_depth=50), st.text(st.sampled_from("x+(*\r\n\f\x0b\x85\u2028 "), max_size=12)))
@pytest.mark.slow
def test_caret_stands_under_the_reported_character(text):
    """The message's excerpt and caret show the character at the reported line and column."""
    try:
        parse(text, Graph())
    except ParseError as err:
        pos = offset_of(text, err.line, err.column)
        if pos < len(text) and text[pos] not in "\n":
            ch, shown = text[pos], caret_target(err)
            # A character that cannot be shown may be replaced by one printable placeholder.
            ok = shown == ch or (not ch.isprintable() and shown is not None and len(shown) == 1
                                 and shown.isprintable())
            assert ok, f"{text!r}: caret under {shown!r}, error at {ch!r}:\n{err}"


def test_unicode_digits_are_not_numbers():
    """Digits of other scripts are lookalikes too: the grammar's NUMBER should be ASCII only.

    Today ``\\d`` in the NUMBER pattern matches every Unicode decimal digit, so
    ``x*２`` (fullwidth 2) or ``١`` (Arabic-Indic 1) silently parse as numbers,
    while a fullwidth parenthesis is an error with a hint.
    """
    for text in ("x*２", "١", "x + ٣"):
        with pytest.raises(ParseError):
            parse(text, Graph())


# ---------------------------------------------------------------- the command line
@settings(max_examples=120, **FUZZ)
@given(inputs(max_depth=200))
@pytest.mark.slow
def test_cli_in_process(text):
    """A sample through ``symad.cli.main.main`` (every command): exit 0 or 2, no traceback, no internal error."""
    variables = variables_of(text)
    for argv in cli_argvs(text, variables):
        status, out, err = run_cli_in_process(argv)
        try:
            check_cli_result(argv, status, out, err)
        except AssertionError:
            COUNTS.cli(False, f"{argv[0]} {text[:120]!r}: {err.strip()[-200:]}")
            raise
        COUNTS.cli(True)


def _subprocess_case(text: str) -> tuple[list[str], int, str, str]:
    variables = variables_of(text)
    at = ",".join(f"{v}=0.5" for v in variables) if variables else "x=0.5"
    if "\x00" in text or text.startswith(("-", "@")) or len(text) > 10_000:
        p = run("grad", "-", "--at", at, stdin=text, timeout=120)
        argv = ["grad", "-", "--at", at]
    else:
        p = run("grad", text, "--at", at, timeout=120)
        argv = ["grad", text, "--at", at]
    return argv, p.returncode, p.stdout, p.stderr


@pytest.mark.slow
def test_cli_subprocess_sample():
    """The installed ``symad`` command on the listed hostile inputs, in parallel subprocesses."""
    texts = list(CLI_CASES) + ["-x^2", "@nonexistent", "x\x00y", "\u2028", "（x）*２"]
    with ThreadPoolExecutor(max(2, min(6, (os.cpu_count() or 2) * 2))) as pool:
        results = list(pool.map(_subprocess_case, texts))
    bad = []
    for argv, status, out, err in results:
        try:
            check_cli_result(argv, status, out, err)
            COUNTS.cli(True)
        except AssertionError as failure:
            COUNTS.cli(False, str(failure).split("\n")[0])
            bad.append(str(failure))
    assert not bad, "\n\n".join(bad)


@pytest.mark.slow
def test_cli_reads_hostile_files(tmp_path):
    """@FILE with NUL bytes, invalid UTF-8, a directory, a missing file: exit 2 with a message."""
    (tmp_path / "nul.txt").write_bytes(b"x+\x00")
    (tmp_path / "latin1.txt").write_bytes("x*\xe9".encode("latin-1"))
    (tmp_path / "crlf.txt").write_bytes(b"a = x;\r\na*a\r\n")
    for name, status in (("nul.txt", 2), ("latin1.txt", 2), ("missing.txt", 2), ("", 2), ("crlf.txt", 0)):
        p = run("grad", f"@{tmp_path / name}", "--at", "x=2")
        check_cli_result(["grad", name], p.returncode, p.stdout, p.stderr)
        assert p.returncode == status, (name, p.stderr)


def test_value_is_same_number_helper():
    assert same_number(float("nan"), float("nan")) and not same_number(1.0, float("nan"))
    assert same_number(1.0, 1.0 + 1e-12) and not same_number(1.0, 1.001)
    assert not same_number(float("inf"), float("-inf"))


def test_error_excerpt_does_not_echo_control_characters():
    """The excerpt under an error shows the input; control characters in it must not reach the terminal raw.

    ``symad eval $'x\\x1b[31m'`` today prints the escape sequence itself in the excerpt line
    (the first line quotes it safely as '\\x1b'), so hostile input can drive the user's terminal.
    """
    for text in ("x\x1b[2J", "x\x00", "x\x07", "1+\x9b31m"):
        with pytest.raises(ParseError) as info:
            parse(text, Graph())
        message = str(info.value)
        bad = [c for c in message if (ord(c) < 32 and c != "\n") or 127 <= ord(c) < 160]
        assert not bad, f"{text!r}: raw control characters {bad!r} in\n{message!r}"


@pytest.mark.slow
def test_cli_non_utf8_stdin_is_an_error_not_a_crash():
    """Bytes that are not UTF-8 on stdin: exit 2 with a message in every locale.

    With strict decoding (``PYTHONIOENCODING=utf-8:strict``, or any UTF-8 locale other
    than C/POSIX) ``sys.stdin.read()`` raises UnicodeDecodeError: "internal error", exit 70.
    """
    import subprocess

    from support.cli_helpers import symad_command

    for env_extra in ({}, {"PYTHONIOENCODING": "utf-8:strict"}):
        p = subprocess.run(symad_command() + ["eval", "-", "--at", "x=1"], input=b"x*\xe9", capture_output=True,
                           env=dict(os.environ, **env_extra), timeout=120)
        err = p.stderr.decode(errors="replace")
        assert p.returncode == 2 and err.startswith("symad: error: "), (env_extra, p.returncode, err)


CONCURRENT_COMPILE = """
import symad
e = symad.parse("sin(" * 2000 + "x" + ")" * 2000)
print(e.compile().value_and_grad(x=0.3))  # auto: quick native code, then -O2 in a background thread
print(e.compile().value_and_grad(x=0.4))  # the same program again: a second -O2 compile meanwhile
"""


@pytest.mark.skipif(not jit.available(), reason="llvmlite is not installed")
@pytest.mark.slow
def test_concurrent_native_compiles_do_not_crash_the_process():
    """Two background LLVM compiles at once (or one still running at exit) must not kill Python.

    The script above aborts (SIGABRT, an LLVM assertion) or segfaults at exit in about
    a third of runs; three runs catch it most of the time.
    """
    import subprocess
    import sys

    def once(_):
        return subprocess.run([sys.executable, "-c", CONCURRENT_COMPILE], capture_output=True, text=True,
                              timeout=300)

    with ThreadPoolExecutor(3) as pool:
        runs = list(pool.map(once, range(3)))
    bad = [(p.returncode, p.stderr[-300:]) for p in runs if p.returncode != 0]
    assert not bad, bad
