"""Shared pytest configuration for symad's tests."""

from __future__ import annotations

import pytest

# The fuzz tests' tallies (tests/fuzz_counts.py) print their own summary line.
pytest_plugins = ("fuzz_counts",)

# ============================================================ property-check tallies
# The property tests (tests/test_properties.py) count how many random expressions
# each check tried, compared and skipped, and how many disagreed; the terminal
# summary prints the counts, so a run shows how much was actually checked.
# Self-contained: one class, one fixture, one hook.


class PropertyTally:
    """Counts for one property check."""

    def __init__(self, label: str) -> None:
        self.label = label
        self.tried = 0  # examples the check was called with (shrinking included)
        self.compared = 0  # examples whose values were actually compared
        self.skipped: dict[str, int] = {}  # reason -> examples not comparable
        self.mismatches: set[str] = set()  # distinct failing examples, as text

    def skip(self, reason: str) -> None:
        self.skipped[reason] = self.skipped.get(reason, 0) + 1

    def mismatch(self, example: str) -> None:
        self.mismatches.add(example)

    def line(self) -> str:
        parts = [f"{self.compared} compared"]
        if self.skipped:
            reasons = ", ".join(f"{n} {why}" for why, n in sorted(self.skipped.items(), key=lambda kv: -kv[1]))
            parts.append(f"{sum(self.skipped.values())} skipped ({reasons})")
        parts.append(f"{len(self.mismatches)} mismatch{'es' if len(self.mismatches) != 1 else ''}")
        return f"symad property checks: {self.tried} {self.label} ({'; '.join(parts)})"


class PropertyTallies:
    """All tallies of one test session, in first-use order."""

    def __init__(self) -> None:
        self.rows: dict[str, PropertyTally] = {}

    def __call__(self, label: str) -> PropertyTally:
        if label not in self.rows:
            self.rows[label] = PropertyTally(label)
        return self.rows[label]


_TALLIES = pytest.StashKey[PropertyTallies]()


@pytest.fixture(scope="session")
def property_tally(request: pytest.FixtureRequest) -> PropertyTallies:
    """``property_tally("random expressions vs SymPy gradient")`` → that check's counters."""
    stash = request.config.stash
    if _TALLIES not in stash:
        stash[_TALLIES] = PropertyTallies()
    return stash[_TALLIES]


def pytest_terminal_summary(terminalreporter, exitstatus, config) -> None:  # noqa: ARG001
    tallies = config.stash.get(_TALLIES, None)
    if tallies is None or not tallies.rows:
        return
    terminalreporter.section("symad property checks")
    for row in tallies.rows.values():
        terminalreporter.write_line(row.line())
