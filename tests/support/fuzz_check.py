"""The fuzzing property: what symad must do with *any* text.

:func:`check_input` is the one check every fuzzed input goes through, in the
test suite (``tests/frontend/test_fuzz.py``) and in the long run
(``benchmarks/fuzz_long.py``).  Either

* the text parses, and then the expression prints in every form, each printed
  form parses back to the same node, every partial derivative can be taken
  and printed (and parses back too), and value and gradient evaluate at two
  points, agreeing with a node-by-node reference evaluation of the DAG; only
  symad's own errors (:class:`symad.SymadError`) may be raised on the way;
* or it raises :class:`symad.ParseError` whose line and column lie inside the
  text.

Anything else (another exception, a wrong round trip, a wrong number) raises
``AssertionError`` or propagates, which is a failure of the test.
"""

from __future__ import annotations

import contextlib
import io
import json
import math
import sys

import numpy as np

import symad
from symad import Graph, ParseError, SymadError, parse
from symad.core.ops import OPS
from symad.core.semantics import SMALL_POWERS

# Past this many tree nodes printing the inline form (exponential in the DAG) is skipped.
INLINE_TREE_LIMIT = 20_000
REL_TOL = 1e-9


class Skip(Exception):
    """Not a failure: the example cannot be checked further (e.g. no comparable value)."""


# ---------------------------------------------------------------- positions
def offset_of(text: str, line: int, column: int) -> int:
    """The offset of 1-based ``line``/``column``, lines separated by ``\\n`` as the parser counts them."""
    lines = text.split("\n")
    return sum(len(s) + 1 for s in lines[: line - 1]) + column - 1


def check_position(text: str, err: ParseError) -> None:
    """The error's line and column point inside ``text`` (or just past its end)."""
    assert isinstance(err.line, int) and isinstance(err.column, int), (err.line, err.column)
    lines = text.split("\n")
    assert 1 <= err.line <= len(lines), f"line {err.line} outside 1..{len(lines)}: {err}"
    assert 1 <= err.column <= len(lines[err.line - 1]) + 1, \
        f"column {err.column} outside 1..{len(lines[err.line - 1]) + 1} of line {err.line}: {err}"
    message = str(err)  # rendering must not fail either
    assert f"at line {err.line}, column {err.column}" in message, message
    pos = offset_of(text, err.line, err.column)
    if err.reason.startswith("unexpected character "):
        assert pos < len(text) and repr(text[pos]) in err.reason, (err.reason, text[pos: pos + 1])
    elif err.reason == "unexpected end of input":
        assert text[pos:].strip() == "", f"end of input reported at offset {pos} of {len(text)}"


def caret_target(err: ParseError) -> str | None:
    """The character the rendered message's caret stands under (None if nothing is shown)."""
    parts = str(err).split("\n")
    if len(parts) < 3:
        return None
    snippet, caret = parts[-2][2:], parts[-1][2:]
    col = len(caret) - 1
    return snippet[col] if col < len(snippet) else ""


# ---------------------------------------------------------------- reference evaluation
def _small_power(g: Graph, node: int) -> int | None:
    if g.op[node] != "pow":
        return None
    b = g.args[node][1]
    if g.op[b] == "const" and g.data[b] in SMALL_POWERS:
        return int(g.data[b])
    return None


def reference_values(g: Graph, roots: list[int], point: dict[str, float], numpy: bool) -> list[float]:
    """The roots' values from a plain loop over the DAG with the op table's functions.

    ``numpy=False`` models one point: ``math`` functions on floats, and if any
    raises, NumPy scalars for the whole point (what symad documents).  Small
    integer powers are products, as every backend computes them.
    """
    def run(use_py: bool) -> list[float]:
        values: dict[int, float] = {}
        for n in g.reachable(roots):
            op = g.op[n]
            if op == "const":
                values[n] = g.data[n]  # type: ignore[assignment]
                continue
            if op == "var":
                values[n] = point[g.data[n]]  # type: ignore[index]
                continue
            args = [values[a] for a in g.args[n]]
            if not use_py:
                args = [np.float64(a) for a in args]
            k = _small_power(g, n)
            if k is not None:
                prod = args[0]
                for _ in range(abs(k) - 1):
                    prod = prod * args[0]
                values[n] = float(prod if k > 0 else 1.0 / prod)
            else:
                fn = OPS[op].py if use_py else OPS[op].np
                values[n] = float(fn(*args))
        return [values[r] for r in roots]

    if not numpy:
        try:
            return run(True)
        except (ArithmeticError, ValueError):
            pass
    with np.errstate(all="ignore"):
        return run(False)


