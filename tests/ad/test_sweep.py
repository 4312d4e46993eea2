"""The one reverse sweep, the one forward sweep and the one node-value evaluator (symad.ad.sweep)."""

from __future__ import annotations

import math

import pytest

import symad.ad.reverse
from symad import Graph, parse
from symad.ad.forward import forward, jvp
from symad.ad.matrices import jvp_many
from symad.ad.reverse import gradient
from symad.ad.sweep import active, canonical_order, forward_edges, forward_nodes, reverse_edges, reverse_nodes
from symad.backends.interpret import node_values
from symad.backends.tape import Tape


def test_active_is_what_depends_on_the_sources() -> None:
    g = Graph()
    e = parse("sin(x)*y + 2", g)
    x, y = g.var("x"), g.var("y")
    order = g.reachable([e.id])
    assert active(g, order, {x}) == {x, g.make("sin", x), g.make("mul", g.make("sin", x), y), e.id}
    assert active(g, order) == active(g, order, {x, y})  # default: every variable
    assert g.const(2.0) not in active(g, order)


def test_reverse_edges_run_from_the_output_down_with_live_arguments_only() -> None:
    g = Graph()
    e = parse("x*y + x", g)
    x, y = g.var("x"), g.var("y")
    edges = list(reverse_edges(g, e.id))
    assert [(g.op[u], k) for u, k, _ in edges] == [("add", 0), ("add", 1), ("mul", 0), ("mul", 1)]
    assert all(g.args[u][k] == a for u, k, a in edges)
    only_x = list(reverse_edges(g, e.id, {x}))
    assert y not in {a for _, _, a in only_x}


def test_forward_edges_run_from_the_inputs_up() -> None:
    g = Graph()
    e = parse("sin(x)*y", g)
    edges = list(forward_edges(g, [e.id]))
    assert [g.op[u] for u, _, _ in edges] == ["sin", "mul", "mul"]
    users = [u for u, _, _ in edges]
    assert users == sorted(users)


def test_leaves_come_with_no_edges_and_dead_edges_are_left_out() -> None:
    g = Graph()
    e = parse("sign(x) * x", g)
    x = g.var("x")
    s = g.make("sign", x)
    order = g.reachable([e.id])
    live = active(g, order)
    assert dict(reverse_nodes(g, order, live))[x] == ()
    dead = {s: (0,)}  # sign's partial is the number 0: nothing flows through it
    live = active(g, order, None, dead)
    assert s not in live
    (k,) = dict(reverse_nodes(g, order, live, dead))[e.id]
    assert g.args[e.id][k] == x
    assert [u for u, _ in forward_nodes(g, order, live, dead)] == [x, e.id]


def test_forward_with_several_directions_is_one_sweep_equal_to_separate_jvps() -> None:
    g = Graph()
    e = parse("sin(x*y) + x^3/y", g)
    x, y = g.var("x"), g.var("y")
    directions = [{x: g.const(1.0)}, {y: g.const(1.0)}, {x: g.var("u"), y: g.const(2.0)}]
    together = forward(g, [e.id], directions)
    point = {"x": 0.7, "y": 1.3, "u": -0.4}
    for d, row in zip(directions, together):
        separate = jvp(g, e.id, d)
        assert node_values(g, [row[0]], point)[row[0]] == pytest.approx(node_values(g, [separate], point)[separate])
    grad = gradient(g, e.id)
    values = node_values(g, [grad[x], grad[y]], point)
    assert node_values(g, [together[0][0]], point)[together[0][0]] == pytest.approx(values[grad[x]])
    assert node_values(g, [together[1][0]], point)[together[1][0]] == pytest.approx(values[grad[y]])


def test_one_forward_convention_drops_zero_tangents() -> None:
    g = Graph()
    e = parse("x*y + sin(x)", g)
    x, y = g.var("x"), g.var("y")
    roots = [e.id, g.make("mul", x, x)]
    tangents = {x: g.var("u"), y: g.const(0.0)}
    assert jvp_many(g, roots, tangents) == forward(g, roots, [tangents])[0] == [jvp(g, r, tangents) for r in roots]
    size = len(g)
    assert forward(g, roots, [{y: g.const(0.0)}])[0] == [g.const(0.0)] * 2 and len(g) == size  # nothing built


def test_stale_alias_is_gone() -> None:
    assert not hasattr(symad.ad.reverse, "_local_partial")
    assert callable(symad.ad.local.local_partial)


def test_node_values_extends_known_values_without_revisiting_them() -> None:
    g = Graph()
    e = parse("exp(x) + 1/(x - 1)", g)
    values = node_values(g, [e.id], {"x": 1.0})
    assert values[e.id] == math.inf  # 1/0, as the compiled code computes it
    d = symad.ad.local.local_partial(g, e.id, 1)  # a few new nodes over evaluated ones
    before = dict(values)
    node_values(g, [d], {"x": float("nan")}, values)  # known nodes keep their values: never re-read
    assert all(values[n] == v or (v != v) for n, v in before.items())
    assert values[d] == 1.0


def test_tape_backward_steps_follow_the_reverse_sweep() -> None:
    g = Graph()
    e = parse("(x+y)+x*(x+y)", g)
    x, y = g.var("x"), g.var("y")
    tape = Tape(g, e.id, [x, y])
    order = canonical_order(g, [e.id])  # the tape's slots
    users = [u for u, ks in reverse_nodes(g, order, active(g, order, {x, y})) if ks]
    assert [step[0] for step in tape.backward] == [order.index(u) for u in users]
    assert tape.value_and_grad([1.0, 2.0]) == (6.0, [5.0, 2.0])


def test_sign_and_step_carry_nothing_back_on_the_tape() -> None:
    g = Graph()
    e = parse("x * sign(x) + step(y)", g)
    x, y = g.var("x"), g.var("y")
    tape = Tape(g, e.id, [x, y])
    assert len(tape.backward) == 2  # the sum and the product; sign and step pass nothing back
    assert tape.value_and_grad([-2.0, 1.0]) == (3.0, [-1.0, 0.0])


def test_sweeps_are_iterative_on_deep_chains() -> None:
    g = Graph()
    x = g.var("x")
    node = x
    for _ in range(20000):
        node = g.make("sin", node)
    grad = gradient(g, node, [x])
    assert grad[x] != g.const(0.0)
    assert jvp(g, node, {x: g.const(1.0)}) == forward(g, [node], [{x: g.const(1.0)}])[0][0]
    value, (d,) = Tape(g, node, [x]).value_and_grad([0.5])
    assert math.isfinite(value) and math.isfinite(d)
