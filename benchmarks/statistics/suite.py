"""The statistics suite: each peer's first call (imports and build included) and warm call of the
negative binomial log-likelihood's value and gradient over ``--n`` rows, in fresh processes taken
in turn (:func:`benchmarks.harness.in_turn`), medians over ``--repeats`` runs; writes
``statistics.json`` and renders ``statistics.md`` (:mod:`benchmarks.statistics.report`).
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from benchmarks.harness import (  # noqa: E402
    bytecode_env,
    command_line,
    in_turn,
    load,
    machine,
    median_of,
    now,
    revision,
    run_worker,
    write,
)
from benchmarks.statistics.report import render  # noqa: E402

FOLDER = Path(__file__).resolve().parent
WORKER = FOLDER / "worker.py"
PEERS = ["symad", "jax", "jax-closed"]


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m benchmarks.statistics", description=__doc__)
    p.add_argument("--n", type=int, default=1_000_000)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--timeout", type=float, default=600.0)
    p.add_argument("--out-dir", type=Path, default=FOLDER)
    args = p.parse_args(argv)
    env = bytecode_env(dict(os.environ))
    load_before = load()

    def sample(peer: str) -> dict[str, Any]:
        r = run_worker(WORKER, ["--peer", peer, "--n", str(args.n)], args.timeout, env=env)
        print(f"{peer}: {r.get('status')} first {r.get('first_call_s')} call {r.get('call_median_s')}",
              file=sys.stderr)
        return r

    runs = in_turn(PEERS, args.repeats, sample, stop=lambda _, s: s[-1].get("status") != "ok")
    peers = {peer: {"first_call_s": median_of(s, "first_call_s"), "call_s": median_of(s, "call_median_s"),
                    "status": [r.get("status") for r in s], "runs": s} for peer, s in runs.items()}
    data = {"n": args.n, "repeats": args.repeats, "peers": peers, "machine": machine(), "revision": revision(),
            "date": now(), "load": [load_before, load()],
            "command": command_line("python -m benchmarks.statistics", sys.argv[1:] if argv is None else argv)}
    write(args.out_dir, "statistics", data, render(data))
    return 0
