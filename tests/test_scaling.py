"""Every path from text to a callable is linear in the input (issue 30 §1).

``compile()`` rebuilt a set per variable: 8,000 variables took 7.4 s and 10^5 never finished.
The timeouts are generous guards against the quadratic paths, not measurements; the
build-time curve up to 10^6 variables is benchmarks/scaling/'s.
"""

import subprocess
import sys

import pytest

_BUILD = """
import sys, symad
n = int(sys.argv[1])
text = sys.stdin.read().replace("{n}", str(n))
f = symad.compile(text, variables=["x"] if "[" in text else None, background=False)
value, grad = f.value_and_grad([0.5] * n)
assert len(grad) == n and grad[0] != 0 and grad[-1] != 0, grad
print(len(grad))  # (a long sum is a loop: its variables are one vector, 'x[1..n]')
"""


@pytest.mark.slow
@pytest.mark.parametrize("text", ["sum(i = 1..{n}, (x[i] - i)^2)", "{n}"])
def test_text_to_a_first_gradient_of_100000_variables(text):
    n = 100_000
    if text == "{n}":  # the written-out form: x0^2 + x1^2 + ... as plain names
        text = "+".join(f"(v{i} - {i})^2" for i in range(n))
    run = subprocess.run([sys.executable, "-c", _BUILD, str(n)], input=text, capture_output=True, text=True,
                         timeout=300)
    assert run.returncode == 0, run.stderr[-2000:]
    assert run.stdout.split() == [str(n)]
