"""A package face whose names are imported on first use (PEP 562): ``import symad`` and the compile
worker's ``import symad.native`` load nothing until a name is asked for."""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Mapping
from typing import Any


def exports(package: str, table: Mapping[str, str], more: Callable[[], Mapping[str, Any]] | None = None
            ) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """``(__getattr__, __dir__)`` for ``package``: a name of ``table`` is imported from its module
    (a path inside the package) on first use and kept in the package; ``more()`` gives the names
    looked up after those (the language's functions on ``symad``)."""
    namespace = sys.modules[package].__dict__

    def getattr_(name: str) -> Any:
        module = table.get(name)
        if module is not None:
            value = getattr(importlib.import_module(f"{package}.{module}"), name)
        else:
            extra = more() if more is not None else {}
            if name not in extra:
                raise AttributeError(f"module {package!r} has no attribute {name!r}")
            value = extra[name]
        namespace[name] = value
        return value

    def dir_() -> list[str]:
        return sorted({*namespace, *table, *(more() if more is not None else ())})

    return getattr_, dir_
