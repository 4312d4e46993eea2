"""DAG → LaTeX: fractions, powers, function names, the fewest parentheses.

Like :mod:`symad.core.printing`, a walk over an explicit stack of pieces (no recursion).
Each op's form is its op-table entry's ``latex``: an operator placed by the entry's precedence
and associativity, a function's name (``\\sin``, else ``\\operatorname{name}``), or a form of
its own that encloses its arguments (``\\frac``, ``\\sqrt``, ``|x|``, cases for ``where``).
Powers and products are typeset here (superscripts; factors juxtaposed).  Large derivatives
name their shared subexpressions, as the text form does, and print as aligned definitions.
Loops print as in mathematics: ``\\sum_{i=1}^{n} \\left(...\\right)``, ``\\prod``, entries as
subscripts (``x_{i + 1}``, ``A_{i, j}``) and a map as ``\\left(...\\right)_{k=1}^{n}``."""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

from symad.core.dag import SCOPED, Graph
from symad.core.ops import OPS, PREC_ATOM, PREC_CMP, PREC_PRODUCT, PREC_SUM, PREC_UNARY
from symad.core.printing import (
    SHARED_MIN_TREE,
    SHARED_RATIO,
    IndexNames,
    format_number,
    free_index_names,
    loop_repeated,
    precedence,
    render,
    shared_names,
)

_GREEK = {"alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta", "iota", "kappa", "lambda", "mu", "nu",
          "xi", "rho", "sigma", "tau", "upsilon", "phi", "chi", "psi", "omega", "Gamma", "Delta", "Theta",
          "Lambda", "Xi", "Pi", "Sigma", "Phi", "Psi", "Omega"}
_SPLIT = re.compile(r"([A-Za-z]+?)_?(\d+)")
_SCIENTIFIC = re.compile(r"(-?[0-9.]+)e([+-]?[0-9]+)")
_INDEXED = re.compile(r"([A-Za-z_][A-Za-z_0-9]*)\[(-?\d+)\]")

# A sum or product binds like a big operator: looser than a product (so a factor is wrapped),
# tighter than a sum (so a term is not).
_PREC_BIG_OPERATOR = (PREC_SUM + PREC_PRODUCT) / 2
_BIG_OPERATOR = {"sum": r"\sum", "prod": r"\prod"}


def latex_name(name: str) -> str:
    """A variable's name in LaTeX: ``x``, ``x_{2}`` (``x2``, ``x_2``, ``x[2]``), ``\\theta``, ``\\mathit{rate}``."""
    m = _INDEXED.fullmatch(name)
    if m:
        base = latex_name(m.group(1))
        if "_{" in base:  # x1[3]: {x_{1}}_{3}, not a double subscript
            base = "{" + base + "}"
        return f"{base}_{{{m.group(2)}}}"
    m = _SPLIT.fullmatch(name)
    if m:
        return f"{latex_name(m.group(1))}_{{{m.group(2)}}}"
    if name in _GREEK:
        return "\\" + name
    if len(name) == 1 and name != "_":
        return name
    return r"\mathit{" + name.replace("_", r"\_") + "}"


def latex_label(label: str) -> str:
    """A variable as a command labels a partial, in LaTeX: an entry ``x[k+1]`` as ``x_{k+1}``,
    anything else as :func:`latex_name` writes it."""
    m = re.fullmatch(r"(.+?)\[(.+)\]", label)
    if m and not _INDEXED.fullmatch(label):
        base = latex_name(m.group(1))
        return f"{{{base}}}_{{{m.group(2)}}}" if "_{" in base else f"{base}_{{{m.group(2)}}}"  # no double subscript
    return latex_name(label)


def latex_number(value: float) -> str:
    """A number in LaTeX: ``2``, ``0.5``, ``\\pi``, ``1.5 \\cdot 10^{-5}``, ``\\infty``."""
    text = format_number(value)
    if text.lstrip("-") in ("pi", "inf", "nan"):
        text = text.replace("pi", r"\pi").replace("inf", r"\infty").replace("nan", r"\mathrm{NaN}")
    m = _SCIENTIFIC.fullmatch(text)
    if m:
        mantissa, exponent = m.group(1), int(m.group(2))
        if mantissa in ("1", "-1"):
            return f"{mantissa[:-1]}10^{{{exponent}}}"
        return f"{mantissa} \\cdot 10^{{{exponent}}}"
    return text


