"""Documents read strictly and within bounds: constants only as float.hex() writes them, no
key the format does not have, a size limit, memory within a small multiple of the text, and
the command line building a document's DAG straight from it (never from its printed text).
Round trips of every operation and of the special numbers stay exact."""

from __future__ import annotations

import json
import math
import pickle
import struct

import pytest
from support.cli_helpers import run
from support.measure import python_measured

import symad
from symad import Graph
from symad.core import document
from symad.core.document import DocumentError, DocumentLimitError
from symad.core.limits import LIMITS, override
from symad.core.ops import OPS


def _doc(**changes) -> str:
    doc = {"format": "symad", "version": 1, "kind": "expression",
           "nodes": [["var", "x"], ["const", "0x1.8000000000000p+0"], ["mul", 0, 1]], "outputs": [2]}
    doc.update(changes)
    return json.dumps(doc)


def _const(text: str) -> str:
    return _doc(nodes=[["var", "x"], ["const", text], ["mul", 0, 1]])


def _refused(text: str, message: str) -> DocumentError:
    """The error loading ``text`` raises; the same from its JSON values (the other way in),
    where they are the text's (json.loads keeps the last of a key given twice)."""
    with pytest.raises(DocumentError, match=message) as info:
        symad.loads(text)
    try:
        values = json.loads(text)
    except ValueError:
        return info.value
    if "twice" in message:
        return info.value
    with pytest.raises(DocumentError, match=message):
        document.check(values)
    return info.value


# ---------------------------------------------------------------- constants: float.hex() only
NOT_CANONICAL = ["1.5", "1e308", "0x1.8p+0 ", " 0x1.8000000000000p+0", "0x1.8p+0", "0X1.8000000000000P+0",
                 "0x1.8000000000000P+0", "+0x1.8000000000000p+0", "0x1.8000000000000p0", "0x01.8000000000000p+0",
                 "0x1.80000000000000p+0", "0x1.8000000000000p+00", "1", "0", "-0", "0x0p+0", "Infinity", "-nan",
                 "NaN", "INF", "0x1.8000000000000p+0\n"]


@pytest.mark.parametrize("text", NOT_CANONICAL)
def test_a_constant_not_written_as_float_hex_writes_it_is_refused(text: str) -> None:
    # float.fromhex reads "1.5" as 0x1.5 = 1.3125 and "1e308" as 0x1e308 = 123656: never a number silently
    _refused(_const(text), r"node 1: .* is not a number as float\.hex\(\) writes it")


def test_the_error_says_how_to_write_it() -> None:
    assert "write '0x1.8000000000000p+0'" in str(_refused(_const("1.5"), "1.5"))
    assert "as '0x1.8000000000000p+0'" in str(_refused(_const("0x1.8p+0"), "0x1.8p"))


@pytest.mark.parametrize("text", ["0x1p+99999999", "-0x1p+1024", "0x1.fffffffffffff8p+1023"])
def test_a_constant_beyond_the_largest_float_is_a_document_error(text: str) -> None:
    _refused(_const(text), "node 1: .* is beyond the largest float")  # was a raw OverflowError


def test_an_overflowing_constant_on_the_command_line_is_a_clear_error(tmp_path) -> None:
    path = tmp_path / "f.json"
    path.write_text(_const("0x1p+99999999"))
    r = run("eval", f"@{path}", "--at", "x=1")
    assert r.returncode == 2 and "beyond the largest float" in r.stderr and "Traceback" not in r.stderr  # was 70


SPECIAL = [math.inf, -math.inf, math.nan, -0.0, 0.0, 5e-324, -5e-324, 2.2250738585072014e-308,
           1.7976931348623157e308, -1.7976931348623157e308, 0.1, 1 / 3, 2.0**-1074 * 3, 1e-320]


@pytest.mark.parametrize("value", SPECIAL, ids=[repr(v) for v in SPECIAL])
def test_special_constants_round_trip_bit_for_bit(value: float) -> None:
    g = Graph()
    e = symad.Expr(g, g.const(value))
    text = symad.dumps(e)
    assert json.loads(text)["nodes"] == [["const", value.hex()]]  # inf, -inf, nan, -0x0.0p+0 among them
    for back in (symad.loads(text), pickle.loads(pickle.dumps(e))):
        assert back.to_document() == e.to_document()
        assert struct.pack("<d", back.evaluate({})) == struct.pack("<d", e.evaluate({}))


