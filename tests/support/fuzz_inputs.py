"""Hypothesis strategies for fuzzing symad: valid expressions and hostile text.

Two families:

* **valid** text, in two ways: :func:`fuzz_expressions` is the tests' one
  random-expression generator (:func:`support.expressions.expressions`, read
  from the op table, so functions have the right arity and defined names are
  used after their definition: the parse → print → differentiate → evaluate
  path is taken often) with the fuzzing options on: definitions, ignorable
  whitespace, ``**`` as well as ``^``, odd number texts and names; and
  :func:`lark_expressions` expands the rules of the Lark grammar itself at
  random (so every production and every terminal pattern, including what
  ``\\d`` really matches, is exercised; ``hypothesis.extra.lark.from_lark``
  does the same but is about a hundred times slower);
* **hostile** text (:func:`hostile_inputs`): random unicode and decoded bytes,
  syntax soup, unbalanced parentheses, lone operators, unicode lookalikes, NUL
  and control characters, very long names, odd numbers (``1e999999``,
  ``0x10``, ``1_000``, ``1..2``), deep nesting, definitions, and valid
  expressions with one character inserted, deleted or replaced.

:func:`inputs` mixes them all; it is what ``tests/frontend/test_fuzz.py`` and
``benchmarks/fuzz_long.py`` feed to :func:`support.fuzz_check.check_input`.
"""

from __future__ import annotations

from functools import cache

from hypothesis import strategies as st

from support.expressions import CONSTANT_NAMES, FUNCTION_NAMES, ODD_NAMES, expressions, odd_names, odd_numbers


def fuzz_expressions(max_depth: int = 4) -> st.SearchStrategy[str]:
    """Valid text with everything the grammar allows: definitions, whitespace, odd numbers and names."""
    return expressions(max_depth, whitespace=True, odd_terminals=True, definitions=True)


class _GrammarTables:
    """The rules and terminals of ``grammar/symad.lark``, as Lark reads them."""

    def __init__(self) -> None:
        import lark

        from symad.frontend.tables import grammar_text

        lk = lark.Lark(grammar_text(), parser="lalr")
        self.start = lk.options.start[0]
        self.rules: dict[str, list[list[str]]] = {}
        for rule in lk.rules:
            self.rules.setdefault(rule.origin.name, []).append([sym.name for sym in rule.expansion])
        self.terminals: dict[str, st.SearchStrategy[str]] = {}
        for term in lk.terminals:
            if type(term.pattern).__name__ == "PatternStr":
                self.terminals[term.name] = st.just(term.pattern.value)
            else:
                self.terminals[term.name] = st.from_regex(term.pattern.to_regexp(), fullmatch=True)
        self.ignore = st.one_of(*(self.terminals[name] for name in lk.ignore_tokens))
        # Height of the shortest derivation of each symbol: where the depth budget
        # runs out, only expansions of minimal height are taken, so generation ends.
        height = {name: 0 for name in self.terminals}
        changed = True
        while changed:
            changed = False
            for name, expansions in self.rules.items():
                best = min(1 + max((height.get(sym, 10**9) for sym in exp), default=0) for exp in expansions)
                if best < height.get(name, 10**9):
                    height[name], changed = best, True
        self.height = height


@cache
def _tables() -> _GrammarTables:
    return _GrammarTables()


# What a NAME or NUMBER terminal becomes, besides the terminal's own regex: names
# symad knows (so that calls and constants are often meaningful) and ASCII numbers.
_KNOWN_NAMES = st.sampled_from(FUNCTION_NAMES + CONSTANT_NAMES + ODD_NAMES)
_TERMINAL_BIAS = {"NAME": _KNOWN_NAMES, "NUMBER": odd_numbers}


