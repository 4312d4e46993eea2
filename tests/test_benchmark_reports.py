"""The benchmark reports stay true: each page is what its figures render, the docs index every one,
and the suites share one harness without importing each other in a cycle.

Nothing here measures: the committed figures (``benchmarks/<suite>/<suite>.json``) are rendered again.
"""

import ast
import importlib
import json
import re
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
BENCHMARKS = ROOT / "benchmarks"

pytestmark = pytest.mark.skipif(not (BENCHMARKS / "harness.py").is_file(),
                                reason="needs the source checkout's benchmarks/")

PAGES = sorted(BENCHMARKS.glob("*/*.md"))
SUITES = sorted({p.parent.name for p in PAGES})


@pytest.fixture(autouse=True, scope="module")
def _checkout_on_path():
    sys.path.insert(0, str(ROOT))
    yield
    sys.path.remove(str(ROOT))


def test_every_page_has_its_figures_and_its_report_module():
    """benchmarks/<suite>/ holds <suite>.md, <suite>.json beside it and report.py that renders one from the other."""
    assert len(SUITES) >= 8, SUITES
    for page in PAGES:
        suite = page.parent
        assert page.name == f"{suite.name}.md", page
        assert (suite / f"{suite.name}.json").is_file(), suite
        assert (suite / "report.py").is_file() and (suite / "__main__.py").is_file(), suite


@pytest.mark.parametrize("suite", SUITES)
def test_page_is_what_its_figures_render(suite):
    """Not edited by hand, and not stale after a change of the page's layout."""
    folder = BENCHMARKS / suite
    report = importlib.import_module(f"benchmarks.{suite}.report")
    data = json.loads((folder / f"{suite}.json").read_text(encoding="utf-8"))
    assert report.render(data) == (folder / f"{suite}.md").read_text(encoding="utf-8"), (
        f"benchmarks/{suite}/{suite}.md is not what its figures render: python -m benchmarks.{suite}.report")


def test_docs_index_every_report():
    index = ROOT / "docs" / "reports.md"
    linked = {(index.parent / target).resolve() for target in re.findall(r"\]\(([^)#\s]+)", index.read_text())}
    missing = [p.relative_to(ROOT).as_posix() for p in PAGES if p.resolve() not in linked]
    assert not missing, f"docs/reports.md does not link {missing}"


def _imports() -> dict[str, set[str]]:
    """Each benchmarks module's imports of other benchmarks modules (module names, dotted)."""
    modules = {}
    for path in BENCHMARKS.rglob("*.py"):
        parts = list(path.relative_to(ROOT).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        modules[".".join(parts)] = path
    graph: dict[str, set[str]] = {name: set() for name in modules}
    for name, path in modules.items():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.level:
                package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
                base = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                targets = [f"{base}.{node.module}" if node.module else base]
            elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("benchmarks"):
                targets = [f"{node.module}.{a.name}" if f"{node.module}.{a.name}" in modules else node.module
                           for a in node.names]
            elif isinstance(node, ast.Import):
                targets = [a.name for a in node.names if a.name.startswith("benchmarks")]
            else:
                continue
            graph[name] |= {t for t in targets if t in modules and t != "benchmarks"}
    return graph


def test_no_import_cycle_among_the_suites():
    graph = _imports()
    done: set[str] = set()
    for start in graph:  # depth first, iteratively, each module's path kept on the stack
        stack = [(start, iter(sorted(graph[start])))]
        on_path = {start}
        while stack:
            node, children = stack[-1]
            child = next(children, None)
            if child is None:
                stack.pop()
                on_path.discard(node)
                done.add(node)
            elif child in on_path:
                cycle = [n for n, _ in stack][[n for n, _ in stack].index(child):] + [child]
                pytest.fail(f"import cycle: {' -> '.join(cycle)}")
            elif child not in done:
                stack.append((child, iter(sorted(graph[child]))))
                on_path.add(child)


def test_the_cycle_check_sees_a_cycle(monkeypatch):
    graph = {"benchmarks.a": {"benchmarks.b"}, "benchmarks.b": {"benchmarks.a"}}
    monkeypatch.setitem(globals(), "_imports", lambda: graph)
    with pytest.raises(pytest.fail.Exception, match="benchmarks.a -> benchmarks.b -> benchmarks.a"):
        test_no_import_cycle_among_the_suites()


def test_workers_run_through_the_one_harness():
    """Fresh-process workers are started in one place: harness.run_worker."""
    starters = [p.relative_to(ROOT).as_posix() for p in BENCHMARKS.rglob("*.py")
                if "def run_worker" in p.read_text(encoding="utf-8")]
    assert starters == ["benchmarks/harness.py"]