OPERATIONS = [name for name, op in OPS.items() if op.arity]


@pytest.mark.parametrize("op", OPERATIONS)
def test_every_operation_round_trips(op: str) -> None:
    g = Graph()
    args = [g.var(v) for v in ("x", "y", "z")[:OPS[op].arity]]
    e = symad.Expr(g, g.make(op, *args))
    text = symad.dumps(e)
    fresh = Graph()
    [root] = document.build(document.loads(text), fresh)
    assert symad.Expr(fresh, root).to_document() == e.to_document()
    point = {v: 0.375 + k / 8 for k, v in enumerate(e.variables)}
    assert struct.pack("<d", symad.loads(text).evaluate(point)) == struct.pack("<d", e.evaluate(point))


# ---------------------------------------------------------------- keys and shapes
UNKNOWN = [
    (_doc(comment="hello"), "unknown key 'comment'"),
    (_doc(junk=[[0.5, 1, "ab"]] * 1000), "unknown key 'junk'"),
    (_doc(Nodes=[]), "unknown key 'Nodes'"),
    ('{"format": "symad", "version": 1, "kind": "expression", "nodes": [["var", "x"]], "outputs": [0],'
     ' "outputs": [0]}', "the key 'outputs' twice"),
    (_doc(variables=["x"]), "kind, expression, has no key 'variables'"),
    (_doc(backend="auto"), "kind, expression, has no key 'backend'"),
    (_doc(kind="function", variables=["x"], backend="auto", extra=1), "unknown key 'extra'"),
    (_doc(nodes=[["var", "x", "y"]], outputs=[0]), "node 0: a variable is"),
    (_doc(nodes=[["const", "0x1.0000000000000p+0", 0]], outputs=[0]), "node 0: a constant is"),
    (_doc(nodes=[["var", "x"], ["sin", 0, 0]], outputs=[1]), "node 1: sin takes 1 argument.s., got 2"),
    (_doc(nodes=[["var", "x"], ["sin", 0, 0, 0, 0, 0, 0]], outputs=[1]), "node 1: sin takes 1 argument.s., got more"),
    (_doc(nodes=[["var", "x"], ["sin", {"arg": 0}]], outputs=[1]), "node 1: an argument must be the index"),
    (_doc(nodes=[{"op": "var", "name": "x"}], outputs=[0]), "node 0 is not"),
    (_doc(nodes=[["var", "x"], ["sin", 0.0]], outputs=[1]), "node 1: an argument must be the index"),
    (_doc(nodes=[["var", "x"], ["sin", True]], outputs=[1]), "node 1: an argument must be the index"),
    (_doc(outputs=[2, "x"]), "outputs must be indices"),
    (_doc(outputs=[-1]), "outputs must be indices"),
    (_doc(version=1.0), "no version number"),
    (_doc(kind=["expression"]), "kind must be one of"),
    (_doc(kind="function", variables="x", backend="auto"), "variables must be a list of names"),
    (_doc(kind="function", variables=["x", "x"], backend="auto"), "variables: 'x' is there twice"),
    (_doc(kind="function", variables=["x"], backend=["auto"]), "backend must be a backend's name"),
    ('{"format": "symad", "version": 1, "kind": "expression"}', "needs a list of nodes"),
    ("{}", "not a symad document"),
    ("", "not JSON"),
    ("   ", "not JSON"),
    ('"symad"', "not a symad document"),
    (_doc() + " {}", r"not JSON \(text after the document"),
    (_doc().replace('"nodes"', '"no\\u0064es"'), "nodes"),  # an escaped key is the key: read
]


@pytest.mark.parametrize(("text", "message"), UNKNOWN, ids=[m for _, m in UNKNOWN])
def test_keys_and_shapes_the_format_does_not_have_are_refused(text: str, message: str) -> None:
    if message == "nodes":
        assert symad.loads(text) is not None
        return
    _refused(text, message)


def test_every_prefix_of_a_document_is_refused_with_a_document_error() -> None:
    text = symad.dumps(symad.compile("a*x^2 + sin(y)*x", wrt=["x", "y"]))
    for end in range(len(text.rstrip())):
        with pytest.raises(DocumentError):
            symad.loads(text[:end])


