"""Files symad writes are whole or untouched: a full disk (a small file-size limit) or a killed
writer leaves the old file intact; export-c refuses ambiguous, clobbering and injecting output
names; a full stdout is a clear error, a closed pipe a quiet exit."""

from __future__ import annotations

import os
import resource
import signal
import stat
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

import pytest
from support.cli_helpers import run

from symad.core.errors import SymadError
from symad.core.files import write_atomically

# Python ignores SIGXFSZ as it starts: the killed writer puts its default action back.
KILLABLE = ("import signal, sys; signal.signal(signal.SIGXFSZ, signal.SIG_DFL); from symad.cli.main import main; "
            "sys.exit(main(sys.argv[1:]))")
LIMIT = 200  # bytes a limited process may write into a file (RLIMIT_FSIZE)
BIG = " + ".join(f"sin(x*{k}) * cos(y^{k})" for k in range(1, 40))  # far more than LIMIT in any form


def limited(args: Sequence[str], cwd: Path, ignore_xfsz: bool = True,
            code: str | None = None) -> subprocess.CompletedProcess:
    """``symad ARGS`` with files limited to LIMIT bytes: writing past it fails with EFBIG (SIGXFSZ
    ignored: a full disk, as the program sees it), or kills the process (SIGXFSZ's default:
    a writer killed mid-write)."""
    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (LIMIT, LIMIT))
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN if ignore_xfsz else signal.SIG_DFL)

    env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1", SYMAD_CACHE_DIR=str(cwd / "cache"))
    command = ["-c", code] if code else ["-m", "symad"] if ignore_xfsz else ["-c", KILLABLE]
    return subprocess.run([sys.executable, *command, *args], cwd=cwd, capture_output=True, text=True,
                          timeout=120, env=env, preexec_fn=limit, stdin=subprocess.DEVNULL)


def contents(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir()) if p.is_file()}


# Each command, with the files it writes (given beside -o), and how to make earlier ones.
WRITERS = {
    "save": (["save", BIG, "-o", "keep.json"], ["save", "x", "-o", "keep.json"]),
    "export-c": (["export-c", BIG, "--grad", "-o", "keep.c"], ["export-c", "x", "-o", "keep.c"]),
    "export-py": (["export-py", BIG, "--grad", "-o", "keep.py"], ["export-py", "x", "-o", "keep.py"]),
    "graph-dot": (["graph", BIG, "-o", "keep.dot"], ["graph", "x", "-o", "keep.dot"]),
    "graph-svg": (["graph", BIG, "-o", "keep.svg"], ["graph", "x", "-o", "keep.svg"]),
}


def _earlier(tmp_path: Path, case: str) -> dict[str, bytes]:
    if case == "graph-svg" and subprocess.run(["which", "dot"], capture_output=True).returncode:
        pytest.skip("Graphviz's dot is not installed")
    r = run(*WRITERS[case][1][:-1], str(tmp_path / WRITERS[case][1][-1]))
    assert r.returncode == 0, r.stderr
    before = contents(tmp_path)
    assert before
    return before


@pytest.mark.parametrize("case", WRITERS)
def test_a_full_disk_leaves_the_old_file(tmp_path: Path, case: str) -> None:
    before = _earlier(tmp_path, case)
    r = limited(WRITERS[case][0], tmp_path)
    assert r.returncode == 2, r.stderr
    assert r.stderr.startswith("symad: error: cannot write keep.") and r.stderr.endswith(": File too large\n")
    assert contents(tmp_path) == before  # was a truncated file; and no temporary file is left
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")]


@pytest.mark.parametrize("case", WRITERS)
def test_a_writer_killed_mid_write_leaves_the_old_file(tmp_path: Path, case: str) -> None:
    before = _earlier(tmp_path, case)
    r = limited(WRITERS[case][0], tmp_path, ignore_xfsz=False)
    assert r.returncode == -signal.SIGXFSZ, r.stderr  # killed while writing
    after = contents(tmp_path)
    assert {name: after[name] for name in before} == before  # was a truncated file


