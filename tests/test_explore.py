"""The interactive page of the sweep (``symad.tools.explore``): its data, its file, ``symad graph -o page.html``.

The page in a real browser is tested by ``tests/test_explore_browser.py``.
"""

from __future__ import annotations

import html
import json
import re
import shutil

import numpy as np
import pytest
from support.cli_helpers import run

from symad import Graph, LimitError, SymadError, parse
from symad.tools.explanation import explain
from symad.tools.explore import MAX_DRAWN, Page, explore
from symad.tools.explore_data import shown

SEED = "(x+y)+x*(x+y)"
needs_dot = pytest.mark.skipif(shutil.which("dot") is None, reason="Graphviz's dot is not installed")
pytestmark = needs_dot


def page_data(page: Page) -> dict:
    """The JSON the page's script steps through, with the top level's rows and sweep at the top."""
    text = re.search(r'<script type="application/json" id="sx-data">(.*?)</script>', page.html, re.S)[1]
    data = json.loads(text)
    return {**data, "rows": data["sections"][0]["rows"], "sweep": data["sections"][0]["sweep"]}


def exact(number: str) -> float:
    """A number of the page's data: its exact digits (after ``|``, or the text shown if exact)."""
    return float(number.split("|")[-1])


def text(number: str) -> str:
    """A number of the page's data as the page shows it."""
    return number.split("|")[0]


def chain(n: int) -> str:
    """An expression of about ``5 n`` nodes, each term a few nodes of its own."""
    return " + ".join(f"sin({k}*x + y)*x" for k in range(1, n + 1))


def test_the_data_is_the_explanation_bit_for_bit():
    e = parse("sin(x)^2/sqrt(1+y) + x*y*x", Graph())
    point = {"x": 0.7, "y": 3.0}
    data, want = page_data(explore(e, at=point)), explain(e, point)
    assert [r["z"] for r in data["rows"]] == [r.name for r in want.rows]
    assert [exact(r["v"]) for r in data["rows"]] == [r.value for r in want.rows]
    assert [text(r["v"]) for r in data["rows"]] == [shown(r.value) for r in want.rows]
    assert [s["z"] for s in data["sweep"]] == [r.name for r in want.sweep]
    assert [exact(s["d"]) for s in data["sweep"]] == [r.derivative for r in want.sweep]
    adjoint = {s["z"]: s["d"] for s in data["sweep"]}
    for got, row in zip(data["sweep"], want.sweep, strict=True):
        shown_terms = [(t["from"], t["local"], exact(t["c"]), exact(t["p"]), exact(t.get("f", adjoint[t["from"]])))
                       for t in got["terms"]]
        assert shown_terms == [(t.source, t.local, t.contribution, t.local_value, t.factor) for t in row.terms]
    assert {p["var"]: exact(p["d"]) for p in data["gradient"]} == want.result
    for got in data["sweep"]:  # the running sums shown end at the adjoint the sweep summed
        assert not got["terms"] or exact(got["terms"][-1].get("sum", got["terms"][-1]["c"])) == exact(got["d"])
    assert any("|" in r["v"] for r in data["rows"])  # (numbers shown rounded carry their exact digits)


def test_the_seed_shared_node_receives_two_contributions_and_a_running_sum():
    data = page_data(explore(SEED, at={"x": 1, "y": 2}))
    z3 = next(s for s in data["sweep"] if s["z"] == "z3")
    assert [(t["from"], t["c"], t["sum"]) for t in z3["terms"]] == [("z5", "1", "1"), ("z4", "1", "2")]
    assert {p["var"]: p["d"] for p in data["gradient"]} == {"x": "5", "y": "2"}
    full = {r["z"]: r.get("full") for r in data["rows"]}
    assert full["z3"] == "x + y"


def test_the_page_is_one_file_with_no_external_reference():
    page = explore(SEED, at={"x": 1, "y": 2})
    text = page.html
    assert text.startswith("<!DOCTYPE html>") and "<svg" in text and "</html>" in text
    assert not re.search(r"\ssrc\s*=", text, re.I)  # no scripts, styles or images to load
    assert re.findall(r"\shref\s*=\s*\"[^\"]*\"", text, re.I) == [' href="data:,"']  # the icon: none to ask for
    assert "url(" not in text and "@import" not in text
    # The only addresses are the SVG namespaces, which are names, not requests.
    assert set(re.findall(r"https?://[^\s\"']+", text)) <= {"http://www.w3.org/2000/svg", "http://www.w3.org/1999/xlink"}
    for z in ("z1", "z2", "z3", "z4", "z5"):
        assert f'id="sx&#45;{z}"' in text  # the picture's nodes carry the explanation's names