def test_a_document_with_escapes_and_white_space_reads_as_json_does() -> None:
    text = ('\ufeff {\n "format" : "symad" ,"version":1,"kind":"expression", "outputs" : [ 2 ] , '
            '"nodes":[ [ "v\\u0061r" , "\\u0078" ] ,\t["const","0x1.8000000000000p+0"],[ "mul" , 0 , 1 ] ] }\r\n')
    assert str(symad.loads(text)) == "1.5*x"
    assert symad.loads(text.encode("utf-16")) == symad.loads(text)


# ---------------------------------------------------------------- the size limit
def test_the_document_limit_is_derived_from_the_node_limit_and_overridable() -> None:
    assert LIMITS.max_document_chars is None
    with override(max_nodes=1000):
        assert document.max_chars() == 40 * 1000 + 65_536
    with override(max_document_chars=100):
        assert document.max_chars() == 100
        too_long = r"is 782 characters, over the limit of 100 characters"
        with pytest.raises(document.DocumentLimitError, match=too_long) as info:
            symad.loads(_doc(nodes=[["var", "x"]] * 50, outputs=[0]))
        assert "LIMITS.max_document_chars" in str(info.value)
    assert document.max_chars() == 40 * LIMITS.max_nodes + 65_536  # 400 M characters by default, not 656 M


def test_a_file_over_the_limit_is_refused_without_reading_it_whole(tmp_path) -> None:
    path = tmp_path / "big.json"
    path.write_text(_doc(nodes=[["var", "x"]] * 10_000, outputs=[0]))
    with override(max_document_chars=1000), pytest.raises(document.DocumentLimitError, match="over the limit of 1,000"):
        symad.load(path)
    r = run("eval", f"@{path}", "--at", "x=1", "--max-document", "1000")
    assert r.returncode == 2 and "over the limit of 1,000 characters (raise it with --max-document)" in r.stderr


def test_the_command_line_reads_a_document_longer_than_the_input_limit(tmp_path) -> None:
    path = tmp_path / "f.json"
    symad.save(symad.parse("+".join(f"sin(x*{k})" for k in range(1, 200)), Graph()), path)
    assert len(path.read_text()) > 5000
    r = run("eval", f"@{path}", "--at", "x=1", "--max-input", "5000")  # the document's limit, not the text's
    assert r.returncode == 0, r.stderr
    r = run("eval", "-", "--at", "x=1", "--max-input", "5000", stdin=path.read_text())
    assert r.returncode == 0, r.stderr


def test_a_document_over_the_node_limit_is_refused_while_read() -> None:
    text = _doc(nodes=[["var", "x"]] + [["sin", k] for k in range(2000)], outputs=[2000])
    with override(max_nodes=100), pytest.raises(document.DocumentLimitError, match="more than 100 nodes") as info:
        symad.loads(text)
    assert "LIMITS.max_nodes" in str(info.value)


# ---------------------------------------------------------------- memory
_LOAD = """
import os, sys, symad
try:
    symad.load({path!r})
except symad.SymadError as err:
    print(type(err).__name__, err)
"""

_GRAPH = """
import symad
from symad.core.dag import Graph
g = Graph()
b = [g.var("x"), g.var("y")]
for k in range(2, {n}):
    b.append(g.make("add" if k % 2 else "mul", b[k - 1], b[k - 2]))
"""


def _chain(n: int) -> str:
    lines = ['["var","x"]', '["var","y"]'] + [f'["{"add" if k % 2 else "mul"}",{k - 1},{k - 2}]' for k in range(2, n)]
    return f'{{"format": "symad", "version": 1, "kind": "expression", "outputs": [{n - 1}], "nodes": [\n' + \
        ",\n".join(lines) + "\n]}\n"


