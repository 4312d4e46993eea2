"""`symad explain` and `symad diff` take time and print text that grow linearly with the DAG.

The sizes here took minutes (or printed hundreds of megabytes) while these
commands were quadratic; linear they take a second or two.  The timeout is a
generous guard, not a measurement.
"""

import json
import re

import pytest
from support.cli_helpers import run

TIMEOUT = 60


def _write(tmp_path, name, text):
    path = tmp_path / name
    path.write_text(text)
    return f"@{path}"


@pytest.mark.slow
def test_explain_of_deep_nesting_is_linear(tmp_path):
    depth = 30_000
    arg = _write(tmp_path, "sin.txt", "sin(" * depth + "x" + ")" * depth)
    p = run("explain", arg, "--at", "x=0.5", timeout=TIMEOUT)
    assert p.returncode == 0, p.stderr
    lines = p.stdout.splitlines()
    assert len(lines) == 2 * (depth + 1) + 5  # a row per node in each table, titles, gradient
    assert len(p.stdout) < 200 * depth
    assert lines[1].split() == ["z1", "=", "x", "=", "0.5"]
    assert lines[-1].startswith("gradient: df/dx = z̄1 = ")
    fwd = run("explain", arg, "--at", "x=0.5", "--mode", "forward", "--json", timeout=TIMEOUT)
    assert fwd.returncode == 0, fwd.stderr
    assert len(json.loads(fwd.stdout)["sweep"]) == depth + 1


@pytest.mark.slow
def test_explain_rows_are_not_padded_to_a_huge_cell(tmp_path):
    n = 2000  # x has n users: its adjoint row has n terms (the old output was 290 MB)
    arg = _write(tmp_path, "sum.txt", "+".join(f"sin(x+{k})" for k in range(1, n + 1)))
    p = run("explain", arg, "--at", "x=0.5", timeout=TIMEOUT)
    assert p.returncode == 0, p.stderr
    assert len(p.stdout) < 1_000_000
    x_row = next(line for line in p.stdout.splitlines() if line.lstrip().startswith("z̄1 = "))
    assert x_row.count("*1") == 2 * n  # printed whole: every term, symbolic and numeric
    assert max(map(len, re.findall(" +", p.stdout))) <= 60  # padding, if any, is bounded
    out = json.loads(run("explain", arg, "--at", "x=0.5", "--json", timeout=TIMEOUT).stdout)
    assert len(next(r for r in out["sweep"] if r["id"] == "z1")["terms"]) == n


@pytest.mark.slow
def test_diff_of_a_long_product_names_shared_factors_once(tmp_path):
    n = 10_000  # each partial inline is n factors long: n² characters in all
    arg = _write(tmp_path, "prod.txt", "*".join(f"x{i}" for i in range(1, n + 1)))
    p = run("diff", arg, timeout=TIMEOUT)
    assert p.returncode == 0, p.stderr
    assert len(p.stdout) < 100 * n
    lines = p.stdout.splitlines()
    assert lines[0] == "_1 = x1*x2;"
    assert sum(line.startswith("df/dx") for line in lines) == n
    assert lines[-1].startswith("df/dx10000 = ")
    out = json.loads(run("diff", arg, "--json", timeout=TIMEOUT).stdout)
    assert list(out) == ["expr", "diff", "shared"] and len(out["diff"]) == n
    assert out["shared"]["_1"] == "x1*x2"
    assert all(name.startswith("_") and name[1:].isdigit() for name in out["shared"])


def test_diff_small_outputs_stay_inline():
    p = run("diff", "sin(x)^2/sqrt(1+y)")
    assert p.stdout.splitlines() == ["df/dx = 1/sqrt(y + 1)*(2*sin(x))*cos(x)",
                                     "df/dy = -(sin(x)^2/sqrt(y + 1))/sqrt(y + 1)*(0.5/sqrt(y + 1))"]
    assert json.loads(run("diff", "x*y", "--json").stdout) == {"expr": "x*y", "diff": {"x": "y", "y": "x"}}


@pytest.mark.slow
def test_repeated_wrt_merges():
    both = ["df/dx = y*(2*x)", "df/dy = x^2"]
    assert run("diff", "x^2*y", "--wrt", "x", "--wrt", "y").stdout.splitlines() == both
    assert run("diff", "x^2*y", "--wrt", "x,y").stdout.splitlines() == both
    assert run("diff", "x^2*y", "--wrt", "y", "--wrt", "x").stdout.splitlines() == both[::-1]
    assert run("diff", "x^2*y", "--wrt", "x", "--wrt", "x").stdout == "y*(2*x)\n"
    out = json.loads(run("diff", "x^2*y", "--wrt", "x", "--wrt", "y", "--json").stdout)
    assert out["diff"] == {"x": "y*(2*x)", "y": "x^2"}
    p = run("diff", "x^2*y", "--wrt", "x", "--wrt", "2y")
    assert p.returncode == 2 and "symad: error: --wrt: '2y' is not a variable name" in p.stderr


def _peak_kib(args: list[str]) -> int:
    """The peak resident memory of one ``symad`` run (KiB, from wait4: this child's alone)."""
    import os
    import subprocess

    from support.cli_helpers import symad_command

    child = subprocess.Popen(symad_command() + args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                             stdin=subprocess.DEVNULL)
    _, status, usage = os.wait4(child.pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0, child.stderr.read()
    return usage.ru_maxrss


@pytest.mark.slow
def test_hessian_at_a_point_holds_a_few_kb_a_term(tmp_path):
    """`hessian --at` compiled value, gradient and n Hessian rows into one program: as Python code
    (past the native size) some 40 KB a term, 15 GB for a 2.8 MB input.  Row by row on tapes, the
    memory a term adds is that of its nodes."""
    import random

    names = [f"x{i}" for i in range(10)]
    point = ",".join(f"{v}=0.{i + 1}" for i, v in enumerate(names))
    peaks = {}
    for terms in (4_000, 16_000):
        r = random.Random(terms)
        text = "+".join(f"sin({r.choice(names)}*{r.choice(names)})*exp({r.choice(names)}*{r.choice(names)})"
                        f"*cos({r.choice(names)}+{r.choice(names)})" for _ in range(terms))
        peaks[terms] = _peak_kib(["hessian", _write(tmp_path, f"h{terms}.txt", text), "--at", point])
    per_term = (peaks[16_000] - peaks[4_000]) / 12_000
    assert per_term < 8, f"{per_term:.1f} KiB a term (peaks {peaks} KiB)"
