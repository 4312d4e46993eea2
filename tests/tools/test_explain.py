"""`symad explain`: the forward pass and the sweep, step by step."""

import json
import re

import pytest
from support.cli_helpers import run

from symad import Graph, parse
from symad.tools.explanation import ALIGN_MAX, explain


def test_seed_walkthrough_matches_the_qsts_post():
    ex = explain(parse("(x+y)+x*(x+y)", Graph()), {"x": 1, "y": 2})
    assert [(r.name, r.expr, r.value) for r in ex.rows] == [
        ("z1", "x", 1.0), ("z2", "y", 2.0), ("z3", "z1 + z2", 3.0), ("z4", "z1*z3", 3.0), ("z5", "z3 + z4", 6.0)]
    assert [r.name for r in ex.sweep] == ["z5", "z4", "z3", "z2", "z1"]
    z3 = ex.sweep[2]
    assert [(t.source, t.local) for t in z3.terms] == [("z5", "1"), ("z4", "z1")]
    assert z3.derivative == 2.0
    assert ex.result == {"x": 5.0, "y": 2.0}


@pytest.mark.parametrize("text, point", [
    ("sin(x)^2/sqrt(1+y)", {"x": 0.7, "y": 2.0}),
    ("exp(-x*y) + atan2(y, x) - x^3", {"x": 1.5, "y": -0.5}),
    ("max(x, y)*abs(x - 2*y)", {"x": 0.3, "y": 1.1}),
])
def test_explained_gradient_equals_compiled_gradient(text, point):
    e = parse(text, Graph())
    ex = explain(e, point)
    _, grad = e.compile().value_and_grad(point)
    assert list(ex.result.values()) == pytest.approx(list(grad), rel=1e-12)
    fwd = explain(e, point, "forward", {"x": 1.0})
    assert fwd.result["along"] == pytest.approx(grad[0], rel=1e-12)


def test_every_sweep_row_is_the_sum_of_its_terms():
    ex = explain(parse("x*x*sin(x*y)", Graph()), {"x": 0.4, "y": 2.0})
    for row in ex.sweep:
        if not row.seed:
            assert row.derivative == pytest.approx(sum(t.value for t in row.terms), rel=1e-15)


def test_cli_text_markdown_json():
    p = run("explain", "(x+y)+x*(x+y)", "--at", "x=1,y=2")
    assert p.returncode == 0
    assert "gradient: df/dx = z̄1 = 5, df/dy = z̄2 = 2" in p.stdout
    md = run("explain", "(x+y)+x*(x+y)", "--at", "x=1,y=2", "--markdown").stdout
    assert "| z4 | `z1*z3` | 3 |" in md
    out = json.loads(run("explain", "(x+y)+x*(x+y)", "--at", "x=1,y=2", "--json").stdout)
    assert out["gradient"] == {"x": 5.0, "y": 2.0} and len(out["forward"]) == 5
    fwd = json.loads(run("explain", "(x+y)+x*(x+y)", "--at", "x=1,y=2", "--mode", "forward",
                         "--seed", "y=1", "--json").stdout)
    assert fwd["derivative"] == 2.0 and fwd["direction"] == {"x": 0.0, "y": 1.0}


def test_cli_errors():
    p = run("explain", "x*y", "--at", "x=1,y=2", "--seed", "z=1", "--mode", "forward")
    assert p.returncode == 2 and "does not use" in p.stderr
    p = run("explain", "x*y", "--at", "x=1")
    assert p.returncode == 2 and "missing value for variable y" in p.stderr


def test_text_aligns_columns_only_up_to_align_max():
    n = 30  # x's adjoint row has n terms, far wider than ALIGN_MAX
    ex = explain(parse("+".join(f"sin(x+{k})" for k in range(1, n + 1)), Graph()), {"x": 0.5})
    text = ex.to_text()
    wide = next(line for line in text.splitlines() if line.lstrip().startswith("z̄1 = "))
    assert wide.count("*1") == 2 * n and "  " not in wide.strip()  # whole, unpadded
    assert max(map(len, re.findall(" +", text))) <= ALIGN_MAX
    sweep = [line.replace("\u0304", "") for line in text.splitlines() if line.lstrip().startswith("z̄")]
    assert len({line.rindex(" = ") for line in sweep if len(line) < 2 * ALIGN_MAX}) == 1  # the rest align
