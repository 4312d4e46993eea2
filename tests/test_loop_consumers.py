"""Sums kept as loops through the consumers of expressions: LaTeX, SymPy both ways, documents
(and pickles) and pictures.  Each saves or shows the loop itself, never its unrolling."""

from __future__ import annotations

import json
import pickle
import re
import shutil
import xml.etree.ElementTree as ET

import numpy as np
import pytest
import sympy
from support.loops import parse_looped

import symad
from symad.ad.gather import indexed_gradient
from symad.core import binders, document
from symad.core.dag import Graph
from symad.core.latex import to_latex
from symad.indexed_function import IndexedFunction

N = 2 * binders.UNROLL_MAX_TERMS  # a range long enough to stay a loop
ROSENBROCK = "sum(i = 1..{n}, 100*(x[i+1] - x[i]^2)^2 + (1 - x[i])^2)"
QUADRATIC = "sum(i = 1..{n}, x[i]*sum(j = 1..{n}, A[i, j]*x[j]))"  # x'Ax, nested


def looped(text: str, graph: Graph | None = None) -> symad.Expr:
    expr = symad.parse(text, Graph() if graph is None else graph)
    assert binders.has_scoped(expr.graph, [expr.id]), text
    return expr


# ---------------------------------------------------------------- LaTeX
@pytest.mark.parametrize(("text", "want"), [
    (ROSENBROCK.format(n=N), rf"\sum_{{i=1}}^{{{N}}} \left(100\,\left(x_{{i + 1}} - x_{{i}}^{{2}}\right)^{{2}} + "
                             r"\left(1 - x_{i}\right)^{2}\right)"),
    (QUADRATIC.format(n=N),
     rf"\sum_{{i=1}}^{{{N}}} x_{{i}}\,\left(\sum_{{j=1}}^{{{N}}} A_{{i, j}}\,x_{{j}}\right)"),
    (f"sum(i = 1..{N}, sum(j = 1..{N}, A[i, j]))", rf"\sum_{{i=1}}^{{{N}}} \sum_{{j=1}}^{{{N}}} A_{{i, j}}"),
    # a factor and a power's base are wrapped, a term is not; an entry at a number is a subscript too
    (f"2*sum(i = 1..{N}, x[i])*y + x[3]", rf"2\,\left(\sum_{{i=1}}^{{{N}}} x_{{i}}\right)\,y + x_{{3}}"),
    (f"sum(i = 1..{N}, x[i])^2", rf"\left(\sum_{{i=1}}^{{{N}}} x_{{i}}\right)^{{2}}"),
    (f"-sum(i = -5..{N}, x1[2*i - 1])", rf"-\left(\sum_{{i=-5}}^{{{N}}} {{x_{{1}}}}_{{2\,i - 1}}\right)"),
    (f"y - sum(i = 1..{N}, i*x[i])", rf"y - \sum_{{i=1}}^{{{N}}} i\,x_{{i}}"),
    # an index avoids the names of variables
    (f"i + sum(k = 1..{N}, x[k])", rf"i + \sum_{{j=1}}^{{{N}}} x_{{j}}"),
])
def test_latex_of_loops(text: str, want: str) -> None:
    e = looped(text)
    assert to_latex(e.graph, e.id) == want


def test_latex_of_a_product_and_a_map() -> None:
    g = Graph()
    body = binders.item(g, g.vector("x"), g.index(0))
    prod = binders.reduce(g, "prod", 0, 1, N, g.make("add", body, g.const(1.0)))
    assert to_latex(g, prod) == rf"\prod_{{i=1}}^{{{N}}} \left(x_{{i}} + 1\right)"
    each = binders.reduce(g, "each", 0, 2, N, g.make("mul", body, body))
    assert to_latex(g, each) == rf"\left(x_{{i}}\,x_{{i}}\right)_{{i=2}}^{{{N}}}"


def test_latex_of_an_indexed_gradient() -> None:
    e = looped(ROSENBROCK.format(n=N))
    _, vectors = indexed_gradient(e.graph, e.id)
    latex = to_latex(e.graph, vectors["x"].node)
    assert latex.startswith(r"\left(") and latex.endswith(rf"\right)_{{i=1}}^{{{N + 1}}}")
    assert r"x_{i - 1}" in latex and r"x_{i + 1}" in latex and r"\begin{cases}" in latex