def test_the_same_expression_gives_the_same_page():
    assert explore(SEED, at={"x": 1, "y": 2}).html == explore(parse(SEED, Graph()), at={"x": 1, "y": 2}).html


def test_text_in_the_data_cannot_close_the_script():
    page = explore(SEED, at={"x": 1, "y": 2}, title="</script><b>")
    assert page.html.count("</script>") == 2  # the data's and the code's
    assert page_data(page)["title"] == "</script><b>"


def test_inline_in_a_notebook_the_page_is_a_frame_of_its_own():
    page = explore(SEED, at={"x": 1, "y": 2})
    frame = page._repr_html_()
    assert frame.startswith("<iframe srcdoc=\"") and 'sandbox="allow-scripts"' in frame
    srcdoc = re.match(r'<iframe srcdoc="([^"]*)"', frame)[1]
    assert html.unescape(srcdoc) == page.html


def test_save_writes_the_page(tmp_path):
    page = explore(SEED, at={"x": 1, "y": 2})
    page.save(str(tmp_path / "p.html"))
    assert (tmp_path / "p.html").read_text(encoding="utf-8") == page.html


def test_past_the_limit_subgraphs_collapse_and_the_page_says_so():
    e = parse(chain(200), Graph())  # about 1,000 nodes
    page = explore(e, at={"x": 0.5, "y": 0.25})
    assert page.nodes > 1000 >= MAX_DRAWN and page.drawn + page.collapsed <= MAX_DRAWN + 2 and page.collapsed
    assert len(page.html.encode("utf-8")) < 1_000_000
    data = page_data(page)
    assert data["notes"] and "collapses" in data["notes"][0]
    assert len(data["rows"]) == len(explain(e, {"x": 0.5, "y": 0.25}).rows)  # the steps cover every node
    ids = set(re.findall(r'<g id="([^"]+)" class="node"', page.html))
    ids = {i.replace("&#45;", "-") for i in ids}
    assert all(r.get("el", "sx-" + r["z"]) in ids for r in data["rows"])  # each step highlights a drawn node or its box
    assert set(data["boxes"]) <= ids
    members = [z for zs in data["boxes"].values() for z in zs]
    assert len(members) == len(set(members))  # a collapsed node is in one box


@pytest.mark.slow  # dot lays out a thousand nodes
def test_a_thousand_nodes_drawn_in_full_stay_under_a_megabyte():
    e = parse(chain(166), Graph())
    page = explore(e, at={"x": 0.5, "y": 0.25}, max_drawn=1000)
    assert page.collapsed == 0 and page.drawn == page.nodes > 990
    assert len(page.html.encode("utf-8")) < 1_000_000


def test_bad_input_gets_clear_errors():
    with pytest.raises(SymadError, match="missing value for variable y"):
        explore(SEED, at={"x": 1})
    with pytest.raises(LimitError, match="at least 1"):
        explore(SEED, at={"x": 1, "y": 2}, max_drawn=0)
    with pytest.raises(SymadError, match="rankdir"):
        explore(SEED, at={"x": 1, "y": 2}, rankdir="up")
    with pytest.raises(SymadError, match="the number 6: there is no sweep"):
        explore("2*3", at={})
    with pytest.raises(LimitError, match="with loops draws every node"):
        explore("sum(i=1..20000, x[i]^2)", at={"x": 1.0}, max_drawn=2)


def test_a_loop_is_one_box_holding_its_body_at_one_iteration():
    e = parse("y*sum(i=1..20000, (x[i+1]-x[i])^2) + y^2", Graph())
    page = explore(e, at={"x": 0.5, "y": 2})
    want = explain(e, {"x": 0.5, "y": 2}).to_dict()
    data = page_data(page)
    top, body = data["sections"]
    assert [r["z"] for r in top["rows"]] == [r["id"] for r in want["forward"]]
    assert [exact(r["v"]) for r in body["rows"]] == [r["value"] for r in want["loops"][0]["forward"]]
    assert [exact(s["d"]) for s in body["sweep"]] == [r["derivative"] for r in want["loops"][0]["sweep"]]
    assert body["box"] == "sx-box-z3" and 'id="sx&#45;box&#45;z3" class="cluster"' in page.html
    assert [g["entry"] for g in data["gathers"]] == list(want["gather"])
    assert {p["var"]: exact(p["d"]) for p in data["gradient"]} == want["gradient"] == {"x[1]": 0.0, "y": 4.0}
    assert next(r for r in top["rows"] if r["z"] == "z3").get("loop")  # one step of the top level


