"""The optimal-control suite's worker and page: symad's worker reaches the optimum with IPOPT's
options passed through and says how much of the solve was its own evaluations; the page renders
both configurations (each peer's defaults, IPOPT's for both) and IPOPT's timing statistics (a
smoke run at a small N; the suite itself runs on demand, never here)."""

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
                           "--option", "mumps_permuting_scaling=7", "--option", "print_level=0"],
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


def test_page_shows_both_configurations_the_split_of_the_solve_and_ipopts_statistics() -> None:
    sys.path.insert(0, str(ROOT))
    from benchmarks.optimal_control.report import render

    def peer(total: float, solve: float, evals: float) -> dict:
        return {"status": "ok", "import_s": 0.1, "build_s": 0.05, "solve_s": solve, "total_s": total,
                "eval_s": evals, "fun": 3.6, "nit": 16, "n_variables": 6002, "u_at": [0.1, 0.2]}

    defaults = {"van_der_pol 2000": {"symad": peer(0.3, 0.1, 0.02), "casadi": peer(0.5, 0.1, 0.01)}}
    ipopts = {"van_der_pol 2000": {"symad": peer(0.6, 0.4, 0.02), "casadi": peer(0.5, 0.1, 0.01)}}
    meta = {"command": "python -m benchmarks.optimal_control", "machine": "m", "python": "3.11", "revision": "r",
            "date": "d", "load_before": [1], "load_after": [1], "repeats": 5, "minutes": 1, "versions": {}}
    page = render({"meta": meta, "results": defaults,
                   "ipopt_defaults": {"options": {"mumps_permuting_scaling": 7}, "results": ipopts},
                   "ipopt_timing": {"case": ["van_der_pol", 2000],
                                    "lines": {"defaults": {"symad": ["This is Ipopt version 3.11.9"]},
                                              "ipopt_defaults": {"symad": ["This is Ipopt version 3.11.9."]}}}})
    own = page.index("## With each peer's defaults")
    ipopt = page.index("## With IPOPT's defaults for both: `mumps_permuting_scaling 7`")
    assert "symad's default is undone" in page[ipopt:]
    assert "Van der Pol, bounded control, N = 2,000 (1.2×)" in page[ipopt:]  # slower with IPOPT's defaults only
    assert "**Where symad is slower**: nowhere in this run" in page[own:ipopt]
    assert "IPOPT's default options" not in page
    # symad's solve 100 ms with its defaults, 400 ms with IPOPT's; its total 0.6 of CasADi's, then 1.2
    assert "| Van der Pol, bounded control, N = 2,000 | 100 ms | 400 ms | 4 | 0.6 | 1.2 |" in page
    assert "| 380 ms |" in page and "This is Ipopt version 3.11.9" in page  # IPOPT's own: 0.4 - 0.02
    assert "symad, each peer's defaults:" in page and "symad, IPOPT's defaults (`mumps_permuting_scaling 7`):" in page


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


