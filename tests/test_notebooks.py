"""The notebooks in notebooks/ run clean from top to bottom, and are committed executed.

Each notebook runs in a fresh Jupyter kernel (``python3``, provided by ipykernel) with its
own directory as the working directory, as ``pytest --nbmake notebooks/`` runs them.
Outputs are not compared with the committed ones (pictures and figures may change for
good reasons); an exception in any cell fails the test.  After changing a notebook, or
what it shows, refresh its committed outputs with::

    python -m pytest --nbmake --overwrite notebooks/
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = ROOT / "notebooks"
PATHS = sorted(NOTEBOOKS.glob("*.ipynb"))

if not NOTEBOOKS.is_dir():  # a source tree without the notebooks (an sdist): nothing to check
    pytest.skip("notebooks/ is not in this source tree", allow_module_level=True)

nbformat = pytest.importorskip("nbformat", reason="the notebook tests need the test extra: pip install '.[test]'")
nbclient = pytest.importorskip("nbclient", reason="the notebook tests need the test extra: pip install '.[test]'")

CELL_TIMEOUT_S = 600  # a safety net: each notebook takes seconds


def test_notebooks_exist() -> None:
    assert PATHS, f"no notebooks in {NOTEBOOKS}"


@pytest.mark.parametrize("path", PATHS, ids=[p.name for p in PATHS])
def test_committed_executed(path: Path) -> None:
    """Committed with outputs (so they read well on a code host), from one clean run, without errors."""
    nb = nbformat.read(path, as_version=4)
    code = [c for c in nb.cells if c.cell_type == "code"]
    counts = [c.get("execution_count") for c in code]
    assert counts == list(range(1, len(code) + 1)), f"{path.name} is not executed top to bottom: {counts}"
    errors = [o for c in code for o in c.get("outputs", []) if o.get("output_type") == "error"]
    assert not errors, f"{path.name} was committed with an error: {errors[0].get('ename')}: {errors[0].get('evalue')}"
    assert str(ROOT) not in json.dumps(nb), f"{path.name} shows an absolute path of this checkout"


@pytest.mark.parametrize("path", PATHS, ids=[p.name for p in PATHS])
@pytest.mark.slow
def test_notebook_runs(path: Path) -> None:
    nb = nbformat.read(path, as_version=4)
    client = nbclient.NotebookClient(nb, timeout=CELL_TIMEOUT_S, kernel_name="python3",
                                     resources={"metadata": {"path": str(path.parent)}})
    client.execute()  # raises CellExecutionError, with the cell and its traceback, on an exception
