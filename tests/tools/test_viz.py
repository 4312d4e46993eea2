"""Graphviz pictures: DOT structure and annotations, rendering with the real ``dot``, and ``symad graph``."""

from __future__ import annotations

import json
import re
import shutil
import struct
import subprocess
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from support.cli_helpers import checkout_env, run, symad_command

from symad import Graph, LimitError, SymadError, VariableError, parse
from symad.tools.viz import LARGE, DotNotFoundError, render, to_digraph, write_picture

ROOT = Path(__file__).resolve().parents[2]
SEED = "(x+y)+x*(x+y)"
needs_dot = pytest.mark.skipif(shutil.which("dot") is None, reason="Graphviz's dot is not installed")

# Expressions with points, covering every op with arguments (and sharing, constants, non-commutative ops).
CASES = [
    (SEED, {"x": 1.0, "y": 2.0}),
    ("sin(x)^2/sqrt(1+y) + 2*y", {"x": 0.7, "y": 3.0}),
    ("x*x - y/x + pow(x, y)", {"x": 1.5, "y": 2.5}),
    ("atan2(y, x) + min(x, y) * max(x, y) - -x", {"x": -1.0, "y": 0.5}),
    ("exp(tan(x)) + log(cosh(y)) + sinh(x)*tanh(y) + abs(x - y)", {"x": 0.3, "y": -0.8}),
    ("asin(x) + acos(x*y) + atan(y) + cos(x) + sign(y) + step(x)", {"x": 0.4, "y": 0.9}),
    ("exp(x*y) * exp(x*y) + sqrt(exp(x*y))", {"x": 0.2, "y": 0.6}),
]


# ------------------------------------------------------------------ reading DOT text
def nodes(source: str, prefix: str = "n") -> dict[str, str]:
    """Node name -> label text (HTML tags stripped, lines joined by '|')."""
    found = {}
    for name, label in re.findall(rf"^\s*({prefix}\d+) \[label=<(.*?)> ", source, flags=re.M):
        text = re.sub(r"<BR/>", "|", label)
        found[name] = re.sub(r"<[^>]+>", "", text).replace("&amp;", "&").replace("&lt;", "<")
    return found


def edges(source: str) -> list[tuple[str, str, str]]:
    """(tail, head, attributes) of every drawn (visible) edge."""
    found = re.findall(r"^\s*(\w+) -> (\w+)(?: \[(.*)\])?$", source, flags=re.M)
    return [(a, b, attrs) for a, b, attrs in found if "invis" not in attrs]


def last_number(label: str) -> float:
    """The number after the last '= ' of a label."""
    return float(label.rsplit("= ", 1)[1].split("|")[0])


def local_names(e) -> dict[int, str]:
    """DAG node id -> DOT name: position in topological order."""
    return {node: f"n{i}" for i, node in enumerate(e.graph.reachable([e.id]))}


# ------------------------------------------------------------------ forward graph
@pytest.mark.parametrize("text, point", CASES, ids=[c for c, _ in CASES])
def test_one_box_per_dag_node_and_one_edge_per_argument(text, point):
    e = parse(text, Graph())
    dag = e.graph.reachable([e.id])
    source = to_digraph(e).source
    assert len(nodes(source)) == len(dag) == e.stats()["dag_nodes"]
    assert len(edges(source)) == sum(len(e.graph.args[n]) for n in dag)


def test_seed_has_five_boxes_and_its_shared_nodes_several_out_edges():
    e = parse(SEED, Graph())
    source = to_digraph(e).source
    assert len(nodes(source)) == 5
    name = local_names(e)
    users: dict[str, int] = {}
    for node in e.graph.reachable([e.id]):
        for a in e.graph.args[node]:
            users[name[a]] = users.get(name[a], 0) + 1
    out = {}
    for tail, _, _ in edges(source):
        out[tail] = out.get(tail, 0) + 1
    assert out == users
    x, shared = e.args[1].args  # x*(x+y): both x and x+y are used twice
    assert out[name[x.id]] == out[name[shared.id]] == 2


def test_forward_boxes_show_ops_and_kinds_differ():
    e = parse("2*sin(x) - y", Graph())
    source = to_digraph(e).source
    labels = nodes(source)
    name = local_names(e)
    assert labels[name[e.id]].startswith("-|")
    attrs = dict(re.findall(r"^\s*(n\d+) \[label=<.*?> (.*)\]$", source, flags=re.M))
    by_op = {e.graph.op[node]: attrs[name[node]] for node in name}
    assert len({by_op["var"], by_op["const"], by_op["sub"], by_op["sin"]}) == 4  # visibly distinct
    assert 'headlabel=1' in source and 'headlabel=2' in source  # sub's argument order is shown


