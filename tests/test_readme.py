"""The README stays true: its commands run and print what it shows."""

import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
from cli_helpers import symad_command

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text()


def console_examples() -> list[tuple[str, str]]:
    """(command, expected output) for every `$ symad ...` line in ```console blocks."""
    examples = []
    for block in re.findall(r"```console\n(.*?)```", README, flags=re.S):
        command, output = None, []
        for line in block.splitlines():
            if line.startswith("$ "):
                if command is not None:
                    examples.append((command, "\n".join(output)))
                command, output = line[2:], []
            else:
                output.append(line)
        if command is not None:
            examples.append((command, "\n".join(output)))
    return examples


EXAMPLES = console_examples()


def test_readme_has_examples():
    assert len(EXAMPLES) >= 8
    assert all(cmd.startswith("symad ") for cmd, _ in EXAMPLES)


@pytest.mark.parametrize("command, expected", EXAMPLES, ids=[c for c, _ in EXAMPLES])
@pytest.mark.slow
def test_console_example(command, expected, tmp_path):
    """Run the command from the repository root; stdout then stderr must match the block."""
    args = shlex.split(command)
    p = subprocess.run(symad_command() + args[1:], cwd=ROOT, capture_output=True, text=True,
                       timeout=120, stdin=subprocess.DEVNULL)
    assert (p.stdout + p.stderr).rstrip("\n") == expected.rstrip("\n")


def test_python_examples():
    """The README's >>> examples, in a fresh interpreter (a reader starts with an empty graph)."""
    code = ("import doctest, sys; r = doctest.testfile(sys.argv[1], module_relative=False, "
            "optionflags=doctest.NORMALIZE_WHITESPACE); print(r.attempted, r.failed)")
    p = subprocess.run([sys.executable, "-c", code, str(ROOT / "README.md")], cwd=ROOT, capture_output=True,
                       text=True, timeout=300)
    attempted, failed = map(int, p.stdout.split()[-2:])
    assert attempted >= 10
    assert failed == 0, p.stdout


def setup_commands() -> list[str]:
    blocks = re.findall(r"```sh\n(.*?)```", README, flags=re.S)
    return [b.strip() for b in blocks[:2]]


def test_readme_starts_with_the_two_setup_commands():
    install, tests = setup_commands()
    head = README[: README.index("symad is a symbolic")]
    assert install in head and tests in head
    assert install == 'pip install . && symad grad "(x+y)+x*(x+y)" --at x=1,y=2'
    assert "apt-get install" in tests and "graphviz" in tests and "pytest" in tests


def test_ci_runs_exactly_the_readme_test_command():
    ci = (ROOT / ".ci" / "run").read_text()
    _, tests = setup_commands()
    lines = [ln for ln in ci.splitlines() if ln.strip() and not ln.startswith("#") and not ln.startswith("set ")]
    assert lines == [tests]