# ---------------------------------------------------------------- SymPy
def test_to_sympy_writes_sum_and_indexed() -> None:
    e = looped(ROSENBROCK.format(n=N))
    s = symad.to_sympy(e)
    i = sympy.Symbol("i", integer=True)
    x = sympy.IndexedBase("x", real=True)
    assert s == sympy.Sum(100 * (x[i + 1] - x[i] ** 2) ** 2 + (1 - x[i]) ** 2, (i, 1, N))
    assert i not in s.free_symbols  # the index is bound


@pytest.mark.parametrize("text", [
    ROSENBROCK.format(n=N), QUADRATIC.format(n=N),
    f"sum(i = 1..{N}, x[i]*sum(j = 1..{N}, y[j])) + x[3]",  # an inner loop free of the outer index
    f"sum(i = 1..{N}, x[i]*(y[i+1] + z)) - w",
    f"sum(i = 1..{N}, sum(j = 1..{N}, A[i, j+1]*x[j])*exp(-x[2*i - 1]^2))",
    f"sum(i = 1..{N}, sqrt(x[i])*log(1 + y[i-1]^2))",
])
def test_sympy_round_trip_gives_the_same_node(text: str) -> None:
    g = Graph()
    e = looped(text, g)
    back = symad.from_sympy(symad.to_sympy(e), g)
    assert back.id == e.id, (str(e), str(back))


def test_sympy_round_trip_of_a_huge_rosenbrock() -> None:
    g = Graph()
    e = looped(ROSENBROCK.format(n=20000 - 1), g)
    assert symad.from_sympy(symad.to_sympy(e), g).id == e.id
    assert len(g) < 40  # the graph holds the loop, not 20000 terms


def test_a_short_sum_done_by_sympy_equals_the_loop() -> None:
    text = "sum(i = 1..9, 100*(x[i+1] - x[i]^2)^2 + (1 - x[i])^2) + sum(i = 2..8, sum(j = 1..5, A[i, j]*x[j]))"
    e = parse_looped(text)
    s = symad.to_sympy(e)
    assert s.has(sympy.Sum)
    rng = np.random.default_rng(3)
    xs, a = rng.normal(size=10), rng.normal(size=(7, 5))  # x[1..10], A[2..8, 1..5]
    want = IndexedFunction(e).value({"x": xs, "A": a})
    x, A = sympy.IndexedBase("x", real=True), sympy.IndexedBase("A", real=True)
    values = {x[k + 1]: xs[k] for k in range(10)} | {A[r + 2, c + 1]: a[r, c] for r in range(7) for c in range(5)}
    got = float(s.doit().subs(values))
    assert got == pytest.approx(want, rel=1e-12)


def test_from_sympy_reads_long_sums_as_loops() -> None:
    i, j = sympy.symbols("i j", integer=True)
    x, A, y = sympy.IndexedBase("x"), sympy.IndexedBase("A"), sympy.Symbol("y", real=True)
    g = Graph()
    cases = [
        (sympy.Sum(x[i] ** 2, (i, 1, N)), f"sum(i = 1..{N}, x[i]^2)"),
        (sympy.Sum(x[i] * y, (i, N, 1)), f"-sum(i = 2..{N - 1}, x[i]*y)"),  # Karr's convention, as unrolled
        (x[3] + sympy.Sum(x[i], (i, 1, N)), f"x[3] + sum(i = 1..{N}, x[i])"),
        (sympy.Sum(x[i] * x[j], (j, 1, N), (i, 1, N)), f"sum(i = 1..{N}, sum(j = 1..{N}, x[i]*x[j]))"),
        (sympy.Sum(x[2 * i - 1] * y, (i, 1, N)), f"sum(i = 1..{N}, x[2*i - 1]*y)"),
    ]
    for sympy_expr, text in cases:
        assert symad.from_sympy(sympy_expr, g).id == symad.parse(text, g).id, sympy_expr
    # a short outer range unrolled around a long inner one: one loop a term
    two = symad.from_sympy(sympy.Sum(A[i, j] * x[j], (j, 1, N), (i, 1, 2)), g)
    assert g.op[two.id] == "add" and [g.op[a] for a in g.args[two.id]] == ["sum", "sum"]
    assert str(two) == f"sum(i = 1..{N}, x[i]*A[1, i]) + sum(i = 1..{N}, x[i]*A[2, i])"
    prod = symad.from_sympy(sympy.Product(x[i], (i, 1, N)), g)
    assert g.op[prod.id] == "prod" and g.data[prod.id] == (0, 1, N)


