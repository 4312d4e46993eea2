"""The optimal-control suite's worker and page: symad's worker reaches the optimum with IPOPT's
options passed through and says how much of the solve was its own evaluations; the page renders
both option sets and IPOPT's timing statistics (a smoke run at a small N; the suite itself runs
on demand, never here)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
WORKER = ROOT / "benchmarks" / "optimal_control" / "worker.py"

pytestmark = pytest.mark.skipif(not WORKER.is_file(), reason="needs the source checkout's benchmarks/")


def test_symad_worker_solves_with_options_and_times_its_evaluations() -> None:
    pytest.importorskip("cyipopt")
    done = subprocess.run([sys.executable, str(WORKER), "--peer", "symad", "--problem", "van_der_pol", "--n", "100",
                           "--option", "mumps_permuting_scaling=0", "--option", "print_level=0"],
                          capture_output=True, text=True, timeout=120, cwd=ROOT)
    records = {}
    for line in done.stdout.splitlines():
        record = json.loads(line)
        records[record.pop("phase", "error")] = record
    assert "error" not in records, records
    solve = records["solve"]
    assert solve["success"] and solve["n_variables"] == 302 and solve["violation"] < 1e-6
    assert 0 < solve["eval_s"] < solve["solve_s"] < solve["total_s"]
    assert records["import"]["import_s"] < solve["total_s"]


def test_worker_reads_options_as_numbers_or_strings() -> None:
    sys.path.insert(0, str(ROOT))
    from benchmarks.optimal_control.worker import option

    assert option("mumps_permuting_scaling=0") == ("mumps_permuting_scaling", 0)
    assert option("tol=1e-9") == ("tol", 1e-9)
    assert option("mu_strategy=adaptive") == ("mu_strategy", "adaptive")


def test_page_shows_both_option_sets_the_split_of_the_solve_and_ipopts_statistics() -> None:
    sys.path.insert(0, str(ROOT))
    from benchmarks.optimal_control.report import render

    def peer(total: float, solve: float, evals: float) -> dict:
        return {"status": "ok", "import_s": 0.1, "build_s": 0.05, "solve_s": solve, "total_s": total,
                "eval_s": evals, "fun": 3.6, "nit": 16, "n_variables": 6002, "u_at": [0.1, 0.2]}

    defaults = {"van_der_pol 2000": {"symad": peer(0.6, 0.4, 0.02), "casadi": peer(0.5, 0.1, 0.01)}}
    same = {"van_der_pol 2000": {"symad": peer(0.3, 0.1, 0.02), "casadi": peer(0.5, 0.1, 0.01)}}
    meta = {"command": "python -m benchmarks.optimal_control", "machine": "m", "python": "3.11", "revision": "r",
            "date": "d", "load_before": [1], "load_after": [1], "repeats": 5, "minutes": 1, "versions": {}}
    page = render({"meta": meta, "results": defaults,
                   "same_options": {"options": {"mumps_permuting_scaling": 0}, "results": same},
                   "ipopt_timing": {"case": ["van_der_pol", 2000],
                                    "lines": {"defaults": {"symad": ["This is Ipopt version 3.11.9"]}}}})
    assert "## With IPOPT's default options" in page and "`mumps_permuting_scaling 0`" in page
    assert "Van der Pol, bounded control, N = 2,000 (1.2×)" in page  # slower with the defaults only
    assert page.count("**Where symad is slower**: nowhere in this run") == 1
    assert "| 380 ms |" in page and "This is Ipopt version 3.11.9" in page  # IPOPT's own: 0.4 - 0.02


def test_page_shows_a_problem_symad_has_not_compiled_beside_casadis_first_table() -> None:
    sys.path.insert(0, str(ROOT))
    from benchmarks.optimal_control.report import render

    def peer(total: float, build: float) -> dict:
        return {"status": "ok", "import_s": 0.1, "build_s": build, "solve_s": 0.2, "total_s": total, "cpu_s": total,
                "eval_s": 0.01, "fun": 3.6, "nit": 16, "n_variables": 6002, "u_at": [0.1, 0.2]}

    defaults = {"van_der_pol 2000": {"symad": peer(0.4, 0.03), "casadi": peer(0.5, 0.2)}}
    cold = {"van_der_pol 2000": {"symad": peer(0.6, 0.23)}}
    meta = {"command": "python -m benchmarks.optimal_control", "machine": "m", "python": "3.11", "revision": "r",
            "date": "d", "load_before": [1], "load_after": [1], "repeats": 5, "minutes": 1, "versions": {}}
    page = render({"meta": meta, "results": defaults, "cold": cold})
    assert "## A problem symad has not compiled before" in page
    row = "| Van der Pol, bounded control, N = 2,000 | 100 ms | 230 ms | 200 ms | 600 ms | 500 ms | 1.2 | 1.2 |"
    assert row in page
    assert "Van der Pol, bounded control, N = 2,000 (1.2×)" in page  # slower cold, not warm
    assert "no program kept across processes" not in page


def test_a_cold_process_finds_the_shared_code_but_none_of_its_programs(tmp_path: Path) -> None:
    pytest.importorskip("cyipopt")
    sys.path.insert(0, str(ROOT))
    from benchmarks.optimal_control import suite

    env = {**os.environ, "SYMAD_CACHE_DIR": str(tmp_path)}
    r = suite.cold_sample("van_der_pol 60 symad cold", ["--peer", "symad", "--problem", "van_der_pol", "--n", "60"],
                          env)
    assert r["status"] == "ok" and r["success"] and r["n_variables"] == 182
    assert any(tmp_path.iterdir())  # the warm-up's (N = 61) programs and the shared code
