"""symad's file format: bit-exact round trips (JSON and pickle, one serialisation), hostile files
refused quickly with clear errors, and `symad save` / `@FILE` on the command line."""

from __future__ import annotations

import json
import math
import pickle
import time

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from support.cli_helpers import run
from support.expressions import NAMES, expressions
from support.properties import property_test

import symad
from symad import Graph
from symad.core import document
from symad.core.document import DocumentError
from symad.core.limits import override
from symad.persist import from_document


def bits(values) -> list[str]:
    return [float(v).hex() for v in np.atleast_1d(values)]


# ---------------------------------------------------------------- round trips
@property_test(150)
@given(text=st.one_of(expressions(4, sums=True), expressions(4, variables=NAMES)), data=st.data())
def test_documents_and_pickles_round_trip_bit_exactly(text: str, data) -> None:
    e = symad.parse(text, Graph())
    doc = e.to_document()
    fresh = from_document(document.loads(symad.dumps(e)), Graph())
    assert fresh.to_document() == doc  # node for node, constants bit for bit
    for back in (symad.loads(symad.dumps(e)), pickle.loads(pickle.dumps(e))):  # into the shared default graph
        assert back == e  # the same DAG: equal expressions are one node
        assert len(back.to_document()["nodes"]) == len(doc["nodes"])
    point = {v: data.draw(st.floats(-3, 3)) for v in e.variables}
    with np.errstate(all="ignore"):
        want, got = e.evaluate(point), symad.loads(symad.dumps(e)).evaluate(point)
    assert bits(got) == bits(want)


def test_constants_keep_their_bits() -> None:
    e = symad.parse("x*0.1 + y*-0.0 + 1e-320*z + 1/3*w", Graph())
    back = symad.loads(symad.dumps(e))
    assert str(back) == str(e)
    consts = sorted(n[1] for n in e.to_document()["nodes"] if n[0] == "const")
    assert consts == sorted(n[1] for n in back.to_document()["nodes"] if n[0] == "const")
    assert (0.1).hex() in consts and (1e-320).hex() in consts


def test_non_finite_constants_round_trip() -> None:
    g = Graph()
    e = symad.Expr(g, g.make("add", g.var("x"), g.const(math.inf)))
    back = symad.loads(symad.dumps(e))
    assert back.evaluate({"x": 1.0}) == math.inf


@pytest.mark.parametrize("wrt", [None, ["x"]])
def test_functions_round_trip_with_their_order_and_parameters(wrt) -> None:
    f = symad.compile("a*x^2 + sin(y)*x", variables=None if wrt else ["y", "x", "a"], wrt=wrt)
    for g in (symad.loads(symad.dumps(f)), pickle.loads(pickle.dumps(f))):
        assert type(g) is symad.Function
        assert (g.variables, g.params, g.backend) == (f.variables, f.params, f.backend)
        if wrt:
            x, p = [1.5], {"a": 2.0, "y": 0.5}
            assert bits(g.value_and_grad(x, p)[1]) == bits(f.value_and_grad(x, p)[1])
        else:
            assert bits(g.value_and_grad([0.5, 1.5, 2.0])[1]) == bits(f.value_and_grad([0.5, 1.5, 2.0])[1])


def test_vector_functions_and_lists_round_trip(tmp_path) -> None:
    v = symad.compile("t = x*y; t + x; t - y")
    path = tmp_path / "v.json"
    symad.save(v, path)
    w = symad.load(path)
    assert type(w) is symad.VectorFunction
    assert np.array_equal(w.jacobian([2.0, 3.0]), v.jacobian([2.0, 3.0]))
    outs = symad.parse_outputs("x + 1; x*y")
    symad.save(outs, path)
    assert symad.load(path) == outs


def test_the_document_is_readable_json(tmp_path) -> None:
    text = symad.dumps(symad.parse("(x+y)+x*(x+y)", Graph()))
    doc = json.loads(text)
    assert doc["format"] == "symad" and doc["version"] == 1 and doc["kind"] == "expression"
    assert doc["nodes"] == [["var", "x"], ["var", "y"], ["add", 0, 1], ["mul", 0, 2], ["add", 2, 3]]
    assert doc["outputs"] == [4]