@pytest.mark.parametrize(("make", "message"), [
    (lambda i, j, x: sympy.Sum(x[i ** 2], (i, 1, N)), r"indices of x\[i\*\*2\] must be affine"),
    (lambda i, j, x: sympy.Sum(x[i] * x[j], (j, 1, i), (i, 1, N)), "the bound i of .* stays a loop"),
    (lambda i, j, x: sympy.Sum(x[i + j], (i, 1, N)), r"index i \+ j of x\[i \+ j\] is not a whole number"),
    (lambda i, j, x: sympy.IndexedBase("A")[1, 2] + sympy.Sum(x[i], (i, 1, N)), "has 2 indices"),
])
def test_from_sympy_refuses_what_a_loop_cannot_be(make, message) -> None:
    i, j = sympy.symbols("i j", integer=True)
    with pytest.raises(symad.SymadError, match=message):
        symad.from_sympy(make(i, j, sympy.IndexedBase("x")), Graph())


def test_to_sympy_refuses_a_map_plainly() -> None:
    g = Graph()
    each = binders.reduce(g, "each", 0, 1, N, g.make("sin", binders.item(g, g.vector("x"), g.index(0))))
    with pytest.raises(symad.SymadError, match="SymPy has no each"):
        symad.to_sympy(symad.Expr(g, each))


# ---------------------------------------------------------------- documents and pickles
def test_a_document_saves_the_loop_not_its_unrolling() -> None:
    e = looped(ROSENBROCK.format(n=10**6 - 1))
    text = symad.dumps(e)
    assert len(text) < 2048
    doc = json.loads(text)
    assert doc["version"] == document.LOOPS_VERSION
    assert ["sum", 0, 1, 10**6 - 1, len(doc["nodes"]) - 2] in doc["nodes"]
    assert ["index", 0] in doc["nodes"] and ["vector", "x"] in doc["nodes"]
    assert symad.dumps(symad.parse("x*y + 1", Graph())).count('"version": 1,') == 1  # no loop: version 1


@pytest.mark.parametrize("text", [
    ROSENBROCK.format(n=N), QUADRATIC.format(n=N),
    f"sum(i = -{N}..-1, y[-i]*sum(j = 1..{N}, A[2*i + 1, j - 1])) + x[3] + sum(i = 1..{N}, x[i])*z",
    f"sum(i = 1..{N}, sum(j = 1..{N}, sum(k = 1..{N}, B[i, j, k]*x[i]*x[j]*x[k])))",
])
def test_documents_and_pickles_rebuild_the_same_nodes(text: str) -> None:
    g = Graph()
    e = looped(text, g)
    doc = document.loads(symad.dumps(e))
    assert document.build(doc, g) == [e.id]  # the same node in its own graph
    other = Graph()
    (copy,) = document.build(document.loads(symad.dumps(e)), other)
    assert symad.dumps(symad.Expr(other, copy)) == symad.dumps(e)
    assert g.digest(e.id) == other.digest(copy)
    back = pickle.loads(pickle.dumps(e))
    assert back.graph.digest(back.id) == g.digest(e.id) and back == e  # (printed, products follow node ids)


def test_a_loaded_loop_computes_as_the_parsed_one() -> None:
    e = looped(ROSENBROCK.format(n=N))
    x = np.random.default_rng(5).normal(size=N + 1)
    want = IndexedFunction(e).value_and_grad({"x": x})
    got = IndexedFunction(symad.loads(symad.dumps(e))).value_and_grad({"x": x})
    assert got[0] == want[0] and np.array_equal(got[1], want[1])


