"""``symad minimize``: minimise an expression from a start point; summary, trace and contour plot."""

from __future__ import annotations

import argparse
import csv
import io
from pathlib import Path
from typing import Any

import numpy as np

from symad.cli.common import emit, format_number, parse_point
from symad.cli.loop_commands import has_loops
from symad.cli.minimize_args import duration, ipopt_options, json_number, parse_bounds, progress_bar
from symad.cli.minimize_loops import run_loops
from symad.core import indexed
from symad.core.errors import ParseError, SymadError, VariableError, name_list
from symad.core.files import write_atomically
from symad.expr import Expr, parse
from symad.optimize.conditions import as_constraint
from symad.optimize.driver import check_settings, minimize
from symad.optimize.methods import METHODS, SCIPY_METHODS
from symad.optimize.problem import Problem
from symad.optimize.result import OptimizeResult

EPILOG = """\
examples:
  symad minimize "100*(y-x^2)^2+(1-x)^2" --from x=-1.2,y=1
  symad minimize "100*(y-x^2)^2+(1-x)^2" --from x=-1.2,y=1 --method gd --max-iter 50000
  symad minimize "(x-a)^2+(y-2*a)^2" --from x=0,y=0 --fix a=3 --json
  symad minimize "(x-3)^2+y^2" --from x=0,y=1 --bounds x=-1:1,y=:
  symad minimize "100*(y-x^2)^2+(1-x)^2" --from x=-1.2,y=1 --trace path.csv --plot path.png
  symad minimize "x^2+y^2" --from x=0,y=0 --eq "x+y-1"
  symad minimize "(x-2)^2+(y-1)^2" --from x=0,y=0 --ineq "1-x^2-y^2" --method trust-constr
  symad minimize "x^2+y^2" --from x=0,y=0 --eq "x+y-1" --method ipopt --option mu_strategy=adaptive
  symad minimize "n=1000; sum(i=1..n-1, 100*(x[i+1]-x[i]^2)^2 + (1-x[i])^2)" --from x=0
  symad minimize "n=1000; sum(i=1..n, x[i]^2)" --from x=0 --eq "n=1000; each(i=1..n-1, x[i+1]-x[i]-1)" --json

methods: newton (exact Hessian, line search, shifted where not positive definite; default;
  with many variables or a large expression, Newton-CG on Hessian-vector products instead),
  trust-ncg (trust-region Newton-CG on Hessian-vector products), gd (gradient descent with a
  backtracking Armijo line search), momentum, nesterov, adam (fixed learning rate --lr),
  l-bfgs (symad's L-BFGS: L-BFGS-B's iteration without bounds, in machine code; no scipy),
  l-bfgs-b (scipy's L-BFGS-B routine, symad's stopping rules; its BLAS on one thread);
  slsqp (the default with constraints) and trust-constr: scipy's, given exact derivatives;
  ipopt: IPOPT's interior point (pip install "symad[ipopt]"), given the exact sparse Jacobian
  and Hessian of the Lagrangian, its options by --option NAME=VALUE.

sums kept as loops (past 300 terms): l-bfgs (the default), l-bfgs-b (the default with
  bounds), trust-constr (the default with constraints) or ipopt, over the vectors' entries. --from x=0 gives every entry
  of x one number, x=[...] all of them; --bounds x=-2:2 bounds every entry; a constraint may
  be a family each(i=a..b, c_i), its text read on its own. The summary gives a vector's length,
  first entries, min and max, a family its rows and largest violation; --full every entry.

constraints: --eq EXPR (EXPR = 0) and --ineq EXPR (EXPR >= 0), repeatable; their variables
  are the problem's too. The summary gives each constraint's value and Lagrange multiplier
  (grad f = sum of multiplier * grad constraint); "converged" also needs every constraint
  met to 1e-6.

status: "converged" only at a stationary point: the (projected) gradient norm <= --tol.
  Otherwise "not converged" with a warning on stderr (in --json: "warnings"), and exit
  status 1 with --strict:
    diverged: unbounded below  f <= -1e300 (or -inf), or f still falling at |x| >= 1e150
    non-finite                 the value or gradient is inf or nan
    stalled                    a step shorter than --xtol*(1+|x|), the gradient above --tol
  or at --max-iter, --max-time, or a failed line search.
  A progress bar is shown when stderr is a terminal.
"""


CONSTRAINED = (*SCIPY_METHODS, "ipopt")  # the methods that take constraints
EXPRESSION_OPTIONS = ("--eq", "--ineq")  # their values may start with '-' (see cli.main)