def same_number(got: float, want: float, rel: float = REL_TOL) -> bool:
    """Equal within ``rel`` (relative, with a tiny absolute floor), or both the same non-finite value."""
    if math.isnan(want) or math.isnan(got):
        return math.isnan(want) and math.isnan(got)
    if math.isinf(want) or math.isinf(got):
        return got == want
    return abs(got - want) <= rel * max(abs(got), abs(want)) + 1e-300


def _ill_conditioned(g: Graph, roots: list[int], point: dict[str, float]) -> bool:
    """Whether a relative perturbation of 1e-12 of every input moves some root a lot (then not compared)."""
    base = reference_values(g, roots, point, numpy=True)
    for sign in (1, -1):
        moved = {k: v * (1 + sign * 1e-12) for k, v in point.items()}
        other = reference_values(g, roots, moved, numpy=True)
        if not all(same_number(a, b, 1e-7) for a, b in zip(base, other)):
            return True
    return False


# ---------------------------------------------------------------- the property
def check_roundtrip(e: symad.Expr) -> None:
    """Every printed form of ``e`` parses back to ``e`` (same graph, same node)."""
    g = e.graph
    auto = str(e)
    assert parse(auto, g) == e, f"round trip: {auto[:300]!r} is not the same node"
    shared = e.to_text("shared")
    assert parse(shared, g) == e, f"round trip (shared): {shared[:300]!r}"
    if g.tree_size(e.id) <= INLINE_TREE_LIMIT:
        inline = e.to_text("inline")
        assert parse(inline, g) == e, f"round trip (inline): {inline[:300]!r}"
    assert repr(e).startswith("Expr(")


def points_for(variables: tuple[str, ...]) -> list[dict[str, float]]:
    """Two points: moderate distinct values, and an edge point (zeros, a negative, a large value)."""
    moderate = {v: 0.3 + 0.17 * k for k, v in enumerate(variables)}
    edges = (0.0, -1.0, 1e300, -0.0, 2.0, 1e-300)
    edge = {v: edges[k % len(edges)] for k, v in enumerate(variables)}
    return [moderate, edge]


def check_evaluation(e: symad.Expr, partials: dict[str, symad.Expr], backend: str = "auto") -> None:
    """Value and gradient at two points, single and batched, against the reference evaluation."""
    variables = e.variables
    fn = e.compile(backend=backend)
    roots = [e.id, *(partials[v].id for v in variables)]
    for k, point in enumerate(points_for(variables)):
        try:
            value = fn.value(point)
            v2, grad = fn.value_and_grad(point)
            batch_v, batch_g = fn.value_and_grad({v: np.array([point[v], point[v]]) for v in variables}) \
                if variables else (np.array([v2, v2]), np.zeros((2, 0)))
        except SymadError:
            return  # a documented refusal (a limit): allowed
        got = [v2, *map(float, grad)]
        assert isinstance(value, float) and isinstance(v2, float)
        assert same_number(value, v2, 1e-12), f"value() {value!r} != value_and_grad()[0] {v2!r} at {point}"
        for j in range(2):
            row = [float(batch_v[j]), *map(float, batch_g[j])]
            for a, b in zip(row, got):
                assert same_number(a, b, 1e-6), \
                    f"batch {row} != single point {got} at {point}"
        if k:  # the edge point: only "no exception" and self-consistency
            continue
        want = reference_values(e.graph, roots, point, numpy=False)
        bad = [(r, a, b) for r, a, b in zip(roots, got, want) if not same_number(a, b)]
        if bad and not _ill_conditioned(e.graph, roots, point):
            want_np = reference_values(e.graph, roots, point, numpy=True)
            still = [r for r, a, b in zip(roots, got, want_np) if not same_number(a, b)]
            assert not still, f"compiled {got} != reference {want} at {point} (nodes {still})"


