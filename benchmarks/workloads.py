"""The workloads: expression text, variables and points, generated the same way for every peer."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Workload:
    """One benchmark case: a named expression family at one size."""

    name: str  # family: seed, rosenbrock, normalise, rosenbrock2d_batch, scaling, scaling_sum
    size: int  # n (variables) for the families that grow; 1 for the seed
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


def make(name: str, size: int, batch: int = 0) -> Workload:
    if name == "seed":
        return Workload(name, 1, seed_text(), ("x", "y"))
    if name in ("rosenbrock", "scaling"):
        return Workload(name, size, rosenbrock_text(size), natural_vars(size))
    if name == "normalise":
        return Workload(name, size, normalise_text(size), natural_vars(size))
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


def points(w: Workload, count: int, seed: int = 8) -> np.ndarray:
    """``count`` points of shape (count, n_vars), uniform in [0.5, 1.5): away from every singularity."""
    rng = np.random.default_rng(seed)
    return rng.uniform(0.5, 1.5, size=(count, len(w.variables)))