def add_arguments(p: argparse.ArgumentParser) -> None:
    """The options of ``symad minimize``."""
    p.epilog = EPILOG
    p.add_argument("--from", dest="start", action="append", default=[], metavar="x=-1.2,y=1",
                   help="the start point: name=value pairs, one per free variable (repeatable)")
    p.add_argument("--method", choices=[*METHODS, *CONSTRAINED],
                   help="default: newton, or slsqp with constraints; with sums kept as loops l-bfgs, "
                        "l-bfgs-b with bounds, or trust-constr with constraints")
    p.add_argument("--max-iter", type=int, metavar="N",
                   help="iteration limit (default 1000 for newton and trust-ncg, else 100000)")
    p.add_argument("--max-time", type=float, metavar="SECONDS", help="time limit")
    p.add_argument("--tol", type=float, default=1e-8, help="gradient-norm tolerance (default 1e-8)")
    p.add_argument("--xtol", type=float, default=1e-12,
                   help="relative step length below which a run has stalled (default 1e-12)")
    p.add_argument("--strict", action="store_true",
                   help="exit with status 1 when the run does not converge")
    p.add_argument("--lr", type=float, metavar="RATE",
                   help="learning rate of momentum, nesterov, adam; first trial step of gd")
    p.add_argument("--fix", action="append", default=[], metavar="a=2",
                   help="hold variables at these values (repeatable)")
    p.add_argument("--bounds", action="append", default=[], metavar="x=-2:2",
                   help="box bounds name=lo:hi; either side may be empty (repeatable)")
    p.add_argument("--eq", dest="constraints", action=_Constraint, default=[], metavar="EXPR",
                   help="an equality constraint: EXPR = 0 (repeatable)")
    p.add_argument("--ineq", dest="constraints", action=_Constraint, default=[], metavar="EXPR",
                   help="an inequality constraint: EXPR >= 0 (repeatable)")
    p.add_argument("--option", action="append", default=[], metavar="NAME=VALUE",
                   help="an IPOPT option (--method ipopt; repeatable), e.g. mu_strategy=adaptive")
    p.add_argument("--trace", metavar="FILE.csv", help="write every iterate to a CSV file")
    p.add_argument("--plot", metavar="FILE.png",
                   help="draw the path on a contour plot (two free variables)")
    p.add_argument("--full", action="store_true",
                   help="with sums kept as loops: every entry of each vector, not its summary")


class _Constraint(argparse.Action):
    """``--eq``/``--ineq``: ``(kind, text)`` appended in the order given."""

    def __call__(self, parser: Any, namespace: argparse.Namespace, values: Any, option: str | None = None) -> None:
        kind = "eq" if option == "--eq" else "ineq"
        setattr(namespace, self.dest, [*getattr(namespace, self.dest), (kind, values)])


def chosen_method(args: argparse.Namespace) -> str:
    """``--method``, by default newton, or slsqp when there are constraints."""
    return args.method or ("slsqp" if args.constraints else "newton")


def read_cli_constraints(specs: list[tuple[str, str]], expr: Expr) -> list[tuple[str, Expr]]:
    """``--eq``/``--ineq`` texts parsed into ``expr``'s graph, a comparison read as what it says
    (``--ineq "x <= 1"`` is ``1 - x >= 0``); an error names the flag."""
    out = []
    for kind, text in specs:
        try:
            out.append(as_constraint(kind, parse(text, expr.graph)))
        except ParseError as err:
            raise SymadError(f"in --{kind} {text!r}: {err}") from None
        except SymadError as err:
            raise type(err)(f"in --{kind} {text!r}: {err}") from None
    return out


