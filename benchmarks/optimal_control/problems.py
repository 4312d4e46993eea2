"""The optimal-control problems of the suite, written once for each peer: symad's text and CasADi's SX.

* ``double_integrator``: minimum energy, ``p'' = u`` on [0, 1] from rest at 0 to rest at 1,
  ``min ∫ u²``; explicit Euler over N steps (h = 1/N): ``p[k+1] = p[k] + h v[k]``,
  ``v[k+1] = v[k] + h u[k]``.  Linear constraints, a quadratic objective: the optimum is 12 + O(h).
* ``van_der_pol``: the Van der Pol oscillator of CasADi's own examples, ``x1' = (1 - x2²) x1 - x2 + u``,
  ``x2' = x1`` on [0, 10] from (0, 1), ``min ∫ x1² + x2² + u²``, with ``-1 ≤ u ≤ 1`` and
  ``x1 ≥ -0.25``; explicit Euler over N steps (h = 10/N).  Nonlinear constraints, active bounds.

Every variable starts at 0; IPOPT's tolerance is its default (tol 1e-8) for both peers, its other
options as the suite's configurations set them (``suite.CONFIGS``).
"""

from __future__ import annotations

from typing import Any

PROBLEMS = ("double_integrator", "van_der_pol")


def symad_problem(name: str, n: int) -> dict[str, Any]:
    """``minimize``'s arguments for symad: the objective, the constraints, bounds and start."""
    if name == "double_integrator":
        defs = f"N = {n}; h = 1/N; "
        return {"fun": defs + "sum(k = 1..N, h*u[k]^2)",
                "constraints": [("eq", defs + "each(k = 1..N, p[k+1] - p[k] - h*v[k])"),
                                ("eq", defs + "each(k = 1..N, v[k+1] - v[k] - h*u[k])"),
                                ("eq", "p[1]"), ("eq", "v[1]"), ("eq", f"p[{n + 1}] - 1"), ("eq", f"v[{n + 1}]")],
                "bounds": None, "x0": {"p": 0.0, "v": 0.0, "u": 0.0}}
    defs = f"N = {n}; h = 10/N; "
    return {"fun": defs + "sum(k = 1..N, h*(x1[k]^2 + x2[k]^2 + u[k]^2))",
            "constraints": [("eq", defs + "each(k = 1..N, x1[k+1] - x1[k] - h*((1 - x2[k]^2)*x1[k] - x2[k] + u[k]))"),
                            ("eq", defs + "each(k = 1..N, x2[k+1] - x2[k] - h*x1[k])"),
                            ("eq", "x1[1]"), ("eq", "x2[1] - 1")],
            "bounds": {"u": (-1, 1), "x1": (-0.25, None)}, "x0": {"x1": 0.0, "x2": 0.0, "u": 0.0}}


def casadi_problem(name: str, n: int) -> dict[str, Any]:
    """The same problem as CasADi SX: ``nlp`` for ``nlpsol`` and the arguments of its call."""
    import casadi as ca

    inf = float("inf")
    if name == "double_integrator":
        h = 1.0 / n
        p, v, u = ca.SX.sym("p", n + 1), ca.SX.sym("v", n + 1), ca.SX.sym("u", n)
        x = ca.vertcat(p, v, u)
        g = ca.vertcat(p[1:] - p[:-1] - h * v[:-1], v[1:] - v[:-1] - h * u, p[0], v[0], p[n] - 1, v[n])
        f = h * ca.sumsqr(u)
        lbx, ubx = [-inf] * (3 * n + 2), [inf] * (3 * n + 2)
    else:
        h = 10.0 / n
        x1, x2, u = ca.SX.sym("x1", n + 1), ca.SX.sym("x2", n + 1), ca.SX.sym("u", n)
        x = ca.vertcat(x1, x2, u)
        a, b = x1[:-1], x2[:-1]
        g = ca.vertcat(x1[1:] - a - h * ((1 - b * b) * a - b + u), x2[1:] - b - h * a, x1[0], x2[0] - 1)
        f = h * (ca.sumsqr(a) + ca.sumsqr(b) + ca.sumsqr(u))
        lbx = [-0.25] * (n + 1) + [-inf] * (n + 1) + [-1.0] * n
        ubx = [inf] * (n + 1) + [inf] * (n + 1) + [1.0] * n
    return {"nlp": {"x": x, "f": f, "g": g}, "x0": [0.0] * x.numel(), "lbx": lbx, "ubx": ubx,
            "lbg": 0.0, "ubg": 0.0}