def test_the_worker_becomes_the_python_it_is_given_with_the_same_arguments() -> None:
    pytest.importorskip("cyipopt")
    sys.path.insert(0, str(ROOT))
    from benchmarks.optimal_control.worker import without_python

    assert without_python(["--peer", "symad", "--python", "/x/python", "--n", "3"]) == ["--peer", "symad", "--n", "3"]
    assert without_python(["--python=/x/python", "--option", "tol=1e-9"]) == ["--option", "tol=1e-9"]
    done = subprocess.run([sys.executable, str(WORKER), "--peer", "symad", "--problem", "van_der_pol", "--n", "50",
                           "--python", sys.executable, "--option", "print_level=5"],
                          capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.count("This is Ipopt") == 1  # the option reached the one solve
    solve = json.loads(done.stdout.splitlines()[-1])
    assert solve["phase"] == "solve" and solve["success"] and solve["n_variables"] == 152


def test_a_python_without_cyipopt_wheels_is_refused_with_how_to_make_one() -> None:
    sys.path.insert(0, str(ROOT))
    from importlib import metadata

    from benchmarks.optimal_control import suite

    try:
        metadata.version("cyipopt-wheels")
        pytest.skip("this Python has cyipopt-wheels")
    except metadata.PackageNotFoundError:
        pass
    with pytest.raises(RuntimeError, match="cannot run symad with cyipopt-wheels.*--make-wheels-venv"):
        suite.wheels_versions(sys.executable, dict(os.environ))


def test_an_optimum_of_symad_with_the_wheel_is_checked_against_casadis() -> None:
    sys.path.insert(0, str(ROOT))
    from benchmarks.optimal_control.suite import disagreements

    def peer(fun: float, u: float) -> dict:
        return {"status": "ok", "success": True, "fun": fun, "u_at": [u, 0.0]}

    same = {"van_der_pol 2000": {"symad": peer(3.6, 0.1), "casadi": peer(3.6, 0.1), "symad-wheels": peer(3.6, 0.1)}}
    assert disagreements(same) == []
    off = {"van_der_pol 2000": {"symad": peer(3.6, 0.1), "casadi": peer(3.6, 0.1), "symad-wheels": peer(3.7, 0.1)}}
    assert disagreements(off) == ["van_der_pol 2000: f symad-wheels 3.7, CasADi 3.6"]
    longer = {"van_der_pol 2000": {"symad": {**peer(3.6, 0.1), "nit": 17}, "casadi": {**peer(3.6, 0.1), "nit": 16}}}
    assert disagreements(longer) == ["van_der_pol 2000: iterations symad 17, CasADi 16"]


def test_page_shows_symad_with_the_wheel_beside_the_same_runs_casadi() -> None:
    sys.path.insert(0, str(ROOT))
    from benchmarks.optimal_control.report import render

    def peer(total: float, solve: float, nit: int = 16) -> dict:
        return {"status": "ok", "import_s": 0.1, "build_s": 0.05, "solve_s": solve, "total_s": total, "cpu_s": total,
                "eval_s": 0.01, "fun": 3.6, "nit": nit, "n_variables": 6002, "u_at": [0.1, 0.2]}

    defaults = {"van_der_pol 2000": {"symad": peer(0.6, 0.4), "casadi": peer(0.5, 0.1),
                                     "symad-wheels": peer(0.3, 0.11)}}
    meta = {"command": "python -m benchmarks.optimal_control --wheels-python /v/bin/python", "machine": "m",
            "python": "3.11", "revision": "r", "date": "d", "load_before": [1], "load_after": [1], "repeats": 5,
            "minutes": 1,
            "versions": {"ipopt (bundled by cyipopt-wheels)": "3.14.11", "mumps (system, for cyipopt)": "5.5"}}
    used = "MUMPS used permuting_scaling {} and pivot_order {}."
    lines = {"symad": ["This is Ipopt version 3.11.9, running with linear solver mumps.", used.format(5, 2)],
             "casadi": ["This is Ipopt version 3.14.19, running with linear solver MUMPS 5.8.2.", used.format(5, 2)],
             "symad-wheels": ["This is Ipopt version 3.14.11, running with linear solver MUMPS 5.5.1.",
                              used.format(5, 2)]}
    asked = {"symad": {"scaling 7": used.format(5, 2), "scaling 0": used.format(0, 3), "SCOTCH": used.format(0, 3),
                       "METIS": used.format(0, 3)},
             "symad-wheels": {"scaling 7": used.format(5, 2), "scaling 0": used.format(0, 6),
                              "SCOTCH": used.format(0, 6), "METIS": used.format(0, 6)}}
    page = render({"meta": meta, "results": defaults,
                   "ipopt_timing": {"case": ["van_der_pol", 2000], "lines": {"defaults": lines}, "orderings": asked}})
    wheels = page[page.index("## symad with cyipopt-wheels (IPOPT 3.14.11 bundled)"):]
    assert "| symad | 3.11.9 | MUMPS 5.5 | AMF | SCOTCH | SCOTCH | SCOTCH |" in wheels
    assert "| symad with cyipopt-wheels | 3.14.11 | MUMPS 5.5.1 | AMF | QAMD | QAMD | QAMD |" in wheels
    assert "| CasADi | 3.14.19 | MUMPS 5.8.2 | — | — | — | — |" in wheels  # not asked
    row = ("| Van der Pol, bounded control, N = 2,000 | 6002 | 100 ms | 50 ms | 110 ms | 300 ms | 100 ms | 50 ms "
           "| 100 ms | 500 ms | 0.6 | 1.07 | 0.6 |")
    assert row in wheels
    assert "**Where symad with cyipopt-wheels is slower**: nowhere in this run" in wheels
    assert "Van der Pol, bounded control, N = 2,000 (1.2×)" in page[:page.index("## symad with cyipopt-wheels")]
    # IPOPT's own: 0.11 - 0.01 with the wheel, 0.4 - 0.01 with the system's, 0.1 - 0.01 in CasADi
    assert "| each peer's defaults | 10 ms | 100 ms | 390 ms | 90 ms | 0.26 | 1.11 |" in wheels
    assert "symad with cyipopt-wheels, each peer's defaults:" in page  # its timing statistics
