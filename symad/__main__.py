"""The ``symad`` command's entry point (also ``python -m symad``).

Imports nothing heavy at the top: a Ctrl-C while NumPy, Lark and LLVM load
(the first few tenths of a second) ends with status 130, not a traceback.
"""

import sys


def entry() -> None:
    """Console-script entry point: run the command line, exit with its status."""
    try:
        from symad.cli.main import main

        status = main()
    except KeyboardInterrupt:
        status = 130
    if status == 130:
        # After a Ctrl-C, skip the interpreter's teardown: it can abort inside LLVM
        # (status 134), under a compile thread still running or while freeing what an
        # interrupted compile left behind.  Files in `with` blocks are closed by now.
        from symad.runtime.background import exit_now

        exit_now(130)
    sys.exit(status)


if __name__ == "__main__":
    entry()