def to_latex(graph: Graph, root: int, names: dict[int, str] | None = None,
             free_names: Sequence[str] = ()) -> str:
    """The expression in LaTeX (nodes in ``names`` print as those names; the index levels ``root``
    leaves free, as ``free_names``)."""
    names = names or {}
    op_of, data_of = graph.op, graph.data
    index_names = IndexNames(graph, root, free_names)

    def prec(node: int) -> float:
        if node in names:
            return PREC_ATOM
        op = op_of[node]
        if op in SCOPED:
            return _PREC_BIG_OPERATOR if op in _BIG_OPERATOR else PREC_ATOM
        if op == "const" and "\\cdot" in latex_number(data_of[node]):  # type: ignore[arg-type]
            return PREC_SUM + 1  # 1.5 \cdot 10^{-5} is a product
        spec = OPS[op]
        if spec.kind not in ("infix", "prefix") or isinstance(spec.latex, tuple):
            return PREC_ATOM  # \frac{..}{..} and f(..) need no parentheses around them
        return precedence(graph, node)

    def compose(node: int, op: str, args: tuple[int, ...]) -> list[object]:
        if op in SCOPED:
            return _scoped(graph, node, index_names, prec)
        spec = OPS[op]
        pieces: list[object]
        if isinstance(spec.latex, tuple):  # a form of its own, enclosing its arguments
            pieces = [args[p] if isinstance(p, int) else p for p in spec.latex]
        elif op == "pow":
            base, exponent = args
            pieces = [*_wrap(base, prec(base) <= spec.prec or op_of[base] == "div"), "^{", exponent, "}"]
        elif spec.kind == "infix":
            left, right = args
            lp, rp = prec(left), prec(right)
            left_paren = lp <= spec.prec if spec.assoc == "none" else lp < spec.prec
            right_paren = rp <= spec.prec
            symbol = f" {spec.latex} "
            if op == "mul":  # juxtaposed: 2\,x\,y; but a factor starting with a number after a \cdot
                right_paren = rp < spec.prec or rp == PREC_UNARY  # x\,\left(-y\right)
                symbol = r" \cdot " if _leading_number(graph, right) else r"\,"
            pieces = [*_wrap(left, left_paren), symbol, *_wrap(right, right_paren)]
        elif spec.kind == "prefix":
            (arg,) = args
            # a word-like operator (not) binds looser than a sign: anything but an atom in parentheses
            pieces = [spec.latex, *_wrap(arg, prec(arg) < (PREC_ATOM if spec.prec < PREC_UNARY else PREC_UNARY))]
        else:
            pieces = [spec.latex, r"\left("]
            for i, arg in enumerate(args):
                if i:
                    pieces.append(", ")
                pieces.append(arg)
            pieces.append(r"\right)")
        return pieces

    return render(graph, root, names, lambda op, data: latex_number(data) if op == "const" else latex_name(data),
                  compose)


def _scoped(graph: Graph, node: int, index_names: IndexNames, prec: Callable[[int], float]) -> list[object]:
    """The pieces of an indexed node: ``i``, ``x``, ``x_{i + 1}``, ``\\sum_{i=1}^{n} ...``."""
    op, args, data = graph.op[node], graph.args[node], graph.data[node]
    if op == "index":
        return [latex_name(index_names.of(data))]  # type: ignore[arg-type]
    if op == "vector":
        return [latex_name(data)]  # type: ignore[arg-type]
    if op == "item":
        base = latex_name(graph.data[args[0]])  # type: ignore[arg-type]
        if "_{" in base:  # x1[i]: {x_{1}}_{i}, not a double subscript
            base = "{" + base + "}"
        pieces: list[object] = [base, "_{"]
        for k, a in enumerate(args[1:]):
            pieces.extend([", ", a] if k else [a])
        return [*pieces, "}"]
    level, low, high = data  # type: ignore[misc]
    body = args[0]
    scope = f"{latex_name(index_names.enter(level))}={low}"
    leave = lambda: index_names.leave(level)  # noqa: E731 - run once the body is printed
    if op == "each":
        return [r"\left(", body, leave, rf"\right)_{{{scope}}}^{{{high}}}"]
    # A term's body is wrapped; a product's factors and a nested sum read plainly after the operator.
    nested = graph.op[body] == op
    return [f"{_BIG_OPERATOR[op]}_{{{scope}}}^{{{high}}} ", *_wrap(body, not nested and prec(body) < PREC_PRODUCT),
            leave]


def _leading_number(graph: Graph, node: int) -> bool:
    """Whether the printed node starts with a number (a product's or power's leftmost factor)."""
    while graph.op[node] in ("mul", "pow"):
        node = graph.args[node][0]
    return graph.op[node] == "const"


def _wrap(node: int, paren: bool) -> list[object]:
    return [r"\left(", node, r"\right)"] if paren else [node]


def latex_block(graph: Graph, roots: list[int], labels: list[str], free_names: Sequence[str] = (),
                notes: Sequence[str] = ()) -> str:
    """``label = expression`` for each root, one per line of an ``aligned`` block, followed by its
    note if any (``notes[k]``: a partial's range); when the roots as trees would be much larger
    than their DAG, or would print a loop more than once, shared subexpressions are named
    ``t_{1}, t_{2}, ...`` and defined first.  ``free_names``: the names of the index levels the
    roots that leave some free leave free (:func:`symad.core.printing.free_index_names`)."""
    order = graph.reachable(roots)
    tree = sum(graph.tree_size(r) for r in roots)
    names: dict[int, str] = {}
    lines: list[str] = []
    if (tree > SHARED_MIN_TREE and tree > SHARED_RATIO * len(order)) or loop_repeated(graph, roots):
        # t_{k}, unless a variable is written so (t1, t_2, t[3]): then another letter
        taken = {latex_name(graph.data[n]).partition("_{")[0] for n in order if graph.op[n] == "var"}  # type: ignore[arg-type]
        letter = next((c for c in ("t", "s", "u", "w", r"\tau") if c not in taken and "{" + c not in taken),
                      r"\mathit{shared}")
        for node in shared_names(graph, roots):
            body = to_latex(graph, node, names)
            if precedence(graph, node) <= PREC_CMP:  # t_{1} = \left(a = 0\right), not t_{1} = a = 0
                body = rf"\left({body}\right)"
            names[node] = f"{letter}_{{{len(names) + 1}}}"
            lines.append(f"{names[node]} &= {body}")
    for k, (label, r) in enumerate(zip(labels, roots)):
        note = notes[k] if k < len(notes) and notes[k] else ""
        lines.append(f"{label} &= {to_latex(graph, r, names, free_index_names(graph, r, free_names))}{note}")
    return "\\begin{aligned}\n" + " \\\\\n".join(lines) + "\n\\end{aligned}"