def test_dot_text_is_deterministic_and_independent_of_graph_history():
    first = to_digraph(parse(SEED, Graph()), grad=True, at={"x": 1, "y": 2}).source
    g = Graph()
    parse("cos(z) + w*w + (x+y)*3", g)  # other nodes first: different node ids in the graph
    second = to_digraph(parse(SEED, g), grad=True, at={"x": 1, "y": 2}).source
    assert first == second
    assert "0x" not in first and not re.search(r"\b\d{8,}\b", first)  # never id()


# ------------------------------------------------------------------ values and adjoints
@pytest.mark.parametrize("text, point", CASES, ids=[c for c, _ in CASES])
def test_values_and_adjoints_match_the_compiled_gradient(text, point):
    e = parse(text, Graph())
    source = to_digraph(e, grad=True, at=point).source
    value, grad = e.compile().value_and_grad(point)
    name = local_names(e)
    forward, backward = nodes(source, "n"), nodes(source, "g")
    assert last_number(forward[name[e.id]]) == pytest.approx(value, rel=1e-3, abs=1e-9)
    for v, g in zip(e.variables, grad, strict=True):
        var_node = e.graph._index[("var", v)]
        label = backward["g" + name[var_node][1:]]
        assert label.startswith(f"∂f/∂{v}|")
        assert last_number(label) == pytest.approx(g, rel=1e-3, abs=1e-9)
    values = e.graph.reachable([e.id])
    for node in values:  # every forward node is annotated with its value
        if e.graph.op[node] != "const":
            assert "= " in forward[name[node]]


@pytest.mark.slow
def test_annotations_match_symad_grad():
    for text, point in CASES[:3]:
        at = ",".join(f"{k}={v!r}" for k, v in point.items())
        p = run("grad", text, "--at", at, "--json")
        assert p.returncode == 0, p.stderr
        expected = json.loads(p.stdout)
        p = run("graph", text, "--grad", "--at", at)
        assert p.returncode == 0, p.stderr
        e = parse(text, Graph())
        name = local_names(e)
        assert last_number(nodes(p.stdout)[name[e.id]]) == pytest.approx(expected["value"], rel=1e-3)
        backward = nodes(p.stdout, "g")
        for v, g in expected["grad"].items():
            label = next(lab for lab in backward.values() if lab.startswith(f"∂f/∂{v}|"))
            assert last_number(label) == pytest.approx(g, rel=1e-3, abs=1e-9)


def test_backward_graph_mirrors_the_sweep_with_sums_at_shared_nodes():
    e = parse(SEED, Graph())
    source = to_digraph(e, grad=True, at={"x": 1, "y": 2}).source
    assert "subgraph cluster_forward" in source and "subgraph cluster_backward" in source
    backward = nodes(source, "g")
    assert len(backward) == 5  # every node depends on a variable
    back_edges = [(a, b, attrs) for a, b, attrs in edges(source) if a.startswith("g")]
    assert len(back_edges) == len([1 for a, b, _ in edges(source) if a.startswith("n") and b.startswith("n")])
    assert all("label=" in attrs for _, _, attrs in back_edges)  # the local partials
    incoming: dict[str, int] = {}
    for _, head, _ in back_edges:
        incoming[head] = incoming.get(head, 0) + 1
    for g, label in backward.items():
        assert ("Σ of" in label) == (incoming.get(g, 0) > 1)
    # The summation is spelled out and adds up.
    x_label = next(lab for lab in backward.values() if lab.startswith("∂f/∂x|"))
    terms, total = x_label.split("|")[-1].split(" = ")
    assert sum(float(t) for t in terms.split(" + ")) == pytest.approx(float(total))
    root = local_names(e)[e.id]
    assert any(a == root and b == "g" + root[1:] and "seed" in attrs for a, b, attrs in edges(source))


