"""``method="ipopt"`` with cyipopt laid out as the cyipopt-wheels package lays it out: the compiled
wrapper a top-level ``ipopt_wrapper`` module, ``cyipopt/ipopt_wrapper.py`` a Python shim that
imports the scipy interface.  symad loads the compiled wrapper alone there too, and cyipopt stays
whole for code that imports it.  The layout is made here from the installed cyipopt's own compiled
wrapper, copied to the top level of a folder put first on the path, in a fresh process."""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("cyipopt")

SHIM = "import scipy.optimize  # what the wheel's shim costs: its scipy interface\n"
INIT = ("from ipopt_wrapper import *\n"
        "from .ipopt_wrapper import *\n"
        "from .exceptions import *\n"
        "from .scipy_interface import *\n")
INTERFACE = "import scipy.optimize\n\n\ndef minimize_ipopt(*args, **kwargs):\n    return 'whole'\n"

CHECK = """
import sys
from symad.optimize import minimize
from symad.optimize.ipopt import cyipopt_module

r = minimize('(x-1)^2 + (y+2)^2', {'x': 0, 'y': 0}, method='ipopt', constraints=[('ineq', 'x - 2')])
assert r.success and abs(r.x[0] - 2) < 1e-7 and abs(r.x[1] + 2) < 1e-7, r
wrapper = cyipopt_module()
assert wrapper.__name__ == 'ipopt_wrapper' and wrapper.__file__.startswith(sys.argv[1]), wrapper
assert 'scipy' not in sys.modules, sorted(m for m in sys.modules if 'scipy' in m)[:5]
import cyipopt
assert cyipopt.minimize_ipopt() == 'whole' and cyipopt.Problem is wrapper.Problem
assert 'scipy.optimize' in sys.modules and type(cyipopt) is type(sys)
print('ok')
"""


def test_the_wheel_layout_loads_the_top_level_compiled_wrapper_alone(tmp_path: Path) -> None:
    spec = importlib.util.find_spec("cyipopt")
    folder = Path(next(iter(spec.submodule_search_locations or [])))
    compiled = sorted(folder.glob("ipopt_wrapper*.so"))
    if not compiled or not (folder / "exceptions.py").is_file():
        pytest.skip("the installed cyipopt is not laid out as a source build (its wrapper in the package)")
    package = tmp_path / "cyipopt"
    package.mkdir()
    shutil.copy(compiled[0], tmp_path / compiled[0].name)
    shutil.copy(folder / "exceptions.py", package / "exceptions.py")
    (package / "__init__.py").write_text(INIT)
    (package / "ipopt_wrapper.py").write_text(SHIM)
    (package / "scipy_interface.py").write_text(INTERFACE)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(tmp_path), os.environ.get("PYTHONPATH")]))}
    out = subprocess.run([sys.executable, "-c", CHECK, str(tmp_path)], capture_output=True, text=True, timeout=120,
                         env=env, cwd=tmp_path)
    assert out.returncode == 0 and out.stdout.split() == ["ok"], out.stderr[-2000:]
