"""Running the installed ``symad`` command in tests."""

import os
import shutil
import subprocess
import sys

import pytest


def symad_command() -> list[str]:
    exe = shutil.which("symad")
    if exe is None:
        pytest.fail("the symad console script is not installed (pip install .)")
    return [exe]


def run(*args: str, stdin: str | None = None, timeout: float = 120) -> subprocess.CompletedProcess:
    """Run ``symad ARGS`` and return the completed process (text mode)."""
    env = dict(os.environ, PYTHONWARNINGS="error")
    return subprocess.run(symad_command() + list(args), input=stdin, capture_output=True, text=True,
                          timeout=timeout, env=env, stdin=None if stdin is not None else subprocess.DEVNULL)


__all__ = ["run", "symad_command", "sys"]
