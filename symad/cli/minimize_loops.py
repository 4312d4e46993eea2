"""``symad minimize`` of a problem whose sums stay loops: the method, the layout of its
vectors, and a summary that stays short for millions of variables."""

from __future__ import annotations

import argparse
import importlib
from typing import Any, NamedTuple

import numpy as np

from symad.cli.common import emit, format_number, parse_point
from symad.cli.minimize_args import duration, ipopt_options, json_number, parse_bounds, progress_bar
from symad.core import binders
from symad.core.dag import Graph
from symad.core.errors import ParseError, SymadError, VariableError
from symad.expr import Expr, parse
from symad.optimize.conditions import as_constraint
from symad.optimize.driver import minimize
from symad.optimize.loops import Layout
from symad.optimize.result import OptimizeResult

LOOP_METHODS = ("l-bfgs-b", "l-bfgs", "trust-constr", "ipopt")  # the methods that take sums kept as loops
SHOWN_ENTRIES = 5  # a vector's first entries in the summary


def run_loops(args: argparse.Namespace, text: str, expr: Expr) -> None:
    """``symad minimize`` of a problem whose objective or constraints keep sums as loops: symad's
    L-BFGS (the default), scipy's L-BFGS-B (the default with bounds), trust-constr (the default
    with constraints) or IPOPT, on
    the problem's flat vector of variables (a vector's entries from the smallest index any text
    uses to the largest); a summary that stays short for millions of variables."""
    method = args.method or ("trust-constr" if args.constraints else "l-bfgs-b" if args.bounds else "l-bfgs")
    _refuse_with_loops(args, method)
    pieces = [_read_piece(kind, given) for kind, given in args.constraints]
    fixed = parse_point(args.fix, "--fix")  # held: given to the loops as data, not variables
    labels = _labels_and_rows(expr)[0]
    entries = [k for k in fixed if "[" in k]
    if entries:
        raise VariableError(f"--fix holds whole names with sums kept as loops: an entry such as {entries[0]} is "
                            f"held by its bounds, --bounds {entries[0]}=v:v", tuple(entries))
    every = [*labels, *(label for p in pieces for label in p.labels)]
    unknown = [k for k in fixed if k not in {label.partition("[")[0] for label in every}]
    if unknown:
        raise VariableError(f"--fix names {', '.join(unknown)}, which the {'problem' if pieces else 'objective'} "
                            f"does not use (its variables: {', '.join(dict.fromkeys(every))})", tuple(unknown))

    def free(names: list[str]) -> list[str]:
        return [label for label in names if label.partition("[")[0] not in fixed]

    layout = Layout([free(labels), *(free(p.labels) for p in pieces)])
    start = {k: v for k, v in parse_point(args.start, "--from").items() if k not in fixed}
    x0 = layout.values(start, "--from")
    bounds = parse_bounds(args.bounds)
    layout.box(bounds, "--bounds")  # refused as the flag's, before any compile
    bar = progress_bar(args, method)
    options: dict[str, Any] = {"options": ipopt_options(args.option)} if method == "ipopt" else {}
    result = minimize(expr, x0, method=method, constraints=[(p.kind, p.raw) for p in pieces] or None,
                      bounds=bounds or None, tol=args.tol, max_iter=args.max_iter, max_time=args.max_time,
                      callback=bar, background=False, fixed=fixed or None,
                      **({} if method == "ipopt" else {"xtol": args.xtol}), **options)
    if bar is not None:
        bar.close()
    _report_loops(args, text, result, layout, start, bounds, pieces, fixed)
    if args.strict and not result.success:
        raise SystemExit(1)


