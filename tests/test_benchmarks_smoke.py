"""The benchmark harness stays runnable: its quick, symad-only path, end to end (no peers needed)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

pytestmark = pytest.mark.skipif(
    not (ROOT / "benchmarks" / "peers" / "suite.py").is_file(), reason="needs the source checkout's benchmarks/"
)


@pytest.mark.slow
def test_quick_symad_only_run_writes_the_report(tmp_path: Path) -> None:
    cmd = [
        sys.executable,
        "-m",
        "benchmarks.peers",
        "--quick",
        "--jobs",
        "2",
        "--peers",
        "symad",
        "--out-dir",
        str(tmp_path),
    ]
    done = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    data = json.loads((tmp_path / "peers.json").read_text())
    symad = [m for m in data["measurements"] if m["peer"] == "symad"]
    assert {m["workload"] for m in symad} == {"seed", "rosenbrock", "normalise", "rosenbrock2d_batch"}
    for m in data["measurements"]:
        assert m["status"] == "ok", m
        assert m["build_s"] > 0 and m["info"]["dag_nodes"] > 0
        assert ("vg" in m) != ("batch_vg" in m)
    seed = next(m for m in symad if m["workload"] == "seed")
    assert seed["info"]["dag_nodes"] == 5
    assert [(p["family"], p["status"]) for p in data["scaling"]] == [
        ("scaling", "ok"),
        ("scaling", "ok"),
        ("scaling_sum", "ok"),
    ]
    page = (tmp_path / "peers.md").read_text()
    for heading in (
        "## Targets",
        "## Value and gradient at one new point",
        "## Batch",
        "## Build",
        "## Scaling of symad's build",
    ):
        assert heading in page


def test_translator_folds_postfix_like_symad() -> None:
    sys.path.insert(0, str(ROOT))
    import symad
    from benchmarks.peers.translate import fold, numpy_dialect

    text = "-x^2 + log(x, 2) + pi*atan2(y, x) - +y/max(x, y) + 2^3^2 + step(x-1)"
    point = {"x": 1.5, "y": 0.25}
    got = fold(symad.to_postfix(text), numpy_dialect(), point)
    assert got == pytest.approx(symad.parse(text).evaluate(point), rel=1e-12)


def test_quick_branches_run_prints_every_pair() -> None:
    """benchmarks/branches/ (the cost of branches and stable functions) runs and reports each pair."""
    pytest.importorskip("llvmlite")
    done = subprocess.run([sys.executable, "-m", "benchmarks.branches", "--quick"], cwd=ROOT, capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    from benchmarks.branches.suite import PAIRS

    rows = [line for line in done.stdout.splitlines() if line.startswith("| ") and "x1" in line]
    tables = done.stdout.count("**Compiled for")  # this machine's code, and with AVX-512 also AVX2's
    assert tables in (1, 2) and len(rows) == tables * len(PAIRS)
    assert all(sum(line.startswith(f"| {name} |") for line in rows) == tables for name, _, _ in PAIRS)


@pytest.mark.slow
def test_quick_scaling_run_measures_every_row(tmp_path: Path) -> None:
    """benchmarks/scaling/ --quick: every build and command row succeeds and the page is written."""
    from benchmarks.scaling import suite as scaling

    result = scaling.main(["--quick", "--out-dir", str(tmp_path)])
    assert all(r["ok"] for r in result["build"] + result["commands"]), result
    page = (tmp_path / "scaling.md").read_text()
    assert "| sum | 10,000 |" in page and "## `symad hessian" in page and "KiB" in page


@pytest.mark.slow
def test_quick_explore_run_measures_every_small_page() -> None:
    """benchmarks/explore/ (the page of the sweep in Chromium) runs and judges its targets."""
    import shutil

    if not (shutil.which("chromium") or shutil.which("chromium-browser")) or shutil.which("dot") is None:
        pytest.skip("needs Debian's chromium and Graphviz's dot")
    pytest.importorskip("playwright.sync_api")
    done = subprocess.run([sys.executable, "-m", "benchmarks.explore", "--quick"], cwd=ROOT, capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    rows = [line for line in done.stdout.splitlines() if line.startswith("| ") and line.count(" MB |") == 1
            and " ms |" in line]
    assert len(rows) == 4, done.stdout  # the seed, 100 nodes, 1,000 collapsed, the loop
    assert "| a single file under 1 MB |" in done.stdout and "| opens in under 2 s |" in done.stdout
