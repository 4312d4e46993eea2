"""``symad minimize``: minimise an expression from a start point; summary, trace and contour plot."""

from __future__ import annotations

import argparse
import csv
import importlib
import io
import math
import sys
import time
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

from symad.cli.common import emit, format_number, parse_point
from symad.cli.loop_commands import has_loops
from symad.core import binders, indexed
from symad.core.dag import Graph
from symad.core.errors import ParseError, PointError, SymadError, VariableError, name_list
from symad.core.files import write_atomically
from symad.expr import Expr, parse
from symad.optimize.conditions import as_constraint
from symad.optimize.constrained import SCIPY_METHODS
from symad.optimize.driver import STATUS, UNBOUNDED_F, check_settings, minimize
from symad.optimize.loops import Layout
from symad.optimize.methods import METHODS, SECOND_ORDER
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
  backtracking Armijo line search), momentum, nesterov, adam (fixed learning rate --lr);
  slsqp (the default with constraints) and trust-constr: scipy's, given exact derivatives;
  ipopt: IPOPT's interior point (pip install "symad[ipopt]"), given the exact sparse Jacobian
  and Hessian of the Lagrangian, its options by --option NAME=VALUE.

sums kept as loops (past 300 terms): l-bfgs-b (scipy's; the default), trust-constr (the
  default with constraints) or ipopt, over the vectors' entries. --from x=0 gives every entry
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
    p.add_argument("--method", choices=[*METHODS, *CONSTRAINED, "l-bfgs-b"],
                   help="default: newton, or slsqp with constraints; with sums kept as loops l-bfgs-b, "
                        "or trust-constr with constraints")
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


def ipopt_options(specs: list[str]) -> dict[str, int | float | str]:
    """``['mu_strategy=adaptive', 'max_cpu_time=5']`` → ``{'mu_strategy': 'adaptive', 'max_cpu_time': 5}``:
    a value that reads as an integer is one, else as a number, else it is text (IPOPT checks the type)."""
    out: dict[str, int | float | str] = {}
    for spec in specs:
        name, eq, value = (s.strip() for s in spec.partition("="))
        if not (eq and name and value):
            raise SymadError(f"--option expects NAME=VALUE, got {spec.strip()!r:.60}")
        for kind in (int, float):
            try:
                out[name] = kind(value)
                break
            except ValueError:
                continue
        else:
            out[name] = value
    return out


def parse_bounds(specs: list[str]) -> dict[str, tuple[float | None, float | None]]:
    """``['x=-2:2,y=0:']`` → ``{'x': (-2.0, 2.0), 'y': (0.0, None)}``."""
    bounds: dict[str, tuple[float | None, float | None]] = {}
    for spec in specs:
        for item in spec.split(","):
            name, eq, rng = item.partition("=")
            lo, colon, hi = rng.partition(":")
            name = indexed.normal(name)
            if not (eq and colon and name):
                raise PointError(f"--bounds expects name=lo:hi, got {item.strip()!r}")
            if name in bounds:
                raise PointError(f"--bounds gives {name} twice")
            ends = [parse_point([f"{name}={t}"])[name] if t.strip() else None for t in (lo, hi)]
            bounds[name] = (ends[0], ends[1])
    return bounds


