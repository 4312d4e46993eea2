"""Resource limits and work that must not blow up: every limit stops with a LimitError that
names it and says how to raise it; power towers, heavily shared derivatives and huge inputs
take bounded time and memory.

The heavy cases run the installed ``symad`` command in a subprocess and read its peak
memory (``tests/support/measure.py``); together they stay under a minute.  Longer runs (a 10 MB
input with the limit raised, 10^6-node derivatives) are measured by
``python -m benchmarks.huge_inputs``; their numbers are in ``benchmarks/huge_inputs/huge_inputs.md``.
"""

from __future__ import annotations

import dataclasses
import math
import re
import time

import pytest
from support.cli_helpers import run
from support.measure import python_measured, run_measured

import symad
from symad import Graph, LimitError, SymadError, parse
from symad.cli.common import FLAGS as CLI_FLAGS
from symad.core.limits import LIMITS, Limits, override

# Each limit's command-line flag (the library's errors name the Python setting; the CLI, the flag).
FLAGS = {"max_input_chars": "--max-input", "max_nodes": "--max-dag-nodes", "max_program_ops": "--max-program-ops",
         "max_document_chars": "--max-document"}


# ---------------------------------------------------------------- each limit, through the API
def test_every_limit_is_listed_here():
    assert {f.name for f in dataclasses.fields(Limits)} == set(FLAGS)


def test_input_length_limit():
    with override(max_input_chars=100):
        parse("x+" * 49 + "x", Graph())  # 99 characters: fine
        with pytest.raises(LimitError) as info:
            parse("x+" * 50 + "x", Graph())
    message = str(info.value)
    assert "101 characters" in message and "100" in message
    assert "symad.core.limits.LIMITS.max_input_chars" in message and "--" not in message  # no CLI flag
    assert info.value.spelled(CLI_FLAGS.get).endswith("(raise it with --max-input)")
    assert isinstance(info.value, SymadError)


def test_dag_size_limit_while_parsing():
    with override(max_nodes=1000):
        g = Graph()
        with pytest.raises(LimitError) as info:
            parse("+".join(f"x{k}" for k in range(2000)), g)
        assert len(g) <= 1000
    message = str(info.value)
    assert "1,000 nodes" in message and "symad.core.limits.LIMITS.max_nodes" in message
    assert "--max-dag-nodes" in info.value.spelled(CLI_FLAGS.get)


def test_dag_size_limit_while_differentiating():
    g = Graph()
    e = parse("*".join(f"sin(x{k})" for k in range(200)), g)
    with override(max_nodes=len(g) + 50):
        with pytest.raises(LimitError, match="LIMITS.max_nodes"):
            e.grad()


def test_program_size_limit():
    e = parse("+".join(f"sin(x{k})" for k in range(100)), Graph())
    with override(max_program_ops=50):
        with pytest.raises(LimitError) as info:
            e.compile(backend="python").value([0.0] * 100)
    message = str(info.value)
    assert "50" in message and "symad.core.limits.LIMITS.max_program_ops" in message


def test_override_restores_and_rejects_unknown_names():
    before = dataclasses.asdict(LIMITS)
    with pytest.raises(LimitError):
        with override(max_nodes=1):
            parse("x+y", Graph())
    assert dataclasses.asdict(LIMITS) == before
    with pytest.raises(TypeError, match="max_nodez"):
        with override(max_nodez=1):
            pass


# ---------------------------------------------------------------- each limit, on the command line
def test_cli_input_limit():
    p = run("eval", "x+x+x", "--at", "x=1", "--max-input", "4")
    assert p.returncode == 2 and p.stdout == ""
    assert p.stderr.startswith("symad: error: the input is 5 characters, over the limit of 4")
    assert "--max-input" in p.stderr and "Traceback" not in p.stderr
    assert run("eval", "x+x+x", "--at", "x=1", "--max-input", "5").stdout.strip() == "3"


