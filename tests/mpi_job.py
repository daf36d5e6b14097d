"""How the fleet tests launch `mpirun -n N roofline ...` on localhost: one launcher, one deadline, no orphans.

Each job runs in its own session; past its deadline the whole session (mpirun and every rank, a hung or frozen one
included) is killed, and the failure shows the tail of what the job said and the process tree as it stood, so a
hang in CI can be read from its log rather than guessed."""

from __future__ import annotations

import functools
import importlib.util
import os
import shutil
import signal
import subprocess
import sys
import time
import warnings
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
MPI_TIMEOUT = 120  # s: no mpirun may outlive this, whatever a rank does
STUCK_S = 15.0  # s: a launcher that outlives every one of its ranks this long will not exit (see run_job)
MPI_ENV = {"OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1",
           "OMPI_MCA_rmaps_base_oversubscribe": "1",
           # containers often forbid the cross-memory attach Open MPI's shared-memory transport uses for big messages
           "OMPI_MCA_btl_vader_single_copy_mechanism": "none"}
_PROBE = ("from mpi4py import MPI; c = MPI.COMM_WORLD; "
          "x = c.bcast(bytes(1 << 20) if c.rank == 0 else None); assert len(x) == 1 << 20; c.Barrier()")


@functools.lru_cache(maxsize=1)
def mpi_missing() -> str | None:
    """Why the MPI tests cannot run here, or None: mpirun, mpi4py, and two ranks that can start and talk (a
    container whose MPI cannot start ranks is a missing tool, not a failure of ours)."""
    if shutil.which("mpirun") is None:
        return "needs Open MPI's mpirun (apt-get install openmpi-bin libopenmpi-dev)"
    if importlib.util.find_spec("mpi4py") is None:
        return "needs mpi4py (pip install -e '.[mpi]' in the gpu-roofline checkout)"
    try:
        probe = run_job(["mpirun", "-n", "2", "--oversubscribe", sys.executable, "-c", _PROBE], Path.cwd(),
                        limit=60, fail=False)
    except (subprocess.TimeoutExpired, OSError) as exc:
        return f"mpirun cannot start 2 ranks here: {exc}"
    if probe.returncode != 0:
        return f"mpirun cannot start 2 ranks here: {probe.stderr.strip()[-300:]}"
    return None


def _tree(session: int) -> str:
    """The processes of one session with their state and kernel wait channel: where a hung job stood."""
    try:
        listing = subprocess.run(["ps", "-s", str(session), "-o", "pid,ppid,stat,etime,wchan:24,args"],
                                 capture_output=True, text=True, timeout=10).stdout
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"(no process listing: {exc})"
    return "\n".join(line[:200] for line in listing.splitlines())


def _others(session: int, launcher: int) -> list[str]:
    """The states (R, S, Z, ...) of the session's processes other than the launcher, read from /proc."""
    states = []
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit() or int(entry.name) == launcher:
            continue
        try:
            text = Path(entry.path, "stat").read_text()
        except OSError:
            continue
        fields = text[text.rindex(")") + 2:].split()  # state, ppid, pgrp, session, ...
        if int(fields[3]) == session:
            states.append(fields[0])
    return states


def _attempt(cmd: list[str], cwd: Path, environ: dict[str, str], limit: float, stuck_s: float
             ) -> tuple[str, subprocess.CompletedProcess]:
    """('done' | 'stuck' | 'late', the job's result): 'stuck' when the launcher outlived every one of its ranks by
    stuck_s (all of them exited, unreaped), 'late' past `limit`; either way the session is killed whole."""
    proc = subprocess.Popen(cmd, cwd=cwd, env=environ, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)
    started, all_exited_since = time.monotonic(), None
    outcome, tree = "done", ""
    try:
        while True:
            try:
                out, err = proc.communicate(timeout=1.0)
                break
            except subprocess.TimeoutExpired:
                pass
            now = time.monotonic()
            others = _others(proc.pid, proc.pid)
            exited = bool(others) and all(state == "Z" for state in others)
            all_exited_since = (all_exited_since or now) if exited else None
            stuck = all_exited_since is not None and now - all_exited_since > stuck_s
            if stuck or now - started > limit:
                outcome, tree = ("stuck" if stuck else "late"), _tree(proc.pid)
                os.killpg(proc.pid, signal.SIGKILL)
                out, err = proc.communicate()
                break
    finally:
        try:
            os.killpg(proc.pid, signal.SIGKILL)  # whatever of the session outlived the launcher: no orphan ranks
        except ProcessLookupError:
            pass
        proc.wait()
    result = subprocess.CompletedProcess(cmd, proc.returncode, out, err)
    result.tree = tree  # type: ignore[attr-defined]
    return outcome, result


def run_job(cmd: list[str], cwd: Path, env: dict[str, str] | None = None, limit: float = MPI_TIMEOUT,
            fail: bool = True, stuck_s: float = STUCK_S) -> subprocess.CompletedProcess:
    """Run cmd in its own session with the MPI test variables. Past `limit` seconds the session is killed whole and
    the test fails with the job's last words and process tree (or, fail=False, TimeoutExpired is raised).

    A launcher stuck after every rank exited is Open MPI's own defect, not the job's: Open MPI 4.1's mpirun was seen
    here (and in CI) blocked on a lock with its four ranks dead and unreaped after MPI_Abort, about once in ten runs
    of a loaded 2-core machine (as in open-mpi/ompi#433 and #1136). Such a job is run once more, with a warning;
    stuck twice, the test fails as a late one does."""
    environ = {**os.environ, **MPI_ENV, "PYTHONPATH": str(ROOT), **(env or {})}
    environ.pop("COLUMNS", None)
    outcome, result = _attempt(cmd, cwd, environ, limit, stuck_s)
    if outcome == "stuck":
        warnings.warn(f"mpirun outlived all its ranks by {stuck_s:g} s (an Open MPI launcher defect); running the "
                      f"job once more: {' '.join(cmd[:8])} ...\n{result.tree}", stacklevel=2)
        outcome, result = _attempt(cmd, cwd, environ, limit, stuck_s)
    if outcome == "done":
        return result
    if not fail:
        raise subprocess.TimeoutExpired(cmd, limit, result.stdout, result.stderr)
    what = f"ran past {limit:g} s" if outcome == "late" else f"had its launcher outlive all its ranks by {stuck_s:g} s"
    pytest.fail(f"the job {what}: {' '.join(cmd[:8])} ...\n--- its last words:\n{result.stderr[-3000:]}"
                f"\n--- its processes then:\n{result.tree}")


def mpirun(tmp: Path, args: tuple[str, ...] | list[str], ranks: int = 4, env: dict[str, str] | None = None,
           limit: float = MPI_TIMEOUT) -> subprocess.CompletedProcess:
    """`mpirun -n RANKS roofline ARGS...` in tmp, the variables of `env` forwarded to every rank."""
    forward = [a for name in (env or {}) for a in ("-x", name)]
    cmd = ["mpirun", "-n", str(ranks), "--oversubscribe", *forward, sys.executable, "-m", "roofline", *args]
    return run_job(cmd, tmp, env, limit)

