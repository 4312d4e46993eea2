"""Lark's LALR(1) tables for symad's grammar, as data the parser's driver runs.

Lark builds the tables from ``grammar/symad.lark``.  Building them takes about 55 ms a
process, and importing Lark about 30 ms more: longer than parsing a typical expression,
and most of what a one-line ``symad grad`` would spend.  So the package ships them as
``lalr_tables.json``, written by ``python -m symad.frontend.tables`` and stamped with the
SHA-256 of the grammar they were built from.  :func:`tables` uses the shipped file when the
stamp matches the grammar, and builds the tables with Lark otherwise (a checkout whose
grammar is being edited); a test checks that the shipped file is what Lark builds.
"""

from __future__ import annotations

import hashlib
import json
import re
import sys
from importlib import resources
from pathlib import Path
from typing import Any, NamedTuple

from symad.core.errors import SymadError

# The driver reads Lark internals: `from_lark` is the one place that touches them, checks their
# layout, and names the range of Lark versions it was tested with (pyproject.toml pins it).
LARK_TESTED = "1.1–1.3"
SHIPPED = "lalr_tables.json"
FORMAT = 2  # the layout of the shipped file


class LarkTables(NamedTuple):
    """What the lean driver takes from Lark: the LALR(1) table and one pattern for the terminals."""

    start: int  # the start state
    end: int  # the state after the start rule's goto, reached only on $END
    # states[state][terminal or rule name] = (True, next state) for a shift or goto,
    # (False, (rule name, length, callback name)) for a reduction.
    states: dict[int, dict[str, tuple[bool, object]]]
    ignore: frozenset[str]  # terminals the lexer skips
    pattern: re.Pattern[str]  # one named group per terminal, in Lark's lexer order
    keywords: dict[str, str]  # words a name pattern also matches (`if`, `and`): word -> terminal


def grammar_text() -> str:
    """The grammar: shipped inside the package, or read from the checkout's grammar/."""
    shipped = resources.files("symad").joinpath("grammar/symad.lark")
    if shipped.is_file():
        return shipped.read_text(encoding="utf-8")
    return (Path(__file__).resolve().parents[2] / "grammar" / "symad.lark").read_text(encoding="utf-8")


def grammar_digest(text: str) -> str:
    """The stamp of a grammar: SHA-256 of its text."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def tables() -> LarkTables:
    """The tables of the grammar: the shipped ones if built from this grammar, else Lark's now."""
    text = grammar_text()
    shipped = load_shipped(text)
    return shipped if shipped is not None else build_with_lark(text)


def build_with_lark(text: str) -> LarkTables:
    """Lark's tables for the grammar ``text`` (imports Lark and builds them: ~85 ms)."""
    import lark

    return from_lark(lark.Lark(text, parser="lalr"))


def load_shipped(text: str) -> LarkTables | None:
    """The shipped tables, if their stamp is the digest of ``text``; else None."""
    path = resources.files("symad.frontend").joinpath(SHIPPED)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict) or data.get("format") != FORMAT or data.get("grammar") != grammar_digest(text):
        return None
    try:
        states = {int(state): {symbol: (bool(shift), arg if shift else tuple(arg))
                               for symbol, (shift, arg) in row.items()}
                  for state, row in data["states"].items()}
        return LarkTables(data["start"], data["end"], states, frozenset(data["ignore"]),
                          re.compile(data["pattern"], re.ASCII), dict(data["keywords"]))
    except (KeyError, TypeError, ValueError, re.error):  # a damaged file: Lark builds the tables
        return None


def to_json(t: LarkTables, text: str) -> str:
    """The shipped file's text for the tables ``t`` of the grammar ``text``."""
    import lark

    data: dict[str, Any] = {
        "format": FORMAT, "grammar": grammar_digest(text), "lark": lark.__version__,
        "start": t.start, "end": t.end, "ignore": sorted(t.ignore), "pattern": t.pattern.pattern,
        "keywords": dict(sorted(t.keywords.items())),
        "states": {str(state): {symbol: [shift, arg] for symbol, (shift, arg) in sorted(row.items())}
                   for state, row in sorted(t.states.items())},
    }
    return json.dumps(data, indent=0, separators=(",", ":")) + "\n"


