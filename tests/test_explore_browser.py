"""The page of the sweep in a real browser: Debian's ``chromium`` driven by Playwright.

Every request other than the page itself fails the test (the page is served by a route, so any
script, style, image or font it asked for would show up there).  The steps are driven by events
(clicks, keys, waiting for the step shown), never by sleeps.  ``SYMAD_UPDATE_IMAGES=1`` rewrites
the screenshot ``docs/images/explore.png`` (also written when missing).
"""

from __future__ import annotations

import json
import os
import shutil
import time
from pathlib import Path

import pytest
from support.cli_helpers import run
from support.offline_page import URL, offline_context

from symad import Graph, parse
from symad.tools.explore import explore

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
pytestmark = [
    pytest.mark.skipif(CHROMIUM is None, reason="Debian's chromium is not installed: apt-get install chromium"),
    pytest.mark.skipif(shutil.which("dot") is None, reason="Graphviz's dot is not installed"),
]
sync_api = pytest.importorskip("playwright.sync_api", reason="playwright is not installed (the test extra has it)")

ROOT = Path(__file__).resolve().parents[1]
SEED = "(x+y)+x*(x+y)"
SCREENSHOT = ROOT / "docs" / "images" / "explore.png"

# The panel's state, read from the page: the step, its phase and node, and every number it shows
# with its exact digits.
STATE = """() => {
  const body = document.getElementById('sx-step');
  const eq = body.querySelector('.sx-eq');
  const exact = (el, role) => { const n = el.querySelector(`[data-role=${role}]`); return n ? n.dataset.exact : null; };
  const shown = (el, role) => { const n = el.querySelector(`[data-role=${role}]`); return n ? n.textContent : null; };
  return {
    step: +body.dataset.step, phase: body.dataset.phase, z: eq ? eq.dataset.z : null,
    value: exact(body, 'value'), adjoint: eq ? exact(eq, 'adjoint') : null,
    terms: [...body.querySelectorAll('.sx-term')].map(r => ({from: r.dataset.from, c: exact(r, 'contribution'),
                                                               sum: exact(r, 'sum')})),
    passes: [...body.querySelectorAll('.sx-pass')].map(r => ({to: r.dataset.to, c: exact(r, 'contribution')})),
    partials: Object.fromEntries([...body.querySelectorAll('.sx-partial')].map(
      r => [r.dataset.var, [shown(r, 'partial'), exact(r, 'partial')]])),
    current: [...document.querySelectorAll('#sx-svg .sx-cur')].map(e => e.id),
  };
}"""


@pytest.fixture(scope="module")
def browser():
    with sync_api.sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM,
                              args=["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"])
        yield b
        b.close()


@pytest.fixture
def open_page(browser):
    """``open_page(html)`` -> the page loaded and ready; after the test, no other request was made
    and no script error happened."""
    contexts, requests, errors = [], [], []

    def opener(text: str, width: int = 1100, height: int = 620):
        context = offline_context(browser, text, requests, width, height)
        contexts.append(context)
        page = context.new_page()
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.goto(URL)
        page.wait_for_selector("body[data-ready]")
        return page

    yield opener
    for context in contexts:
        context.close()
    assert requests == [], f"the page asked the network for {requests}"
    assert errors == [], f"script errors: {errors}"


def state(page) -> dict:
    return page.evaluate(STATE)


def next_step(page, how: str = "click") -> dict:
    before = state(page)["step"]
    if how == "click":
        page.click("#sx-next")
    else:
        page.keyboard.press(how)
    page.wait_for_selector(f'#sx-step[data-step="{before + 1}"]')
    return state(page)