def test_saving_something_else_is_refused() -> None:
    with pytest.raises(symad.SymadError, match="not dict"):
        symad.dumps({"x": 1})


# ---------------------------------------------------------------- hostile documents
def _doc(**changes) -> str:
    doc = {"format": "symad", "version": 1, "kind": "expression",
           "nodes": [["var", "x"], ["const", "0x1.0000000000000p+1"], ["mul", 0, 1]], "outputs": [2]}
    doc.update(changes)
    return json.dumps(doc)


GOOD = _doc()
HOSTILE = [
    (GOOD[: len(GOOD) // 2], "not JSON"),
    ("[" * 100_000 + "]" * 100_000, "not a symad document"),  # refused at the first "[", nothing nested read
    ('{"format": "symad", "version": 1, "nodes": ' + "[" * 100_000 + "]" * 100_000 + ', "outputs": [0]}',
     "node 0 is not"),
    ("[1, 2]", "not a symad document"),
    (_doc(format="other"), "not a symad document"),
    (_doc(version=3), "version 3, written by a newer symad"),
    (_doc(version="1"), "no version number"),
    (_doc(version=0), "not one symad ever wrote"),
    (_doc(nodes={}), "a list of nodes"),
    (_doc(outputs=[]), "outputs must be indices"),
    (_doc(outputs=[3]), "outputs must be indices"),
    (_doc(outputs=[10**12]), "outputs must be indices"),
    (_doc(kind="program"), "kind must be one of"),
    (_doc(nodes=[["var", "x"], ["mul", 0, 1]], outputs=[1]), "node 1: an argument must be the index of an earlier"),
    (_doc(nodes=[["mul", 0, 0]], outputs=[0]), "node 0: an argument must be the index of an earlier"),  # a cycle
    (_doc(nodes=[["var", "x"], ["sin", 10**12]], outputs=[1]), "an argument must be the index"),
    (_doc(nodes=[["var", "x"], ["sin", 0, 0]], outputs=[1]), "sin takes 1 argument"),
    (_doc(nodes=[["var", "x"], ["eval", 0]], outputs=[1]), "unknown operation 'eval'"),
    (_doc(nodes=[["var", "__import__('os')"]], outputs=[0]), "node 0: .__import__.* is not a name"),
    (_doc(nodes=[["var", "x" * 10_000]], outputs=[0]), "a variable is"),
    (_doc(nodes=[["const", "1e999" * 100]], outputs=[0]), "a constant is"),
    (_doc(nodes=[["const", "ten"]], outputs=[0]), "not a float.hex"),
    (_doc(nodes=[["const", 2.0]], outputs=[0]), "a constant is"),
    (_doc(nodes=[[]], outputs=[0]), "node 0 is not"),
    (_doc(nodes=["x"], outputs=[0]), "node 0 is not"),
    (_doc(kind="function"), "needs its variables and a backend"),
    (_doc(kind="function", variables=["x"], backend="gpu"), "needs its variables and a backend"),
    (_doc(kind="function", variables=["x; import os"], backend="auto"), "variables: 'x; import os' is not a name"),
    (_doc(kind="function", variables=[3], backend="auto"), "variables: a name is a string"),
    (_doc(kind="function", variables=["x"], params=["q"], backend="auto"), "not its expression's other variables"),
]


@pytest.mark.parametrize(("text", "message"), HOSTILE, ids=[m for _, m in HOSTILE])
def test_hostile_documents_are_refused_quickly(text: str, message: str) -> None:
    start = time.perf_counter()
    with pytest.raises(symad.SymadError, match=message.replace("(", r"\(").replace("'", ".")):
        symad.loads(text)
    assert time.perf_counter() - start < 5  # (generous: a shared machine; these take milliseconds)


def test_a_document_over_the_node_limit_is_refused_before_building() -> None:
    nodes = [["var", "x"]] + [["sin", k] for k in range(2000)]
    text = _doc(nodes=nodes, outputs=[2000])
    with override(max_nodes=1000), pytest.raises(DocumentError, match="more than 1,000 nodes, over the limit"):
        symad.loads(text)
    assert symad.loads(text) is not None  # within the default limits it loads
    with override(max_document_chars=1000), pytest.raises(DocumentError, match="over the limit of 1,000 characters"):
        document.loads(text)


# ---------------------------------------------------------------- the command line
def test_cli_save_then_every_command_reads_the_file(tmp_path) -> None:
    path = tmp_path / "f.json"
    r = run("save", "(x+y)+x*(x+y)", "-o", str(path))
    assert r.returncode == 0, r.stderr
    assert r.stdout == f"wrote {path}: 5 nodes, 1 output\n"
    r = run("grad", f"@{path}", "--at", "x=1,y=2")
    assert r.returncode == 0 and r.stdout == "f     = 6\ndf/dx = 5\ndf/dy = 2\n", r.stderr
    assert run("stats", f"@{path}").stdout == run("stats", "(x+y)+x*(x+y)").stdout
    vec = tmp_path / "v.json"
    assert run("save", "t = x*y; t + x; t - y", "-o", str(vec)).returncode == 0
    r = run("jacobian", f"@{vec}", "--at", "x=1,y=2")
    assert r.returncode == 0 and r.stdout.splitlines()[0].startswith("f1 = 3"), r.stderr


def test_cli_save_to_stdout_and_bad_files(tmp_path) -> None:
    r = run("save", "x^2", "-o", "-")
    assert r.returncode == 0 and json.loads(r.stdout)["nodes"] == [["var", "x"], ["const", "0x1.0000000000000p+1"],
                                                                   ["pow", 0, 1]]
    bad = tmp_path / "bad.json"
    bad.write_text(_doc(version=7))
    r = run("grad", f"@{bad}", "--at", "x=1")
    assert r.returncode == 2 and "version 7, written by a newer symad" in r.stderr and "Traceback" not in r.stderr
    r = run("save", "x^2", "-o", str(tmp_path / "no" / "such" / "dir.json"))
    assert r.returncode == 2 and "cannot write" in r.stderr


@pytest.mark.parametrize("backend", ["python", "auto"])
def test_a_function_with_loops_round_trips_as_its_loops(tmp_path, backend) -> None:
    text = "n = 20000; sum(i = 1..n-1, 100*(x[i+1] - x[i]^2)^2 + (1 - x[i])^2) + a*sum(i = 1..n, c[i]*x[i])"
    f = symad.IndexedFunction(symad.parse(text), wrt=["x"], backend=backend)
    symad.save(f, tmp_path / "f.json")
    doc = json.loads((tmp_path / "f.json").read_text())
    assert doc["kind"] == "indexed_function" and doc["variables"] == ["x"] and len(doc["nodes"]) < 40  # not unrolled
    g = symad.load(tmp_path / "f.json")
    assert isinstance(g, symad.IndexedFunction) and (g.variables, g.data) == (f.variables, f.data)
    point, data = np.linspace(-1, 1, 20000), {"a": 0.5, "c": np.arange(20000.0)}
    want, got = f.value_and_grad(point, data), g.value_and_grad(point, data)
    assert bits(got[0]) == bits(want[0]) and bits(got[1]) == bits(want[1])


def test_an_indexed_function_document_needs_its_variables() -> None:
    f = symad.IndexedFunction(symad.parse("sum(i = 1..20000, x[i]^2)"), backend="python")
    doc = json.loads(symad.dumps(f))
    del doc["variables"]
    with pytest.raises(DocumentError, match="needs its variables"):
        symad.loads(json.dumps(doc))


def test_a_vector_function_with_loops_round_trips() -> None:
    text = "n = 20000; each(i = 1..n-1, x[i+1] - x[i]^2); sum(i = 1..n, c[i]*x[i]) - 1"
    F = symad.IndexedVectorFunction(symad.parse_outputs(text), wrt=["x"], backend="python")
    doc = json.loads(symad.dumps(F))
    assert doc["kind"] == "indexed_vector_function" and doc["variables"] == ["x"] and len(doc["outputs"]) == 2
    G = symad.loads(symad.dumps(F))
    assert isinstance(G, symad.IndexedVectorFunction) and (G.variables, G.data) == (F.variables, F.data)
    point, data = np.linspace(-1, 1, 20000), {"c": np.arange(20000.0)}
    assert bits(G.value(point, data)) == bits(F.value(point, data))
    assert bits(G.jacobian_values(point, data)) == bits(F.jacobian_values(point, data))