@st.composite
def lark_expressions(draw, max_symbols: int = 30) -> str:
    """Strings derived from the rules of the Lark grammar itself (read with Lark, expanded at random).

    Every production and every terminal pattern is used as Lark defines it
    (``NUMBER``'s ``\\d`` included, which matches any Unicode decimal digit),
    with the grammar's ignored whitespace between tokens now and then.  Names are
    often unknown functions or misused built-ins: a ``ParseError`` with a
    position, which is the property too.  Once ``max_symbols`` rules have been
    expanded, only the shortest way to finish is taken.
    """
    g = _tables()
    out: list[str] = []
    budget = [draw(st.integers(1, max_symbols))]

    def shortest(expansions: list[list[str]]) -> list[list[str]]:
        cost = [1 + max(g.height[s] for s in e) for e in expansions]
        return [e for e, c in zip(expansions, cost) if c == min(cost)]

    def derive(symbol: str, forced: bool) -> None:
        if symbol in g.terminals:
            if draw(st.integers(0, 4)) == 0:
                out.append(draw(g.ignore))
            bias = _TERMINAL_BIAS.get(symbol)
            out.append(draw(bias) if bias is not None and draw(st.integers(0, 3)) else draw(g.terminals[symbol]))
            return
        budget[0] -= 1
        forced = forced or budget[0] <= 0
        expansions = shortest(g.rules[symbol]) if forced else g.rules[symbol]
        for sym in draw(st.sampled_from(expansions)):
            derive(sym, forced)

    derive(g.start, False)
    return "".join(out)


def valid_expressions() -> st.SearchStrategy[str]:
    """Valid text: the expression generator twice as often as the rule expander."""
    return st.one_of(fuzz_expressions(), fuzz_expressions(), lark_expressions())


# ---------------------------------------------------------------- hostile text
LOOKALIKES = ("−", "–", "—", "×", "·", "÷", "²", "³", "（", "）", "，", "π", "√", "＋", "＊", "ｘ", "０", "１",
              "٣", "𝟘", "ⅹ", "∗", "⁻", "¹", "½", "∞", "\u00a0", "\u2009", "\u200b", "\ufeff", "\u2028", "\u2029",
              "\x85", "\u3000")
CONTROL = tuple(chr(c) for c in (*range(0, 32), 127)) + ("\x80", "\x9f")
OPERATORS = ("+", "-", "*", "/", "^", "**", "=", ";", ",", "(", ")", ".", "e", "E")
ODD_NUMBERS = ("1e999999", "1e-999999", "0x10", "0X1F", "0b101", "0o17", "1_000", "1..2", "1.2.3", "1e", "1e+",
               "1e-", ".e1", ".", "e", "1j", "1L", "-0", "+0", "0.", "00", "1e+308", "1e309", "-1e309",
               "9" * 400, "0." + "0" * 400 + "1", "1" + "0" * 320, "1e0001", "١٢٣", "１２", "Infinity", "NaN",
               "inf", "nan", "-inf", "infinity")
SYNTAX_ALPHABET = "()+-*/^,;=. 0123456789eExyz_\t\n"


@st.composite
def unbalanced(draw) -> str:
    """A valid expression with parentheses added or removed on one side."""
    text = draw(fuzz_expressions(max_depth=3))
    n = draw(st.integers(1, 50))
    form = draw(st.integers(0, 3))
    if form == 0:
        return "(" * n + text
    if form == 1:
        return text + ")" * n
    if form == 2:
        return text.replace(")", "", 1) if ")" in text else text + ")"
    return text.replace("(", "", 1) if "(" in text else "(" + text


@st.composite
def mutated(draw) -> str:
    """A valid expression with one to three characters inserted, deleted or replaced."""
    text = draw(fuzz_expressions(max_depth=3))
    pool = st.one_of(st.sampled_from(SYNTAX_ALPHABET), st.sampled_from(LOOKALIKES), st.sampled_from(CONTROL),
                     st.characters())
    for _ in range(draw(st.integers(1, 3))):
        i = draw(st.integers(0, len(text)))
        kind = draw(st.integers(0, 2))
        if kind == 0 or not text:
            text = text[:i] + draw(pool) + text[i:]
        elif kind == 1:
            i = min(i, len(text) - 1)
            text = text[:i] + text[i + 1:]
        else:
            i = min(i, len(text) - 1)
            text = text[:i] + draw(pool) + text[i + 1:]
    return text


@st.composite
def with_lookalike(draw) -> str:
    """A valid expression with a lookalike or control character spliced in."""
    text = draw(fuzz_expressions(max_depth=2))
    i = draw(st.integers(0, len(text)))
    return text[:i] + draw(st.sampled_from(LOOKALIKES + CONTROL)) + text[i:]


@st.composite
def deep(draw, max_depth: int = 3000) -> str:
    """Deep nesting of each kind the grammar allows (and some it does not), up to ``max_depth`` levels."""
    d = draw(st.integers(1, max_depth))
    form = draw(st.integers(0, 8))
    if form == 0:
        return "(" * d + "x" + ")" * d
    if form == 1:
        return "sin(" * d + "x" + ")" * d
    if form == 2:
        return "-" * d + "x"
    if form == 3:
        return "x^" * d + "2"
    if form == 4:
        return "2^" * d + "2"
    if form == 5:
        return "(" * d + "x" + ")" * (d - 1)  # one short
    if form == 6:
        return "x" + "+x" * d
    if form == 7:
        return "max(x, " * d + "y" + ")" * d
    return "-(" * d + "x" + ")" * d