def run(args: argparse.Namespace, text: str, expr: Expr) -> None:
    """Minimise, then print the summary (or JSON) and write the trace and plot if asked;
    with --strict, exit with status 1 unless the run converged."""
    check_settings({"max_iter": args.max_iter, "tol": args.tol, "xtol": args.xtol,
                    "max_time": args.max_time, "lr": args.lr}, lambda name: "--" + name.replace("_", "-"))
    constraints = read_cli_constraints(args.constraints, expr)
    if has_loops([expr, *(c for _, c in constraints)]):
        run_loops(args, text, expr)
        return
    start, fixed, bounds = parse_point(args.start, "--from"), parse_point(args.fix, "--fix"), parse_bounds(args.bounds)
    method = chosen_method(args)
    if constraints and method not in CONSTRAINED:
        raise SymadError(f"--method {method} takes no constraints: use slsqp (the default with constraints), "
                         f"trust-constr or ipopt")
    if method in CONSTRAINED and (args.trace or args.plot):
        whose = "IPOPT" if method == "ipopt" else f"scipy's {method}"
        raise SymadError(f"--trace and --plot follow symad's own methods; {whose} keeps no path")
    if args.option and method != "ipopt":
        raise SymadError(f"--option sets IPOPT's options: it is for --method ipopt, not {method}")
    names = expr.graph.variables([expr.id, *(c.id for _, c in constraints)])
    start, fixed = indexed.expand_point(names, start), indexed.expand_point(names, fixed)
    free = [v for v in names if v not in fixed]
    missing = [v for v in free if v not in start]
    unknown = [v for v in start if v not in names]
    uses = name_list(names) or "no variables"
    if missing:
        raise VariableError(f"--from has no value for {name_list(missing)} (the expression uses {uses})")
    if unknown:
        raise VariableError(f"unknown variable {', '.join(unknown)} in --from (the expression uses {uses})")
    if args.plot and len(free) != 2:
        raise SymadError(f"--plot draws functions of two free variables; this one has {len(free)}")
    if args.plot:
        _matplotlib()  # before the run, not after it
    options: dict[str, Any] = {} if args.lr is None else {"lr": args.lr}
    if method == "ipopt":
        options["options"] = ipopt_options(args.option)
    bar = progress_bar(args, method)
    extra: dict[str, Any] = {"variables": names, "constraints": constraints or None} if method in CONSTRAINED else {
        "keep_path": bool(args.trace or args.plot)}
    result = minimize(expr, {v: start[v] for v in free}, method=method, fixed=fixed, bounds=bounds,
                      tol=args.tol, xtol=args.xtol, max_iter=args.max_iter, max_time=args.max_time,
                      callback=bar, background=False, **extra, **options)
    if bar is not None:
        bar.close()
    if args.trace:
        write_trace(args.trace, result)
    if args.plot:
        problem = Problem(expr, names, fixed, background=False)
        plot_path(args.plot, problem, result, title=text.strip(), bounds=bounds)
    # a comparison's text with the expression it is read as (the same text parses to the same node)
    given = [(kind, text, None if parse(text, expr.graph).id == c.id else c.to_text())
             for (kind, text), (_, c) in zip(args.constraints, constraints)]
    _report(args, text, result, start, fixed, bounds, given)
    if args.strict and not result.success:
        raise SystemExit(1)  # after the report: the output and warning are printed as usual


def _report(args: argparse.Namespace, text: str, r: OptimizeResult, start: dict[str, float],
            fixed: dict[str, float], bounds: dict[str, Any], constraints: list[tuple[str, str, str | None]]) -> None:
    evaluations = f"{r.nfev} value+gradient" + (f", {r.nhev} Hessian" if r.nhev else "")
    if r.hessian == "products":
        evaluations = f"{r.nfev} value+gradient, {r.nhev} Hessian-vector products"
    width = max([11, *(len(v) for v in r.point)])
    rows = [("status", ("converged: " if r.success else "not converged: ") + r.message),
            ("method", r.method)]
    rows += [(v, format_number(x) + (" (fixed)" if v in fixed else "")) for v, x in r.point.items()]
    rows += [("f", format_number(r.fun)), ("grad norm", f"{r.grad_norm:.3g}"),
             ("iterations", str(r.nit)), ("evaluations", evaluations),
             ("time", f"{duration(r.time)} (+ {duration(r.setup_time)} compiling)")]
    cons = _constraints(r, constraints)
    for c in cons:
        shown = (f"{c['expr']}: {c['as']}" if "as" in c else c["expr"]) + f" = {format_number(c['value'])}"
        shown += " (must be 0)" if c["kind"] == "eq" else " (>= 0)"
        if "multiplier" in c:
            shown += f", multiplier {format_number(c['multiplier'])}"
        rows.insert(-4, (c["kind"], shown))
    obj = {"expr": text.strip(), "method": r.method, "from": start, "fixed": fixed,
           "bounds": {k: list(v) for k, v in bounds.items()},
           "x": {v: json_number(x) for v, x in zip(r.variables, r.x)}, "value": json_number(r.fun),
           "grad": {v: json_number(g) for v, g in zip(r.variables, r.jac)}, "grad_norm": json_number(r.grad_norm),
           "iterations": r.nit, "evaluations": r.nfev, "hessian_evaluations": r.nhev,
           "success": bool(r.success), "status": r.status, "message": r.message, "time": r.time,
           "setup_time": r.setup_time}
    if "ipopt_status" in r:
        obj["ipopt_status"] = r.ipopt_status
    if cons:
        obj["constraints"] = [{k: json_number(v) if k in ("value", "multiplier") else v for k, v in c.items()}
                              for c in cons]
        obj["violation"] = json_number(r.constraints["violation"])
    warnings = [] if r.success else [f"did not converge: {r.message}"]
    emit(args, obj, [f"{k.ljust(width)}  {v}" for k, v in rows], warnings)


def _constraints(r: OptimizeResult, given: list[tuple[str, str, str | None]]) -> list[dict[str, Any]]:
    """Each constraint's kind, text, the expression a comparison is read as (``as``), its value at
    the result and, where known, multiplier."""
    if not given:
        return []
    values, multipliers = r.constraints["values"], r.get("multipliers")
    out = []
    for k, (kind, text, read) in enumerate(given):
        c: dict[str, Any] = {"kind": kind, "expr": text.strip()}
        if read is not None:
            c["as"] = read  # a comparison: x <= 1 is 1 - x >= 0
        c["value"] = float(values[k])
        if multipliers is not None:
            c["multiplier"] = float(multipliers[k])
        out.append(c)
    return out