def test_clicking_through_the_seed_shows_explains_numbers(open_page):
    p = run("explain", SEED, "--at", "x=1,y=2", "--json")
    assert p.returncode == 0, p.stderr
    want = json.loads(p.stdout)
    page = open_page(explore(SEED, at={"x": 1, "y": 2}).html)
    assert state(page)["phase"] == "start"
    for row in want["forward"]:
        got = next_step(page)
        assert (got["phase"], got["z"], float(got["value"])) == ("forward", row["id"], row["value"])
        assert got["current"] == [f"sx-{row['id']}"]
    adjoint = {}
    for row in want["sweep"]:
        got = next_step(page)
        assert (got["phase"], got["z"], float(got["adjoint"])) == ("backward", row["id"], row["derivative"])
        assert got["current"] == [f"sx-{row['id']}"]
        assert [(t["from"], float(t["c"])) for t in got["terms"]] == \
            [(t["from"], t["contribution"]) for t in row["terms"]]
        adjoint[row["id"]] = row["derivative"]
        passed = [(r["id"], t["contribution"]) for r in want["sweep"] for t in r["terms"] if t["from"] == row["id"]]
        assert [(t["to"], float(t["c"])) for t in got["passes"]] == passed
    got = next_step(page)
    assert got["phase"] == "result"
    assert got["partials"] == {"x": ["5", "5"], "y": ["2", "2"]}  # shown, exact
    assert {v: float(d[1]) for v, d in got["partials"].items()} == want["gradient"]
    assert page.is_disabled("#sx-next")


def test_the_shared_node_receives_two_contributions_as_they_come(open_page):
    page = open_page(explore(SEED, at={"x": 1, "y": 2}).html)
    page.keyboard.press("End")
    page.wait_for_selector('#sx-step[data-phase="result"]')
    page.keyboard.press("Home")
    page.wait_for_selector('#sx-step[data-step="0"]')
    for _ in range(6):  # the forward pass, then the seed
        got = next_step(page)
    assert got["z"] == "z5" and page.text_content("#sx-z3 text.sx-adj") == "z̄3 = 1 + …"
    got = next_step(page)  # z4 passes its part
    assert got["z"] == "z4" and page.text_content("#sx-z3 text.sx-adj") == "z̄3 = 1 + 1 = 2"
    got = next_step(page)  # x+y: its two users' contributions and their running sum
    assert got["z"] == "z3" and float(got["adjoint"]) == 2.0
    assert [(t["from"], float(t["c"]), float(t["sum"])) for t in got["terms"]] == [("z5", 1.0, 1.0), ("z4", 1.0, 2.0)]
    assert page.is_visible("#sx-step .sx-shared")
    assert page.text_content("#sx-z1 text.sx-adj") == "z̄1 = 3 + 2 = 5"  # x: both of its parts are in


def test_the_arrow_keys_step_forward_and_back(open_page):
    page = open_page(explore(SEED, at={"x": 1, "y": 2}).html)
    for k in range(1, 4):
        assert next_step(page, "ArrowRight")["step"] == k
    page.keyboard.press("ArrowLeft")
    page.wait_for_selector('#sx-step[data-step="2"]')
    assert state(page)["z"] == "z2"
    page.keyboard.press("End")
    got = state(page)
    assert got["phase"] == "result" and got["partials"]["x"][0] == "5"
    page.keyboard.press("ArrowRight")  # past the end: stays
    assert state(page)["step"] == got["step"]
    page.focus("#sx-slider")  # on the slider its own keys move it, one step at a time
    page.keyboard.press("ArrowLeft")
    page.wait_for_selector(f'#sx-step[data-step="{got["step"] - 1}"]')


def test_hovering_a_node_shows_its_expression_value_adjoint_and_steps(open_page):
    page = open_page(explore(SEED, at={"x": 1, "y": 2}).html)
    page.hover("#sx-z3")
    page.wait_for_selector("#sx-tip:not([hidden])")
    tip = page.text_content("#sx-tip")
    assert "z3 = z1 + z2 = x + y" in tip and "value 3 (forward step 3)" in tip
    assert "∂f/∂z3 = 2 (backward step 3, the sum of 2 contributions)" in tip
    page.hover("#sx-z1")
    page.wait_for_function("document.getElementById('sx-tip').dataset.node === 'sx-z1'")
    assert "adjoint ∂f/∂z1 = 5" in page.text_content("#sx-tip")
    page.click("#sx-z1")  # a click pins the details; their buttons go to the node's steps
    page.click("#sx-tip button:has-text('backward step')")
    page.wait_for_selector('#sx-step[data-phase="backward"]')
    assert state(page)["z"] == "z1"


