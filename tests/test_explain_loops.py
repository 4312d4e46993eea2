"""symad explain over sums kept as loops: the top level, each loop's body at one iteration (loops
inside loops too), the gather, and partials equal to symad grad's, bit for bit."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
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
    # a loop of the outer index read inside a loop of the inner one (not as a step of the outer body)
    nested = symad.parse("sum(i = 1..400, sum(j = 1..20, x[j]*sum(k = 1..30, y[k]*x[i])))", Graph())
    with pytest.raises(SymadError, match="a loop that a loop inside its body reads without its index"):
        symad.explain(nested, {"x": 1.0, "y": 2.0})


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


# ------------------------------------------------------------------ loops inside loops
NESTED = "n = 400; sum(i = 1..n, x[i]*sum(j = 1..n, sin(x[j] - y[i])*(i - j)^2/n^2)) + sum(i = 1..n, y[i]^2)"
NESTED_AT = f"x=[{','.join(map(str, point_list(400)))}],y=0.5"


@pytest.mark.parametrize("iteration", [None, 7, 400])
def test_explain_of_nested_loops_gathers_symad_grads_partials(iteration) -> None:
    """Each loop's body at one iteration of both indices; the gathers add up to the partials
    symad grad prints, which explain prints bit for bit."""
    extra = [] if iteration is None else ["--iteration", str(iteration)]
    r = run("explain", NESTED, "--at", NESTED_AT, "--json", *extra)
    assert r.returncode == 0, r.stderr
    got = json.loads(r.stdout)
    want = json.loads(run("grad", NESTED, "--at", NESTED_AT, "--json").stdout)["grad"]
    k = 1 if iteration is None else iteration
    assert got["gradient"][f"x[{k}]"] == want[f"x[{k}]"] and got["gradient"][f"y[{k}]"] == want[f"y[{k}]"]
    loops = {loop["id"]: loop for loop in got["loops"]}
    inner = next(loop for loop in got["loops"] if loop["parent"])
    outer = loops[inner["parent"]]
    assert inner["id"].startswith(outer["id"] + "/w") and inner["at"] == {"i": k, "j": k}
    assert outer["at"] == {"i": k} and outer["parent"] == "" and inner["range"] == [1, 400]
    assert inner["loop"] == "sum(j = 1..400, sin(x[j] - y[i])*(i - j)^2/160000)"
    assert inner["scale"] == outer["seed"] * inner["seed"]  # its adjoint for f: the seeds down its path
    for entry in (f"x[{k}]", f"y[{k}]"):
        terms = got["gather"][entry]
        assert math.isclose(math.fsum(t["value"] for t in terms), want[entry], rel_tol=1e-12, abs_tol=1e-12)
    x_terms = {(t["loop"], t["entry"]): t for t in got["gather"][f"x[{k}]"]}
    assert x_terms[(outer["id"], "x[i]")]["count"] == 1 and x_terms[(outer["id"], "x[i]")]["iteration"] == k
    # at the iteration shown, the term is the body's adjoint of the entry times the loop's, as shown
    row = next(r["id"] for r in outer["forward"] if r["op"] == "x[i]")
    adjoint = next(r["derivative"] for r in outer["sweep"] if r["id"] == row)
    assert x_terms[(outer["id"], "x[i]")]["value"] == outer["scale"] * adjoint
    summed = x_terms[(inner["id"], "x[j]")]
    assert summed["at"] == {"i": [1, 400], "j": k} and summed["count"] == 400 and summed["iteration"] is None


def _by_hand(x: np.ndarray, y: np.ndarray) -> complex:
    """The small nested sum below, in NumPy (complex: the complex step's oracle)."""
    i, j = np.arange(1, 31)[:, None], np.arange(1, 21)[None, :]
    inner = np.sum(np.sin(x[j] - y[i - 1]) * (i + 2 * j) / 100, axis=1)  # x[j + 1]: x[j] counted from 0
    return np.sum(x[:30] * inner) + np.sum(np.exp(y[:20] * x[1:21]))


SMALL = "sum(i = 1..30, x[i]*sum(j = 1..20, sin(x[j+1] - y[i])*(i + 2*j)/100)) + sum(i = 1..20, exp(y[i]*x[i+1]))"


@pytest.mark.parametrize("k", [1, 2, 21, 30])
def test_explain_of_nested_loops_against_the_complex_step(k: int) -> None:
    """The partial and its gathered terms against the complex step of the sum by hand (no
    subtraction: exact to the rounding of the sum's 600 terms; the written-out sum beside the loops
    adds entries x[k] of the top level), and the body of the inner loop's
    rows against their values at (i, j) = (k, min(k, 20))."""
    e = symad.parse(SMALL, Graph())
    rng = np.random.default_rng(5)
    x, y = rng.uniform(-1, 1, 30), rng.uniform(-1, 1, 30)
    out = symad.explain(e, {"x": x, "y": y}, iteration=k)
    assert [s.name for s in out.loops][-1].count("/") == 1  # a loop inside a loop's body
    h = 1e-30
    for name in ("x", "y"):
        step = np.zeros(30, dtype=complex)
        step[k - 1] = 1j * h
        oracle = (_by_hand(x + step, y) if name == "x" else _by_hand(x, y + step)).imag / h
        assert math.isclose(out.gradient[f"{name}[{k}]"], oracle, rel_tol=1e-12, abs_tol=1e-13)
        assert math.isclose(math.fsum(t.value for t in out.gathers[f"{name}[{k}]"]), oracle, rel_tol=1e-12,
                            abs_tol=1e-13)
    inner = next(s for s in out.loops if s.parent)
    i, j = inner.at["i"], inner.at["j"]
    assert (i, j) == (k, min(k, 20))
    rows = {row.expr: row.value for row in inner.body.rows}
    assert rows["x[j + 1]"] == x[j] and rows["y[i]"] == y[i - 1]
    assert [row.value for row in inner.body.rows if row.expr.startswith("sin(")] == [math.sin(x[j] - y[i - 1])]
    assert "its body at i = " + f"{i}, j = {j} (of 1..20):" in out.to_text()


def test_explain_of_three_levels_and_of_a_loop_read_in_a_body() -> None:
    text = ("sum(i = 1..40, sum(j = 1..30, sum(k = 1..20, x[i]*y[j]*cos(z[k] + x[j]))))"
            " + sum(i = 1..300, z[i]*sum(j = 1..400, y[j]))")
    e = symad.parse(text, Graph())
    point = {"x": np.linspace(-1, 1, 40), "y": np.linspace(0, 2, 400), "z": np.linspace(1, 2, 300)}
    out = symad.explain(e, point, iteration=3)
    f = symad.compile(e)
    want = f.grad(np.concatenate([point["x"], point["y"], point["z"]]))
    assert [out.gradient[v] for v in ("x[3]", "y[3]", "z[3]")] == [want[2], want[42], want[442]]
    for entry, terms in out.gathers.items():
        assert math.isclose(math.fsum(t.value for t in terms), out.gradient[entry], rel_tol=1e-12)
    deepest = max(out.loops, key=lambda s: s.name.count("/"))
    assert deepest.name.count("/") == 2 and deepest.at == {"i": 3, "j": 3, "k": 3}
    assert deepest.body.rows[0].name.startswith("u")
    # sum(j, y[j]) is read by the body of the sum over z: its body's terms receive its adjoint
    # through that use too (for f: the sum of z), not only the top level's part
    closed = next(s for s in out.loops if s.text == "sum(i = 1..400, y[i])")
    assert closed.scale == pytest.approx(float(np.sum(point["z"])), rel=1e-14)
    js = json.loads(out.to_json())
    assert [t["where"] for t in js["gather"]["x[3]"]] == ["", ""]


def test_a_body_that_is_a_number_at_the_iteration_shown() -> None:
    e = symad.parse("n = 400; sum(i = 1..n, x[i]*sum(j = 1..n, x[j]*(i - j)^2))", Graph())
    out = symad.explain(e, {"x": 0.5}, iteration=9)
    inner = next(s for s in out.loops if s.parent)
    assert [(r.expr, r.value) for r in inner.body.rows] == [("0", 0.0)]  # (i - j)^2 = 0 at i = j = 9
    want = symad.compile(e).grad(np.full(400, 0.5))
    assert out.gradient["x[9]"] == want[8]
    assert math.isclose(math.fsum(t.value for t in out.gathers["x[9]"]), want[8], rel_tol=1e-12)


def test_an_entry_of_two_indices_is_gathered_where_they_reach_it() -> None:
    e = symad.parse("sum(i = 1..300, sum(j = 1..200, sin(x[i + j])*x[i]))", Graph())
    x = np.linspace(0, 1, 500)
    out = symad.explain(e, {"x": x}, iteration=5)
    terms = {t.entry: t for t in out.gathers["x[5]"]}
    assert terms["x[i + j]"].count == 4 and terms["x[i + j]"].where == "i + j = 5"
    assert terms["x[i]"].count == 200 and terms["x[i]"].at == {"i": 5, "j": [1, 200]}
    assert "x[i + j] in z1/w1 at i = 1..300, j = 1..200 where i + j = 5 (4 iterations)" in out.to_text()
    assert out.gradient["x[5]"] == symad.compile(e).grad(x)[4]


def test_entries_written_out_beside_a_loop_take_the_vectors_number() -> None:
    """A short product inside a loop is written out (x[1], ..., x[12]: scalars beside the loop over
    y); x=1 sets them all, in grad, eval and explain alike."""
    text = "sum(j = 1..300, y[j]*prod(i = 1..12, 1 + x[i]*y[j]/1000))"
    want = 300 * 0.5 * (1 + 0.5 / 1000) ** 12
    r = run("eval", text, "--at", "x=1,y=0.5")
    assert r.returncode == 0, r.stderr
    assert float(r.stdout) == pytest.approx(want, rel=1e-14)
    grad = json.loads(run("grad", text, "--at", "x=1,y=0.5", "--json").stdout)["grad"]
    assert grad["x[12]"] == pytest.approx(300 * 0.25 / 1000 * (1 + 0.5 / 1000) ** 11, rel=1e-13)
    got = json.loads(run("explain", text, "--at", "x=1,y=0.5", "--iteration", "3", "--json").stdout)
    assert got["gradient"]["x[12]"] == grad["x[12]"] and got["gradient"]["y[3]"] == grad["y[3]"]


@pytest.mark.parametrize("k", [3, 4])
def test_a_fixed_entry_in_a_nested_body_is_read_by_every_iteration(k: int) -> None:
    e = symad.parse("sum(i = 1..400, x[i]*sum(j = 1..400, x[j]*x[3]*cos(y[i] - y[j])))", Graph())
    point = {"x": np.linspace(0, 1, 400), "y": np.linspace(0, 2, 400)}
    out = symad.explain(e, point, iteration=k)
    fixed = next(t for t in out.gathers[f"x[{k}]"] if t.entry == "x[3]")
    assert (fixed.count, fixed.at) == (160_000 if k == 3 else 0, {"i": [1, 400], "j": [1, 400]})
    want = symad.compile(e).grad(np.concatenate([point["x"], point["y"]]))
    assert out.gradient[f"x[{k}]"] == want[k - 1]
    assert math.isclose(math.fsum(t.value for t in out.gathers[f"x[{k}]"]), want[k - 1], rel_tol=1e-12)
    assert k == 3 or "x[3] in z1/w1 (a fixed entry)" in out.to_text()


_OUTER = ["x[i]", "sin(x[i+1])", "(1 + y[i]^2)", "x[i]*y[i]"]
_INNER = ["x[j]*y[i]", "cos(x[j] - x[i])", "x[i+j]*y[j]", "exp(x[j+1]/4)*y[i+j]", "x[2*j]*x[i]", "(i - j)*x[j]"]


@settings(max_examples=20, deadline=None)
@given(outer=st.sampled_from(_OUTER), inner=st.sampled_from(_INNER), seed=st.integers(0, 2**16),
       k=st.integers(1, 70))
def test_random_nested_loops_gather_the_compiled_gradient(outer: str, inner: str, seed: int, k: int) -> None:
    """Random nested bodies: explain prints the compiled partials bit for bit, and its gathered terms
    add up to them (each term a compiled sum over its iterations: rounding apart, the same sum)."""
    e = symad.parse(f"sum(i = 1..40, {outer}*sum(j = 1..20, {inner}))", Graph())
    f = symad.compile(e)
    rng = np.random.default_rng(seed)
    point = {name: rng.uniform(-1, 1, hi - lo + 1) for name, ((lo, hi),) in f.spans.items()}
    lo = f.spans["x"][0][0]
    spans = f.spans.values()  # --iteration k: an entry of every vector
    k = min(max(k, *(low for ((low, _),) in spans)), *(high for ((_, high),) in spans))
    out = symad.explain(e, point, iteration=k)
    want = f.grad(np.concatenate([point[name] for name in f.wrt]))
    assert out.gradient[f"x[{k}]"] == want[k - lo]
    terms = out.gathers[f"x[{k}]"]
    scale = 1 + sum(abs(t.value) for t in terms)
    assert abs(math.fsum(t.value for t in terms) - want[k - lo]) <= 1e-12 * 800 * scale
    assert {t.count for t in terms} <= {0, 1, 20, 40, *range(1, 21)}


# ------------------------------------------------------------------ one level, the case of depth one
@pytest.mark.parametrize("k", [3, 5])
def test_a_fixed_entry_in_a_loops_body_is_gathered_over_every_iteration(k: int) -> None:
    """x[3] in the body of a loop of the top level: read by all 1000 iterations (a compiled sum),
    not an iteration outside the range; the terms add up to the compiled partial."""
    e = symad.parse("sum(i = 1..1000, sin(x[i]*x[3]))", Graph())
    x = np.linspace(-1, 1, 1000)
    out = symad.explain(e, {"x": x}, iteration=k)
    want = symad.compile(e).grad(x)
    assert out.gradient[f"x[{k}]"] == want[k - 1]
    fixed = next(t for t in out.gathers[f"x[{k}]"] if t.entry == "x[3]")
    assert fixed.count == (1000 if k == 3 else 0) and fixed.at == {"i": [1, 1000]}
    assert math.isclose(math.fsum(t.value for t in out.gathers[f"x[{k}]"]), want[k - 1], rel_tol=1e-12)
    text = out.to_text()
    assert "x[3] at i = 1..1000 (1,000 iterations)" in text if k == 3 else "x[3] (a fixed entry)" in text
    assert " in z1" not in text  # one level: no paths in the gather


def test_two_entries_of_one_place_stay_two_rows() -> None:
    """At i = 505, x[i] and x[1010 - i] both read x[505]: two rows of the body, each gathered once."""
    e = symad.parse("sum(i = 1..1000, x[i]*cos(x[1010 - i]))", Graph())
    x = np.linspace(-1, 1, 1009)
    out = symad.explain(e, {"x": x}, iteration=505)
    body = out.loops[0].body
    assert sorted(r.expr for r in body.rows if r.expr.startswith("x[")) == ["x[1010 - i]", "x[i]"]
    want = symad.compile(e).grad(x)
    assert out.gradient["x[505]"] == want[504]
    terms = {t.entry: t for t in out.gathers["x[505]"]}
    assert [t.iteration for t in terms.values()] == [505, 505]
    assert math.isclose(math.fsum(t.value for t in terms.values()), want[504], rel_tol=1e-13)


def test_one_level_json_keeps_its_keys() -> None:
    """A loop of one level: the JSON has no nesting keys (parent, at, scale; count, where)."""
    js = json.loads(symad.explain(symad.parse(ROSENBROCK.format(n=1000), Graph()), {"x": 0.5}).to_json())
    assert list(js["loops"][0]) == ["id", "loop", "index", "range", "iteration", "seed", "forward", "sweep"]
    assert [list(t) for t in js["gather"]["x[1]"]] == [["loop", "entry", "iteration", "value"]] * 2


def test_iteration_past_a_shorter_vector_gathers_its_nearest_entry() -> None:
    """--iteration k sets each index to the nearest k in its range, and each vector's gather to its
    nearest entry: a vector shorter than k is gathered at its last (it was refused); a k outside
    every vector stays an error (test_what_explain_does_not_show_over_loops_says_so)."""
    text = "sum(i = 1..3000, x[i]*sum(j = 1..20, y[j]/(i + j)))"
    r = run("explain", text, "--at", "x=1,y=2", "--iteration", "100")
    assert r.returncode == 0, r.stderr
    assert "df/dx[100] = " in r.stdout and "df/dy[20] = " in r.stdout
    grad = run("grad", text, "--at", "x=1,y=2")
    want = {line.split("=")[0].strip(): line.split("=")[1].strip() for line in grad.stdout.splitlines() if "=" in line}
    shown = r.stdout.split("gradient:")[-1]
    assert f"df/dx[100] = {want['df/dx[100]']}" in shown and f"df/dy[20] = {want['df/dy[20]']}" in shown


@pytest.mark.parametrize("iteration", [2.5, "5", True])
def test_an_iteration_that_is_no_whole_number_is_a_clear_error(iteration) -> None:
    with pytest.raises(symad.SymadError, match="iteration must be a whole number"):
        symad.explain(symad.parse("sum(i = 1..1000, x[i]^2)"), {"x": 1.0}, iteration=iteration)
