"""docs/reference/errors.md stays true: each command in it prints exactly what it shows, with that exit status."""

from __future__ import annotations

import re

import pytest
from error_catalogue import DOC, ENTRIES, run

TEXT = DOC.read_text(encoding="utf-8")
BLOCK = re.compile(r"```console\n\$ ([^\n]*)\n((?:(?!```).)*?)```\nexit status (\d+)\n", flags=re.S)
EXAMPLES = [(cmd, out.rstrip("\n"), int(status)) for cmd, out, status in BLOCK.findall(TEXT)]


def test_catalogue_covers_every_entry():
    assert [cmd for cmd, _, _ in EXAMPLES] == [command for *_, command in ENTRIES], \
        "docs/reference/errors.md is out of date: python tests/error_catalogue.py"
    assert len(EXAMPLES) >= 40


@pytest.mark.parametrize("command, expected, status", EXAMPLES, ids=[c[:60] for c, _, _ in EXAMPLES])
@pytest.mark.slow
def test_catalogue_example(command, expected, status):
    output, got_status = run(command)
    assert (output, got_status) == (expected, status)
    assert "Traceback" not in output
    if "symad: error:" in output:
        assert got_status == 2