def run(args: argparse.Namespace, text: str, expr: Expr) -> None:
    """Minimise, then print the summary (or JSON) and write the trace and plot if asked;
    with --strict, exit with status 1 unless the run converged."""
    check_settings({"max_iter": args.max_iter, "tol": args.tol, "xtol": args.xtol,
                    "max_time": args.max_time, "lr": args.lr}, lambda name: "--" + name.replace("_", "-"))
    constraints = read_cli_constraints(args.constraints, expr)
    if has_loops([expr, *(c for _, c in constraints)]):
        run_loops(args, text, expr)
        return
    if args.method == "l-bfgs-b":
        raise SymadError("--method l-bfgs-b is for sums kept as loops (past "
                         f"{binders.UNROLL_MAX_TERMS:,} terms); here newton (the default) or trust-ncg")
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
    bar = _progress_bar(args, method)
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
             ("time", f"{_duration(r.time)} (+ {_duration(r.setup_time)} compiling)")]
    cons = _constraints(r, constraints)
    for c in cons:
        shown = (f"{c['expr']}: {c['as']}" if "as" in c else c["expr"]) + f" = {format_number(c['value'])}"
        shown += " (must be 0)" if c["kind"] == "eq" else " (>= 0)"
        if "multiplier" in c:
            shown += f", multiplier {format_number(c['multiplier'])}"
        rows.insert(-4, (c["kind"], shown))
    obj = {"expr": text.strip(), "method": r.method, "from": start, "fixed": fixed,
           "bounds": {k: list(v) for k, v in bounds.items()},
           "x": {v: _json(x) for v, x in zip(r.variables, r.x)}, "value": _json(r.fun),
           "grad": {v: _json(g) for v, g in zip(r.variables, r.jac)}, "grad_norm": _json(r.grad_norm),
           "iterations": r.nit, "evaluations": r.nfev, "hessian_evaluations": r.nhev,
           "success": bool(r.success), "status": r.status, "message": r.message, "time": r.time,
           "setup_time": r.setup_time}
    if "ipopt_status" in r:
        obj["ipopt_status"] = r.ipopt_status
    if cons:
        obj["constraints"] = [{k: _json(v) if k in ("value", "multiplier") else v for k, v in c.items()}
                              for c in cons]
        obj["violation"] = _json(r.constraints["violation"])
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


def _json(v: float) -> float | str:
    v = float(v)
    return v if math.isfinite(v) else format_number(v)


def _duration(seconds: float) -> str:
    return f"{seconds * 1e3:.3g} ms" if seconds < 1 else f"{seconds:.3g} s"


class _Bar:
    """A tqdm progress bar fed by the optimiser's callback (only on a terminal)."""

    def __init__(self, tqdm: Any, total: int | None, method: str):
        self.bar = tqdm(total=total, desc=method, unit="it", file=sys.stderr, leave=False,
                        dynamic_ncols=True)
        self.shown = 0.0

    def __call__(self, r: OptimizeResult) -> None:
        self.bar.update(1)
        now = time.monotonic()
        if now - self.shown > 0.2:  # formatting every iteration would cost more than the step
            self.shown = now
            grad = getattr(r, "grad_norm", None)  # (scipy's methods report no gradient norm)
            self.bar.set_postfix_str(f"f={r.fun:.6g}" + ("" if grad is None else f" |grad|={grad:.2g}"),
                                     refresh=False)

    def close(self) -> None:
        self.bar.close()


def _progress_bar(args: argparse.Namespace, method: str) -> _Bar | None:
    if not sys.stderr.isatty():
        return None
    from tqdm import tqdm

    total = args.max_iter or (100_000 if method == "l-bfgs-b" or (method in METHODS and method not in SECOND_ORDER)
                              else 3000 if method == "ipopt" else 1000)
    return _Bar(tqdm, total, method)


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


# ---------------------------------------------------------------- sums kept as loops
LOOP_METHODS = ("l-bfgs-b", "trust-constr", "ipopt")  # the methods that take sums kept as loops
SHOWN_ENTRIES = 5  # a vector's first entries in the summary