def test_wrt_limits_the_backward_graph():
    e = parse(SEED, Graph())
    y = e.graph._index[("var", "y")]
    depends_on_y = [n for n in e.graph.reachable([e.id]) if y in e.graph.reachable([n])]
    source = to_digraph(e, wrt="y", at={"x": 1, "y": 2}).source  # wrt implies grad
    backward = nodes(source, "g")
    assert len(backward) == len(depends_on_y) < len(e.graph.reachable([e.id]))
    assert not any(lab.startswith("∂f/∂x") for lab in backward.values())
    assert to_digraph(e, wrt=["x", "y"]).source == to_digraph(e, grad=True).source
    with pytest.raises(VariableError, match="z is not a variable"):
        to_digraph(e, wrt=["z"])


def test_without_a_point_labels_are_symbolic():
    source = to_digraph(parse(SEED, Graph()), grad=True).source
    assert "= " not in "".join(nodes(source, "n").values()) + "".join(nodes(source, "g").values())
    assert 'label="× (x + y)"' in source and 'label="× x"' in source


def test_point_errors_and_nonfinite_values():
    e = parse("1/x + log(x)", Graph())
    with pytest.raises(VariableError, match="missing value for variable x"):
        to_digraph(e, at={})
    source = to_digraph(e, grad=True, at={"x": 0.0}).source
    labels = list(nodes(source).values()) + list(nodes(source, "g").values())
    assert any("inf" in lab for lab in labels) and any("nan" in lab for lab in labels)
    assert "#c62828" in source  # non-finite values are drawn in red


def test_constant_expression_has_no_backward_graph():
    source = to_digraph(parse("2*3 + 1", Graph()), grad=True).source
    assert len(nodes(source)) == 1 and not nodes(source, "g")


def test_rankdir_and_bad_options():
    assert "rankdir=LR" in to_digraph(SEED, rankdir="lr").source
    with pytest.raises(SymadError, match="rankdir"):
        to_digraph(SEED, rankdir="XY")


# ------------------------------------------------------------------ limits
def test_size_limit_names_the_option_and_counts_both_graphs():
    e = parse(SEED, Graph())
    with pytest.raises(LimitError, match=r"max_nodes=5\b"):
        to_digraph(e, max_nodes=4)
    to_digraph(e, max_nodes=5)
    with pytest.raises(LimitError, match=r"max_nodes=10\b"):
        to_digraph(e, grad=True, max_nodes=9)
    assert nodes(to_digraph(e, grad=True, max_nodes=10).source, "g")


@pytest.mark.slow
def test_deep_expressions_hit_the_limit_quickly_and_draw_iteratively():
    depth = 100_000
    deep = parse("(" * depth + "x" + ")+1" * depth, Graph())
    with pytest.raises(LimitError, match="max_nodes="):
        to_digraph(deep, grad=True)
    chain = parse("(" * 3000 + "x" + ")*x+1" * 3000, Graph())  # deeper than the recursion limit
    source = to_digraph(chain, grad=True, at={"x": 0.5}, max_nodes=10**6).source
    assert len(nodes(source)) == len(chain.graph.reachable([chain.id]))


