"""The package's shape: imports go one way (no cycles, not even under TYPE_CHECKING; layers only
import layers below), no import hides inside a function, no module reaches into another's private
names or into the native runtime's modules, no two modules share a name, and no root module is a
shim that only re-exports."""

from __future__ import annotations

import ast
from collections import Counter
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "symad"

# Layers, lowest first: a module may import its own layer's modules and those of lower ones.
LAYERS = [
    ("core",),
    ("frontend",),
    ("ad",),
    ("schedule",),
    ("runtime.background",),  # the compile threads: the native runtime compiles in them
    ("backends", "native"),  # code for a schedule: portable evaluators, and the LLVM runtime the VM runs on
    ("runtime",),
    ("functions", "symbolic_array", "expr", "function", "indexed_function", "indexed_vector_function", "indices",
     "second_order", "vector_function", "objectives", "caches", "persist", "interop"),  # the public API objects
    ("tools", "optimize"),  # what users do with them
    ("cli", "__main__"),
]


def _command_modules() -> list[str]:
    """The command modules symad.cli.main imports by name (only the one that runs)."""
    from symad.cli.main import COMMANDS

    return [f"symad.cli.{spec.module}" for spec in COMMANDS.values()]


# Function-level imports allowed, and why.
LAZY_IMPORTS = {
    ("symad.__main__", "symad.cli.main"): "a Ctrl-C while the package loads ends with status 130",
    **{("symad.cli.main", m): "only the command that runs is imported" for m in _command_modules()},
    ("symad.__main__", "symad.runtime.background"): "imported only after a Ctrl-C",
    ("symad.expr", "symad.function"): "parsing and printing (the command line) never load NumPy and the backends",
    **{("symad.optimize.driver", f"symad.optimize.{m}"): "a solve without constraints or loops loads neither's code"
       for m in ("ipopt", "constrained", "loops", "nlp")},
    ("symad.optimize.scipy_adapter", "symad.optimize.constraints"): "loaded where constraints are given",
}
# Private names of other modules a module may use (the standard library's documented ones).
PRIVATE_ALLOWED = {"_exit", "_register_atexit"}


def _modules() -> dict[str, Path]:
    found = {}
    for path in PACKAGE.rglob("*.py"):
        parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    return found


MODULES = _modules()


def _type_checking_nodes(tree: ast.AST) -> set[int]:
    skip: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            skip.update(id(n) for n in ast.walk(node))
    return skip


def _imports(name: str, type_checking: bool = False) -> list[tuple[str, bool]]:
    """(imported symad module, whether the import is inside a function) for module ``name``,
    imports under ``if TYPE_CHECKING`` left out unless ``type_checking``."""
    path = MODULES[name]
    tree = ast.parse(path.read_text(encoding="utf-8"))
    skip = set() if type_checking else _type_checking_nodes(tree)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    nested: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            nested.update(id(n) for n in ast.walk(node) if n is not node)
    found = []
    for node in ast.walk(tree):
        if id(node) in skip:
            continue
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            candidates = [f"{target}.{a.name}" for a in node.names if f"{target}.{a.name}" in MODULES]
            candidates = candidates or [target]
        elif isinstance(node, ast.Import):
            candidates = [a.name for a in node.names]
        else:
            continue
        found += [(c, id(node) in nested) for c in candidates if c in MODULES and c != name]
    if name == "symad.cli.main":  # by name, through importlib: edges of the graph all the same
        found += [(c, True) for c in _command_modules()]
    return found


def _layer(name: str) -> int:
    """The layer of the longest LAYERS entry naming ``name`` or a package holding it."""
    inner = name.removeprefix("symad.")
    best = None
    for level, members in enumerate(LAYERS):
        for member in members:
            if (inner == member or inner.startswith(member + ".")) and (best is None or len(member) > best[1]):
                best = (level, len(member))
    if best is None:
        raise AssertionError(f"{name} is in no layer: add its folder to LAYERS")
    return best[0]


def test_every_module_is_found_and_in_a_layer() -> None:
    assert {"symad.core.ops", "symad.ad.reverse", "symad.native.jit", "symad.cli.main"} <= set(MODULES)
    for name in MODULES:
        if name != "symad":
            _layer(name)


def test_the_import_graph_has_no_cycles() -> None:
    """Every import counts here, function-level ones and those under ``if TYPE_CHECKING`` too
    (the package root, whose attributes load lazily, is left out: importing a submodule always
    runs it)."""
    edges = {m: {t for t, _ in _imports(m, type_checking=True) if t != "symad"} for m in MODULES if m != "symad"}
    state: dict[str, int] = {}  # 1 on the current path, 2 done
    for start in edges:
        if start in state:
            continue
        stack = [(start, iter(sorted(edges[start])))]
        state[start] = 1
        path = [start]
        while stack:
            node, children = stack[-1]
            child = next(children, None)
            if child is None:
                state[node] = 2
                stack.pop()
                path.pop()
            elif state.get(child) == 1:
                cycle = path[path.index(child):] + [child]
                pytest.fail("import cycle: " + " -> ".join(cycle))
            elif child not in state:
                state[child] = 1
                path.append(child)
                stack.append((child, iter(sorted(edges[child]))))


