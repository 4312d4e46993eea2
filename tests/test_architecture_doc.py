"""docs/reference/architecture.md names every module of the package, and only files that exist.

A module added without a line in the architecture's table is invisible to a reader of the docs; a
module renamed or removed leaves the table pointing at nothing.  A name counts only as a whole file
name (``ir.py`` is not found inside ``loop_ir.py``).
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DOC = ROOT / "docs" / "reference" / "architecture.md"
PACKAGE = ROOT / "symad"
# The package's files a reader meets: its modules and the files of the interactive page.
SUFFIXES = (".py", ".html", ".js", ".css")
# A file name as the doc writes one, with or without its folders: `symad/native/ir.py`, `ops/straight.py`.
NAMED = re.compile(r"(?<![\w./-])((?:[\w-]+/)*[\w-]+\.(?:py|html|js|css|json|lark))(?![\w])")


def package_files() -> list[Path]:
    """The package's modules (not ``__init__.py``: every folder has one) and page files."""
    return sorted(p for p in PACKAGE.rglob("*") if p.suffix in SUFFIXES and p.name != "__init__.py"
                  and "__pycache__" not in p.parts)


def named_in_doc() -> set[str]:
    """Every file name the doc writes, as written (with the folders it gives)."""
    return set(NAMED.findall(DOC.read_text(encoding="utf-8")))


def test_the_pattern_reads_whole_names():
    assert NAMED.findall("`loop_ir.py` and `symad/native/ir.py`; ops/straight.py.") == [
        "loop_ir.py", "symad/native/ir.py", "ops/straight.py"]
    assert NAMED.findall("a.b.py, c.pyc, d.python") == []


def test_the_package_has_modules_to_check():
    names = {p.name for p in package_files()}
    assert {"dag.py", "stitcher.py", "explore_page.js"} <= names


def test_every_module_is_named():
    names = {Path(n).name for n in named_in_doc()}
    missing = [p.relative_to(ROOT).as_posix() for p in package_files() if p.name not in names]
    assert not missing, f"{DOC.name} does not name: {', '.join(missing)}"


def test_every_named_file_exists():
    """A path from the repository's root must be that file; a bare name, some file of that name."""
    everywhere = {p.name for folder in ("symad", "tests", "grammar", "benchmarks")
                  for p in (ROOT / folder).rglob("*") if "__pycache__" not in p.parts}
    stale = sorted(n for n in named_in_doc()
                   if not ((ROOT / n).exists() if n.split("/")[0] in ("symad", "tests", "grammar", "benchmarks")
                           else Path(n).name in everywhere))
    assert not stale, f"{DOC.name} names files that do not exist: {', '.join(stale)}"
