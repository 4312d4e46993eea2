"""The one rule for names (docs/guide/language.md, "Names"): a name it admits works everywhere,
and any other is refused where it enters, saying why and where.

Before the rule, `var("θ")`, `var("my var")` and SymPy's `x_{1}` compiled and evaluated but
failed later in pickling, saving and process pools; `var("e")` printed as the constant, and
`compile("e*x", variables=["e", "x"])` silently gave a zero partial for e.
"""

from __future__ import annotations

import concurrent.futures
import json
import multiprocessing
import pickle
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from support.cli_helpers import run
from support.expressions import admitted_names
from support.properties import property_test

import symad
from symad import Graph, NameRuleError, parse
from symad.core.name_rule import RESERVED, checked, problem
from symad.second_order import SecondOrder, hessian, hvp
from symad.tools.exporters import c_source, python_source

ADMITTED = ["_1", "x_", "X1", "a_b_c", "x[3]", "x[-2]", "theta_10", "x_2", "_", "__2", "inf_", "e1", "E", "pi2",
            "x1[3]", "sinh2", "if_", "sum1", "t1", "u[1]"]
REFUSED = ["θ", "my var", "", "x_{1}", "e", "pi", "inf", "nan", "sin", "if", "sum", "x[1.5]", "then", "prod",
           "logsumexp", "x'", "e[2]", " x"]


def _expression(names: list[str]) -> symad.Expr:
    """An expression using each name a few times (as a sum of terms of each)."""
    total = symad.Expr(Graph(), Graph().const(0.0)) * 0
    for k, name in enumerate(names, 1):
        v = symad.var(name)
        total = total + v * (k + symad.sin(v)) / (1 + v * v)
    return total


ALL = _expression(ADMITTED)
POINT = np.linspace(-1.5, 1.7, len(ADMITTED))


# ---------------------------------------------------------------- admitted
@pytest.mark.parametrize("name", ADMITTED)
def test_an_admitted_name_prints_parses_saves_loads_and_pickles_as_itself(name):
    assert problem(name) is None and checked(name) == name
    e = _expression([name])
    assert e.variables == (name,)
    assert parse(str(e)) == e
    assert parse(e.to_text("shared")) == e  # the shared form's _k never collide with _1, __2
    assert symad.loads(symad.dumps(e)) == e
    assert pickle.loads(pickle.dumps(e)) == e
    fn = e.compile()
    for copy in (pickle.loads(pickle.dumps(fn)), symad.loads(symad.dumps(fn))):
        assert copy.variables == (name,) and copy.value_and_grad([0.7])[0] == fn.value_and_grad([0.7])[0]
    assert symad.compile(e, variables=[name]).variables == (name,)
    assert symad.compile(e, wrt=[name]).variables == (name,)
    assert list(e.grad([name])) == [name]


@pytest.mark.parametrize("name", ADMITTED)
def test_an_admitted_name_is_valid_latex(name):
    mathtext = pytest.importorskip("matplotlib.mathtext")
    parser = mathtext.MathTextParser("agg")
    e = _expression([name])
    for text in (e.latex(), e.latex("f").replace("\\begin{aligned}", "").replace("\\end{aligned}", "")):
        for line in text.replace("&", "").split("\\\\"):
            parser.parse(f"${line.strip()}$")  # raises on invalid TeX (x_{1}_{3}, a bare _)


def test_latex_names_render_as_subscripts_and_shared_parts_avoid_them():
    assert symad.var("x1[3]").latex() == "{x_{1}}_{3}"
    assert symad.var("x[-2]").latex() == "x_{-2}"
    assert symad.var("theta_10").latex() == "\\theta_{10}"
    assert symad.var("_1").latex() == "\\mathit{\\_1}"
    assert symad.var("_").latex() == "\\mathit{\\_}"
    t = symad.var("t1")
    big = parse(f"({t} + y)^2", Graph())
    for _ in range(8):
        big = big * big + big
    block = big.latex()
    assert "t_{1} &=" not in block and "s_{1} &=" in block  # t_{1} is the variable t1


def test_every_admitted_name_together_through_pickle_save_and_both_exports(tmp_path: Path):
    fn = ALL.compile()
    assert set(fn.variables) == set(ADMITTED)
    point = dict(zip(ADMITTED, POINT))
    x = np.array([point[v] for v in fn.variables])
    value, grad = fn.value_and_grad(x)
    for copy in (pickle.loads(pickle.dumps(fn)), symad.loads(symad.dumps(fn))):
        got = copy.value_and_grad(x)
        assert got[0] == value and np.array_equal(got[1], grad)
    namespace: dict = {}
    source = python_source(ALL, "f", grad=True)
    (tmp_path / "exported.py").write_text(source)
    exec(compile(source, str(tmp_path / "exported.py"), "exec"), namespace)  # the generated module
    py_value, py_grad = namespace["f"](list(x))
    assert py_value == value and np.array_equal(py_grad, grad)
    cc = shutil.which("gcc") or shutil.which("cc")
    if cc is None:
        pytest.skip("no C compiler")
    import ctypes

    c_text, h_text = c_source(ALL, "f", grad=True)
    (tmp_path / "f.c").write_text(c_text)
    (tmp_path / "f.h").write_text(h_text)
    r = subprocess.run([cc, "-std=c99", "-O1", "-Wall", "-Werror", "-ffp-contract=off", "-shared", "-fPIC", "f.c",
                        "-o", "libf.so", "-lm"], cwd=tmp_path, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    lib = ctypes.CDLL(str(tmp_path / "libf.so"))
    lib.f.restype = ctypes.c_double
    p = ctypes.POINTER(ctypes.c_double)
    c_grad = np.zeros(len(x))
    c_value = lib.f(np.ascontiguousarray(x).ctypes.data_as(p), c_grad.ctypes.data_as(p))
    assert c_value == value and np.array_equal(c_grad, grad)


@pytest.mark.slow
def test_every_admitted_name_together_in_a_spawn_pool():
    fn = ALL.compile()
    points = [POINT + k for k in range(3)]
    expected = [fn.value_and_grad(p) for p in points]
    with concurrent.futures.ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("spawn")) as pool:
        got = list(pool.map(fn.value_and_grad, points, timeout=120))
    for (v, g), (ve, ge) in zip(got, expected):
        assert v == ve and np.array_equal(g, ge)