def _junk(size: int) -> str:
    head = '{"format": "symad", "version": 1, "kind": "expression", "junk": ['
    cell = '[0.5, 1, "ab"], '
    return head + cell * (size // len(cell)) + '[]], "nodes": [["var", "x"]], "outputs": [0]}'


@pytest.mark.slow
def test_loading_junk_takes_memory_of_the_order_of_the_text(tmp_path) -> None:
    small = tmp_path / "small.json"
    small.write_text(_doc())
    base = python_measured(_LOAD.format(path=str(small))).peak_mb  # symad, and what loading imports
    size = 10 << 20
    cases = {"junk": _junk(size),  # refused at its key, "junk", before its value is read
             # junk in the values the format has: a million nodes and a bad one; 3 M outputs, the
             # last past the nodes (refused once every one is read)
             "nodes": _doc(nodes=[["var", "x"]] + [["sin", 0]] * (size // 10) + [["bad"]]),
             "outputs": _doc(outputs=[0] * (size // 3) + [3])}
    for name, text in cases.items():
        path = tmp_path / f"{name}.json"
        path.write_text(text)
        size_mb = len(text) / 2**20
        m = python_measured(_LOAD.format(path=str(path)))
        assert m.status == 0, m.stderr
        assert "DocumentError" in m.stdout, m.stdout
        # the text, its bytes while decoded, and what is kept (was 16x the text: 510 MB for 33 MB)
        assert m.peak_mb - base < 4 * size_mb, (name, m.peak_mb, base, size_mb)


def test_more_outputs_than_the_node_limit_are_refused_as_over_it() -> None:
    with override(max_nodes=1000):
        with pytest.raises(DocumentLimitError, match="more than 1,000 outputs, over the limit of nodes"):
            document.loads(_doc(outputs=[0] * 1001))
        assert len(document.loads(_doc(outputs=[0] * 1000))["outputs"]) == 1000  # as many as the limit: read


@pytest.mark.slow
def test_loading_a_large_valid_document_takes_little_more_than_its_graph(tmp_path) -> None:
    n = 600_000
    path = tmp_path / "chain.json"
    path.write_text(_chain(n))
    size_mb = path.stat().st_size / 2**20
    graph = python_measured(_GRAPH.format(n=n))
    m = python_measured(_LOAD.format(path=str(path)))
    assert m.status == 0 and m.stdout == "", (m.stdout, m.stderr)
    # was the graph and 11x the text besides (a tree of JSON values): 612 MB for 28 MB, the graph alone 309 MB
    assert m.peak_mb - graph.peak_mb < 3 * size_mb, (m.peak_mb, graph.peak_mb, size_mb)


# ---------------------------------------------------------------- the command line builds the DAG from the document
def _long_name_document(path, uses: int = 150_000) -> str:
    """A document of 2.9 MB: a 200-character variable used ``uses`` times (printed, 31 M characters)."""
    name = "v" * 200
    nodes = [f'["var","{name}"]'] + [f'["atan2",{k},0]' for k in range(uses)]
    path.write_text('{"format": "symad", "version": 1, "kind": "expression", "nodes": [\n' + ",\n".join(nodes) +
                    f'\n], "outputs": [{uses}]}}\n')
    return name


def test_the_command_line_builds_a_documents_dag_without_printing_it(tmp_path) -> None:
    path = tmp_path / "doc.json"
    name = _long_name_document(path)
    want = symad.load(path).evaluate({name: 0.5})
    r = run("eval", f"@{path}", "--at", f"{name}=0.5")  # was refused: "the input is 31,350,200 characters"
    assert r.returncode == 0 and float(r.stdout) == want, r.stderr[-300:]
    r = run("grad", f"@{path}", "--at", f"{name}=0.5", "--json")
    assert r.returncode == 0, r.stderr[-300:]
    out = json.loads(r.stdout)
    assert out["expr"] == f"@{path}" and out["value"] == want  # its text is too long to echo: the argument is


def test_a_small_documents_text_is_echoed_and_several_outputs_go_to_jacobian(tmp_path) -> None:
    path = tmp_path / "f.json"
    symad.save(symad.parse("(x+y)+x*(x+y)", Graph()), path)
    r = run("grad", f"@{path}", "--at", "x=1,y=2", "--json")
    assert r.returncode == 0 and json.loads(r.stdout)["expr"] == "x + y + x*(x + y)", r.stderr
    many = tmp_path / "v.json"
    symad.save(symad.parse_outputs("t = x*y; t + x; t - y", Graph()), many)
    r = run("eval", f"@{many}", "--at", "x=1,y=2")
    assert r.returncode == 2 and "the document has 2 outputs" in r.stderr and "jacobian" in r.stderr
    r = run("jacobian", f"@{many}", "--at", "x=1,y=2")
    assert r.returncode == 0 and r.stdout.splitlines()[0].startswith("f1 = 3"), r.stderr
    again = tmp_path / "again.json"
    r = run("save", f"@{many}", "-o", str(again))
    assert r.returncode == 0 and json.loads(again.read_text()) == json.loads(many.read_text()), r.stderr
