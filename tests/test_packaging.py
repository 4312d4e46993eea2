"""The wheel ships the grammar: `pip install .` into a fresh virtual environment works."""

import json
import site
import subprocess
import sys
import venv
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parent.parent


def test_wheel_installs_into_a_fresh_venv_and_runs(tmp_path):
    wheels = tmp_path / "wheels"
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q",
                    "-w", str(wheels), str(ROOT)], check=True, timeout=300)
    (wheel,) = wheels.glob("symad-*.whl")
    import zipfile

    names = zipfile.ZipFile(wheel).namelist()
    assert "symad/grammar/symad.lark" in names
    assert "symad/frontend/lalr_tables.json" in names  # else every process builds the tables with Lark
    env_dir = tmp_path / "venv"
    venv.EnvBuilder(with_pip=False).create(env_dir)
    py = env_dir / "bin" / "python"
    _share_site_packages(py)
    subprocess.run([sys.executable, "-m", "pip", "--python", str(py), "install", "--no-deps", "-q",
                    "--ignore-installed", str(wheel)], check=True, timeout=300) if _pip_has_python_flag() \
        else subprocess.run([sys.executable, "-m", "pip", "install", "--no-deps", "-q", "--ignore-installed",
                             "--prefix", str(env_dir), str(wheel)], check=True, timeout=300)
    symad = env_dir / "bin" / "symad"
    assert symad.exists()
    # Run from an unrelated directory so the checkout's grammar/ cannot be found.
    p = subprocess.run([str(symad), "grad", "(x+y)+x*(x+y)", "--at", "x=1,y=2", "--json"],
                       cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    out = json.loads(p.stdout)
    assert out["value"] == 6.0 and out["grad"] == {"x": 5.0, "y": 2.0}
    p = subprocess.run([str(symad), "stats", "(x+y)+x*(x+y)", "--json"], cwd=tmp_path,
                       capture_output=True, text=True, timeout=120)
    assert json.loads(p.stdout)["dag_nodes"] == 5
    where = subprocess.run([str(py), "-c", "import symad; print(symad.__file__)"], cwd=tmp_path,
                           capture_output=True, text=True).stdout
    assert str(env_dir) in where
    p = subprocess.run([str(py), "-m", "symad", "eval", "-x^2", "--at", "x=3"], cwd=tmp_path,
                       capture_output=True, text=True, timeout=120)
    assert (p.returncode, p.stdout) == (0, "-9\n"), p.stderr


def _share_site_packages(py: Path) -> None:
    """Let the venv of ``py`` import lark, numpy, llvmlite... from this environment's
    site-packages (a venv's or the system's), so the test needs no download.

    ``system_site_packages=True`` would not do: it reaches the base interpreter's packages,
    which are not this environment's when the tests run in a venv.  The directories are
    appended after the venv's own site-packages, so the wheel installed there wins; their
    .pth files are not run, so an editable install of the checkout stays out."""
    dirs = site.getsitepackages() + ([site.getusersitepackages()] if site.ENABLE_USER_SITE else [])
    dirs = [d for d in dirs if d in sys.path and Path(d).is_dir()]
    purelib = subprocess.run([str(py), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
                             capture_output=True, text=True, check=True).stdout.strip()
    Path(purelib, "_symad_test_deps.pth").write_text("".join(f"{d}\n" for d in dirs))


def _pip_has_python_flag() -> bool:
    out = subprocess.run([sys.executable, "-m", "pip", "--version"], capture_output=True, text=True).stdout
    major, minor = (int(p) for p in out.split()[1].split(".")[:2])
    return (major, minor) >= (22, 3)


def test_the_python_versions_claimed_are_the_ones_symad_runs_on():
    """pyproject admits the versions that import symad (math.cbrt, used by the op table and by
    exported Python code, is new in 3.11); this interpreter is the lowest claimed or newer."""
    import math
    import tomllib

    project = tomllib.loads((Path(__file__).parent.parent / "pyproject.toml").read_text())["project"]
    assert project["requires-python"] == ">=3.11"
    assert sys.version_info >= (3, 11) and hasattr(math, "cbrt")