def run_loops(args: argparse.Namespace, text: str, expr: Expr) -> None:
    """``symad minimize`` of a problem whose objective or constraints keep sums as loops: scipy's
    L-BFGS-B (the default without constraints), trust-constr (the default with them) or IPOPT, on
    the problem's flat vector of variables (a vector's entries from the smallest index any text
    uses to the largest); a summary that stays short for millions of variables."""
    method = args.method or ("trust-constr" if args.constraints else "l-bfgs-b")
    _refuse_with_loops(args, method)
    pieces = [_read_piece(kind, given) for kind, given in args.constraints]
    layout = Layout([_labels_and_rows(expr)[0], *(p.labels for p in pieces)])
    start = parse_point(args.start, "--from")
    x0 = layout.values(start, "--from")
    bounds = parse_bounds(args.bounds)
    bar = _progress_bar(args, method)
    if method == "l-bfgs-b":
        lower, upper = _box(layout, bounds)
        result = lbfgsb(importlib.import_module("symad.indexed_function").IndexedFunction(expr), layout, x0,
                        lower, upper, tol=args.tol, xtol=args.xtol, max_iter=args.max_iter or 100_000,
                        max_time=args.max_time, callback=bar)
    else:
        options: dict[str, Any] = {"options": ipopt_options(args.option)} if method == "ipopt" else {}
        result = minimize(expr, x0, method=method, constraints=[(p.kind, p.raw) for p in pieces] or None,
                          bounds=bounds or None, tol=args.tol, max_iter=args.max_iter, max_time=args.max_time,
                          callback=bar, background=False,
                          **({"xtol": args.xtol} if method == "trust-constr" else {}), **options)
    if bar is not None:
        bar.close()
    _report_loops(args, text, result, layout, start, bounds, pieces)
    if args.strict and not result.success:
        raise SystemExit(1)


def _refuse_with_loops(args: argparse.Namespace, method: str) -> None:
    """A SymadError for what a problem with loops does not take."""
    if method not in LOOP_METHODS:
        why = " (its matrices are dense)" if method == "slsqp" else ""
        raise SymadError(f"--method {method} does not take sums kept as loops{why}: use l-bfgs-b (the default), "
                         f"trust-constr (the default with constraints) or ipopt")
    if method == "l-bfgs-b" and args.constraints:
        raise SymadError("--method l-bfgs-b takes no constraints: use trust-constr (the default with constraints) "
                         "or ipopt")
    if args.trace or args.plot:
        raise SymadError("--trace and --plot record and draw the path of a few variables: with sums kept as "
                         "loops they are not supported (--json --full gives the whole solution)")
    if args.fix:
        raise SymadError("--fix is not supported with sums kept as loops: write the value into the text "
                         "(a = 3; ...)")
    if args.lr is not None:
        raise SymadError("--lr is for gd, momentum, nesterov and adam, which do not take sums kept as loops")
    if args.option and method != "ipopt":
        raise SymadError(f"--option sets IPOPT's options: it is for --method ipopt, not {method}")


class _Piece(NamedTuple):
    """A constraint of a problem with loops, its text read on its own (it defines its own constants)."""
    kind: str
    given: str  # the text on the command line
    raw: Expr  # as parsed
    read: str | None  # the expression a comparison is read as (x <= 1 is 1 - x), else None
    labels: list[str]  # its variables, as the problem's layout reads them
    rows: int | None  # a family's count of rows (each(...)), None for a scalar


def _read_piece(kind: str, given: str) -> _Piece:
    try:
        raw = parse(given, Graph())
        kind, c = as_constraint(kind, raw)
    except ParseError as err:
        raise SymadError(f"in --{kind} {given!r}: {err}") from None
    except SymadError as err:
        raise type(err)(f"in --{kind} {given!r}: {err}") from None
    return _Piece(kind, given.strip(), raw, None if c.id == raw.id else c.to_text(), *_labels_and_rows(c))


def _labels_and_rows(expr: Expr) -> tuple[list[str], int | None]:
    """A piece's variables as the problem's layout reads them (``x[1..1000]``, ``x[3]``, ``y``),
    and a family's count of rows (None for a scalar)."""
    if expr.op == "each":
        family = importlib.import_module("symad.indexed_vector_function").IndexedVectorFunction([expr])
        return list(family.variables), len(family)
    if expr.graph.scoped and binders.has_scoped(expr.graph, [expr.id]):
        return list(importlib.import_module("symad.indexed_function").IndexedFunction(expr).variables), None
    return list(expr.variables), None


