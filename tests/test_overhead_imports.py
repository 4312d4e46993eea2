"""What ``import symad.optimize`` leaves for later: the objectives' data machinery until an objective
exists, the special functions' LLVM lowerings until one is lowered, B_60 until polygamma is computed."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from symad.core.ops import OPS, Inline, special
from symad.core.ops.straight import inline_template
from symad.optimize.problem import is_objective


def _fresh(code: str) -> dict:
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_importing_optimize_leaves_objectives_and_lowerings_for_later() -> None:
    seen = _fresh(
        "import json, sys\n"
        "import symad.optimize\n"
        "from symad.core.ops import OPS\n"
        "from symad.core.ops import special\n"
        "print(json.dumps({'objectives': 'symad.objectives' in sys.modules,\n"
        "                  'traced': [n for n, op in OPS.items() if isinstance(op.llvm, special.Inline)\n"
        "                             and op.llvm._template is None]}))")
    assert seen["objectives"] is False
    assert {"lgamma", "digamma", "polygamma", "betaln", "log_ndtr"} <= set(seen["traced"])


def test_a_traced_lowering_is_the_kernel_traced_once_at_first_use() -> None:
    calls = []

    def trace() -> tuple[str, tuple[tuple[str, int], ...]]:
        calls.append(1)
        return inline_template(special.lgamma, 1)

    lazy = Inline(trace=trace)
    assert not calls
    template, used = inline_template(special.lgamma, 1)
    assert lazy.template == template and lazy.calls == used and len(calls) == 1
    assert lazy == Inline(template, used) and hash(lazy) == hash(Inline(template, used))
    assert OPS["lgamma"].llvm == lazy and len(calls) == 1


def test_an_inline_takes_a_template_or_a_trace() -> None:
    with pytest.raises(TypeError):
        Inline()
    with pytest.raises(TypeError):
        Inline("{r} = fadd double {0}, {1}", trace=lambda: ("", ()))
    assert Inline("{r} = fneg double {0}").calls == ()


def test_zeta_tail_is_the_bernoulli_numbers_over_factorials() -> None:
    """The table written out is the exact fractions rounded once (computing B_60 took the
    milliseconds a process tracing the lowerings paid)."""
    tail = special._ZETA_TAIL
    assert len(tail) == 30 and tail[0] == 1 / 12 and tail[1] == -1 / 720  # B2/2!, B4/4!
    assert tail == special.zeta_tail_exact()


def test_is_objective() -> None:
    import numpy as np

    import symad

    assert not is_objective("x^2") and not is_objective(None)
    obj = symad.objective("(a*t - y)^2", data={"t": np.arange(3.0), "y": np.arange(3.0)}, wrt=["a"])
    assert is_objective(obj)
