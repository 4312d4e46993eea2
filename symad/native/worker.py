"""The compile worker: a process that turns LLVM IR into object code for its parent.

Background compiles run here, not in the parent's threads, so that they neither
compete with the caller's Python code for the interpreter lock nor hold a process
back at exit: a compile nobody will use is abandoned by killing the worker.  The
parent loads the object code it gets back (milliseconds).

Protocol, over the worker's stdin and stdout: a request is the line
``"<opt> <size> <bytes>\\n"`` and that many bytes of IR text (``opt`` -2: the stencils'); the answer is
``"ok <bytes>\\n"`` and the object code, or ``"error <bytes>\\n"`` and a message.
The worker ends when its stdin does.
"""

from __future__ import annotations

import sys

from symad.native.codegen import new_target_machine, object_code, stencil_target_machine

STENCILS = -2  # a request's level for the stencils (symad.native.stencils): -O2, their own target machine


def serve(stdin: object, stdout: object) -> None:
    """Answer requests until ``stdin`` ends."""
    machines: dict[int, object] = {}
    while True:
        header = stdin.readline()  # type: ignore[attr-defined]
        if not header:
            return
        opt, size, length = map(int, header.split())
        text = stdin.read(length).decode()  # type: ignore[attr-defined]
        try:
            tm = machines.get(opt) or machines.setdefault(
                opt, stencil_target_machine() if opt == STENCILS else new_target_machine(opt))
            payload, status = object_code(text, tm, abs(opt), size), b"ok"
        except Exception as err:  # noqa: BLE001 - reported to the parent, which compiles itself
            payload, status = f"{type(err).__name__}: {err}".encode(), b"error"
        stdout.write(b"%s %d\n" % (status, len(payload)))  # type: ignore[attr-defined]
        stdout.write(payload)  # type: ignore[attr-defined]
        stdout.flush()  # type: ignore[attr-defined]


if __name__ == "__main__":
    serve(sys.stdin.buffer, sys.stdout.buffer)