def test_a_collapsed_node_highlights_its_box(open_page):
    text = " + ".join(f"sin({k}*x + y)*x" for k in range(1, 60))
    page_ = explore(parse(text, Graph()), at={"x": 0.5, "y": 0.25}, max_drawn=40)
    assert page_.collapsed
    page = open_page(page_.html)
    assert "collapses" in page.text_content("#sx-notes")
    got = next_step(page)
    assert got["current"] == ["sx-z1"]  # x: drawn (inputs are), the nodes after it deep in the DAG collapsed
    got = next_step(page)
    assert got["z"] == "z2" and len(got["current"]) == 1 and got["current"][0].startswith("sx-box-")
    page.hover(f'[id="{got["current"][0]}"]')
    page.wait_for_selector("#sx-tip:not([hidden])")
    assert "collapsed" in page.text_content("#sx-tip") and "z2" in page.text_content("#sx-tip")


def test_a_ten_thousand_node_expression_opens_in_seconds(open_page):
    e = parse(" + ".join(f"sin({k}*x + y)*x" for k in range(1, 2000)), Graph())
    built = time.perf_counter()
    html = explore(e, at={"x": 0.5, "y": 0.25}).html
    built = time.perf_counter() - built
    assert len(e.graph.reachable([e.id])) >= 10_000
    start = time.perf_counter()
    page = open_page(html)
    opened = time.perf_counter() - start
    assert opened < 30, f"the page took {opened:.1f} s to open"  # a generous bound: the machine is shared
    page.keyboard.press("End")
    page.wait_for_selector('#sx-step[data-phase="result"]')
    assert set(state(page)["partials"]) == {"x", "y"}
    print(f"10^4 nodes: page built in {built:.2f} s, {len(html) / 1e6:.1f} MB, opened in {opened:.2f} s")


def test_a_screenshot_in_the_middle_of_the_backward_sweep(open_page, tmp_path):
    page = open_page(explore(SEED, at={"x": 1, "y": 2}, title=SEED).html, width=1000, height=560)
    for _ in range(8):  # the forward pass, the seed, z4, then the shared node x+y
        got = next_step(page, "ArrowRight")
    assert got["z"] == "z3"
    update = os.environ.get("SYMAD_UPDATE_IMAGES") == "1" or not SCREENSHOT.exists()
    out = SCREENSHOT if update else tmp_path / "explore.png"
    page.screenshot(path=str(out))
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_a_loop_is_one_box_and_its_body_is_stepped_through(open_page):
    import numpy as np

    from symad.tools.explanation import explain

    e = parse("y*sum(i=1..20000, (x[i+1]-x[i])^2) + y^2", Graph())
    point = {"x": np.linspace(0, 1, 20001) ** 2, "y": 2.0}
    want = explain(e, point).to_dict()
    page = open_page(explore(e, at=point).html)
    assert page.locator("#sx-svg g.cluster").count() == 1  # the loop: one box holding its body
    page.hover("#sx-z3-w3")
    page.wait_for_selector("#sx-tip:not([hidden])")
    tip = page.text_content("#sx-tip")
    assert "w3 = w1 - w2" in tip and "the body of z3 at i = 1" in tip
    page.mouse.move(0, 0)
    expected = [("forward", r["id"], r["value"]) for r in want["forward"]]
    expected += [("forward", r["id"], r["value"]) for loop in want["loops"] for r in loop["forward"]]
    expected += [("backward", r["id"], r["derivative"]) for r in want["sweep"]]
    expected += [("backward", r["id"], r["derivative"]) for loop in want["loops"] for r in loop["sweep"]]
    for phase, z, number in expected:
        got = next_step(page, "ArrowRight")
        shown = got["value"] if phase == "forward" else got["adjoint"]
        assert (got["phase"], got["z"], float(shown)) == (phase, z, number)
        if z.startswith("w"):  # a body's node, in the loop's box
            assert got["current"] == [f"sx-z3-{z}"] and page.locator("#sx-box-z3.sx-inbox").count() == 1
    for entry in want["gather"]:
        got = next_step(page, "ArrowRight")
        assert got["phase"] == "gather" and got["z"] == entry
    got = next_step(page, "ArrowRight")
    assert got["phase"] == "result"
    assert {v: float(d[1]) for v, d in got["partials"].items()} == want["gradient"]


