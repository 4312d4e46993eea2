"""Running the checkout's ``symad`` command in tests: ``python -m symad`` with this
interpreter and the checkout first on ``PYTHONPATH``, never whatever ``symad`` is first on PATH
(the installed console script is tested by ``tests/test_packaging.py``)."""

import subprocess
import sys

from support.measure import checkout_env, symad_executable


def symad_command() -> list[str]:
    """The command line that runs the checkout's ``symad``: ``[python, "-m", "symad"]``."""
    return symad_executable()


def run(*args: str, stdin: str | None = None, timeout: float = 120) -> subprocess.CompletedProcess:
    """Run ``symad ARGS`` and return the completed process (text mode)."""
    return subprocess.run(symad_command() + list(args), input=stdin, capture_output=True, text=True,
                          timeout=timeout, env=checkout_env(PYTHONWARNINGS="error"),
                          stdin=None if stdin is not None else subprocess.DEVNULL)


def fresh_python(code: str, env: dict[str, str] | None = None, timeout: float = 120) -> str:
    """``code`` run by this interpreter in a fresh process; its standard output (the test fails
    with the process's standard error if it does)."""
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=timeout)
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


__all__ = ["checkout_env", "fresh_python", "run", "symad_command", "sys"]