def test_a_full_disk_leaves_the_old_trace(tmp_path: Path) -> None:
    (tmp_path / "trace.csv").write_text("old\n")
    r = limited(["minimize", "100*(y-x^2)^2 + (1-x)^2", "--from", "x=-1.2,y=1", "--method", "gd",
                 "--max-iter", "50", "--trace", "trace.csv"], tmp_path)
    assert r.returncode == 2, r.stderr
    assert "cannot write trace.csv: File too large" in r.stderr
    assert (tmp_path / "trace.csv").read_text() == "old\n"


def test_a_device_is_written_as_it_is() -> None:
    r = run("save", "x", "-o", "/dev/stdout")  # a pipe here: written to, not renamed over
    assert r.returncode == 0 and r.stdout.startswith('{"format": "symad"'), r.stderr


def test_symad_save_on_a_full_disk_leaves_the_old_file(tmp_path: Path) -> None:
    (tmp_path / "keep.json").write_text("old\n")
    r = limited([], tmp_path, code=f"import symad; symad.save(symad.parse({BIG!r}), 'keep.json')")
    assert r.returncode == 1 and r.stderr.strip().endswith("SymadError: cannot write keep.json: File too large")
    assert contents(tmp_path) == {"keep.json": b"old\n"}


def test_a_full_disk_leaves_the_old_plot(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    (tmp_path / "path.png").write_bytes(b"old")
    r = limited(["minimize", "(x-1)^2 + 3*y^2", "--from", "x=0,y=1", "--plot", "path.png"], tmp_path)
    assert r.returncode == 2 and "cannot write path.png: File too large" in r.stderr, r.stderr
    assert contents(tmp_path) == {"path.png": b"old"}  # was a truncated picture
    r = run("minimize", "(x-1)^2 + 3*y^2", "--from", "x=0,y=1", "--plot", str(tmp_path / "path.svg"))
    assert r.returncode == 0 and (tmp_path / "path.svg").read_text().rstrip().endswith("</svg>"), r.stderr


def test_write_atomically(tmp_path: Path) -> None:
    target = tmp_path / "f.txt"
    target.write_text("old")
    target.chmod(0o640)
    link = tmp_path / "link.txt"
    link.symlink_to(target.name)
    write_atomically(link, "new")  # through the link: the link stays a link
    assert link.is_symlink() and target.read_text() == "new"
    assert stat.S_IMODE(target.stat().st_mode) == 0o640  # a replaced file keeps its mode
    write_atomically(os.devnull, b"nothing")  # not a regular file: written, not replaced
    null = tmp_path / "null"
    null.symlink_to(os.devnull)
    write_atomically(null, b"nothing")
    assert Path(os.devnull).is_char_device() and null.is_symlink()
    null.unlink()
    with pytest.raises(SymadError, match=r"^cannot write .*missing/f.txt: No such file or directory$"):
        write_atomically(tmp_path / "missing" / "f.txt", "x")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["f.txt", "link.txt"]


# ------------------------------------------------------------------ export-c's names
def test_export_c_refuses_a_c_file_that_is_its_own_header(tmp_path: Path) -> None:
    for name in ("f.h", "f.H"):
        r = run("export-c", "x", "-o", str(tmp_path / name))
        assert r.returncode == 2 and "the C file and its header would be the same file" in r.stderr, r.stderr
    assert list(tmp_path.iterdir()) == []  # was f.h holding C code that includes itself
    (tmp_path / "g.c").write_text("")
    (tmp_path / "g.h").symlink_to("g.c")
    r = run("export-c", "x", "-o", str(tmp_path / "g.c"))
    assert r.returncode == 2 and "the same file" in r.stderr


def test_export_c_never_replaces_a_header_symad_did_not_write(tmp_path: Path) -> None:
    mine = tmp_path / "keep.h"
    mine.write_text("/* my own header */\nint keep(void);\n")
    r = run("export-c", "x", "-o", str(tmp_path / "keep.c"))
    assert r.returncode == 2 and f"{mine} exists and was not written by symad" in r.stderr and "--force" in r.stderr
    assert mine.read_text() == "/* my own header */\nint keep(void);\n" and not (tmp_path / "keep.c").exists()
    r = run("export-c", "x", "-o", str(tmp_path / "keep.c"), "--force")
    assert r.returncode == 0 and r.stdout == f"wrote {mine} and {tmp_path / 'keep.c'}: f(x), value\n"
    r = run("export-c", "x^2", "--name", "g", "-o", str(tmp_path / "keep.c"))  # symad's own: replaced
    assert r.returncode == 0, r.stderr
    assert "double g(const double *x);" in mine.read_text()


@pytest.mark.parametrize("name", ['a"b.c', "a\nb.c", 'x.h"\n#define f abort\n"x.c', "a\\b.c", "a b.c", "-.c"])
def test_export_c_never_writes_a_path_into_the_code(tmp_path: Path, name: str) -> None:
    r = run("export-c", "x", "-o", str(tmp_path / name))
    assert r.returncode == 2, r.stderr  # was 0, with the path's text in #include "..."
    assert "is not a plain name ending in .h" in r.stderr and "Traceback" not in r.stderr
    assert list(tmp_path.iterdir()) == []


def test_export_c_header_names_in_the_api() -> None:
    import symad
    from symad.tools.exporters import c_source

    e = symad.parse("x", symad.Graph())
    assert '#include "my-f_1.2.h"' in c_source(e, header="my-f_1.2.h")[0]
    for bad in ('a".h', "a\n.h", "dir/a.h", "a.c", "", ".h"):
        with pytest.raises(SymadError, match="not a plain name ending in .h"):
            c_source(e, header=bad)


# ------------------------------------------------------------------ stdout
@pytest.mark.skipif(not Path("/dev/full").exists(), reason="no /dev/full")
@pytest.mark.parametrize("args", [["grad", "x", "--at", "x=1"], ["grad", "x", "--at", "x=1", "--json"],
                                  ["diff", "x^2", "--wrt", "x"], ["save", "x", "-o", "-"], ["graph", "x"],
                                  ["export-py", "x", "-o", "-"], ["grad", "x+", "--at", "x=1", "--json"]])
def test_a_full_stdout_is_a_clear_error(args: list[str]) -> None:
    with open("/dev/full", "w") as full:
        r = subprocess.run([sys.executable, "-m", "symad", *args], stdout=full, stderr=subprocess.PIPE, text=True,
                           timeout=120, stdin=subprocess.DEVNULL)
    assert r.returncode == 2, r.stderr  # was 70, "internal error" (with a traceback under --json)
    if "x+" in args:  # the error itself could not be written as JSON: it goes to stderr
        assert r.stderr.startswith("symad: error: unexpected end of input")
    else:
        assert r.stderr == "symad: error: cannot write the output: No space left on device\n"


def test_a_closed_pipe_is_a_quiet_exit(tmp_path: Path) -> None:
    (tmp_path / "big.txt").write_text(" + ".join(f"x{k}" for k in range(30000)))
    for args in (["postfix", "@big.txt"], ["save", "@big.txt", "-o", "-"], ["diff", "@big.txt", "--wrt", "x1"]):
        proc = subprocess.Popen([sys.executable, "-m", "symad", *args], cwd=tmp_path, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, stdin=subprocess.DEVNULL)
        assert proc.stdout is not None and proc.stderr is not None
        proc.stdout.read(3)
        proc.stdout.close()  # as `| head -c 3` does
        err = proc.stderr.read()
        assert proc.wait(timeout=120) == 0 and err == b"", err
