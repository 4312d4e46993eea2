"""symad explain over sums kept as loops: the top level, each loop's body at one iteration, the
gather, and partials equal to symad grad's, bit for bit."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from support.cli_helpers import run

import symad
from symad import Graph, SymadError

ROSENBROCK = "n = {n}; sum(i = 1..n-1, 100*(x[i+1] - x[i]^2)^2 + (1 - x[i])^2)"


def point_list(n: int) -> list[float]:
    return [round(math.cos(k), 2) for k in range(1, n + 1)]  # short numbers: one argument of the command


TEN_THOUSAND = "n = 10000; log(1 + sum(i = 1..n-1, 100*(x[i+1] - x[i]^2)^2 + (1 - x[i]*i/n)^2)) + y*x[3]"
AT = f"x=[{','.join(map(str, point_list(10_000)))}],y=2"


@pytest.fixture(scope="module")
def grad_at_ten_thousand() -> dict:
    grad = run("grad", TEN_THOUSAND, "--at", AT, "--json")
    assert grad.returncode == 0, grad.stderr
    return json.loads(grad.stdout)


@pytest.mark.parametrize("iteration", [None, 3, 5000, 10000])
def test_explain_gathers_the_partials_symad_grad_prints_at_ten_thousand(iteration, grad_at_ten_thousand) -> None:
    text, at, want = TEN_THOUSAND, AT, grad_at_ten_thousand
    args = ["explain", text, "--at", at, "--json", *([] if iteration is None else ["--iteration", str(iteration)])]
    r = run(*args)
    assert r.returncode == 0, r.stderr
    got = json.loads(r.stdout)
    k = 1 if iteration is None else iteration
    assert got["gradient"][f"x[{k}]"] == want["grad"][f"x[{k}]"] and got["gradient"]["y"] == want["grad"]["y"]
    assert [row["id"] for row in got["forward"]][0] == "z1" and got["loops"][0]["range"] == [1, 9999]
    assert got["loops"][0]["iteration"] == min(k, 9999)
    terms = got["gather"][f"x[{k}]"]
    assert [t["entry"] for t in terms] == ["x[i + 1]", "x[i]", *(["x[3]"] if k == 3 else [])]
    # the edges: x[1] is no x[i + 1], x[10000] no x[i] of the range
    assert (terms[0]["iteration"] is None) == (k == 1) and (terms[1]["iteration"] is None) == (k == 10_000)
    assert math.isclose(sum(t["value"] for t in terms), want["grad"][f"x[{k}]"], rel_tol=1e-12, abs_tol=1e-300)


def test_explain_at_a_million_entries() -> None:
    text = ROSENBROCK.format(n=1_000_000)
    r = run("explain", text, "--at", "x=0.5", "--iteration", "500000")
    assert r.returncode == 0, r.stderr
    f = symad.compile(symad.parse(text, Graph()))
    grad = f.grad(np.full(1_000_000, 0.5))
    assert r.stdout.rstrip().endswith(f"gradient: df/dx[500000] = {symad.parse(repr(float(grad[499_999])))}")
    assert "its body at i = 500000 (of 1..999999):" in r.stdout
    assert "df/dx[500000] = x[i + 1] at i = 499999 + x[i] at i = 500000 = 50 + (-51) = -1" in r.stdout
    js = json.loads(run("explain", text, "--at", "x=0.5", "--iteration", "1000000", "--json").stdout)
    assert js["gradient"]["x[1000000]"] == float(grad[-1]) == 50.0


def test_the_python_explain_takes_loops_too() -> None:
    e = symad.parse(ROSENBROCK.format(n=20_000), Graph())
    out = symad.explain(e, {"x": np.linspace(-1, 1, 20_000)}, iteration=7)
    want = symad.compile(e).grad(np.linspace(-1, 1, 20_000))
    assert out.gradient["x[7]"] == want[6]
    assert out.loops[0].body.rows[0].expr == "x[i + 1]" and out.loops[0].iteration == 7
    assert "body of z1 at i = 7" in out.to_text()


def test_what_explain_does_not_show_over_loops_says_so() -> None:
    text = ROSENBROCK.format(n=20_000)
    for extra, message in ((["--mode", "forward"], "reverse mode"), (["--markdown"], "--json"),
                           (["--iteration", "30000"], "outside x[1..20000]")):
        r = run("explain", text, "--at", "x=1", *extra)
        assert r.returncode == 2 and message in r.stderr, r.stderr
    r = run("explain", "x*y", "--at", "x=1,y=2", "--iteration", "3")
    assert r.returncode == 2 and "--iteration is for sums kept as loops" in r.stderr
    nested = symad.parse("n = 2000; sum(i = 1..n, x[i]*sum(j = 1..n, A[i,j]*x[j]))", Graph())
    with pytest.raises(SymadError, match="one level of loops"):
        symad.explain(nested, {"x": 1.0, "A": np.eye(2000)})


@pytest.mark.parametrize("k", [1, 4, 799, 800])
def test_explain_gathers_entries_at_a_stride(k: int) -> None:
    """x[2*i] and x[2*i - 1]: an iteration reaches x[k] where 2 divides k - c; the gathered
    partials are the compiled gradient's."""
    e = symad.parse("n = 400; sum(i = 1..n, 100*(x[2*i] - x[2*i-1]^2)^2 + (1 - x[2*i-1])^2)", Graph())
    x = np.linspace(-1, 1, 800)
    out = symad.explain(e, {"x": x}, iteration=k)
    want = symad.compile(e).grad(x)
    assert out.gradient[f"x[{k}]"] == want[k - 1]
    reached = [t for t in out.gathers[f"x[{k}]"] if t.iteration is not None]
    assert [t.iteration for t in reached] == [(k + 1) // 2]
    assert math.fsum(t.value for t in out.gathers[f"x[{k}]"]) == pytest.approx(want[k - 1], rel=1e-14, abs=1e-14)
    text = out.to_text()
    assert "adjoint at i = (k - c)/a" in text and f"2 does not divide {k if k % 2 else k + 1}" in text
