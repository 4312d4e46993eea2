"""Resource limits that no input can bypass; each error names the limit and how to raise it.

Change them for a process with ``symad.core.limits.LIMITS.max_nodes = ...``, for a
block with ``with symad.core.limits.override(max_nodes=...):``, or on the command
line with ``--max-input``, ``--max-dag-nodes``, ``--max-program-ops`` and ``--max-document``.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass, fields

from symad.core.errors import LimitError


@dataclass
class Limits:
    """The limits in force."""

    max_input_chars: int = 4_000_000  # length of one expression's text
    max_nodes: int = 10_000_000  # nodes in one graph
    max_program_ops: int = 4_000_000  # operations in one compiled program
    # Length of one saved document's text (symad.load, @FILE); None: DOCUMENT_CHARS_PER_NODE a
    # node of max_nodes, and DOCUMENT_CHARS_MORE (400 MB by default: symad writes 10 to 40 a node).
    max_document_chars: int | None = None

    def check_input(self, text: str) -> None:
        """Raise LimitError if ``text`` is longer than ``max_input_chars``."""
        if len(text) > self.max_input_chars:
            raise input_too_long(len(text), self.max_input_chars)

    def document_chars(self) -> int:
        """``max_document_chars``, or by default what a graph within ``max_nodes`` needs."""
        if self.max_document_chars is not None:
            return self.max_document_chars
        return DOCUMENT_CHARS_PER_NODE * self.max_nodes + DOCUMENT_CHARS_MORE

    def nodes_exceeded(self) -> LimitError:
        """The error for a graph that would grow past ``max_nodes``."""
        return LimitError(f"the expression graph would exceed {self.max_nodes:,} nodes "
                          "(raise the limit with {setting})", "LIMITS.max_nodes")

    def check_program(self, n_ops: int) -> None:
        """Raise LimitError if a compiled program would have more than ``max_program_ops`` operations."""
        if n_ops > self.max_program_ops:
            raise LimitError(f"the compiled program would have {n_ops:,} operations, over the limit of "
                             f"{self.max_program_ops:,} (raise it with {{setting}})", "LIMITS.max_program_ops")


DOCUMENT_CHARS_PER_NODE = 40
DOCUMENT_CHARS_MORE = 1 << 16  # the head (a function's variables) and long names in a small graph

LIMITS = Limits()


def input_too_long(chars: int | None, limit: int) -> LimitError:
    """The error for an input of ``chars`` characters (None: not counted) over ``limit``."""
    if chars is None:
        return LimitError(f"the input is over the limit of {limit:,} characters (raise it with {{setting}})",
                          "LIMITS.max_input_chars")
    return LimitError(f"the input is {chars:,} characters, over the limit of {limit:,} "
                      "(raise it with {setting})", "LIMITS.max_input_chars")


@contextlib.contextmanager
def override(**changes: int | None) -> Iterator[Limits]:
    """Temporarily change limits: ``with override(max_nodes=100): ...``."""
    names = {f.name for f in fields(Limits)}
    unknown = set(changes) - names
    if unknown:
        raise TypeError(f"unknown limit(s): {', '.join(sorted(unknown))}")
    saved = {k: getattr(LIMITS, k) for k in changes}
    for k, v in changes.items():
        setattr(LIMITS, k, v)
    try:
        yield LIMITS
    finally:
        for k, v in saved.items():
            setattr(LIMITS, k, v)