def check_parsed(e: symad.Expr, backend: str = "auto") -> None:
    """Everything a parsed expression must support without a foreign exception."""
    check_roundtrip(e)
    partials = e.grad()
    assert set(partials) == set(e.variables)
    for d in partials.values():
        check_roundtrip(d)
    if e.variables:
        direction = {v: 1.0 for v in e.variables}
        check_roundtrip(e.jvp(direction))
    stats = e.stats()
    assert stats["dag_nodes"] >= 1
    check_evaluation(e, partials, backend)


def check_input(text: str, backend: str = "auto") -> str:
    """Run the property on ``text``; returns ``"parsed"`` or ``"rejected"``, raises on a failure.

    ``backend`` is the compiled functions' backend (``"python"`` keeps a test
    budget free of LLVM compile times)."""
    g = Graph()
    try:
        e = parse(text, g)
    except ParseError as err:
        check_position(text, err)
        return "rejected"
    check_parsed(e, backend)
    return "parsed"


# ---------------------------------------------------------------- the CLI, in process
def run_cli_in_process(argv: list[str], stdin: str = "") -> tuple[int, str, str]:
    """``symad ARGV`` through :func:`symad.cli.main.main` with captured output: (status, stdout, stderr).

    Standard input is ``stdin`` (a text stream), so an EXPR of ``-`` reads it, never the test runner's."""
    from symad.cli.main import main as cli
    from symad.core.limits import LIMITS

    saved = (LIMITS.max_input_chars, LIMITS.max_nodes, LIMITS.max_program_ops)
    saved_stdin = sys.stdin
    out, err = io.StringIO(), io.StringIO()
    try:
        sys.stdin = io.StringIO(stdin)
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            status = cli(argv)
    finally:
        sys.stdin = saved_stdin
        LIMITS.max_input_chars, LIMITS.max_nodes, LIMITS.max_program_ops = saved
    return status, out.getvalue(), err.getvalue()


def cli_argvs(text: str, variables: tuple[str, ...] | None = None) -> list[list[str]]:
    """The commands a fuzzed text is run through on the command line."""
    argvs = [["postfix", text], ["stats", text, "--json"], ["diff", text]]
    if variables is not None:
        at = ",".join(f"{v}=0.5" for v in variables) or "x=1"
        argvs.append(["grad", text, "--at", at])
        argvs.append(["eval", text, "--at", at, "--json"])
    else:
        argvs.append(["grad", text, "--at", "x=0.5,y=2"])
    return argvs


def variables_of(text: str) -> tuple[str, ...] | None:
    """The variables of ``text`` if it parses, else None."""
    try:
        return parse(text, Graph()).variables
    except SymadError:
        return None


def check_cli_result(argv: list[str], status: int, stdout: str, stderr: str) -> None:
    """Exit status 0 or 2, no traceback, no internal error, an error message when it fails."""
    shown = f"symad {' '.join(repr(a[:80]) for a in argv)}"
    assert "Traceback" not in stderr, f"{shown}: traceback\n{stderr[-3000:]}"
    assert "internal error" not in stderr, f"{shown}: {stderr[-1000:]}"
    assert status in (0, 2), f"{shown}: exit status {status}\n{stderr[-1000:]}"
    if status == 2 and "--json" in argv:  # the error is one JSON object on stdout
        error = json.loads(stdout)["error"]
        assert error["type"] != "InternalError" and error["message"], f"{shown}: {stdout[:500]!r}"
    elif status == 2:
        assert stderr.startswith("symad: error: ") or "usage:" in stderr, f"{shown}: {stderr[:500]!r}"
