"""The sparse suite's worker measures what its page says: symad's matrices from text, checked against
NumPy by hand (a smoke run at a small n; the suite itself runs on demand, never here)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
WORKER = ROOT / "benchmarks" / "sparse" / "worker.py"

pytestmark = pytest.mark.skipif(not WORKER.is_file(), reason="needs the source checkout's benchmarks/")


@pytest.mark.parametrize("task", ["hessian", "jacobian"])
def test_worker_checks_symad_against_numpy_by_hand(task: str) -> None:
    done = subprocess.run([sys.executable, str(WORKER), "--task", task, "--peer", "symad", "--n", "2000",
                           "--min-time", "0.01", "--repeats", "1"], capture_output=True, text=True, timeout=120,
                          cwd=ROOT)
    records = {}
    for line in done.stdout.splitlines():
        record = json.loads(line)
        records[record.pop("phase", "error")] = record
    assert "error" not in records, records
    assert records["check"]["check"] == "ok"
    assert records["check"]["nnz"] == (3 * 2000 - 2 if task == "hessian" else 2 * 1999)
    assert records["time"]["call_s"] > 0
