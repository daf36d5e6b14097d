"""`-o` writes where it should and nothing else: '-' is standard output, a symlink is written through, a FIFO is
written to and never replaced, new files get the umask's mode, and a failed write leaves no temporary file.

Everything happens in tmp_path: no test touches a real device file."""

from __future__ import annotations

import json
import os
import stat
import threading
from pathlib import Path

import pytest

from roofline.errors import InputError
from roofline.load.jsonio import write_text_atomic

KERNELS = Path(__file__).resolve().parent / "data" / "kernels"
RESULTS = Path(__file__).resolve().parent / "data" / "results"
MEASURE = Path(__file__).resolve().parent / "data" / "measure"
OLD_ANALYSIS = '{"schema": "roofline/analysis/v1", "old": true}\n'  # what analyze -o may replace
ANALYZE = ("analyze", "--kernels", KERNELS, "--spec", "t4", "t_vadd", "--format", "json")


def _analysis(run_cli) -> str:
    """The analysis JSON analyze prints, to compare files with."""
    r = run_cli(*ANALYZE)
    assert r.code == 0, r.err
    return r.out


def _siblings(folder: Path, *keep: str) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name not in keep)


@pytest.fixture
def umask():
    """Set the process umask for one test and put the old one back."""
    old = os.umask(0o022)
    try:
        yield os.umask
    finally:
        os.umask(old)


# ---- '-' is standard output -------------------------------------------------------------------------------


