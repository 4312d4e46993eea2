"""The user docs stay true over time: their prose cites no tracker and copies no measured time.

A tracker number ("issue 17", "#23", "wave 2") means nothing to a reader of the docs and
outlives what it named; a measured time goes stale with the next change or machine.  Measured
numbers belong in the generated reports (docs/reports.md lists them), which the prose links.
Code (fenced blocks and `inline code`) is not prose: commands and output are checked by
tests/test_readme.py.
"""

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PAGES = ["README.md", *sorted(p.relative_to(ROOT).as_posix()
                              for folder in ("guide", "reference")
                              for p in (ROOT / "docs" / folder).glob("*.md"))]

TRACKER = re.compile(r"\b(?:issues?|PR|pull request|wave|milestone)\s+#?\d+|(?<![\w&])#\d+\b", re.I)
NUMBER = r"\d[\d,.]*(?:\s*(?:[–-]|to)\s*\d[\d,.]*)?"
UNIT = r"(?:ns|µs|us|ms|s|secs?|seconds?|mins?|minutes?|h|hrs?|hours?)"
DURATION = re.compile(rf"(?<![\w.^]){NUMBER}\s*{UNIT}(?![\w])")

# Times that are settings, not measurements: (page, the phrase, why it may stay).
SETTINGS = [
    ("docs/guide/performance.md", "ended after 10 s without work", "the pool's idle time, POOL_IDLE_SECONDS"),
]


def prose(text: str) -> str:
    """The text without fenced code blocks, inline code and HTML comments; lines kept."""
    text = re.sub(r"```.*?```", lambda m: "\n" * m.group(0).count("\n"), text, flags=re.S)
    text = re.sub(r"<!--.*?-->", lambda m: "\n" * m.group(0).count("\n"), text, flags=re.S)
    return re.sub(r"`[^`\n]*`", "``", text)


def findings(page: str, pattern: re.Pattern) -> list[str]:
    text = prose((ROOT / page).read_text())
    for _, phrase, _ in (s for s in SETTINGS if s[0] == page):
        text = text.replace(phrase, "")
    return [f"{page}:{n}: {m.group(0)!r} in {line.strip()[:100]!r}"
            for n, line in enumerate(text.splitlines(), 1) for m in pattern.finditer(line)]


def test_pages_found():
    assert "docs/guide/cli.md" in PAGES and "docs/reference/architecture.md" in PAGES


@pytest.mark.parametrize("page", PAGES)
def test_no_tracker_references(page):
    assert not findings(page, TRACKER), "\n".join(findings(page, TRACKER))


@pytest.mark.parametrize("page", PAGES)
def test_no_measured_durations(page):
    """A duration in prose is a measurement copied from a report; link the report instead."""
    assert not findings(page, DURATION), "\n".join(findings(page, DURATION))


@pytest.mark.parametrize("page, phrase, why", SETTINGS)
def test_settings_still_in_their_page(page, phrase, why):
    """Each allowed phrase is still there (a stale entry would allow a measurement later)."""
    assert phrase in prose((ROOT / page).read_text()), f"{page} no longer says {phrase!r} ({why})"


@pytest.mark.parametrize("sample, caught", [
    ("see issue 17 for details", True), ("fixed in #23.", True), ("wave 2 added it", True),
    ("[errors](errors.md#errors-in-json)", False), ("&#8212;", False),
    ("takes 0.9 µs a call", True), ("about 5 ns an instruction", True), ("50–70 ms a compile", True),
    ("in 2.5 s", True), ("a loop of 20 s", True), ("15 to 20 s", True), ("1,314 MB of memory", False),
    ("n=1000's gradient", False), ("x1s and x2s", False), ("2^53 nodes", False), ("a 3s complement", True),
])
def test_the_patterns(sample, caught):
    """What the two patterns catch and what they leave."""
    assert bool(TRACKER.search(sample) or DURATION.search(sample)) is caught
