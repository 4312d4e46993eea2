"""The branches suite's page (branches.md) from its figures (branches.json), with what the ratios come from.

    python -m benchmarks.branches.report      # write branches.md again from branches.json (nothing is measured)
"""

from __future__ import annotations

import sys
from pathlib import Path

from benchmarks.harness import rerender


def _table(rows: list[dict], target: float) -> list[str]:
    lines = ["| pair (one term) | with | without | one point: with / without | batch of 10,000: with / without"
             " (per point) | target met |",
             "|---|---|---|---|---|---|"]
    for r in rows:
        met = "yes" if max(r["point_ratio"], r["batch_ratio"]) <= target else "no"
        lines.append(f"| {r['pair']} | `{r['with']}` | `{r['without']}` | {r['point_with_ns']:.0f} / "
                     f"{r['point_without_ns']:.0f} ns = {r['point_ratio']:.2f}x | {r['batch_with_ns']:.1f} / "
                     f"{r['batch_without_ns']:.1f} ns = {r['batch_ratio']:.2f}x | {met} |")
    return lines


def render(data: dict, target: float = 1.5) -> str:
    """The page."""
    meta, tables = data["meta"], data["tables"]
    rows = next(iter(tables.values()))
    lines = ["# Branches and stable functions: cost per point", "",
             "Written by `python -m benchmarks.branches` (the method is in benchmarks/branches/suite.py's "
             "docstring): each pair is a sum of",
             f"{rows[0]['n'] - 1} terms over {rows[0]['n']} variables, native code, `value_and_grad`; the target",
             f"(issue #17) is at most {target}x the same work written without the new operations. Each number is",
             f"the median of {rows[0]['processes']} fresh processes, each the best of 5 alternating runs.",
             f"Machine: {meta['machine']}, Python {meta['python']}, {meta['system']}."]
    for title, table in tables.items():
        lines += ["", f"**{title}**", ""] + _table(table, target)
    lines += ["", NOTES]
    return "\n".join(lines) + "\n"


NOTES = """What the ratios come from (read from the optimised IR and the assembly of each program):

- Selects never jump. With AVX-512 a select of doubles is a masked move (a select by 0 a
  zero-masking move, which costs nothing more), and the `and` of two comparisons a masked
  comparison. Without AVX-512, x86 code generation turns some scalar selects (a condition of two
  comparisons, or one the vectoriser packed with another term's, or a test against 0) into
  jumps, mispredicted for about every other point of a batch (3.5x for the chained pair): there
  symad rewrites the selects LLVM's IR passes leave as selects of two-lane vectors, blends
  (`codegen.blend_selects`). Rewriting them after the passes, not in the IR symad writes, lets
  LLVM's SLP vectoriser pack a branch's selects as it packs the naive form's arithmetic: the
  `where` pair went from 1.7x to 1.2x, the chained pair from 2.8x to 2.3x. A test reads the
  assembly of both code generations.
- The chained pair is the worst case: its arms are 4 flops a term, and the branch adds two
  comparisons, their `and`, the value's select and three selects for the partials
  (`where(c, x2, 1)`, `where(c, 0, -1)`, `where(c, x1, 0)`). With AVX-512 these cost 1.3x. Without
  it there are no masked comparisons and no zero-masking: a blend, an AND per select by 0, the
  conditions' AND: about 14 instructions a term against 9 for the naive form (loads and stores
  included) before any vectorisation, so even code without a wasted instruction would be 1.5x
  or more. Merging
  `where(c, 0, -1) + where(c, x1, 0)` into `where(c, x1, -1)` in the derivative (exact: one of the
  two is 0 at every point) was tried: the AVX-512 code got slower (a masked move of two registers
  where two zero-masking moves cost nothing), and the derivative is one DAG for every CPU.
- In the `where` pair, `x2^2` is one node shared by two terms' arms, so its adjoint adds two
  branches and takes a strong-zero guard (a comparison and a select) so that a branch not taken
  contributes 0, never `nan`.
- The stable functions compute `e = exp(-|z|)`, `1 + e` and `q = 1/(1 + e)` the same way in
  their value and in their derivatives (`softplus' = sigmoid`, `sigmoid = q` or `e*q`,
  `logaddexp' = sigmoid(±(a - b))`), so LLVM computes them once: one `exp`, one `log` and one
  division a term, as the naive forms. Their `log1p(e)` is `log(1 + e)` plus the rounding error of
  `1 + e` times `q` (within 1 ulp): the C library's `log1p` costs over a batch twice what `log`
  and a division do (summed over 49 independent terms, `log1p(x^2)` 669 ns a point against
  277 ns for `log(1 + x^2)`), which put `logaddexp` at 1.6x. What is left is the comparisons and
  selects of `max(a, b)`, of the signs and of `a = b`, held with everything else across the calls
  of `exp` and `log` (which keep no vector register).
- At one point every pair is within 1.25x: the call's cost hides the difference."""


if __name__ == "__main__":
    sys.exit(rerender(Path(__file__).parent, "branches", render))
