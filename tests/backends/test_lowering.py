"""The lowering pass (symad.schedule.lowering): what every backend is handed is primitive steps,
and the rewritten ops keep their bits (small powers are power_product's products everywhere)."""

from __future__ import annotations

import importlib.util
import math
import struct
from pathlib import Path

import numpy as np
import pytest

import symad
from symad import Graph
from symad.backends.interpret import node_values
from symad.backends.vm import VMProgram
from symad.core.semantics import SMALL_POWERS, power_product
from symad.native import jit
from symad.schedule.lowering import PRIMITIVES, SELECT, lower
from symad.schedule.schedule import Schedule
from symad.tools.exporters import python_source

SPECIAL = [0.0, -0.0, 1.0, -1.0, 0.5, -2.5, 3.0, 1e-110, -1e-80, 1e80, -1e160, 1e300, 5e-324,
           math.inf, -math.inf, math.nan, 0.1, 7.3]


def _bits(x: float) -> str:
    return "nan" if math.isnan(x) else struct.pack("<d", x).hex()


def _schedule(text: str) -> tuple[symad.Expr, Schedule]:
    e = symad.parse(text, Graph())
    g = e.graph
    return e, Schedule.build(g, [e.id], [g.var(name) for name in e.variables])


def test_a_schedule_has_only_primitive_steps() -> None:
    e, s = _schedule("x^2 + y^3 + x^-1 + y^-4 + x^2.5 + x^y + where(x > y, x, y^-2)")
    ops = [op for _, op, _ in s.steps]
    assert set(ops) <= set(PRIMITIVES) and "where" not in ops and ops.count(SELECT) == 1
    assert ops.count("pow") == 2  # x^2.5 and x^y: pow's own lowering
    assert sorted(s.consts.values()).count(1.0) == 1  # one 1.0 for every negative power
    # the products' intermediate values are new nodes, past the graph's; the nodes keep their ids
    new = [node for node, _, _ in s.steps if node >= len(e.graph.op)]
    assert new and {node for node, _, _ in s.steps} - set(new) <= set(range(len(e.graph.op)))


@pytest.mark.parametrize("k", SMALL_POWERS)
def test_small_powers_are_power_products_steps(k: int) -> None:
    g = Graph()
    x = g.var("x")
    node = g.make("pow", x, g.const(float(k)))
    steps, consts, _ = lower(g, g.reachable([node]))
    assert [op for _, op, _ in steps] == ["mul"] * (abs(k) - 1) + (["div"] if k < 0 else [])
    for value in SPECIAL:
        local = {x: value, **consts}
        for dest, op, args in steps:
            with np.errstate(all="ignore"):
                local[dest] = float(PRIMITIVES[op].np(*[np.float64(local[a]) for a in args]))
        with np.errstate(all="ignore"):
            assert _bits(local[node]) == _bits(float(power_product(np.float64(value), k))), (k, value)


def test_a_constant_base_is_left_to_pow() -> None:
    # 1e200^2 overflows, so the graph keeps it (folding would hide where inf came from)
    _, s = _schedule("x + 1e200^2")
    assert [op for _, op, _ in s.steps] == ["pow", "add"]


def test_every_evaluator_computes_the_lowered_powers(tmp_path: Path) -> None:
    text = "x^2 + x^3*y + x^4 - y^-1 + x^-2*y^-3 + y^-4 + where(x > y, x^3, y^-2)"
    e, s = _schedule(text)
    names = e.variables
    rows = np.array([(a, b) for a in SPECIAL[::2] for b in SPECIAL[1::3]])
    # node by node (explain, the pictures): each node as its lowered steps
    expected = [_bits(node_values(e.graph, [e.id], dict(zip(names, p)))[e.id]) for p in rows.tolist()]
    python = symad.parse(text, Graph()).compile(backend="python")
    path = tmp_path / "exported.py"
    path.write_text(python_source(e, "f", variables=names))
    spec = importlib.util.spec_from_file_location("exported", path)
    module = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    with np.errstate(all="ignore"):
        assert [_bits(python.value(p)) for p in rows] == expected
        assert [_bits(v) for v in python.value(rows)] == expected
        assert [_bits(module.f(p)) for p in rows.tolist()] == expected
    if jit.available():
        native = symad.parse(text, Graph()).compile(backend="native")
        assert [_bits(native.value(p)) for p in rows] == expected
        assert [_bits(v) for v in native.value(rows)] == expected
        assert [_bits(v) for v in VMProgram(s).batch(rows)[:, 0]] == expected