def _box(layout: Layout, bounds: dict[str, tuple[float | None, float | None]]) -> tuple[np.ndarray, np.ndarray]:
    """``--bounds`` over the layout: a vector's name bounds each of its entries, ``x[3]`` one
    entry (over its vector's bounds, whatever the order given)."""
    lower, upper = np.full(layout.size, -math.inf), np.full(layout.size, math.inf)
    for name, (lo, hi) in sorted(bounds.items(), key=lambda item: "[" in item[0]):
        at = _where(layout, name)
        lower[at] = -math.inf if lo is None else lo
        upper[at] = math.inf if hi is None else hi
    bad = np.flatnonzero(~(lower <= upper))
    if bad.size:
        raise PointError(f"--bounds: empty for {_label(layout, int(bad[0]))}: {lower[bad[0]]:g} > {upper[bad[0]]:g}")
    return lower, upper


def _where(layout: Layout, name: str) -> slice:
    """The positions of a variable, a whole vector or one entry ``x[3]`` in the flat vector."""
    if name in layout.offsets:
        lo, hi = layout.spans.get(name, (0, 0))
        return slice(layout.offsets[name], layout.offsets[name] + hi - lo + 1)
    base, bracket, rest = name.partition("[")
    if bracket and base in layout.spans and rest[:-1].lstrip("-").isdigit():
        lo, hi = layout.spans[base]
        k = int(rest[:-1])
        if lo <= k <= hi:
            return slice(layout.offsets[base] + k - lo, layout.offsets[base] + k - lo + 1)
    raise VariableError(f"--bounds names {name}, which is not a variable of the problem ({layout.described()})")


def _label(layout: Layout, position: int) -> str:
    """The name of the variable at ``position`` of the flat vector (``x[7]`` or ``y``)."""
    for base, at in layout.offsets.items():
        lo, hi = layout.spans.get(base, (0, 0))
        if at <= position <= at + hi - lo:
            return f"{base}[{lo + position - at}]" if base in layout.spans else base
    raise IndexError(position)


# How L-BFGS-B stopped, with its own tests off (gtol = ftol = 0): 0 f no longer decreases, 1 its limits.
_LBFGSB_STOPS = {0: (1, "stalled: f no longer decreases, but the gradient norm is above tol"), 1: (2, STATUS[2])}


