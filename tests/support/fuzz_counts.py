"""Tallies of the fuzz tests, printed in pytest's terminal summary (see ``conftest.py``).

One module-level :data:`COUNTS` per process; ``tests/frontend/test_fuzz.py`` records
every input it runs (shrinking included), and the summary prints e.g.::

    symad fuzz: 3000 inputs tried (1200 parsed, 1800 rejected with ParseError), 0 crashes; CLI: 240 runs, 0 bad
"""

from __future__ import annotations


class FuzzCounts:
    """How many fuzzed inputs parsed, were rejected, or crashed; and CLI runs."""

    def __init__(self) -> None:
        self.parsed = 0
        self.rejected = 0
        self.crashes: list[str] = []  # the inputs, as repr, first 200 characters
        self.cli_runs = 0
        self.cli_bad: list[str] = []

    @property
    def tried(self) -> int:
        return self.parsed + self.rejected + len(self.crashes)

    def record(self, outcome: str) -> None:
        """Count ``"parsed"`` or ``"rejected"``."""
        if outcome == "parsed":
            self.parsed += 1
        elif outcome == "rejected":
            self.rejected += 1
        else:
            raise ValueError(outcome)

    def crash(self, text: str, err: BaseException) -> None:
        self.crashes.append(f"{type(err).__name__} on {text[:200]!r}")

    def cli(self, ok: bool, what: str = "") -> None:
        self.cli_runs += 1
        if not ok:
            self.cli_bad.append(what)

    def line(self) -> str | None:
        """The summary line, or None if no fuzz test ran."""
        if not self.tried and not self.cli_runs:
            return None
        n = len(self.crashes)
        text = (f"symad fuzz: {self.tried} inputs tried ({self.parsed} parsed, {self.rejected} rejected "
                f"with ParseError), {n} crash{'es' if n != 1 else ''}")
        if self.cli_runs:
            text += f"; CLI: {self.cli_runs} runs, {len(self.cli_bad)} bad exit or traceback"
        return text


COUNTS = FuzzCounts()


def summary_lines() -> list[str]:
    """Lines for the terminal summary (empty if no fuzz test ran)."""
    line = COUNTS.line()
    if line is None:
        return []
    lines = [line]
    distinct = list(dict.fromkeys(COUNTS.crashes + COUNTS.cli_bad))
    lines += [f"  crash: {c}" for c in distinct[:10]]
    return lines


def pytest_terminal_summary(terminalreporter) -> None:
    """pytest hook (this module is a plugin, named in ``conftest.py``): print the fuzz tallies."""
    lines = summary_lines()
    if lines:
        terminalreporter.section("symad fuzz")
        for line in lines:
            terminalreporter.write_line(line)
