"""``symad minimize --plot`` without Matplotlib: a clear error naming the extra, exit 2."""

from __future__ import annotations

import subprocess
import sys

# The command line with Matplotlib unimportable (None in sys.modules), as on a machine without it.
WITHOUT_MATPLOTLIB = ("import sys; sys.modules['matplotlib'] = None; from symad.cli.main import main; "
                      "sys.exit(main(sys.argv[1:]))")


def test_plot_without_matplotlib_names_the_extra(tmp_path):
    png = tmp_path / "path.png"
    r = subprocess.run([sys.executable, "-c", WITHOUT_MATPLOTLIB, "minimize", "(x-1)^2+y^2", "--from", "x=0,y=0",
                        "--plot", str(png)], capture_output=True, text=True, timeout=120)
    assert r.returncode == 2, r.stderr  # was 70, "internal error"
    assert r.stderr.strip() == ('symad: error: --plot needs Matplotlib, which is not installed: '
                                'pip install "symad[plot]"')
    assert r.stdout == "" and not png.exists()  # refused before the run, nothing half done