def test_a_loop_inside_a_loop_is_a_box_inside_a_box_stepped_through(open_page):
    """The body of the inner loop, at one iteration of both indices, in its own box inside the outer
    loop's; every number shown is symad explain --json's, the gathers' too."""
    import numpy as np

    text = "sum(i = 1..400, x[i]*sum(j = 1..400, sin(x[j] - y[i])*(i + j)/400)) + y[2]^2"
    x = np.round(np.linspace(0.5, 1, 400) ** 2, 3)
    r = run("explain", text, "--at", f"x=[{','.join(map(str, x))}],y=0.25", "--iteration", "2", "--json")
    assert r.returncode == 0, r.stderr
    want = json.loads(r.stdout)
    page = open_page(explore(parse(text, Graph()), at={"x": x, "y": 0.25}, iteration=2).html)
    outer, inner = (page.locator(f'[id="sx-box-{loop["id"]}"]') for loop in want["loops"])
    assert [loop["id"] for loop in want["loops"]] == ["z3", "z3/w1"] and want["loops"][1]["parent"] == "z3"
    a, b = outer.bounding_box(), inner.bounding_box()  # Graphviz writes clusters side by side: inside by place
    assert a["x"] < b["x"] and a["y"] < b["y"] and b["x"] + b["width"] < a["x"] + a["width"]
    assert b["y"] + b["height"] < a["y"] + a["height"]
    page.hover('[id="sx-z3/w1-v3"]')
    page.wait_for_selector("#sx-tip:not([hidden])")
    assert "the body of z3/w1 at i = 2, j = 2" in page.text_content("#sx-tip")
    page.mouse.move(0, 0)
    expected = [("forward", "", r["id"], r["value"]) for r in want["forward"]]
    expected += [("forward", loop["id"], r["id"], r["value"]) for loop in want["loops"] for r in loop["forward"]]
    expected += [("backward", "", r["id"], r["derivative"]) for r in want["sweep"]]
    expected += [("backward", loop["id"], r["id"], r["derivative"]) for loop in want["loops"] for r in loop["sweep"]]
    for phase, loop, z, number in expected:
        got = next_step(page, "ArrowRight")
        shown = got["value"] if phase == "forward" else got["adjoint"]
        assert (got["phase"], got["z"], float(shown)) == (phase, z, number)
        if loop:  # a body's node, in its loop's box (the inner loop's Σ is the row w1 of z3's body)
            assert got["current"] == [f"sx-{loop}-{z}"]
            assert page.locator(f'[id="sx-box-{loop}"].sx-inbox').count() == 1
    for entry, terms in want["gather"].items():
        got = next_step(page, "ArrowRight")
        assert got["phase"] == "gather" and got["z"] == entry
        body = page.text_content("#sx-step")
        assert "iterations)" in body and all(f"{t['entry']} in {t['loop']}" in body for t in terms if t["loop"])
    got = next_step(page, "ArrowRight")
    assert got["phase"] == "result"
    assert {v: float(d[1]) for v, d in got["partials"].items()} == want["gradient"]
    assert set(want["gradient"]) == {"x[2]", "y[2]"}