def test_imports_go_down_the_layers() -> None:
    wrong = [f"{m} imports {t}" for m in MODULES if m != "symad" for t, _ in _imports(m)
             if t != "symad" and _layer(t) > _layer(m)]
    assert not wrong, "\n".join(wrong)


def test_no_import_hides_inside_a_function() -> None:
    hidden = [(m, t) for m in MODULES for t, inside in _imports(m) if inside and m != "symad"]
    unexplained = [f"{m} imports {t} inside a function" for m, t in hidden if (m, t) not in LAZY_IMPORTS]
    assert not unexplained, "\n".join(unexplained)


def _names_defined(tree: ast.AST) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.add(node.id)
        elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
            names.add(node.attr)
        elif isinstance(node, ast.arg):
            names.add(node.arg)
    return names


def test_no_module_uses_another_modules_private_names() -> None:
    """``from m import _x`` and ``obj._x`` where ``_x`` is not defined in the module itself
    (``self._x`` of a base class defined elsewhere counts too)."""
    found = []
    for name, path in MODULES.items():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        own = _names_defined(tree)
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom):
                found += [f"{name}: from {node.module} import {a.name}" for a in node.names
                          if a.name.startswith("_") and not a.name.startswith("__")]
            elif (isinstance(node, ast.Attribute) and node.attr.startswith("_") and not node.attr.startswith("__")
                  and node.attr not in own and node.attr not in PRIVATE_ALLOWED):
                found.append(f"{name}:{node.lineno}: {ast.unparse(node)}")
    assert not found, "\n".join(found)


# Tables keyed by op name outside the op table, and why each is not a per-op fact.
OP_NAME_TABLES_ALLOWED = {
    "symad.core.simplify": "the construction-time rewrites symad does: rules of the simplifier, which a new op "
                           "needs none of (its docs list them)",
}
OP_NAME_TABLE_SIZE = 5  # this many op names in one literal make it a side table of the op table


def _op_names_in(node: ast.AST, names: set[str]) -> set[str]:
    """The op names a dict, set, list or tuple literal holds as strings (keys and values, and one
    level of nested tuples: {"add": ("+", ...)} or (("add", 1), ...))."""
    if isinstance(node, ast.Dict):
        elements = [k for k in node.keys if k is not None] + node.values
    elif isinstance(node, (ast.Set, ast.List, ast.Tuple)):
        elements = node.elts
    else:
        return set()
    found = set()
    for e in elements:
        inner = e.elts if isinstance(e, (ast.Tuple, ast.List)) else [e]
        found |= {x.value for x in inner if isinstance(x, ast.Constant) and x.value in names}
    return found


def test_no_table_of_op_names_outside_the_op_table() -> None:
    """Every per-op fact lives in the op's entry (symad/core/ops/): a literal naming five or more
    ops anywhere else in the package (every subpackage, not only the root) is a side table
    that a new op would have to be added to."""
    from symad.core.ops import OPS

    names = set(OPS)
    found = []
    for name, path in MODULES.items():
        if name == "symad.core.ops" or name.startswith("symad.core.ops.") or name in OP_NAME_TABLES_ALLOWED:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            hit = _op_names_in(node, names)
            if len(hit) >= OP_NAME_TABLE_SIZE:
                found.append(f"{name}:{node.lineno}: {', '.join(sorted(hit))}")
    assert not found, "tables of op names outside the op table (build them from OPS):\n" + "\n".join(found)


def test_the_op_name_table_check_sees_subpackages_and_side_tables() -> None:
    """The check above scans the whole package and catches the side tables there were."""
    from symad.core.ops import OPS

    assert {"symad.core.latex", "symad.tools.exporters.straight_line", "symad.tools.viz"} <= set(MODULES)
    names = set(OPS)
    side_tables = ['{"sin": r"\\sin", "cos": r"\\cos", "tan": r"\\tan", "exp": r"\\exp", "log": r"\\log"}',
                   'frozenset({"add", "eq", "ne", "and", "or"})',
                   '{"sqrt": "math.nan", "sin": ("math.nan", 1), "exp": "math.inf", "cosh": 1, "log": 2}',
                   'for name in ("add", "sub", "mul", "div", "neg"): pass']
    for text in side_tables:
        assert any(len(_op_names_in(n, names)) >= OP_NAME_TABLE_SIZE for n in ast.walk(ast.parse(text))), text
    assert not any(len(_op_names_in(n, names)) >= OP_NAME_TABLE_SIZE
                   for n in ast.walk(ast.parse('("add", "mul", "x", "y")')))