def from_lark(lk: Any, start: str = "start") -> LarkTables:
    """Extract what the driver needs from a ``Lark(..., parser="lalr")``, checking the layout.

    Any other layout (a Lark outside ``LARK_TESTED`` that moved or renamed something) raises
    ``SymadError`` saying so, rather than an AttributeError deep in the parser."""
    import lark

    def layout_error(what: str) -> SymadError:
        return SymadError(f"symad's parser needs lark's LALR table layout of lark {LARK_TESTED} "
                          f"(found lark {getattr(lark, '__version__', '?')}: {what}): pin lark or report this")

    def need(ok: object, what: str) -> None:
        if not ok:
            raise layout_error(what)

    try:
        try:
            table = lk.parser.parser.parser.parse_table
        except AttributeError:
            raise layout_error("no parse table at Lark.parser.parser.parser.parse_table") from None
        for attr in ("states", "start_states", "end_states"):
            need(isinstance(getattr(table, attr, None), dict), f"parse_table.{attr} is not a dict")
        need(isinstance(table.start_states.get(start), int) and isinstance(table.end_states.get(start), int),
             f"no integer start/end state for {start!r}")
        states: dict[int, dict[str, tuple[bool, object]]] = {}
        reduced: set[str] = set()  # rule names: the symbols that are goto targets, not terminals
        for state, actions in table.states.items():
            need(isinstance(state, int) and isinstance(actions, dict), "states are not int -> dict")
            row: dict[str, tuple[bool, object]] = {}
            for symbol, entry in actions.items():
                need(isinstance(symbol, str) and isinstance(entry, tuple) and len(entry) == 2,
                     "an action is not a (action, argument) pair keyed by symbol name")
                action, arg = entry
                kind = getattr(action, "name", None)
                if kind == "Shift":
                    need(isinstance(arg, int), "a Shift's argument is not a state number")
                    row[str(symbol)] = (True, arg)
                elif kind == "Reduce":
                    origin = getattr(getattr(arg, "origin", None), "name", None)
                    expansion = getattr(arg, "expansion", None)
                    alias = getattr(arg, "alias", 0)  # 0: missing (Lark's is None or a name)
                    need(isinstance(origin, str) and isinstance(expansion, (list, tuple))
                         and (alias is None or isinstance(alias, str)),
                         "a Reduce's rule lacks origin.name, expansion or alias")
                    reduced.add(str(origin))
                    row[str(symbol)] = (False, (str(origin), len(expansion), str(alias or origin)))
                else:
                    raise layout_error(f"an action is {action!r}, not Shift or Reduce")
            states[state] = row
        need(table.end_states[start] in states and table.start_states[start] in states, "start/end state not in table")

        terminals = list(lk.terminals)
        for t in terminals:
            pattern = getattr(t, "pattern", None)
            need(isinstance(getattr(t, "name", None), str) and isinstance(getattr(t, "priority", None), int)
                 and isinstance(getattr(pattern, "max_width", None), int)
                 and isinstance(getattr(pattern, "value", None), str) and callable(getattr(pattern, "to_regexp", None)),
                 "a terminal lacks name, priority, pattern.max_width, pattern.value or pattern.to_regexp")
        # Ordered as Lark's lexer orders them.
        terminals.sort(key=lambda t: (-t.priority, -t.pattern.max_width, -len(t.pattern.value), t.name))
        # A word that a regexp terminal also matches whole (`if` is a NAME's text) is a keyword:
        # as in Lark's lexer, the regexp matches (so `iffy` stays a name) and the word is then
        # told apart by its text.
        regexps = [re.compile(t.pattern.to_regexp()) for t in terminals if type(t.pattern).__name__ == "PatternRE"]
        keywords = {t.pattern.value: str(t.name) for t in terminals if type(t.pattern).__name__ == "PatternStr"
                    and any(r.fullmatch(t.pattern.value) for r in regexps)}
        terminals = [t for t in terminals if str(t.name) not in keywords.values()]
        # ASCII: `\d` must not accept other scripts' digits, which float() would read.
        pattern = re.compile("|".join(f"(?P<{t.name}>{t.pattern.to_regexp()})" for t in terminals), re.ASCII)
        # Plain str keys throughout: Lark's names are str subclasses compared in Python code.
        ignore = frozenset(str(t) for t in lk.ignore_tokens)
        lexed = set(pattern.groupindex)
        symbols = {symbol for row in states.values() for symbol in row}
        need(symbols - reduced - {"$END"} <= lexed | set(keywords.values()),
             "the table shifts terminals the lexer does not know")
        need(ignore <= lexed, "ignored terminals the lexer does not know")
        need(all(any(states[s].get(name, (False,))[0] for s in states) for name in reduced),
             "a rule the table reduces has no goto")
    except SymadError:
        raise
    except (AttributeError, KeyError, TypeError, ValueError, re.error) as exc:
        raise layout_error(f"{type(exc).__name__}: {exc}") from exc
    return _numbered(LarkTables(table.start_states[start], table.end_states[start], states, ignore, pattern,
                                keywords))


def _numbered(t: LarkTables) -> LarkTables:
    """The same tables with states numbered in breadth-first order from the start, symbols in
    sorted order (Lark's numbering changes from process to process: this one does not)."""
    number = {t.start: 0}
    queue = [t.start]
    for state in queue:  # grows as states are found
        for symbol in sorted(t.states[state]):
            shift, arg = t.states[state][symbol]
            if shift and arg not in number:
                number[arg] = len(number)  # type: ignore[index]
                queue.append(arg)  # type: ignore[arg-type]
    states = {number[state]: {symbol: (shift, number[arg] if shift else arg)  # type: ignore[index]
                              for symbol, (shift, arg) in row.items()}
              for state, row in t.states.items() if state in number}
    return LarkTables(0, number[t.end], states, t.ignore, t.pattern, t.keywords)


def write_shipped() -> Path:
    """Build the tables with Lark and write the shipped file; its path."""
    text = grammar_text()
    path = Path(__file__).with_name(SHIPPED)
    path.write_text(to_json(build_with_lark(text), text), encoding="utf-8")
    return path


if __name__ == "__main__":
    print(f"wrote {write_shipped()}", file=sys.stderr)