@st.composite
def definitions(draw) -> str:
    """Programs with definitions: chains (exponential as trees), reuse, redefinition, built-ins."""
    form = draw(st.integers(0, 5))
    n = draw(st.integers(1, 60))
    if form == 0:  # t_k = t_{k-1} * t_{k-1}: a DAG of n nodes, a tree of 2^n
        body = "".join(f"t{k} = t{k - 1}*t{k - 1} + x; " for k in range(1, n + 1))
        return f"t0 = x; {body}t{n}"
    if form == 1:
        return "a = x; a = y; a"
    if form == 2:
        name = draw(st.sampled_from(FUNCTION_NAMES + CONSTANT_NAMES))
        return f"{name} = x; {name}"
    if form == 3:
        return draw(st.sampled_from(["a = a; a", "a = x; b = a*a; b = 1; b", "x = y; y = x; x*y", "a=x;",
                                     "a = x; ", "; x", "a = ; x", "a = x;; a", "= x; x", "a b = x; a",
                                     "_1 = x; _1*_1", "a = sin; a", "a = x, y; a", "a = (x; a"]))
    if form == 4:
        body = "".join(f"v{k} = sin(v{k - 1})*cos(v{k - 1}); " for k in range(1, n + 1))
        return f"v0 = x*y; {body}v{n}"
    name = draw(odd_names)
    return f"{name} = {draw(fuzz_expressions(max_depth=2))}; {draw(fuzz_expressions(max_depth=2))}"


@st.composite
def long_names(draw) -> str:
    n = draw(st.integers(100, 20_000))
    ch = draw(st.sampled_from(["x", "_", "a1"]))
    name = (ch * n)[:n]
    return draw(st.sampled_from([name, f"{name} + 1", f"sin({name})*{name}", f"{name}(x)", f"1{name}"]))


def hostile_inputs(max_depth: int = 3000) -> st.SearchStrategy[str]:
    """Text that is mostly not a valid expression, of every kind listed in the module doc.

    ``max_depth`` bounds the deep-nesting inputs (the test suite keeps it small
    for its time budget; the long run uses the default)."""
    return st.one_of(
        st.text(max_size=60),
        st.text(st.sampled_from(SYNTAX_ALPHABET), max_size=40),
        st.text(st.sampled_from(SYNTAX_ALPHABET), max_size=40),
        st.binary(max_size=60).map(lambda b: b.decode("utf-8", "replace")),
        st.binary(max_size=60).map(lambda b: b.decode("latin-1")),
        st.lists(st.sampled_from(OPERATORS), min_size=1, max_size=6).map("".join),
        st.sampled_from(ODD_NUMBERS),
        st.tuples(st.sampled_from(ODD_NUMBERS), st.sampled_from(["", "*x", "+1", "^2", "(x)"])).map("".join),
        st.sampled_from(LOOKALIKES + CONTROL),
        unbalanced(), mutated(), mutated(), with_lookalike(), deep(max_depth), definitions(), long_names(),
    )


def inputs(max_depth: int = 3000) -> st.SearchStrategy[str]:
    """Everything: valid and hostile text, about half each."""
    return st.one_of(valid_expressions(), hostile_inputs(max_depth))


# The CLI sample: fixed, one of each kind, chosen to reach every CLI error path
# and some successes (the random part of the CLI test adds generated inputs).
CLI_CASES = (
    "x*(y+", "(x", "x)", "", "   ", "+", "*x", "x − y", "x × y", "x²", "（x）", "x\x00", "\x01", "0x10", "1_000",
    "1..2", "1e999999*x", "foo(x)", "sin(x, y)", "sin", "a = x; a*a", "a = x; a = y; a", "pi = 3; pi",
    "t0 = x; t1 = t0*t0; t2 = t1*t1; t3 = t2*t2; t3", "x^y", "log(x)", "sqrt(x)", "1/x", "0^x",
    "max(x, x)", "abs(x)", "9^9^9^9", "2^2^2^2^2^2^2", "x" * 5000, "(" * 2000 + "x" + ")" * 2000,
)
