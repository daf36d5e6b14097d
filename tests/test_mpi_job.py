"""The fleet tests' launcher (tests/mpi_job.py): a launcher that outlives all its ranks is caught and the job run
once more; stuck twice, or past its deadline, the test fails with the job's last words and process tree."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from mpi_job import run_job

# A launcher that starts a "rank" which exits at once, then never reaps it and never exits: Open MPI 4.1's mpirun
# as seen after MPI_Abort. With a marker file present it behaves (reaps the rank and exits 0).
_LAUNCHER = """
import os, subprocess, sys, time
rank = subprocess.Popen([sys.executable, "-c", "pass"])
if os.path.exists("behave"):
    rank.wait(); print("ran"); sys.exit(0)
open("behave", "w").close() if sys.argv[1] == "once" else None
print("rank started", flush=True); print("stuck", file=sys.stderr, flush=True)
time.sleep(3600)
"""


def test_a_launcher_stuck_once_is_run_again(tmp_path: Path) -> None:
    with pytest.warns(UserWarning, match="mpirun outlived all its ranks by 1 s"):
        result = run_job([sys.executable, "-c", _LAUNCHER, "once"], tmp_path, limit=60, stuck_s=1)
    assert result.returncode == 0 and result.stdout == "ran\n"


def test_a_launcher_stuck_twice_fails_with_its_processes(tmp_path: Path) -> None:
    with pytest.warns(UserWarning), pytest.raises(pytest.fail.Exception) as failed:
        run_job([sys.executable, "-c", _LAUNCHER, "always"], tmp_path, limit=60, stuck_s=1)
    text = str(failed.value)
    assert "had its launcher outlive all its ranks by 1 s" in text and "stuck" in text and "<defunct>" in text


def test_a_job_past_its_deadline_is_killed_whole(tmp_path: Path) -> None:
    sleeper = "import subprocess, sys, time; subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(600)']); " \
              "time.sleep(600)"
    with pytest.raises(pytest.fail.Exception, match="ran past 2 s"):
        run_job([sys.executable, "-c", sleeper], tmp_path, limit=2)