def test_a_gradients_each_is_saved_as_an_output() -> None:
    e = looped(ROSENBROCK.format(n=N))
    _, vectors = indexed_gradient(e.graph, e.id)
    node = vectors["x"].node
    doc = document.to_document(e.graph, [e.id, node], "expressions")
    assert doc["nodes"][-1][:4] == ["each", 0, 1, N + 1]
    assert document.build(document.loads(document.dumps(doc)), e.graph) == [e.id, node]


def _loop_doc(nodes: list, outputs: list | None = None, version: int = 2) -> str:
    return json.dumps({"format": "symad", "version": version, "kind": "expression", "nodes": nodes,
                       "outputs": [len(nodes) - 1] if outputs is None else outputs})


_BODY = [["index", 0], ["vector", "x"], ["item", 1, 0]]  # x[i]
_GOOD = _BODY + [["sum", 0, 1, N, 2]]


@pytest.mark.parametrize(("text", "message"), [
    (_loop_doc(_GOOD, version=1), "version 1, which has no loops"),
    (_loop_doc(_BODY + [["sum", 0, 1, N, 3]]), "node 3: an argument must be the index of an earlier"),
    (_loop_doc(_BODY + [["sum", 0, 1, N, -1]]), "node 3: an argument must be the index of an earlier"),
    (_loop_doc(_BODY + [["sum", -1, 1, N, 2]]), "node 3: the level of a sum is a whole number from 0"),
    (_loop_doc(_BODY + [["sum", 99, 1, N, 2]]), "node 3: the level of a sum is a whole number from 0"),
    (_loop_doc(_BODY + [["sum", 0, 1.5, N, 2]]), "node 3: the first and last index of a sum are whole"),
    (_loop_doc(_BODY + [["sum", 0, "1", N, 2]]), "node 3: the first and last index of a sum are whole"),
    (_loop_doc(_BODY + [["sum", 0, 1, 2**40, 2]]), "node 3: the first and last index of a sum are whole"),
    (_loop_doc(_BODY + [["prod", 0, 1, N]]), r'node 3: a prod is \["prod", its level'),
    (_loop_doc([["index", -1]]), r'node 0: an index is \["index", its nesting level'),
    (_loop_doc([["index", "i"]]), r'node 0: an index is \["index", its nesting level'),
    (_loop_doc([["vector", "x[3]"]]), r"node 0: a vector is named without an index \(x, not x\[3\]\)"),
    (_loop_doc([["vector", "pi"]]), "node 0: .*word of the language"),
    (_loop_doc([["vector", "x"]]), "an output of the document is a vector"),
    (_loop_doc([["index", 0], ["var", "x"], ["item", 1, 0]]), "an entry's first argument must be a vector"),
    (_loop_doc([["index", 0], ["vector", "x"], ["item", 1]]), r'an entry is \["item", a vector, 1 to 16'),
    (_loop_doc(_BODY + [["sin", 1]]), "node 3: its argument 1 is not a number: a vector is used only"),
    (_loop_doc(_BODY + [["item", 1, 1]]), "node 3: its argument 1 is not a number: a vector is used only"),
    (_loop_doc(_BODY + [["each", 0, 1, N, 2], ["sin", 3]]), "an each .* can only be an output"),
    (_loop_doc(_BODY + [["mul", 0, 0], ["item", 1, 3], ["sum", 0, 1, N, 4]]),
     "node 4: an entry's index must be an affine expression"),
    (_loop_doc(_BODY), "an output of the document uses an index outside any loop"),
    (_loop_doc(_GOOD + [["var", "x"], ["add", 3, 4]]), "the document's x is a variable and x a vector"),
    (_loop_doc(_GOOD + [["var", "x[3]"], ["add", 3, 4]]), r"the document's x\[3\] is a variable and x a vector"),
    (_loop_doc([["index", 1], ["vector", "x"], ["item", 1, 0], ["sum", 0, 1, N, 2]]),
     "node 3: the body of the sum at level 0 uses the index of level 1, which no loop around it binds"),
])
def test_bad_loop_documents_are_refused_clearly(text: str, message: str) -> None:
    with pytest.raises(document.DocumentError, match=message):
        symad.loads(text)
    with pytest.raises(document.DocumentError, match=message):  # and as JSON values, not text
        document.build(document.check(json.loads(text)), Graph())