@pytest.mark.slow
def test_cli_dag_limit():
    # `diff` builds the derivative's nodes; `grad` evaluates it numerically and needs only the expression's 5
    p = run("diff", "sin(x)*cos(y)", "--max-dag-nodes", "6")
    assert p.returncode == 2 and p.stdout == ""
    assert p.stderr.startswith("symad: error: the expression graph would exceed 6 nodes")
    assert "--max-dag-nodes" in p.stderr and "Traceback" not in p.stderr
    assert run("diff", "sin(x)*cos(y)", "--max-dag-nodes", "100").returncode == 0
    assert run("grad", "sin(x)*cos(y)", "--at", "x=1,y=2", "--max-dag-nodes", "5").returncode == 0
    assert run("grad", "sin(x)*cos(y)", "--at", "x=1,y=2", "--max-dag-nodes", "4").returncode == 2


def test_cli_has_a_flag_for_every_limit():
    """A limit a command-line user can hit must be raisable from the command line.

    The library's error names the Python setting (``LIMITS.max_program_ops``), which a shell
    user cannot change: the command line names the flag instead.
    """
    help_text = run("grad", "--help").stdout
    missing = [flag for name, flag in FLAGS.items() if flag not in help_text]
    assert not missing, f"no command-line flag for {missing}"
    with override(max_program_ops=1):
        try:
            LIMITS.check_program(2)
        except LimitError as err:
            assert "LIMITS.max_program_ops" in str(err)
            assert FLAGS["max_program_ops"] in err.spelled(CLI_FLAGS.get)


@pytest.mark.slow
def test_cli_rejects_bad_limit_values():
    for value in ("abc", "1.5", ""):
        p = run("eval", "x", "--at", "x=1", "--max-input", value)
        assert p.returncode == 2 and "Traceback" not in p.stderr and "--max-input" in p.stderr


# ---------------------------------------------------------------- no exponential work
@pytest.mark.parametrize("text, printed", [("9^9^9^9", "9^9^387420489"), ("2^2^2^2^2^2^2", "2^2^2^65536"),
                                           ("x^9^9^9", "x^9^387420489")])
def test_power_towers_stay_floats(text, printed):
    """Folding stops where a float overflows; no huge integer is ever computed (each step well under 1 s)."""
    start = time.perf_counter()
    g = Graph()
    e = parse(text, g)
    assert str(e) == printed
    assert parse(str(e), g) == e
    point = {v: 1.5 for v in e.variables}
    value = e.compile().value(point)
    grads = {v: d.compile(variables=list(e.variables)).value(point) for v, d in e.grad().items()}
    assert value == math.inf if not e.variables else value == math.inf
    assert all(isinstance(d, float) for d in grads.values())
    assert time.perf_counter() - start < 1.0


def test_power_towers_on_the_command_line():
    p = run("grad", "9^9^9^x", "--at", "x=9", "--json", timeout=60)
    assert p.returncode == 0, p.stderr
    assert '"value": "inf"' in p.stdout and "warnings" in p.stdout
    p = run("eval", "2^2^2^2^2^2^2")
    assert p.returncode == 0 and p.stdout.strip() == "inf"


def _nested(n: int, g: Graph) -> symad.Expr:
    """sin(e*e) nested n times around x: a DAG of 2n+1 nodes, a tree of about 2^n."""
    e = symad.var("x", g)
    for _ in range(n):
        e = (e * e).apply("sin")
    return e


def test_heavily_shared_derivative_prints_in_linear_size():
    lengths = {}
    for n in (10, 20, 40):
        g = Graph()
        e = _nested(n, g)
        d = e.diff("x")
        assert g.tree_size(d.id) > 2 ** n  # as a tree it would be exponential
        start = time.perf_counter()
        text = str(d)
        assert time.perf_counter() - start < 1.0
        assert ";" in text and re.search(r"^_1 = ", text, flags=re.M), text[:200]  # the shared form, automatically
        assert parse(text, g) == d
        assert parse(e.to_text(), g) == e
        lengths[n] = len(text)
    # Linear growth: doubling the nesting at most a bit more than doubles the text.
    assert lengths[20] <= 2.5 * lengths[10] and lengths[40] <= 2.5 * lengths[20], lengths
    assert lengths[40] < 200 * 40, lengths