def test_large_graphs_use_a_cheaper_layout():
    text = " + ".join(f"sin(x{i})*y" for i in range(LARGE // 8 + 2))  # 8 drawn nodes per term
    source = to_digraph(text, grad=True).source
    assert "splines=line" in source and "rank=min" not in source
    back = [attrs for a, _, attrs in edges(source) if a.startswith("g")]
    assert back and all("tooltip=" in attrs and " label=" not in " " + attrs for attrs in back)
    assert "splines=line" not in to_digraph(SEED, grad=True).source


# ------------------------------------------------------------------ rendering with dot
def png_size(data: bytes) -> tuple[int, int]:
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and data[12:16] == b"IHDR"
    return struct.unpack(">II", data[16:24])


@needs_dot
def test_png_has_a_valid_header_and_a_sensible_size(tmp_path):
    out = tmp_path / "seed.png"
    write_picture(to_digraph(SEED), str(out))
    width, height = png_size(out.read_bytes())
    assert 100 <= width <= 2000 and 200 <= height <= 2000
    out2 = tmp_path / "seed_grad.PNG"
    write_picture(to_digraph(SEED, grad=True, at={"x": 1, "y": 2}), str(out2))
    w2, h2 = png_size(out2.read_bytes())
    assert w2 > width and h2 > height and h2 <= 3000


@needs_dot
def test_svg_parses_as_xml_and_pdf_has_its_header(tmp_path):
    write_picture(to_digraph(SEED, grad=True, at={"x": 1, "y": 2}), str(tmp_path / "seed.svg"))
    root = ET.parse(tmp_path / "seed.svg").getroot()
    assert root.tag.endswith("svg")
    texts = [t.text for t in root.iter() if t.tag.endswith("text") and t.text]
    assert "∂f/∂x" in texts and "3 + 2 = 5" in texts
    write_picture(to_digraph(SEED), str(tmp_path / "seed.pdf"))
    assert (tmp_path / "seed.pdf").read_bytes()[:5] == b"%PDF-"


@needs_dot
def test_dot_that_takes_too_long_is_stopped():
    with pytest.raises(LimitError, match="did not finish"):
        render(to_digraph(SEED), "svg", timeout=1e-4)


def test_dot_text_needs_no_dot_and_unknown_extensions_fail(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("PATH", "")
    d = to_digraph(SEED)
    write_picture(d, str(tmp_path / "seed.dot"))
    assert (tmp_path / "seed.dot").read_text() == d.source
    write_picture(d, "-")
    assert capsys.readouterr().out == d.source
    with pytest.raises(DotNotFoundError, match="apt-get install graphviz"):
        write_picture(d, str(tmp_path / "seed.png"))
    assert not (tmp_path / "seed.png").exists()
    with pytest.raises(SymadError, match=r"\.png, \.svg"):
        write_picture(d, str(tmp_path / "seed.jpeg"))


# ------------------------------------------------------------------ the command
def test_cli_without_dot_says_how_to_install_it(tmp_path):
    env = checkout_env(PATH="")  # no dot on PATH
    p = subprocess.run([*symad_command(), "graph", SEED, "-o", str(tmp_path / "f.png")], capture_output=True,
                       text=True, env=env, timeout=60)
    assert p.returncode == 2 and p.stdout == ""
    assert p.stderr.count("\n") == 1 and "apt-get install graphviz" in p.stderr
    p = subprocess.run([*symad_command(), "graph", SEED, "-o", str(tmp_path / "f.dot")], capture_output=True,
                       text=True, env=env, timeout=60)
    assert p.returncode == 0 and (tmp_path / "f.dot").read_text().startswith("digraph")


@needs_dot
def test_cli_writes_pictures_silently(tmp_path):
    for name in ("f.png", "f.svg"):
        p = run("graph", SEED, "--grad", "--at", "x=1,y=2", "-o", str(tmp_path / name))
        assert p.returncode == 0 and p.stdout == "" and p.stderr == ""
    png_size((tmp_path / "f.png").read_bytes())
    ET.parse(tmp_path / "f.svg")


def test_cli_dot_to_stdout_matches_the_api_and_options_work():
    p = run("graph", SEED, "--wrt", "x", "--at", "x=1,y=2", "--rankdir", "LR")
    assert p.returncode == 0, p.stderr
    expected = to_digraph(SEED, wrt=["x"], at={"x": 1, "y": 2}, rankdir="LR", title=SEED).source
    assert p.stdout == expected
    p = run("graph", SEED, "--grad", "--json")
    obj = json.loads(p.stdout)
    assert obj["nodes"] == 10 and obj["dot"].startswith("digraph")
    assert "--max-nodes" in run("graph", "--help").stdout


@pytest.mark.slow
@pytest.mark.parametrize("args, message", [
    (["--max-nodes", "3"], "raise the limit with --max-nodes=5"),
    (["--at", "x=1"], "missing value for variable y"),
    (["--wrt", "z"], "z is not a variable"),
    (["-o", "f.gif"], "cannot tell the picture format"),
    (["--rankdir", "XY"], "invalid choice"),
])
def test_cli_errors_are_one_line_and_exit_2(args, message):
    p = run("graph", SEED, *args)
    assert p.returncode == 2 and p.stdout == ""
    assert message in p.stderr and "Traceback" not in p.stderr


# ------------------------------------------------------------------ the README's pictures
def test_readme_shows_the_commands_and_embeds_the_pictures():
    readme = (ROOT / "README.md").read_text()
    section = readme.split("## Pictures", 1)[1].split("\n## ", 1)[0]
    for name in ("seed_forward.png", "seed_backward.png"):
        assert f"-o docs/images/{name}" in section and f"(docs/images/{name})" in section
        width, height = png_size((ROOT / "docs" / "images" / name).read_bytes())
        assert width >= 100 and height >= 200
    assert readme.index("## Pictures") < readme.index("## Dependencies and why")