def test_a_hand_written_loop_document_is_read() -> None:
    g = Graph()
    (node,) = document.build(document.loads(_loop_doc(_GOOD)), g)
    assert node == symad.parse(f"sum(i = 1..{N}, x[i])", g).id


# ---------------------------------------------------------------- pictures
def _clusters(source: str) -> tuple[dict[str, str | None], dict[str, tuple[str, str | None]], dict[str, str]]:
    """``({node: its innermost cluster or None}, {cluster: (its label, the cluster around it)},
    {node: its label's text})`` read from DOT text."""
    where: dict[str, str | None] = {}
    clusters: dict[str, tuple[str, str | None]] = {}
    labels: dict[str, str] = {}
    stack: list[str] = []
    for line in source.splitlines():
        line = line.strip()
        if m := re.match(r"subgraph (cluster_\w+) \{", line):
            clusters[m[1]] = ("", stack[-1] if stack else None)
            stack.append(m[1])
        elif line == "}" and stack:
            stack.pop()
        elif stack and (m := re.match(r'graph \[.*label="([^"]*)"', line)):
            clusters[stack[-1]] = (m[1], clusters[stack[-1]][1])
        elif m := re.match(r"((?:n|d\d+_)\d\w*) \[label=<(.*?)> ", line):
            where[m[1]] = stack[-1] if stack else None
            labels[m[1]] = re.sub(r"<[^>]+>", " ", m[2]).split()[0]
    return where, clusters, labels


def _edges(source: str) -> set[tuple[str, str]]:
    return set(re.findall(r"^\s*(\w+) -> (\w+)", source, flags=re.M))


def test_a_picture_draws_a_sum_as_one_box_holding_its_body() -> None:
    e = looped("sum(i = 1..99999, 100*(x[i+1] - x[i]^2)^2 + (1 - x[i])^2)*sin(y)")
    source = symad.to_digraph(e).source
    where, clusters, labels = _clusters(source)
    assert [label for label, _ in clusters.values()] == ["sum i = 1..99999"]
    (box,) = clusters
    inside = {labels[n] for n, c in where.items() if c == box}
    assert {"x[i", "i", "Σ", "100", "2", "1"} <= inside  # entries, the index leaf, the loop's node, numbers
    assert "x[i + 1]" in source and "x[i]" in source
    outside = {labels[n] for n, c in where.items() if c is None}
    assert outside == {"y", "sin", "*"}  # the loop's users and what does not use its index
    assert len(where) < 25  # the body once, not 99999 terms
    sigma = next(n for n, c in where.items() if labels[n] == "Σ")
    product = next(n for n, c in where.items() if labels[n] == "*" and c is None)
    assert (sigma, product) in _edges(source)


def test_captures_are_drawn_outside_with_their_edges_into_the_box() -> None:
    e = looped(f"sum(i = 1..{N}, x[i]*sin(y) + x[i]^2) + sum(i = 1..{2 * N}, x[i]*sin(y) + x[i]^2)")
    source = symad.to_digraph(e).source
    where, clusters, labels = _clusters(source)
    assert sorted(label for label, _ in clusters.values()) == sorted([f"sum i = 1..{N}", f"sum i = 1..{2 * N}"])
    (sin,) = [n for n in where if labels[n] == "sin"]
    assert where[sin] is None
    into = [head for tail, head in _edges(source) if tail == sin]
    assert len(into) == 2 and {where[h] for h in into} == set(clusters)  # one edge into each box
    for box in clusters:  # each box has its own index leaf and draws the shared body
        assert sum(1 for n, c in where.items() if c == box and labels[n] == "i") == 1


def test_nested_loops_are_boxes_in_boxes() -> None:
    e = looped(QUADRATIC.format(n=N))
    where, clusters, labels = _clusters(symad.to_digraph(e).source)
    outer = next(c for c, (label, parent) in clusters.items() if parent is None)
    inner = next(c for c, (label, parent) in clusters.items() if parent == outer)
    assert clusters[outer][0] == f"sum i = 1..{N}" and clusters[inner][0] == f"sum j = 1..{N}"
    assert {labels[n] for n, c in where.items() if c == inner} >= {"A[i,", "x[j]", "j", "Σ"}
    assert [labels[n] for n, c in where.items() if c == outer and labels[n] in ("i", "j")] == ["i"]


