"""Pieces shared by the property tests (``tests/ad/test_properties.py``, ``tests/backends/test_tape.py``):
their Hypothesis settings, the variables of an expression text, and the DAG's invariants."""

from __future__ import annotations

import os

from hypothesis import HealthCheck, seed, settings

import symad
from symad import Graph
from symad.core.dag import natural_key
from symad.core.ops import OPS

# Derandomized (the same examples on every run, so CI is reproducible) unless
# SYMAD_PROPERTY_SEED is set; SYMAD_PROPERTY_SCALE multiplies every example count
# (a nightly or a hunt for bugs: SYMAD_PROPERTY_SCALE=10 SYMAD_PROPERTY_SEED=7).
# No example database is written.
_SEED = os.environ.get("SYMAD_PROPERTY_SEED")
_SCALE = float(os.environ.get("SYMAD_PROPERTY_SCALE", "1"))


def property_test(max_examples: int):
    """``@settings`` for one property check: ``max_examples`` (scaled), no deadline, fixed seed."""
    config = settings(max_examples=max(1, round(max_examples * _SCALE)), deadline=None,
                      derandomize=_SEED is None, database=None, print_blob=False,
                      suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                             HealthCheck.filter_too_much])

    def decorate(test):
        return config(test) if _SEED is None else seed(int(_SEED))(config(test))

    return decorate


def text_variables(text: str) -> tuple[str, ...]:
    """The variables the text mentions, in natural order, even those that cancel (``x - x``).

    Points give all of them a value: the as-typed evaluation needs them, and the
    derivative with respect to a variable that cancelled must be 0.
    """
    g = Graph()  # every variable the text names is a node of a fresh graph, also one that cancels
    symad.parse(text, g)
    names = {g.data[n] for n in range(len(g)) if g.op[n] == "var"}
    return tuple(sorted(names, key=natural_key))  # type: ignore[arg-type]


def graph_invariants(g: Graph) -> list[str]:
    """Violations of: one node per (op, args, data) key; children older than parents; arity."""
    problems = []
    seen: dict[tuple, int] = {}
    for n in range(len(g)):
        op, args, data = g.op[n], g.args[n], g.data[n]
        key = (op, args, data.hex() if isinstance(data, float) else data)
        if key in seen:
            problems.append(f"nodes {seen[key]} and {n} are both {key}")
        seen[key] = n
        if any(a >= n for a in args):
            problems.append(f"node {n} ({op}) has an argument that is not older: {args}")
        if op not in ("const", "var") and len(args) != OPS[op].arity:
            problems.append(f"node {n} ({op}) has {len(args)} arguments")
    return problems