# ---------------------------------------------------------------- refused
def _document(name: str) -> str:
    doc = json.loads(symad.dumps(parse("x*y", Graph())))
    doc["nodes"] = [["var", name] if node == ["var", "x"] else node for node in doc["nodes"]]
    return json.dumps(doc)


def _function_document(name: str) -> str:
    doc = json.loads(symad.dumps(symad.compile(parse("x*y", Graph()))))
    doc["variables"] = ["x", "y", name]
    return json.dumps(doc)


def _made_in_a_graph(name: str) -> symad.Expr:
    g = Graph()
    return symad.Expr(g, g.var(name))  # the graph's own layer does not check: what is built is refused on writing


# (where the message says the name entered, the entry point)
ENTRIES = [
    ("symad.var", lambda n: symad.var(n)),
    ("symad.vector", lambda n: symad.vector(n, 3)),
    ("variables", lambda n: symad.compile("x*y", variables=["x", "y", n])),
    ("wrt", lambda n: symad.compile("x*y", wrt=["x", n])),
    ("variables", lambda n: symad.compile("x*y; x + y", variables=["x", "y", n])),
    ("wrt", lambda n: symad.compile(["x*y", "x"], wrt=[n])),
    ("variables", lambda n: symad.Function(parse("x"), variables=[n, "x"])),
    ("wrt", lambda n: SecondOrder("x*y", wrt=["x", n])),
    ("wrt", lambda n: parse("x*y").grad(["x", n])),
    ("diff", lambda n: parse("x*y").diff(n)),
    ("a direction", lambda n: parse("x*y").jvp({n: 1.0})),
    ("variables", lambda n: hessian("x^2*y", ["x", n])),
    ("variables", lambda n: hvp("x^2*y", {"x": 1.0}, ["x", n])),
    ("a direction", lambda n: hvp("x^2*y", {n: 1.0})),
    ("node 0", lambda n: symad.loads(_document(n))),
    ("the document's variables", lambda n: symad.loads(_function_document(n))),
    ("cannot write the variable", lambda n: symad.dumps(_made_in_a_graph(n))),
    ("cannot write the variable", lambda n: pickle.dumps(_made_in_a_graph(n))),
]


@pytest.mark.parametrize("name", REFUSED, ids=repr)
@pytest.mark.parametrize(("where", "entry"), ENTRIES, ids=[f"{k}:{w}" for k, (w, _) in enumerate(ENTRIES)])
def test_a_refused_name_is_refused_where_it_enters_saying_why(where, entry, name):
    why = problem(name)
    assert why is not None
    with pytest.raises(NameRuleError) as info:
        entry(name)
    assert where in str(info.value) and why in str(info.value)


def test_a_constant_listed_as_a_variable_is_refused_not_a_zero_partial():
    with pytest.raises(NameRuleError, match="variables: 'e' is the constant e"):
        symad.compile("e*x", variables=["e", "x"])
    assert symad.compile("e*x").variables == ("x",)


def test_the_refusals_suggest_a_spelling():
    assert "(write theta)" in problem("θ")
    assert "(write my_var)" in problem("my var")
    assert "(write x_1 or x[1])" in problem("x_{1}")
    assert "whole number" in problem("x[1.5]")


def test_the_reserved_words_follow_the_op_table():
    assert {"e", "pi", "inf", "nan", "sin", "where", "if", "then", "sum", "prod"} <= set(RESERVED)
    assert "x" not in RESERVED and len(RESERVED) == len(list(RESERVED))


def test_a_document_naming_a_variable_inf_is_refused_on_the_command_line(tmp_path: Path):
    path = tmp_path / "f.json"
    path.write_text(_document("inf"))
    p = run("eval", f"@{path}", "--at", "y=1")
    assert p.returncode == 2 and "'inf' is the constant inf" in p.stderr and "f = " not in p.stdout


# ---------------------------------------------------------------- random names
@property_test(200)
@given(name=admitted_names)
def test_any_admitted_name_round_trips(name):
    e = symad.var(name) * 2 + symad.var(name) ** 3
    assert e.variables == (checked(name),)  # A[007] is A[7]
    assert parse(str(e), Graph()) == e
    assert symad.loads(symad.dumps(e)) == e


@property_test(300)
@given(name=st.text(max_size=8))
def test_any_text_is_admitted_or_refused_by_the_one_rule(name):
    why = problem(name)
    if why is None:
        assert symad.var(name).variables == (checked(name),)
    else:
        with pytest.raises(NameRuleError, match="symad.var: "):
            symad.var(name)
