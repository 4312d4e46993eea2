"""The partials written on node ids (:data:`symad.ad.local._ON_NODES`) build what their op
table rules build on terms: the same nodes, in the same order."""

from __future__ import annotations

import pytest

from symad.ad import local
from symad.core.dag import Graph
from symad.core.ops import OPS
from symad.core.term import Term

EXPONENTS = [2.0, 3.0, -1.0, 0.5, 2.5, 1 / 3, -0.1, 1e17, 2.0**60, -1e-20, float("inf"), float("-inf"), float("nan")]
CASES = [(name, k) for name, spec in OPS.items() for k, rule in enumerate(spec.partials) if rule in local._ON_NODES]


def _node(g: Graph, name: str, exponent: float) -> int:
    x, y = g.var("x"), g.var("y")
    if name == "pow":
        return g.make("pow", x, g.const(exponent))
    return g.make(name, *[x, y][:OPS[name].arity])


def _table(g: Graph) -> list:
    return [(g.op[n], g.args[n], repr(g.data[n])) for n in range(len(g))]


def test_the_common_rules_are_written_on_nodes():
    assert {name for name, _ in CASES} == {"mul", "exp", "pow"}


@pytest.mark.parametrize("name,k", CASES)
@pytest.mark.parametrize("exponent", EXPONENTS)
def test_a_rule_on_nodes_builds_what_the_rule_on_terms_builds(name, k, exponent):
    on_nodes, on_terms = Graph(), Graph()
    node = _node(on_nodes, name, exponent)
    assert _node(on_terms, name, exponent) == node
    built = local.local_partials(on_nodes, node, [k])[0]
    wrapped = [Term(on_terms, a) for a in on_terms.args[node]] + [Term(on_terms, node)]
    assert built == OPS[name].partials[k](*wrapped).id
    assert _table(on_nodes) == _table(on_terms)