def test_a_picture_of_loops_is_the_same_text_each_time() -> None:
    text = QUADRATIC.format(n=N) + f" + sum(i = 1..{N}, exp(x[i]))*y"
    first = symad.to_digraph(looped(text)).source
    g = Graph()
    symad.parse("a*b + c", g)  # other nodes first: the picture does not depend on them
    assert symad.to_digraph(looped(text, g)).source == first


def test_a_partial_whose_body_does_not_use_its_index_is_drawn() -> None:
    """The gradient of 20000*sum(x) is each(k, 20000): its box holds k, which its body does not
    use (symad graph --grad was an internal KeyError)."""
    e = looped(f"sum(i = 1..{N}, sum(j = 1..{N}, x[j]))")
    where, clusters, labels = _clusters(symad.to_digraph(e, grad=True).source)
    box = next(c for c, (text, _) in clusters.items() if text == f"each k = 1..{N}")
    assert {labels[n] for n, c in where.items() if c == box} == {"k", str(N), "each"}


def test_a_gradient_of_loops_draws_the_indexed_gradient_beside_the_loops() -> None:
    e = looped(ROSENBROCK.format(n=N))
    where, clusters, labels = _clusters(symad.to_digraph(e, grad=True).source)
    parent = {c: around for c, (_, around) in clusters.items()}
    label = {c: text for c, (text, _) in clusters.items()}
    assert label["cluster_forward"].startswith("forward") and label["cluster_backward"].startswith("backward")
    assert parent["cluster_d0"] == "cluster_backward" and label["cluster_d0"] == f"∂f/∂x[k], k = 1..{N + 1}"
    each = next(c for c in clusters if parent[c] == "cluster_d0")
    assert label[each] == f"each k = 1..{N + 1}"
    drawn = {labels[n] for n, c in where.items() if c == each}
    assert {"k", "x[k", "where", "each"} <= drawn and "i" not in drawn  # the gradient's index is k
    assert all(n.startswith("d0_") for n, c in where.items() if c in ("cluster_d0", each))
    # the very expression the indexed gradient is, drawn alone
    _, vectors = indexed_gradient(e.graph, e.id)
    alone_where, _, alone_labels = _clusters(symad.to_digraph(symad.Expr(e.graph, vectors["x"].node)).source)
    alone = sorted(re.sub(r"\bi\b", "k", alone_labels[n]) for n in alone_where)  # (alone, its index is i)
    assert alone == sorted(labels[n] for n, c in where.items() if c in ("cluster_d0", each))
    with pytest.raises(symad.SymadError, match="values at a point are not drawn for sums kept as loops"):
        symad.to_digraph(e, at={"x": 1.0})


@pytest.mark.skipif(shutil.which("dot") is None, reason="Graphviz's dot is not installed")
def test_dot_draws_the_boxes(tmp_path) -> None:
    e = looped(QUADRATIC.format(n=N) + f" + sum(i = 1..{N}, exp(x[i]))*y")
    svg = tmp_path / "loops.svg"
    symad.write_picture(symad.to_digraph(e, grad=True), str(svg))
    root = ET.parse(svg).getroot()
    ns = {"svg": "http://www.w3.org/2000/svg"}
    titles = [t.text for g in root.iterfind(".//svg:g[@class='cluster']", ns) for t in g.iterfind("svg:title", ns)]
    forward = sorted(t for t in titles if t.startswith("cluster_loop"))
    assert forward == ["cluster_loop1", "cluster_loop2", "cluster_loop3"]
    assert {"cluster_forward", "cluster_backward", "cluster_d0", "cluster_d1"} <= set(titles)  # x's and y's partials
    texts = {t.text for t in root.iterfind(".//svg:text", ns)}
    assert {f"sum i = 1..{N}", f"sum j = 1..{N}", "x[i]", "A[i, j]", "Σ"} <= texts