def lbfgsb(fn: Any, layout: Layout, x0: np.ndarray, lower: np.ndarray, upper: np.ndarray, *, tol: float,
           xtol: float, max_iter: int, max_time: float | None, callback: Any) -> OptimizeResult:
    """scipy's L-BFGS-B on an indexed function's value and gradient, judged by symad's stopping
    rules: converged when the projected gradient's 2-norm is at most ``tol`` (checked after each
    iteration; scipy's own tests are off), stalled at a step below ``xtol*(1+|x|)``, diverged at
    ``f <= -1e300``; ``max_iter``, ``max_time`` and the callback (a progress bar) stop it too."""
    try:
        import scipy.optimize as so
    except ImportError:
        raise SymadError("--method l-bfgs-b runs scipy's: pip install scipy") from None
    t0 = time.perf_counter()
    bounded = bool(np.isfinite(lower).any() or np.isfinite(upper).any())
    x = np.clip(x0, lower, upper) if bounded else x0
    with np.errstate(all="ignore"):
        fn.value_and_grad(x)  # compiled before the clock starts, as symad.minimize does
    setup, t1 = time.perf_counter() - t0, time.perf_counter()
    calls = {"nfev": 0, "nit": 0}
    last: list[Any] = [None, math.nan, None]  # the point last evaluated, its value and gradient
    outcome: list[tuple[int, str]] = []

    def fg(x: np.ndarray) -> tuple[float, np.ndarray]:
        calls["nfev"] += 1
        f, g = fn.value_and_grad(x)
        last[:] = [x.copy(), float(f), np.asarray(g, dtype=float)]
        return last[1], last[2]

    def pgrad(x: np.ndarray, g: np.ndarray) -> np.ndarray:
        return x - np.clip(x - g, lower, upper) if bounded else g

    def judge(x: np.ndarray, f: float, g: np.ndarray, step: float) -> tuple[int, str] | None:
        gnorm = float(np.linalg.norm(pgrad(x, g)))
        if f <= -UNBOUNDED_F:
            return 7, f"{STATUS[7]} (f = {f:.3g})"
        if not (math.isfinite(f) and math.isfinite(gnorm)):
            return 5, STATUS[5]
        if gnorm <= tol:
            return 0, STATUS[0]
        if step <= xtol * (1.0 + float(np.linalg.norm(x))):
            return 1, STATUS[1]
        return None

    previous = [x]

    def check(intermediate_result: Any) -> None:
        calls["nit"] += 1
        xk = np.array(intermediate_result.x, dtype=float)  # a copy: scipy updates its array in place
        f, g = (last[1], last[2]) if np.array_equal(last[0], xk) else fg(xk)
        verdict = judge(xk, f, g, float(np.linalg.norm(xk - previous[0])))
        previous[0] = xk
        if verdict is None and max_time is not None and time.perf_counter() - t1 >= max_time:
            verdict = 3, STATUS[3]
        if verdict is None and callback is not None:
            callback(OptimizeResult(x=xk, fun=f, jac=g, nit=calls["nit"],
                                    grad_norm=float(np.linalg.norm(pgrad(xk, g)))))
        if verdict is not None:
            outcome.append(verdict)
            raise StopIteration

    with np.errstate(all="ignore"):
        f, g = fg(x)
        outcome_at_start = judge(x, f, g, math.inf)
        if outcome_at_start is not None:
            outcome.append(outcome_at_start)
        else:
            r = so.minimize(fg, x, jac=True, method="L-BFGS-B", callback=check,
                            bounds=so.Bounds(lower, upper) if bounded else None,
                            options={"maxiter": max_iter, "maxfun": 10 * max_iter, "gtol": 0.0, "ftol": 0.0})
            x = np.asarray(r.x, dtype=float)
            f, g = (last[1], last[2]) if np.array_equal(last[0], x) else fg(x)
            if not outcome:  # scipy stopped: its limits, or a line search that found no lower point
                verdict = judge(x, f, g, math.inf)
                outcome.append(verdict or _LBFGSB_STOPS.get(r.status, (6, f"{STATUS[6]} (L-BFGS-B: {r.message})")))
    status, message = outcome[0]
    return OptimizeResult(
        x=x, fun=f, jac=g, nit=calls["nit"], nfev=calls["nfev"], njev=calls["nfev"], nhev=0,
        success=status == 0, status=status, message=message, point=layout.point(x),
        grad_norm=float(np.linalg.norm(pgrad(x, g))), method="l-bfgs-b", hessian=None,
        time=time.perf_counter() - t1, setup_time=setup)


def _vector_summary(v: np.ndarray, full: bool) -> list[float | str] | dict[str, Any]:
    """A vector for JSON: every entry with ``--full``, else its length, first entries, min and max."""
    if full:
        return [_json(x) for x in v]
    return {"length": int(v.size), "first": [_json(x) for x in v[:SHOWN_ENTRIES]],
            "min": _json(np.min(v)) if v.size else None, "max": _json(np.max(v)) if v.size else None}


def _vector_line(v: np.ndarray) -> str:
    """``1,000 entries: 1, 1, 1, 1, 1, ...; min 0.999999, max 1``."""
    first = ", ".join(f"{x:.6g}" for x in v[:SHOWN_ENTRIES]) + (", ..." if v.size > SHOWN_ENTRIES else "")
    return f"{v.size:,} entries: {first}; min {np.min(v):.6g}, max {np.max(v):.6g}"