def test_the_gathers_on_the_page_say_what_explain_says():
    """A term no iteration reaches says why, as symad explain does (a stride, the range's edge)."""
    e = parse("n = 400; sum(i = 1..n, 100*(x[2*i] - x[2*i-1]^2)^2 + (1 - x[2*i-1])^2)", Graph())
    point = {"x": np.linspace(-1, 1, 800)}
    data = page_data(explore(e, at=point, iteration=4))
    want = explain(e, point, iteration=4)
    (gather,) = data["gathers"]
    assert [t["text"] for t in gather["terms"]] == ["x[2*i] in z1 at i = 2", "x[2*i - 1] in z1 (2 does not divide 5)"]
    assert [exact(t["value"]) for t in gather["terms"]] == [t.value for t in want.gathers["x[4]"]]
    assert "x[2*i] at i = 2 + x[2*i - 1] (2 does not divide 5)" in want.to_text()


# ------------------------------------------------------------------ the command
@pytest.mark.slow
def test_symad_graph_writes_the_page(tmp_path):
    out = tmp_path / "page.html"
    p = run("graph", SEED, "--at", "x=1,y=2", "-o", str(out), "--json")
    assert p.returncode == 0, p.stderr
    report = json.loads(p.stdout)
    assert (report["nodes"], report["drawn"], report["collapsed"]) == (5, 5, 0)
    assert out.read_text(encoding="utf-8") == explore(SEED, at={"x": 1, "y": 2}, title=SEED).html


@pytest.mark.slow
def test_symad_graph_html_needs_a_point(tmp_path):
    p = run("graph", SEED, "-o", str(tmp_path / "page.html"))
    assert p.returncode == 2 and "--at" in p.stderr and "Traceback" not in p.stderr
    p = run("graph", SEED, "--at", "x=1,y=2", "--wrt", "x", "-o", str(tmp_path / "page.html"))
    assert p.returncode == 2 and "--wrt" in p.stderr
    assert not (tmp_path / "page.html").exists()


def test_a_loop_inside_a_loop_is_a_box_inside_a_box():
    e = parse("sum(i = 1..400, x[i]*sum(j = 1..400, sin(x[j] - y[i])*(i + j)/400)) + y[2]^2", Graph())
    point = {"x": np.linspace(0.5, 1, 400), "y": 0.25}
    page = explore(e, at=point, iteration=3)
    want = explain(e, point, iteration=3).to_dict()
    data = page_data(page)
    top, outer, inner = data["sections"]
    assert (outer["key"], inner["key"]) == ("z3", "z3/w1") and inner["box"] == "sx-box-z3/w1"
    assert next(r for r in outer["rows"] if r["z"] == "w1").get("loop")  # one step of the outer body
    assert [exact(r["v"]) for r in inner["rows"]] == [r["value"] for r in want["loops"][1]["forward"]]
    assert [exact(s["d"]) for s in inner["sweep"]] == [r["derivative"] for r in want["loops"][1]["sweep"]]
    assert inner["title"] == "the body of z3/w1 at i = 3, j = 3"
    # the inner loop's Σ is its row's node in the outer box, the inner body's nodes are in the inner box
    assert 'id="sx&#45;z3&#45;w1" class="node"' in page.html and 'id="sx&#45;z3/w1&#45;v1" class="node"' in page.html
    assert page.html.count('class="cluster"') == 2
    assert [len(g["terms"]) for g in data["gathers"]] == [len(t) for t in want["gather"].values()]
    assert {p["var"]: exact(p["d"]) for p in data["gradient"]} == want["gradient"]
    with pytest.raises(SymadError, match="iteration is for sums kept as loops"):
        explore(SEED, at={"x": 1, "y": 2}, iteration=3)


def test_symad_graph_html_takes_the_iteration_as_explain_does(tmp_path):
    text = "sum(i = 1..1000, (x[i+1] - x[i])^2)"
    out = tmp_path / "page.html"
    p = run("graph", text, "--at", "x=0.5", "--iteration", "7", "-o", str(out))
    assert p.returncode == 0, p.stderr
    assert out.read_text(encoding="utf-8") == explore(text, at={"x": 0.5}, title=text, iteration=7).html
    assert explore(text, at={"x": 0.5}, title=text, iteration=7).html != explore(text, at={"x": 0.5}, title=text).html
    p = run("graph", "x*y", "--iteration", "3")
    assert p.returncode == 2 and "--iteration places the loops' bodies in an .html page" in p.stderr
