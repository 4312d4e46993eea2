"""A long fuzzing run: the test suite's fuzz property on fresh random inputs for many minutes.

    python benchmarks/fuzz_long.py --minutes 10                 # Hypothesis, every input kind
    python benchmarks/fuzz_long.py --minutes 10 --backend auto  # also native code past 40 operations
    python benchmarks/fuzz_long.py --minutes 10 --engine atheris   # coverage-guided (pip install atheris)

Every input goes through ``tests/support/fuzz_check.py``'s :func:`check_input`, as in
``tests/frontend/test_fuzz.py``: it parses (and then prints, round-trips, differentiates
and evaluates with nothing but symad's own errors) or raises ``ParseError`` with
a position inside the input.  The Hypothesis engine draws from
``tests/support/fuzz_inputs.py`` with random seeds (not derandomized, deep nesting
up to 3,000 levels) and keeps going after a failure; each distinct failure
(exception type and place) is reported once with the shortest input seen.  The
atheris engine mutates bytes under coverage guidance, starting from a corpus of
the listed inputs, and stops at the first failure (as libFuzzer does).

Exit status: 0 if nothing failed, 1 otherwise.
"""

from __future__ import annotations

import argparse
import sys
import time
import traceback
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
# tests/support/fuzz_check.py and tests/support/fuzz_inputs.py are imported in main(): under
# atheris, inside its import hook, so that symad's code reports coverage.


class Tally:
    def __init__(self) -> None:
        self.counts = {"parsed": 0, "rejected": 0, "failed": 0}
        self.failures: dict[tuple[str, str, int], str] = {}  # (type, file, line) -> shortest input

    def run(self, text: str, backend: str) -> None:
        from support import fuzz_check

        try:
            self.counts[fuzz_check.check_input(text, backend)] += 1
        except Exception as err:  # noqa: BLE001 - every failure is recorded, then the run goes on
            self.counts["failed"] += 1
            frame = traceback.extract_tb(err.__traceback__)[-1]
            key = (f"{type(err).__name__}: {str(err).splitlines()[0][:160] if str(err) else ''}",
                   Path(frame.filename).name, frame.lineno or 0)
            if key not in self.failures or len(text) < len(self.failures[key]):
                self.failures[key] = text

    def report(self, seconds: float) -> int:
        c = self.counts
        tried = sum(c.values())
        print(f"symad fuzz (long): {tried} inputs in {seconds / 60:.1f} min ({c['parsed']} parsed, "
              f"{c['rejected']} rejected with ParseError), {c['failed']} failed, "
              f"{len(self.failures)} distinct failure(s)")
        for (what, file, line), text in self.failures.items():
            print(f"  {what} [{file}:{line}] on {text[:300]!r}")
        return 1 if self.failures else 0


def hypothesis_engine(minutes: float, backend: str, tally: Tally) -> None:
    """Batches of 200 examples, each batch with a fresh random seed, until the time is up."""
    from hypothesis import HealthCheck, Phase, given, settings
    from support import fuzz_inputs

    deadline = time.monotonic() + 60 * minutes

    @settings(max_examples=200, deadline=None, database=None, derandomize=False,
              phases=[Phase.generate], suppress_health_check=list(HealthCheck))
    @given(fuzz_inputs.inputs(max_depth=3000))
    def batch(text: str) -> None:
        if time.monotonic() < deadline:
            tally.run(text, backend)

    while time.monotonic() < deadline:
        batch()


def atheris_engine(minutes: float, backend: str, tally: Tally) -> None:
    """libFuzzer via atheris; it never returns: the report is printed before the process ends."""
    import os
    import tempfile

    import atheris

    with atheris.instrument_imports(include=["symad"]):
        from support import fuzz_check, fuzz_inputs  # noqa: F401  (fuzz_check imports symad, instrumented)
    start = time.monotonic()
    deadline = start + 60 * minutes

    def finish() -> None:
        os._exit(tally.report(time.monotonic() - start))  # libFuzzer ends the process its own way

    def one(data: bytes) -> None:
        text = atheris.FuzzedDataProvider(data).ConsumeUnicodeNoSurrogates(len(data))
        tally.run(text, backend)
        if tally.failures or time.monotonic() > deadline:
            finish()

    corpus = Path(tempfile.mkdtemp(prefix="symad-corpus-"))
    for k, text in enumerate(fuzz_inputs.CLI_CASES):
        (corpus / f"seed{k}").write_bytes(b"\x00" + text.encode("utf-8", "surrogatepass"))
    atheris.Setup([sys.argv[0], "-max_len=4096", str(corpus)], one)
    atheris.Fuzz()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--minutes", type=float, default=10, help="how long to run (default 10)")
    ap.add_argument("--backend", default="python", choices=["python", "auto", "native"],
                    help="compiled functions' backend (default python)")
    ap.add_argument("--engine", default="hypothesis", choices=["hypothesis", "atheris"])
    args = ap.parse_args(argv)
    tally = Tally()
    start = time.monotonic()
    try:
        if args.engine == "atheris":
            atheris_engine(args.minutes, args.backend, tally)
        else:
            hypothesis_engine(args.minutes, args.backend, tally)
    except KeyboardInterrupt:
        pass
    return tally.report(time.monotonic() - start)


if __name__ == "__main__":
    sys.exit(main())