def _refuse_with_loops(args: argparse.Namespace, method: str) -> None:
    """A SymadError for what a problem with loops does not take."""
    if method not in LOOP_METHODS:
        why = " (its matrices are dense)" if method == "slsqp" else ""
        raise SymadError(f"--method {method} does not take sums kept as loops{why}: use l-bfgs (the default), "
                         f"l-bfgs-b (the default with bounds), trust-constr (the default with constraints) or ipopt")
    if method == "l-bfgs" and args.bounds:
        raise SymadError("--method l-bfgs takes no bounds: use l-bfgs-b (the default with bounds), whose Cauchy "
                         "point and subspace minimisation keep to them")
    if method in ("l-bfgs-b", "l-bfgs") and args.constraints:
        raise SymadError(f"--method {method} takes no constraints: use trust-constr (the default with constraints) "
                         "or ipopt")
    if args.trace or args.plot:
        raise SymadError("--trace and --plot record and draw the path of a few variables: with sums kept as "
                         "loops they are not supported (--json --full gives the whole solution)")
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
        function = importlib.import_module("symad.indexed_function").IndexedFunction
        return list(function(expr, prepare=False).variables), None  # (its names: nothing compiled)
    return list(expr.variables), None


def _vector_summary(v: np.ndarray, full: bool) -> list[float | str] | dict[str, Any]:
    """A vector for JSON: every entry with ``--full``, else its length, first entries, min and max."""
    if full:
        return [json_number(x) for x in v]
    return {"length": int(v.size), "first": [json_number(x) for x in v[:SHOWN_ENTRIES]],
            "min": json_number(np.min(v)) if v.size else None, "max": json_number(np.max(v)) if v.size else None}


def _vector_line(v: np.ndarray) -> str:
    """``1,000 entries: 1, 1, 1, 1, 1, ...; min 0.999999, max 1``."""
    first = ", ".join(f"{x:.6g}" for x in v[:SHOWN_ENTRIES]) + (", ..." if v.size > SHOWN_ENTRIES else "")
    return f"{v.size:,} entries: {first}; min {np.min(v):.6g}, max {np.max(v):.6g}"


def _report_loops(args: argparse.Namespace, text: str, r: OptimizeResult, layout: Layout, start: dict[str, Any],
                  bounds: dict[str, Any], pieces: list[_Piece], fixed: dict[str, Any]) -> None:
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
            point[base] = json_number(value)
    for name, value in fixed.items():  # held at their values, as a written-out problem shows them
        rows.append((name, (_vector_line(np.asarray(value, dtype=float)) if isinstance(value, list)
                            else format_number(value)) + " (fixed)"))
    rows += [("f", format_number(r.fun)), ("grad norm", f"{r.grad_norm:.3g}"), ("iterations", str(r.nit)),
             ("evaluations", evaluations), ("time", f"{duration(r.time)} (+ {duration(r.setup_time)} compiling)")]
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
        "from": {k: _vector_summary(np.asarray(v, dtype=float), full) if isinstance(v, list) else json_number(v)
                 for k, v in start.items()},
        **({"fixed": {k: _vector_summary(np.asarray(v, dtype=float), full) if isinstance(v, list) else json_number(v)
                      for k, v in fixed.items()}} if fixed else {}),
        "bounds": {k: list(v) for k, v in bounds.items()}, "x": point, "value": json_number(r.fun),
        "grad": _vector_summary(np.asarray(r.jac, dtype=float), full), "grad_norm": json_number(r.grad_norm),
        "iterations": r.nit, "evaluations": r.nfev, "hessian_evaluations": r.nhev, "success": bool(r.success),
        "status": r.status, "message": r.message, "time": r.time, "setup_time": r.setup_time}
    if "ipopt_status" in r:
        obj["ipopt_status"] = r.ipopt_status
    if cons:
        numbers = ("value", "multiplier", "violation")
        obj["constraints"] = [{k: json_number(v) if k in numbers else v for k, v in c.items()} for c in cons]
        obj["violation"] = json_number(r.constraints["violation"])
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
                entry["values"] = [json_number(v) for v in mine]
                if multipliers is not None:
                    entry["multipliers"] = [json_number(v) for v in multipliers[at:at + rows]]
        else:
            entry["value"] = float(mine[0])
            if multipliers is not None:
                entry["multiplier"] = float(multipliers[at])
        out.append(entry)
        at += rows
    return out
