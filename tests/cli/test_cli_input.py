"""End-to-end: reading EXPR from stdin ('-') and from files ('@FILE')."""

import os
import shutil
import subprocess
import threading

import pytest
from support.cli_helpers import run, symad_command

LIMIT = "symad: error: the input is over the limit of 4,000,000 characters (raise it with --max-input"


@pytest.mark.skipif(shutil.which("yes") is None, reason="needs yes(1)")
def test_endless_stdin_stops_at_the_input_limit():
    """`yes | symad eval -` used to read until memory ran out."""
    yes = subprocess.Popen(["yes"], stdout=subprocess.PIPE)
    try:
        p = subprocess.run(symad_command() + ["eval", "-"], stdin=yes.stdout, capture_output=True, text=True,
                           timeout=60)
    finally:
        yes.kill()
        yes.wait()
        yes.stdout.close()
    assert p.returncode == 2 and p.stderr.startswith(LIMIT), p.stderr


@pytest.mark.skipif(not os.path.exists("/dev/zero"), reason="needs /dev/zero")
def test_endless_device_stops_at_the_input_limit():
    p = run("eval", "@/dev/zero", timeout=60)
    assert p.returncode == 2 and p.stderr.startswith(LIMIT), p.stderr


def test_limit_message_counts_a_regular_file_and_not_a_pipe(tmp_path):
    f = tmp_path / "e.txt"
    f.write_text("x+" * 20 + "é" * 5)
    p = run("eval", f"@{f}", "--max-input", "10")
    assert p.stderr.startswith("symad: error: the input is 45 characters, over the limit of 10 (raise it")
    p = run("eval", "-", "--max-input", "10", stdin="x+" * 20)
    assert p.stderr.startswith("symad: error: the input is over the limit of 10 characters (raise it")


def test_a_character_cut_between_reads_is_decoded_whole():
    # 'é' is two bytes; with a limit of 3 the first read ends inside the second 'é'
    p = run("eval", "-", "--max-input", "3", stdin="é+é")
    assert "unexpected character 'é' at line 1, column 1" in p.stderr
    p = run("eval", "-", "--max-input", "2", stdin="é+é")
    assert "over the limit of 2 characters" in p.stderr


def test_not_utf8_names_the_byte():
    p = subprocess.run(symad_command() + ["eval", "-"], input=b"x+" * 700_000 + b"\xe9", capture_output=True,
                       timeout=120)
    assert p.returncode == 2
    assert p.stderr.decode() == "symad: error: standard input is not UTF-8 text (byte 1400000)\n"


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="named pipes")
def test_named_pipe_without_a_writer_does_not_hang(tmp_path):
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    p = run("eval", f"@{fifo}", timeout=60)
    assert p.returncode == 2 and p.stderr == f"symad: error: cannot read {fifo}: a named pipe with no writer\n"


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="named pipes")
def test_named_pipe_with_a_writer_is_read(tmp_path):
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)

    def write() -> None:
        with open(fifo, "w") as fh:  # blocks until symad opens the pipe
            fh.write("x^2")

    writer = threading.Thread(target=write, daemon=True)
    writer.start()
    try:
        p = run("eval", f"@{fifo}", "--at", "x=3", timeout=60)
    finally:
        if writer.is_alive():  # symad never opened it: let the writer go
            os.close(os.open(fifo, os.O_RDONLY | os.O_NONBLOCK))
        writer.join(10)
    assert (p.returncode, p.stdout) == (0, "9\n"), p.stderr


def test_directory_is_an_error(tmp_path):
    p = run("eval", f"@{tmp_path}", timeout=60)
    assert p.returncode == 2 and p.stderr == f"symad: error: cannot read {tmp_path}: Is a directory\n"


def test_byte_order_mark_is_skipped(tmp_path):
    f = tmp_path / "bom.txt"
    f.write_bytes(b"\xef\xbb\xbfx*y")
    assert run("eval", f"@{f}", "--at", "x=2,y=3").stdout == "6\n"
    p = subprocess.run(symad_command() + ["grad", "-", "--at", "x=2", "--json"], input=b"\xef\xbb\xbfx^2",
                       capture_output=True, timeout=120)
    assert p.returncode == 0, p.stderr
    assert p.stdout.startswith(b'{"expr": "x^2"')
    # columns count from after the mark
    p = run("eval", "-", stdin="\ufeffx+")
    assert "unexpected end of input at line 1, column 3" in p.stderr
