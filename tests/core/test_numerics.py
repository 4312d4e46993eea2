"""Numerical edge cases (``tests/support/numerics_table.py``, documented in ``docs/reference/numerics.md``):
every backend, single points and batches, and the command line give the documented numbers."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from support.cli_helpers import run
from support.fuzz_check import run_cli_in_process
from support.numerics_table import DOC, ROWS, markdown, variables

from symad import Graph, parse
from symad.native import jit as native

BACKENDS = ["auto", "python"] + (["native"] if native.available() else [])


def same(got: float, want: float) -> bool:
    """Bit-for-bit the documented number (nan equals nan; the sign of zero and of inf counts)."""
    if math.isnan(want):
        return math.isnan(got)
    return got == want and math.copysign(1.0, got) == math.copysign(1.0, want)


def _ids():
    return [f"{expr} at {point}" for expr, point, *_ in ROWS]


@pytest.mark.parametrize("expr, point, value, partials, why", ROWS, ids=_ids())
def test_api(expr, point, value, partials, why):
    g = Graph()
    e = parse(expr, g)
    names = variables(point)
    assert list(e.variables) == names
    for backend in BACKENDS:
        fn = e.compile(backend=backend)
        v, grad = fn.value_and_grad({k: point[k] for k in names})
        got = [v, *map(float, grad)]
        want = [value, *partials]
        assert all(map(same, got, want)), f"{backend}: {got} != {want} ({why})"
        assert same(fn.value({k: point[k] for k in names}), value), backend
        if names:  # a batch of the same point twice, one vectorised pass
            bv, bg = fn.value_and_grad({k: np.array([point[k]] * 2) for k in names})
            for j in range(2):
                row = [float(bv[j]), *map(float, bg[j])]
                assert all(map(same, row, want)), f"{backend} batch: {row} != {want}"
    # The symbolic partials, compiled on their own, agree with the compiled gradient.
    for name, d in zip(names, partials):
        got = e.diff(name).compile(variables=names, backend="python").value({k: point[k] for k in names})
        assert same(got, d), (name, got, d)


def _json_number(v):
    return float(v) if not isinstance(v, str) else float(v.replace("−", "-"))


@pytest.mark.parametrize("expr, point, value, partials, why", ROWS, ids=_ids())
def test_cli_agrees(expr, point, value, partials, why):
    """``symad grad EXPR --at ... --json`` (in process) prints the same numbers, warns when non-finite."""
    names = variables(point)
    argv = ["grad", expr, "--json"] + (["--at", ",".join(f"{k}={point[k]!r}" for k in names)] if names else [])
    status, out, err = run_cli_in_process(argv)
    assert status == 0, err
    obj = json.loads(out)
    assert same(_json_number(obj["value"]), value)
    assert list(obj["grad"]) == names
    assert all(same(_json_number(obj["grad"][k]), d) for k, d in zip(names, partials)), obj
    nonfinite = not all(map(math.isfinite, [value, *partials]))
    assert bool(obj.get("warnings")) == nonfinite, obj


def test_installed_command_agrees_on_a_sample():
    for expr, at in (("sqrt(x)", "x=0"), ("x^y", "x=0,y=2"), ("1/x", "x=-0.0")):
        p = run("grad", expr, "--at", at, "--json")
        status, out, _ = run_cli_in_process(["grad", expr, "--at", at, "--json"])
        assert p.returncode == status == 0
        assert json.loads(p.stdout) == json.loads(out)


def test_doc_is_generated_from_the_table():
    assert DOC.read_text(encoding="utf-8") == markdown(), "run: python tests/support/numerics_table.py"