def write_trace(path: str, r: OptimizeResult) -> None:
    """Every iterate as CSV: ``iteration,f,grad_norm,<variables...>``."""
    text = io.StringIO(newline="")
    out = csv.writer(text)
    out.writerow(["iteration", "f", "grad_norm", *r.variables])
    for k, (x, f, g) in enumerate(zip(r.path, r.path_fun, r.path_grad_norm)):
        out.writerow([k, repr(float(f)), repr(float(g)), *(repr(float(v)) for v in x)])
    write_atomically(path, text.getvalue())


def _matplotlib() -> Any:
    """Matplotlib, set to draw into files (Agg); a SymadError naming the extra if it is not installed."""
    try:
        import matplotlib
    except ImportError:
        raise SymadError('--plot needs Matplotlib, which is not installed: pip install "symad[plot]"') from None
    matplotlib.use("Agg")
    return matplotlib


def plot_path(path: str, problem: Problem, r: OptimizeResult, title: str,
              bounds: dict[str, Any] | None = None) -> None:
    """A filled contour plot of ``f`` around the path, with the path drawn on it (matplotlib, Agg)."""
    _matplotlib()
    import matplotlib.pyplot as plt
    from matplotlib.colors import BoundaryNorm

    pts = r.path
    lo, hi = pts.min(axis=0), pts.max(axis=0)
    span = np.maximum(hi - lo, 0.5 * np.maximum(1.0, np.abs(hi)))
    lo, hi = lo - 0.2 * span, hi + 0.2 * span
    gx, gy = np.linspace(lo[0], hi[0], 400), np.linspace(lo[1], hi[1], 400)
    grid = np.stack(np.meshgrid(gx, gy), axis=-1)  # one vectorised pass over 160,000 points
    z = np.asarray(problem.fn.value(grid), dtype=float)
    finite = np.isfinite(z)
    if not finite.any():
        raise SymadError("--plot: the function is not finite anywhere near the path")
    # Levels at quantiles of f, packed towards the low values: even spacing of contour lines
    # whatever the function's dynamic range (Rosenbrock spans six orders of magnitude).
    levels = np.unique(np.quantile(z[finite], np.linspace(0, 1, 31) ** 2.5))
    fig, ax = plt.subplots(figsize=(7, 5.6), dpi=110)
    filled = ax.contourf(gx, gy, np.ma.masked_invalid(z), levels=levels, cmap="viridis",
                         norm=BoundaryNorm(levels, 256), extend="neither")
    ax.contour(gx, gy, np.ma.masked_invalid(z), levels=levels, colors="white", linewidths=0.3, alpha=0.5)
    fig.colorbar(filled, ax=ax, label="f", format=lambda v, _: format(float(f"{v:.2g}"), "g"))
    for name, (b_lo, b_hi) in (bounds or {}).items():
        if name in problem.names:
            axis = problem.names.index(name)
            for b in (b_lo, b_hi):
                if b is not None:
                    (ax.axvline if axis == 0 else ax.axhline)(b, color="black", linestyle="--", linewidth=1)
    marker = "-o" if len(pts) <= 80 else "-"  # thousands of first-order steps: just the line
    ax.plot(pts[:, 0], pts[:, 1], marker, color="#ff5533", linewidth=1.6, markersize=3.5,
            markeredgecolor="white", markeredgewidth=0.5, zorder=4, label=f"{r.method}: {r.nit} iterations")
    ax.plot(*pts[0], "s", color="white", markeredgecolor="black", markersize=8, zorder=5, label="start")
    ax.plot(*pts[-1], "*", color="gold", markeredgecolor="black", markersize=15, zorder=5,
            label=f"end: f = {r.fun:.2g}")
    ax.set_xlim(lo[0], hi[0])
    ax.set_ylim(lo[1], hi[1])
    ax.set_xlabel(r.variables[0])
    ax.set_ylabel(r.variables[1])
    ax.set_title(title if len(title) <= 70 else title[:67] + "...", fontsize=11)
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.11), ncol=3, fontsize=9, frameon=False)
    picture = io.BytesIO()  # drawn in memory, then written whole: a full disk leaves the old file
    try:
        fig.savefig(picture, bbox_inches="tight", format=Path(path).suffix.lstrip(".").lower() or None)
    except ValueError as err:  # e.g. an unknown image format
        raise SymadError(f"cannot write {path}: {err}") from None
    finally:
        plt.close(fig)
    write_atomically(path, picture.getvalue())
