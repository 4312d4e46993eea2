"""Shared pytest configuration for symad's tests."""

from __future__ import annotations

import os
import re

import pytest
from hypothesis import settings

# The fuzz tests' tallies (tests/support/fuzz_counts.py) print their own summary line.
pytest_plugins = ("support.fuzz_counts",)

# ============================================================ Hypothesis: the same examples on every run
# Every @given test draws the same examples each run (derandomized, no example database), so
# CI never meets an example a developer's run did not; SYMAD_PROPERTY_SEED=N draws others (a hunt).
# Loaded here, before any test module builds its @settings, which inherit what they leave unset.
settings.register_profile("symad", derandomize=os.environ.get("SYMAD_PROPERTY_SEED") is None, database=None,
                          deadline=None, print_blob=False)
settings.load_profile("symad")


def _without_local_constants() -> None:
    """Hypothesis (6.13x on) mixes literals from every local module in ``sys.modules`` into its
    draws, so the examples of a derandomized test depended on which test files pytest had
    collected: CI's full run drew other examples than a developer's run of one file.  With the
    pool empty, a test's examples are a function of the test alone (Hypothesis is pinned, as
    this reaches into its internals; the assertion says when a new version moved them)."""
    from hypothesis.internal.conjecture import providers

    assert hasattr(providers, "_get_local_constants"), "Hypothesis moved its local-constants pool"
    empty = providers._local_constants
    providers._get_local_constants = lambda: empty


_without_local_constants()

# ============================================================ slow tests
# Tests marked ``slow`` (property tests against SymPy, fuzzing, deep nesting through
# the CLI, packaging, notebooks, subprocess-heavy tests...) are deselected by default,
# so a plain ``python -m pytest`` is quick; ``--run-slow`` (the README's test command
# and CI) runs everything.  An explicit ``-m EXPR`` decides on its own.


_SLOW_SKIPPED = pytest.StashKey[bool]()


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--run-slow", action="store_true", default=False,
                     help="also run the tests marked slow (skipped by default; CI runs them)")


def pytest_configure(config: pytest.Config) -> None:
    if not config.getoption("run_slow") and not config.option.markexpr:
        config.option.markexpr = "not slow"
        config.stash[_SLOW_SKIPPED] = True


# ============================================================ property-check tallies
# The property tests (tests/ad/test_properties.py) count how many random expressions
# each check tried, compared and skipped, and how many disagreed; the terminal
# summary prints the counts, so a run shows how much was actually checked.
# Self-contained: one class, one fixture, two hooks (checks deselected by -m are
# counted too, so a quick run says what it left out).


# What the compared examples held, counted from their text (so a run shows the new parts of the
# language were compared, not only generated).
_FEATURES = {"sums": re.compile(r"\b(sum|prod)\("), "branches": re.compile(r"\bwhere\(|\bif\b"),
             "comparisons": re.compile(r"[<>]|==|!=|\b(and|or|not)\b")}


class PropertyTally:
    """Counts for one property check."""

    def __init__(self, label: str) -> None:
        self.label = label
        self.tried = 0  # examples the check was called with (shrinking included)
        self.compared = 0  # examples whose values were actually compared
        self.skipped: dict[str, int] = {}  # reason -> examples not comparable
        self.mismatches: set[str] = set()  # distinct failing examples, as text
        self.features: dict[str, int] = {}  # compared examples with sums, branches, comparisons

    def skip(self, reason: str) -> None:
        self.skipped[reason] = self.skipped.get(reason, 0) + 1

    def mismatch(self, example: str) -> None:
        self.mismatches.add(example)

    def count(self, example: str) -> None:
        """Count one comparison of ``example`` (its text tells what it held)."""
        self.compared += 1
        for feature, pattern in _FEATURES.items():
            if pattern.search(example):
                self.features[feature] = self.features.get(feature, 0) + 1

    def compared_with(self, problems: list[str], example: str, where: str | None = None) -> None:
        """Count one comparison of ``example``; its ``problems``, if any, are a mismatch and fail
        the check (the message starts with ``where``, by default the example)."""
        self.count(example)
        if problems:
            self.mismatch(example)
        assert not problems, f"{example if where is None else where}: " + "; ".join(problems)

    def line(self) -> str:
        held = ", ".join(f"{n} with {feature}" for feature, n in self.features.items())
        parts = [f"{self.compared} compared" + (f", {held}" if held else "")]
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


_DESELECTED_CHECKS = pytest.StashKey[list[bool]]()  # one per check left out: marked slow?


def pytest_deselected(items: list[pytest.Item]) -> None:
    """Remember the property checks left out (by ``-m``/``-k``), for the summary."""
    for item in items:
        if "property_tally" in getattr(item, "fixturenames", ()):
            item.config.stash.setdefault(_DESELECTED_CHECKS, []).append(item.get_closest_marker("slow") is not None)


def pytest_terminal_summary(terminalreporter, exitstatus, config) -> None:  # noqa: ARG001
    tallies = config.stash.get(_TALLIES, None)
    rows = list(tallies.rows.values()) if tallies is not None else []
    deselected = config.stash.get(_DESELECTED_CHECKS, [])
    if not rows and not deselected:
        return
    terminalreporter.section("symad property checks")
    for row in rows:
        terminalreporter.write_line(row.line())
    if deselected:
        slow = sum(deselected) if config.stash.get(_SLOW_SKIPPED, False) else 0
        hint = f"; {slow} marked slow, --run-slow runs them" if slow else ""
        terminalreporter.write_line(f"symad property checks: {len(deselected)} deselected, not run{hint}")