def _report_loops(args: argparse.Namespace, text: str, r: OptimizeResult, layout: Layout, start: dict[str, Any],
                  bounds: dict[str, Any], pieces: list[_Piece]) -> None:
    """The summary: each vector's length, first entries, min and max (every entry with --full),
    a family of constraints its count of rows and largest violation."""
    full = bool(getattr(args, "full", False))
    evaluations = f"{r.nfev} value+gradient" + (f", {r.nhev} Hessian" if r.nhev else "")
    rows = [("status", ("converged: " if r.success else "not converged: ") + r.message), ("method", r.method)]
    point: dict[str, Any] = {}
    for base, value in r.point.items():
        if base in layout.spans:
            lo, hi = layout.spans[base]
            rows.append((f"{base}[{lo}..{hi}]", _vector_line(value)))
            if full and not args.json:
                rows += [(f"{base}[{k}]", format_number(float(v))) for k, v in zip(range(lo, hi + 1), value)]
            point[base] = _vector_summary(value, full)
        else:
            rows.append((base, format_number(value)))
            point[base] = _json(value)
    rows += [("f", format_number(r.fun)), ("grad norm", f"{r.grad_norm:.3g}"), ("iterations", str(r.nit)),
             ("evaluations", evaluations), ("time", f"{_duration(r.time)} (+ {_duration(r.setup_time)} compiling)")]
    cons = _loop_constraints(r, pieces, full)
    for c in cons:
        kind = c["kind"]
        shown = c["expr"] + (f": {c['as']}" if "as" in c else "")
        if "rows" in c:
            shown += f": {c['rows']:,} rows, largest violation {c['violation']:.3g}"
        else:
            shown += f" = {format_number(c['value'])}" + (" (must be 0)" if kind == "eq" else " (>= 0)")
            if "multiplier" in c:
                shown += f", multiplier {format_number(c['multiplier'])}"
        rows.insert(-4, (kind, shown))
    obj: dict[str, Any] = {
        "expr": text.strip(), "method": r.method, "variables": layout.described(),
        "from": {k: _vector_summary(np.asarray(v, dtype=float), full) if isinstance(v, list) else _json(v)
                 for k, v in start.items()},
        "bounds": {k: list(v) for k, v in bounds.items()}, "x": point, "value": _json(r.fun),
        "grad": _vector_summary(np.asarray(r.jac, dtype=float), full), "grad_norm": _json(r.grad_norm),
        "iterations": r.nit, "evaluations": r.nfev, "hessian_evaluations": r.nhev, "success": bool(r.success),
        "status": r.status, "message": r.message, "time": r.time, "setup_time": r.setup_time}
    if "ipopt_status" in r:
        obj["ipopt_status"] = r.ipopt_status
    if cons:
        obj["constraints"] = [{k: _json(v) if k in ("value", "multiplier", "violation") else v for k, v in c.items()}
                              for c in cons]
        obj["violation"] = _json(r.constraints["violation"])
    width = max(len(k) for k, _ in rows)
    warnings = [] if r.success else [f"did not converge: {r.message}"]
    emit(args, obj, [f"{k.ljust(width)}  {v}" for k, v in rows], warnings)


def _loop_constraints(r: OptimizeResult, pieces: list[_Piece], full: bool) -> list[dict[str, Any]]:
    """Each constraint at the result: a family (``each``) its count of rows and largest violation
    (with ``full`` every value and multiplier), a scalar its value and multiplier."""
    if not pieces:
        return []
    values, multipliers = r.constraints["values"], r.get("multipliers")
    out, at = [], 0
    for piece in pieces:
        rows = 1 if piece.rows is None else piece.rows
        mine = np.asarray(values[at:at + rows], dtype=float)
        entry: dict[str, Any] = {"kind": piece.kind, "expr": piece.given}
        if piece.read is not None:
            entry["as"] = piece.read
        if piece.rows is not None:
            worst = np.abs(mine) if piece.kind == "eq" else np.maximum(-mine, 0.0)
            entry["rows"] = rows
            entry["violation"] = float(np.max(worst)) if rows else 0.0
            if full:
                entry["values"] = [_json(v) for v in mine]
                if multipliers is not None:
                    entry["multipliers"] = [_json(v) for v in multipliers[at:at + rows]]
        else:
            entry["value"] = float(mine[0])
            if multipliers is not None:
                entry["multiplier"] = float(multipliers[at])
        out.append(entry)
        at += rows
    return out