def test_no_sweep_outside_ad() -> None:
    """Reverse and forward mode walk the graph in symad/ad/ only (one sweep, several algebras):
    elsewhere, code consumes a sweep's results or its trace, and accumulates no adjoints."""
    walks = ("reverse_nodes", "reverse_edges", "forward_nodes", "forward_edges", "branches.Shapes")
    found = [f"{name}: {w}" for name, path in MODULES.items() if not (name + ".").startswith("symad.ad.")
             for w in walks if w in path.read_text(encoding="utf-8")]
    assert not found, "sweeps outside symad/ad/:\n" + "\n".join(found)


def test_small_powers_and_where_are_lowered_in_one_place() -> None:
    """Small integer powers become products and ``where`` a select in symad/schedule/lowering.py
    alone: no code generator or evaluator of a schedule special-cases them.  The products
    themselves are value semantics (core/semantics.py), which the evaluators of the DAG below
    the backends compute too: constant folding and the sweep's numbers (they cannot import the
    backends; tests check their bits against the compiled code's)."""
    helpers = ("small_power", "power_product", "SMALL_POWERS")
    helpers_allowed = {"symad.schedule.lowering", "symad.core.semantics", "symad.core.dag",
                       "symad.ad.numbers", "symad.ad.reference"}
    found = [f"{name}: {h}" for name, path in MODULES.items() if name not in helpers_allowed
             for h in helpers if h in path.read_text(encoding="utf-8")]
    # `where` by name, or its arms (the derivative's business), in the code generators and exporters
    generators = [name for name in MODULES
                  if name.startswith(("symad.backends.", "symad.native.", "symad.tools.exporters."))]
    found += [f"{name}: {w}" for name in generators if name != "symad.schedule.lowering"
              for w in ('"where"', "'where'", ".arms") if w in MODULES[name].read_text(encoding="utf-8")]
    assert not found, "lowering outside symad/schedule/lowering.py:\n" + "\n".join(found)


def test_no_two_modules_share_a_name() -> None:
    """A module's file name says what it is, once in the package (``__init__.py`` aside): the
    command line has one module per command, and the library's modules are named otherwise."""
    names = Counter(path.name for path in PACKAGE.rglob("*.py") if path.name != "__init__.py")
    repeated = {name: sorted(str(p.relative_to(PACKAGE)) for p in PACKAGE.rglob(name))
                for name, count in names.items() if count > 1}
    assert not repeated, f"module names used twice: {repeated}"


def test_the_native_runtime_is_reached_through_its_interface() -> None:
    """Outside symad/native/, code imports ``symad.native`` (its ``__init__``: compile,
    compile_rows, interpreter, ...), never one of its modules, not even lazily or for typing."""
    found = [f"{m} imports {t}" for m in MODULES if not (m + ".").startswith("symad.native.")
             for t, _ in _imports(m, type_checking=True) if t.startswith("symad.native.")]
    assert not found, "\n".join(found)
    import symad.native

    for name in symad.native.__all__:  # the interface's names, imported on first use, all resolve
        assert getattr(symad.native, name) is not None, name


def _only_reexports(tree: ast.Module) -> bool:
    """Whether a module's body is nothing but its docstring, imports and ``__all__``."""
    for node in tree.body:
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            continue
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant):
            continue  # the docstring
        if isinstance(node, ast.Assign) and [ast.unparse(t) for t in node.targets] == ["__all__"]:
            continue
        return False
    return True


def test_no_root_module_only_reexports() -> None:
    """A module of the package root does something itself: a public name lives where it is
    implemented and reaches users through ``symad/__init__.py``'s lazy exports, not a shim."""
    shims = [name for name, path in MODULES.items() if name.count(".") == 1 and path.name != "__init__.py"
             and _only_reexports(ast.parse(path.read_text(encoding="utf-8")))]
    assert not shims, f"root modules that only re-export: {shims}"


def test_the_checks_above_catch_what_they_look_for(tmp_path, monkeypatch) -> None:
    """The shim check knows a shim, and the cycle check sees imports under TYPE_CHECKING."""
    shim = ast.parse('"""A shim."""\nfrom symad.tools.viz import to_digraph\n__all__ = ["to_digraph"]\n')
    assert _only_reexports(shim)
    module = "from symad import native\n\n\ndef clear() -> None:\n    native.clear_cache()\n"
    assert not _only_reexports(ast.parse(module))
    probe = tmp_path / "probe.py"
    probe.write_text("from typing import TYPE_CHECKING\n\nif TYPE_CHECKING:\n    from symad.core.dag import Graph\n")
    monkeypatch.setitem(MODULES, "symad.probe", probe)
    assert _imports("symad.probe") == [] and _imports("symad.probe", type_checking=True) == [("symad.core.dag", False)]
