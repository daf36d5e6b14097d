"""`roofline profile` leaves nothing behind: ncu, the program and whatever the program started run in a process group
of their own, ended whole on --timeout, Ctrl-C and SIGTERM, and when a background child keeps ncu's output open
after ncu exits; ncu's temporary report goes with them. The program's output is never held in memory. With the
fake ncu (tests/data/ncu/fake/ncu), which runs the program as ncu does, its output going where ncu's goes."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import tracemalloc
from pathlib import Path

import pytest

from roofline.ncu.program import GRACE, LEFTOVER, run_profiled
from conftest import NCU

FAKE = NCU / "fake"
GPT2 = NCU / "h200_gpt2_profile.csv"
ROOT = Path(__file__).resolve().parents[1]

# The program: starts a child that sleeps (holding standard output and error, which are ncu's), writes both pids
# to argv[1], then sleeps itself too when argv[2] is 'wait', or exits at once, leaving the child behind.
BACKGROUND = ("import os, subprocess, sys, time\n"
              "child = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(120)'])\n"
              "open(sys.argv[1] + '.tmp', 'w').write(f'{os.getpid()} {child.pid}')\n"
              "os.replace(sys.argv[1] + '.tmp', sys.argv[1])\n"
              "print('started', flush=True)\n"
              "if sys.argv[2] == 'wait':\n"
              "    time.sleep(120)\n")


def alive(pid: int) -> bool:
    """Whether the process still runs (a zombie waiting for its parent to reap it has ended)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return False


def pids(path: Path) -> list[int]:
    return [int(p) for p in path.read_text().split()]


def gone(numbers: list[int], within: float = 5.0) -> bool:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        if not any(alive(p) for p in numbers):
            return True
        time.sleep(0.05)
    return False


@pytest.fixture
def fake_ncu(monkeypatch: pytest.MonkeyPatch, private_tmpdir: Path) -> Path:
    """The fake ncu on PATH; the temporary folder (where ncu's report goes) is the returned one, empty."""
    monkeypatch.setenv("PATH", f"{FAKE}:{os.environ['PATH']}")
    monkeypatch.setenv("FAKE_NCU_CSV", str(GPT2))
    monkeypatch.delenv("FAKE_NCU_ARGS", raising=False)
    monkeypatch.delenv("FAKE_NCU_STDERR", raising=False)
    return private_tmpdir


def test_timeout_ends_the_program_and_its_background_child(run_cli, fake_ncu: Path, tmp_path: Path) -> None:
    record, out = tmp_path / "pids", tmp_path / "never.json"
    began = time.monotonic()
    code, stdout, err = run_cli("profile", "--timeout", "2", "-o", out, "--",
                                sys.executable, "-c", BACKGROUND, record, "wait")
    took = time.monotonic() - began
    assert code == 5, err
    assert took < 2 + GRACE + 5, took  # bounded: not the 120 s the program and its child would sleep
    assert "--timeout 2" in err and "Traceback" not in err
    assert gone(pids(record)), "the program or its child outlived the timeout"
    assert not out.exists() and list(fake_ncu.iterdir()) == []  # ncu's report and folder removed


def test_a_background_child_holding_ncus_output_does_not_hang_the_run(run_cli, fake_ncu: Path,
                                                                      tmp_path: Path) -> None:
    """The program exits and ncu with it, but a child it left keeps ncu's output open: without a timeout the run
    used to wait for the child forever (here, 120 s). It now ends the child and imports what ncu wrote."""
    record, out = tmp_path / "pids", tmp_path / "ok.json"
    began = time.monotonic()
    code, _, err = run_cli("profile", "-o", out, "--", sys.executable, "-c", BACKGROUND, record, "exit")
    assert code in (0, None), err
    assert time.monotonic() - began < LEFTOVER + GRACE + 10
    assert out.is_file() and gone(pids(record)) and list(fake_ncu.iterdir()) == []


@pytest.mark.parametrize("signum, code", [(signal.SIGTERM, 143), (signal.SIGINT, 130)])
def test_sigterm_and_ctrl_c_end_everything(fake_ncu: Path, tmp_path: Path, signum: int, code: int) -> None:
    record, out = tmp_path / "pids", tmp_path / "never.json"
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    proc = subprocess.Popen([sys.executable, "-m", "roofline", "profile", "-o", str(out), "--", sys.executable,
                             "-c", BACKGROUND, str(record), "wait"], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 30
        while not record.exists() and time.monotonic() < deadline and proc.poll() is None:
            time.sleep(0.05)
        assert record.exists(), proc.communicate(timeout=5)
        proc.send_signal(signum)
        _, err = proc.communicate(timeout=GRACE + 10)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == code, err
    assert "Traceback" not in err
    assert gone(pids(record)), "the program or its child outlived roofline"
    assert not out.exists() and list(fake_ncu.iterdir()) == []


@pytest.mark.parametrize("value", ["nan", "inf", "-inf", "-1", "0.5"])
def test_timeout_must_be_finite_seconds(run_cli, value: str) -> None:
    code, _, err = run_cli("profile", "--timeout", value, "--", "true")
    assert code == 2 and "--timeout" in err and "Traceback" not in err


def test_the_programs_output_is_not_held_in_memory() -> None:
    """64 MiB on standard output (one line of 32 MiB, then short lines) and 32 MiB on standard error: what is kept
    is the last lines, each cut short, and memory stays a few MiB."""
    program = ("import sys\n"
               "sys.stdout.write('x' * (32 << 20) + '\\n')\n"
               "for _ in range(1 << 15): sys.stdout.write('y' * 1023 + '\\n')\n"
               "for _ in range(1 << 15): sys.stderr.write('e' * 1023 + '\\n')\n"
               "sys.stderr.write('the last line\\n')\n")
    tracemalloc.start()
    try:
        run = run_profiled([sys.executable, "-c", program])
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert run.returncode == 0
    assert peak < 16 << 20, f"peak {peak / 2**20:.0f} MiB"
    assert run.stderr.rstrip().endswith("the last line") and len(run.stdout) < 2 << 20