def test_shared_form_parses_back_through_definitions_text():
    """The same 40-fold nesting typed with definitions is the same node as the one built in Python."""
    g = Graph()
    text = "t0 = x;\n" + "".join(f"t{k} = sin(t{k - 1}*t{k - 1});\n" for k in range(1, 41)) + "t40"
    assert parse(text, g) == _nested(40, g)
    p = run("diff", "-", "--wrt", "x", stdin=text)
    assert p.returncode == 0 and len(p.stdout) < 10_000
    assert parse(p.stdout, g) == _nested(40, g).diff("x")


def test_small_trees_still_print_inline():
    g = Graph()
    d = _nested(3, g).diff("x")
    assert ";" not in str(d)


# ---------------------------------------------------------------- huge inputs, through the command line
MB = 1_000_000


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("huge")
    paths = {
        "10mb": ("+".join(["x"] * (5 * MB)), tmp / "sum_10mb.txt"),
        "1e6": ("+".join(["x"] * MB), tmp / "sum_1e6.txt"),
        "1e5": ("+".join(["x"] * 100_000), tmp / "sum_1e5.txt"),
        "prod10k": ("*".join(["x"] * 10_000), tmp / "prod_10k.txt"),
        "prod40k": ("*".join(["x"] * 40_000), tmp / "prod_40k.txt"),
    }
    for text, path in paths.values():
        path.write_text(text)
    return {k: path for k, (_, path) in paths.items()}


@pytest.mark.slow
def test_10mb_input_stops_at_the_input_limit_quickly(files):
    for args, stdin in ((["stats", f"@{files['10mb']}"], None), (["eval", "-", "--at", "x=1"], files["10mb"])):
        m = run_measured(args, stdin=stdin, timeout=60)
        assert m.status == 2, m.stderr
        assert m.stderr.startswith("symad: error: the input is 9,999,999 characters, over the limit of 4,000,000")
        assert m.seconds < 15 and m.peak_mb < 300, (m.seconds, m.peak_mb)


@pytest.mark.slow
def test_million_node_expression_stops_at_the_dag_limit_quickly(files):
    m = run_measured(["grad", f"@{files['1e6']}", "--at", "x=1", "--max-dag-nodes", "100000"], timeout=120)
    assert m.status == 2 and "would exceed 100,000 nodes" in m.stderr, m.stderr
    assert m.seconds < 30 and m.peak_mb < 300, (m.seconds, m.peak_mb)


@pytest.mark.slow
def test_hundred_thousand_node_gradient_works_in_bounded_memory(files):
    m = run_measured(["grad", f"@{files['1e5']}", "--at", "x=1", "--json"], timeout=120)
    assert m.status == 0, m.stderr
    assert '"value": 100000.0' in m.stdout and '"grad": {"x": 100000.0}' in m.stdout
    assert m.peak_mb < 1000, m.peak_mb


COMPILE_MEMORY = """
import resource, symad
e = symad.parse("*".join(["x"] * {n}), symad.Graph())
f = e.compile(backend="python")
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(f.value_grad_program().size, f.value_and_grad(x=1.0)[1][0])
after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print((after - before) / 1024)
"""


@pytest.mark.xfail(strict=False, reason="known gap: Python code objects keep ~4.7 KB per operation after "
                   "compiling; chunking bounds the compile's peak, not what the code keeps (the native "
                   "backend is used for such sizes by default)")
@pytest.mark.slow
def test_python_compile_memory_is_bounded():
    """Compiling a program into Python code needs memory that does not grow with its size.

    The generated source is split into chunks of 20,000 operations "so that
    compiling Python source takes bounded memory", but all chunks are given to one
    ``compile()`` call, whose syntax tree for the whole module costs about 5 KB
    per operation: 1.2 GB for 250,000 operations, 15 GB for a 10^6-factor
    product's gradient (docs/reference/limits.md).  Past 200,000 operations the ``auto``
    backend always takes this path.
    """
    extra = {}
    for n in (10_000, 40_000):
        m = python_measured(COMPILE_MEMORY.format(n=n), timeout=120)
        assert m.status == 0, m.stderr
        size, grad, mb = m.stdout.split()
        assert float(grad) == n
        extra[int(size)] = float(mb)
    (small, small_mb), (large, large_mb) = sorted(extra.items())
    per_op_kb = (large_mb - small_mb) * 1024 / (large - small)
    assert per_op_kb < 1.0, f"{per_op_kb:.1f} KB per operation: {extra} (operations: MB added by the first call)"
