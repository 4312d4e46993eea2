"""100,000-deep nesting: parse, build, differentiate, print, evaluate, with no RecursionError."""

import json
import math
import sys

import pytest
from support.cli_helpers import run

from symad import Graph, parse

pytestmark = pytest.mark.slow

DEPTH = 100_000
CASES = {
    "sum": ("(" * DEPTH + "x" + "+1)" * DEPTH, lambda x: x + DEPTH, lambda x: 1.0),
    "sin": ("sin(" * DEPTH + "x" + ")" * DEPTH, None, None),
}


@pytest.mark.parametrize("name", list(CASES))
def test_deep_nesting_through_the_api(name):
    text, value_of, grad_of = CASES[name]
    limit = sys.getrecursionlimit()
    g = Graph()
    e = parse(text, g)
    assert g.depth(e.id) == DEPTH
    d = e.diff("x")
    printed = str(e)
    assert parse(printed, g) == e
    value, grad = e.compile().value_and_grad(x=0.5)
    if value_of is not None:
        assert value == value_of(0.5) and grad[0] == grad_of(0.5)
    else:
        x, dx = 0.5, 1.0
        for _ in range(DEPTH):
            x, dx = math.sin(x), dx * math.cos(x)
        assert value == pytest.approx(x, rel=1e-12) and grad[0] == pytest.approx(dx, rel=1e-9)
    assert d.compile(variables=["x"]).value(x=0.5) == grad[0]
    assert sys.getrecursionlimit() == limit


@pytest.mark.parametrize("name", list(CASES))
def test_deep_nesting_through_the_cli(name, tmp_path):
    text, value_of, _ = CASES[name]
    path = tmp_path / "deep.txt"
    path.write_text(text)
    p = run("grad", f"@{path}", "--at", "x=0.5", "--json", timeout=300)
    assert p.returncode == 0, p.stderr[-2000:]
    out = json.loads(p.stdout)
    if value_of is not None:
        assert out["value"] == value_of(0.5) and out["grad"] == {"x": 1.0}
    stats = json.loads(run("stats", "-", "--json", stdin=text, timeout=300).stdout)
    assert stats["depth"] == DEPTH
    assert run("postfix", f"@{path}", timeout=300).returncode == 0
