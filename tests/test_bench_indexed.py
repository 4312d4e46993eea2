"""benchmarks/indexed/ (sums kept as loops beside their peers) stays runnable and says what it measured.

No peer beyond NumPy is needed: the end-to-end run asks for NumPy alone, and the rest checks the
worker's reference, its check and the page on small inputs.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parent.parent

pytestmark = pytest.mark.skipif(not (ROOT / "benchmarks" / "indexed" / "suite.py").is_file(),
                                reason="needs the source checkout's benchmarks/")


@pytest.fixture(autouse=True, scope="module")
def _checkout_on_path():
    sys.path.insert(0, str(ROOT))
    yield
    sys.path.remove(str(ROOT))


def test_numpy_reference_is_the_gradient_of_rosenbrock():
    """The reference every peer is checked against, against central differences."""
    from benchmarks.indexed import worker

    x = worker.start(7) + 0.3 * np.cos(np.arange(7.0))
    value, grad = worker.numpy_rosenbrock(x)
    assert value == pytest.approx(sum(100 * (x[i + 1] - x[i] ** 2) ** 2 + (1 - x[i]) ** 2 for i in range(6)))
    h = 1e-6
    for k in range(7):
        e = np.zeros(7)
        e[k] = h
        central = (worker.numpy_rosenbrock(x + e)[0] - worker.numpy_rosenbrock(x - e)[0]) / (2 * h)
        assert grad[k] == pytest.approx(central, rel=1e-6, abs=1e-6)


def test_check_tells_rounding_from_a_wrong_answer():
    from benchmarks.indexed import worker

    value, grad = worker.numpy_rosenbrock(worker.start(1000))
    assert worker.check(value * (1 + 1e-15), grad, value, grad, 1000, value)["check"] == "ok"
    assert worker.check(value * (1 + 1e-9), grad, value, grad, 1000, value)["check"] == "mismatch"
    off = grad.copy()
    off[17] += 1e-6 * np.abs(grad).max()
    assert worker.check(value, off, value, grad, 1000, value)["check"] == "mismatch"
    assert worker.check(value, grad[:-1], value, grad, 1000, value)["check"] == "mismatch"


def test_symad_worker_keeps_the_sum_a_loop_and_agrees_with_numpy():
    """One fresh process of the worker, as the suite runs it: every phase, the check ok."""
    from benchmarks import harness
    from benchmarks.indexed import suite

    r = harness.run_worker(suite.WORKER, ["--task", "rosen", "--peer", "symad", "--n", "20000", "--min-time", "0.01",
                                          "--repeats", "1"], 120.0)
    assert r["status"] == "ok", r
    assert r["info"]["form"] == "loop" and r["check"] == "ok"
    assert 0 < r["build_s"] <= r["first_s"] and r["call_s"] > 0 and r["peak_first_mib"] > 0


def _measured(peer: str, **figures: float) -> dict:
    return {"status": "ok", "check": "ok", "value_rel_diff": 0.0, "grad_rel_diff": 0.0, **figures} \
        if peer == "symad" else {"status": "ok", **figures}


def _data(symad_call: float) -> dict:
    """Figures of a made-up run: symad's call ``symad_call`` against JAX's 2 and C's 1."""
    rosen = {str(n): {"symad": _measured("symad", first_s=0.1, call_s=symad_call, peak_first_mib=40),
                      "jax": _measured("jax", first_s=0.5, call_s=2.0, peak_first_mib=200),
                      "c": _measured("c", first_s=0.2, call_s=1.0, peak_first_mib=30),
                      "casadi_sx": {"status": "skipped", "error": "casadi is not installed"}}
             for n in (1000, 10**4, 10**6)}
    return {"meta": {"command": "python -m benchmarks.indexed", "date": "today", "machine": "m", "python": "3",
                     "revision": "abc", "repeats": 1, "solve_n": 10**5, "versions": {}},
            "rosenbrock": rosen,
            "xax": {"symad": _measured("symad", build_s=0.03, call_s=6e-3),
                    "numpy": _measured("numpy", build_s=0.02, call_s=5e-3)},
            "command_line": {"command": "symad diff ...", "status": "ok", "wall_s": 0.3, "output": "df/dx[k] = ...",
                             "lines": 1, "processes": 1},
            "solve": {"symad": _measured("symad", total_s=0.6), "jax": _measured("jax", total_s=1.2)}}


def test_page_gives_ratios_verdicts_and_where_symad_is_slower():
    from benchmarks.indexed import report

    def call_against_c(symad_call: float) -> list[str]:
        return next(row for row in report.targets(_data(symad_call)) if "hand-written C" in row[0])

    assert call_against_c(1.2)[1] == "symad / C: 10^3: 1.2; 10^4: 1.2; 10^6: 1.2" and call_against_c(1.2)[2] == "met"
    assert call_against_c(1.6)[2] == "**not met**"
    page = report.render(_data(symad_call=1.2))
    assert "x'Ax a call 1.2×" in page and "Rosenbrock 10^3 a call 1.2×" in page  # both slower than their peer
    assert "against JAX jit: Rosenbrock" not in page  # faster than JAX everywhere: not listed
    assert "not run" in page and "| 10^6 |" in page
    assert report.render(_data(symad_call=1.2)) == page  # deterministic


def test_a_mismatch_of_symad_stops_the_suite_before_anything_is_written(tmp_path, monkeypatch):
    from benchmarks.indexed import suite

    data = _data(symad_call=1.0)
    data["rosenbrock"]["10000"]["symad"].update(check="mismatch", grad_rel_diff=1e-3)
    monkeypatch.setattr(suite.Suite, "__init__", lambda self, args: self.__dict__.update(repeats=1, solve_repeats=1))
    for part in ("rosenbrock", "xax", "solve"):
        monkeypatch.setattr(suite.Suite, part, lambda self, part=part: data[part])
    monkeypatch.setattr(suite.Suite, "command_line", lambda self: data["command_line"])
    assert suite.mismatches(data) and "Rosenbrock n = 10,000" in suite.mismatches(data)[0]
    assert suite.main(["--out-dir", str(tmp_path)]) == 1
    assert not list(tmp_path.iterdir())


@pytest.mark.slow
def test_quick_run_with_numpy_alone_writes_the_page(tmp_path):
    done = subprocess.run([sys.executable, "-m", "benchmarks.indexed", "--quick", "--peers", "numpy", "--out-dir",
                           str(tmp_path)], cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    data = json.loads((tmp_path / "indexed.json").read_text())
    for n, peers in data["rosenbrock"].items():
        assert peers["symad"]["status"] == "ok" and peers["symad"]["check"] == "ok", (n, peers["symad"])
        assert peers["numpy"]["status"] == "ok", (n, peers["numpy"])
        assert peers["jax"] == {"status": "skipped", "error": "not asked for"}
    assert set(data["xax"]) == {"symad", "numpy", "numpy_1t", "numpy_matvec", "numpy_matvec_1t"}
    assert data["xax"]["symad"]["check"] == "ok" and all(m["status"] == "ok" for m in data["xax"].values())
    assert data["command_line"]["status"] == "ok" and "for k = 1..1000000" in data["command_line"]["output"]
    assert {p: s["status"] for p, s in data["solve"].items()} == {"symad": "ok", "numpy": "ok"}
    page = (tmp_path / "indexed.md").read_text()
    for heading in ("## Targets (issue 32)", "## 1. Chained Rosenbrock", "## 2. x'Ax", "## 3. The indexed gradient",
                    "## 4. scipy L-BFGS-B", "**Where symad is slower**"):
        assert heading in page