def test_dash_writes_text_to_standard_output_and_creates_no_file(run_cli, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    r = run_cli(*ANALYZE, "-o", "-")
    assert r.code == 0, r.err
    assert json.loads(r.out)["kernels"][0]["name"] == "t_vadd"
    assert "wrote" not in r.err
    assert list(tmp_path.iterdir()) == []


def test_dash_writes_plot_png_bytes_to_standard_output(tmp_path, monkeypatch, capsysbinary):
    from roofline.cli import main

    monkeypatch.chdir(tmp_path)
    with pytest.raises(SystemExit) as exit_info:
        main(["plot", "--results", str(RESULTS / "h100.json"), "-o", "-"])
    out, err = capsysbinary.readouterr()
    assert exit_info.value.code == 0, err
    assert out.startswith(b"\x89PNG\r\n\x1a\n") and len(out) > 5_000
    assert b"wrote" not in err
    assert list(tmp_path.iterdir()) == []


def test_dash_on_measure_gives_one_json_document_on_stdout_and_the_table_on_stderr(run_cli, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    r = run_cli("measure", "--backend", "numpy", "--spec", "t4", "--kernels", MEASURE, "m_add", "-p", "n=1000",
                "--min-time", "0", "--min-repeats", "2", "-o", "-")
    assert r.code == 0, r.err
    assert json.loads(r.out)["kernels"][0]["name"] == "m_add"  # the whole of stdout is the document
    assert "m_add" in r.err and "│" in r.err  # the table, on stderr
    assert list(tmp_path.iterdir()) == []


# ---- symlinks are refused: never written through to somewhere else, never silently replaced by a file -------


def test_symlink_to_a_file_is_refused_and_both_are_kept(run_cli, tmp_path):
    real = tmp_path / "real"
    real.mkdir()
    target = real / "out.json"
    target.write_text(OLD_ANALYSIS)
    link = tmp_path / "link.json"
    link.symlink_to(target)
    r = run_cli(*ANALYZE, "-o", link)
    assert r.code == 2, r.err
    assert "symbolic link (to " + str(target) in r.err and "Traceback" not in r.err
    assert link.is_symlink() and os.readlink(link) == str(target) and target.read_text() == OLD_ANALYSIS
    assert _siblings(real, "out.json") == [] and _siblings(tmp_path, "real", "link.json") == []


def test_dangling_symlink_is_refused_and_creates_nothing(run_cli, tmp_path):
    link = tmp_path / "link.json"
    link.symlink_to("made.json")
    r = run_cli(*ANALYZE, "-o", link)
    assert r.code == 2 and "symbolic link (to made.json)" in r.err
    assert link.is_symlink() and _siblings(tmp_path, "link.json") == []


def test_the_writer_refuses_a_symlink_too(tmp_path):
    target = tmp_path / "t.txt"
    target.write_text("keep")
    link = tmp_path / "l.txt"
    link.symlink_to(target)
    with pytest.raises(OSError, match="symbolic link"):
        write_text_atomic(link, "new")
    assert target.read_text() == "keep" and link.is_symlink()


def test_a_symlinked_folder_on_the_way_is_fine(run_cli, tmp_path):
    real = tmp_path / "real"
    real.mkdir()
    (tmp_path / "via").symlink_to(real)
    r = run_cli(*ANALYZE, "-o", tmp_path / "via" / "out.json")
    assert r.code == 0, r.err
    assert json.loads((real / "out.json").read_text())["schema"] == "roofline/analysis/v1"
    assert _siblings(real, "out.json") == []


# ---- FIFOs (and devices) are written to, never replaced ---------------------------------------------------


def _reader(fifo: Path, got: list[bytes]) -> threading.Thread:
    def read() -> None:
        with open(fifo, "rb") as handle:
            got.append(handle.read())

    thread = threading.Thread(target=read, daemon=True)
    thread.start()
    return thread


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
@pytest.mark.parametrize("through_a_link", [False, True], ids=["fifo", "link-to-fifo"])
def test_fifo_is_written_to_and_stays_a_fifo(run_cli, tmp_path, through_a_link):
    """A FIFO, or a link to one (as /dev/stdout is a link to the process's pipe), is written in place."""
    fifo = tmp_path / "out.fifo"
    os.mkfifo(fifo)
    target = fifo
    if through_a_link:
        target = tmp_path / "stdout"
        target.symlink_to(fifo)
    got: list[bytes] = []
    thread = _reader(fifo, got)
    r = run_cli(*ANALYZE, "-o", target)
    thread.join(timeout=10)
    assert r.code == 0, r.err
    assert got and got[0].decode() == _analysis(run_cli)
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode) and target.exists()
    assert _siblings(tmp_path, "out.fifo", target.name) == []  # no temporary file was made


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
def test_non_regular_file_is_never_renamed_over(tmp_path, monkeypatch):
    fifo = tmp_path / "out.fifo"
    os.mkfifo(fifo)

    def no_replace(src, dst):  # the atomic path would call this; a FIFO must not take it
        raise AssertionError(f"os.replace({src}, {dst}) on a FIFO")

    monkeypatch.setattr(os, "replace", no_replace)
    got: list[bytes] = []
    thread = _reader(fifo, got)
    write_text_atomic(fifo, b"\x00binary\xff")
    thread.join(timeout=10)
    assert got == [b"\x00binary\xff"] and stat.S_ISFIFO(os.lstat(fifo).st_mode)


# ---- permissions --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("mask, mode", [(0o022, 0o644), (0o077, 0o600), (0o002, 0o664)])
def test_new_file_gets_the_mode_the_umask_gives(run_cli, tmp_path, umask, mask, mode):
    umask(mask)
    out = tmp_path / "new.json"
    r = run_cli(*ANALYZE, "-o", out)
    assert r.code == 0, r.err
    assert stat.S_IMODE(out.stat().st_mode) == mode


def test_existing_file_keeps_its_mode(tmp_path, umask):
    umask(0o022)
    out = tmp_path / "kept.txt"
    out.write_text("old")
    out.chmod(0o640)  # neither what the umask gives (0644) nor what a bare temporary file has (0600)
    write_text_atomic(out, "new")
    assert out.read_text() == "new" and stat.S_IMODE(out.stat().st_mode) == 0o640


# ---- failures: one message, exit 2, no temporary file left ------------------------------------------------


def test_interrupted_write_removes_the_temporary_file_and_keeps_the_old_one(tmp_path, monkeypatch):
    out = tmp_path / "r.json"
    out.write_text("old")

    def interrupt(fd):
        raise KeyboardInterrupt

    monkeypatch.setattr(os, "fsync", interrupt)
    with pytest.raises(KeyboardInterrupt):
        write_text_atomic(out, "new")
    assert out.read_text() == "old"
    assert _siblings(tmp_path, "r.json") == []


def test_failed_write_is_one_input_error_naming_the_path(run_cli, tmp_path, monkeypatch):
    out = tmp_path / "r.json"
    out.write_text(OLD_ANALYSIS)

    def full(src, dst):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", full)
    r = run_cli(*ANALYZE, "-o", out)
    assert r.code == 2
    assert r.err.strip() == f"error: -o {out}: cannot write: No space left on device"
    assert out.read_text() == OLD_ANALYSIS and _siblings(tmp_path, "r.json") == []


def test_folder_is_refused_by_the_option(run_cli, tmp_path):
    r = run_cli(*ANALYZE, "-o", tmp_path)
    assert r.code == 2 and "is a directory" in r.err and "Traceback" not in r.err


def test_folder_behind_a_symlink_is_refused_by_the_writer(tmp_path):
    from roofline.cli.common import write_output

    link = tmp_path / "looks_like_a_file.json"
    link.symlink_to(tmp_path)
    with pytest.raises(InputError, match=r"cannot write: it is a folder; give a file name"):
        write_output(link, "x")
    assert link.is_symlink() and _siblings(tmp_path, link.name) == []


def test_missing_folder_is_one_message(run_cli, tmp_path):
    out = tmp_path / "no" / "such" / "out.json"
    r = run_cli(*ANALYZE, "-o", out)
    assert r.code == 2
    assert r.err.strip() == f"error: -o {out}: cannot write: No such file or directory"


def test_lone_surrogate_in_text_is_written_not_a_crash(tmp_path):
    out = tmp_path / "s.json"
    write_text_atomic(out, '{"name": "a\ud800b"}\n')  # what json.loads gives for "a\\ud800b"
    assert json.loads(out.read_text(encoding="utf-8")) == {"name": "a\ud800b"}


@pytest.mark.skipif(not Path("/dev/stdout").exists(), reason="needs /dev/stdout")
def test_dev_stdout_redirected_to_a_file_is_written_as_the_stream(tmp_path):
    """/dev/stdout is a link to the process's own descriptor: written as the stream (`> log` gets the document),
    not refused as a symlink and not replaced by a rename."""
    import subprocess
    import sys

    log = tmp_path / "log.json"
    with open(log, "wb") as sink:
        done = subprocess.run([sys.executable, "-m", "roofline", *map(str, ANALYZE), "-o", "/dev/stdout"],
                              stdout=sink, stderr=subprocess.PIPE, timeout=60)
    assert done.returncode == 0, done.stderr
    assert json.loads(log.read_text())["schema"] == "roofline/analysis/v1"
    assert _siblings(tmp_path, "log.json") == []
