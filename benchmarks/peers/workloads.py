"""The workloads: expression text, variables and points, generated the same way for every peer."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Workload:
    """One benchmark case: a named expression family at one size."""

    name: str  # family: seed, rosenbrock, normalise, logistic, rosenbrock2d_batch, scaling, scaling_sum
    size: int  # n (variables) for the families that grow (data rows for logistic); 1 for the seed
    text: str
    variables: tuple[str, ...]
    batch: int = 0  # number of points evaluated in one call; 0 for the per-point workloads

    @property
    def key(self) -> str:
        return f"{self.name}/{self.size}" if not self.batch else f"{self.name}/{self.batch}"


def natural_vars(n: int) -> tuple[str, ...]:
    return tuple(f"x{i}" for i in range(1, n + 1))


def seed_text() -> str:
    return "(x+y)+x*(x+y)"


def rosenbrock_text(n: int) -> str:
    """Chained Rosenbrock: sum over i < n of 100*(x{i+1}-x{i}^2)^2+(1-x{i})^2."""
    return "+".join(f"100*(x{i + 1}-x{i}^2)^2+(1-x{i})^2" for i in range(1, n))


def normalise_text(n: int) -> str:
    """sum_i i*x_i/sqrt(x1^2+...+xn^2), the norm written out again in every term."""
    norm = "sqrt(" + "+".join(f"x{j}^2" for j in range(1, n + 1)) + ")"
    return "+".join(f"{i}*x{i}/{norm}" for i in range(1, n + 1))


def sum_text(m: int, n_vars: int = 100) -> str:
    """``m`` distinct terms ``(x_a + k)*x_b`` over ``n_vars`` variables: about 4 DAG nodes a term."""
    return "+".join(f"(x{k % n_vars + 1}+{k})*x{k * 7 % n_vars + 1}" for k in range(1, m + 1))


LOGISTIC_FEATURES = 8


def logistic_text(rows: int, features: int = LOGISTIC_FEATURES, seed: int = 15) -> str:
    """Logistic regression's loss, the data inlined: sum over rows of log(1+exp(-y_i*(w·x_i + b))).

    ``rows`` data rows of ``features`` standard-normal features (three decimals) from a seeded
    generator, labels y_i = ±1 drawn from the logistic model itself (so the classes overlap and
    the minimum is finite); the label is folded into the sign: ``log(1+exp(-(w·x+b)))`` for
    y = 1, ``log(1+exp(w·x+b))`` for y = -1.  Variables w1..w{features} and b.
    """
    rng = np.random.default_rng(seed)
    X = np.round(rng.normal(size=(rows, features)), 3)
    w_true = np.round(rng.normal(size=features), 3)
    p = 1.0 / (1.0 + np.exp(-(X @ w_true + 0.5)))
    y = rng.uniform(size=rows) < p
    terms = []
    for row, positive in zip(X, y):
        z = "".join(f"{'-' if c < 0 else '+' if j else ''}{abs(c):.3f}*w{j + 1}" for j, c in enumerate(row)) + "+b"
        terms.append(f"log(1+exp(-({z})))" if positive else f"log(1+exp({z}))")
    return "+".join(terms)


def logistic_vars(features: int = LOGISTIC_FEATURES) -> tuple[str, ...]:
    return (*(f"w{j}" for j in range(1, features + 1)), "b")


def make(name: str, size: int, batch: int = 0) -> Workload:
    if name == "seed":
        return Workload(name, 1, seed_text(), ("x", "y"))
    if name in ("rosenbrock", "scaling"):
        return Workload(name, size, rosenbrock_text(size), natural_vars(size))
    if name == "normalise":
        return Workload(name, size, normalise_text(size), natural_vars(size))
    if name == "logistic":
        return Workload(name, size, logistic_text(size), logistic_vars())
    if name == "scaling_sum":
        return Workload(name, size, sum_text(size), natural_vars(min(size, 100)))
    if name == "rosenbrock2d_batch":
        return Workload(name, 2, rosenbrock_text(2), natural_vars(2), batch=batch)
    raise ValueError(f"unknown workload {name!r}")


# The suite: family -> sizes (full run, --quick run).
FAMILIES: dict[str, tuple[list[int], list[int]]] = {
    "seed": ([1], [1]),
    "rosenbrock": ([10, 100, 1000], [10]),
    "normalise": ([10, 50, 200], [10]),
    "rosenbrock2d_batch": ([1_000_000], [10_000]),
}

# Scaling curves of symad's build, 10^4 .. 10^6 DAG nodes: chained Rosenbrock (the variables grow
# with the size, n of them) and a sum of distinct terms over a fixed 100 variables (m terms).
SCALING: dict[str, tuple[list[int], list[int]]] = {
    "scaling": ([1_111, 3_333, 11_111, 33_333, 111_111], [100, 300]),
    "scaling_sum": ([2_500, 7_500, 25_000, 75_000, 250_000], [250]),
}
SCALING_TITLES = {
    "scaling": "chained Rosenbrock, n variables",
    "scaling_sum": "sum of m terms over 100 variables",
}


def workloads(quick: bool, only: str | None = None) -> list[Workload]:
    out = []
    for family, (sizes, quick_sizes) in FAMILIES.items():
        if only and only not in (family, "all"):
            continue
        for s in quick_sizes if quick else sizes:
            if family == "rosenbrock2d_batch":
                out.append(make(family, 2, batch=s))
            else:
                out.append(make(family, s))
    return out


def start(w: Workload) -> np.ndarray:
    """Where an optimizer starts: Rosenbrock's classic (-1.2, 1, -1.2, 1, ...); ones for the
    normalisation (0 is its singularity); zeros elsewhere (logistic regression's usual start)."""
    n = len(w.variables)
    if w.name.startswith("rosenbrock"):
        return np.array([-1.2 if i % 2 == 0 else 1.0 for i in range(n)])
    if w.name == "normalise":
        return np.ones(n)
    return np.zeros(n)


def points(w: Workload, count: int, seed: int = 8) -> np.ndarray:
    """``count`` points of shape (count, n_vars), uniform in [0.5, 1.5): away from every singularity."""
    rng = np.random.default_rng(seed)
    return rng.uniform(0.5, 1.5, size=(count, len(w.variables)))


def title(key: str) -> str:
    """A workload's name in the reports, from its key ``family/size``."""
    family, size = key.split("/")
    n = int(size)
    if family == "seed":
        return "seed `(x+y)+x*(x+y)`"
    if family == "rosenbrock":
        return f"Rosenbrock n={n}"
    if family == "normalise":
        return f"normalise n={n}"
    if family == "rosenbrock2d_batch":
        return f"Rosenbrock 2-D × {_count(n)} points"
    if family == "logistic":
        return f"logistic regression, {n:,} rows"
    return key


def _count(n: int) -> str:
    if n >= 1000 and n == 10 ** round(math.log10(n)):
        return f"10^{round(math.log10(n))}"
    return f"{n:,}"
