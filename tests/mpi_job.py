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
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
MPI_TIMEOUT = 120  # s: no mpirun may outlive this, whatever a rank does
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
        return "needs mpi4py (pip install 'roofline[mpi]')"
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


def run_job(cmd: list[str], cwd: Path, env: dict[str, str] | None = None, limit: float = MPI_TIMEOUT,
            fail: bool = True) -> subprocess.CompletedProcess:
    """Run cmd in its own session with the MPI test variables; past `limit` seconds kill the session whole and fail
    the test with the job's last words and process tree (or, fail=False, raise TimeoutExpired)."""
    environ = {**os.environ, **MPI_ENV, "PYTHONPATH": str(ROOT), **(env or {})}
    environ.pop("COLUMNS", None)
    proc = subprocess.Popen(cmd, cwd=cwd, env=environ, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)
    try:
        out, err = proc.communicate(timeout=limit)
    except subprocess.TimeoutExpired:
        tree = _tree(proc.pid)
        os.killpg(proc.pid, signal.SIGKILL)
        out, err = proc.communicate()
        if not fail:
            raise
        pytest.fail(f"the job ran past {limit:g} s: {' '.join(cmd[:8])} ...\n--- its last words:\n{err[-3000:]}"
                    f"\n--- its processes when the deadline passed:\n{tree}")
    finally:
        try:
            os.killpg(proc.pid, signal.SIGKILL)  # whatever of the session outlived the launcher: no orphan ranks
        except ProcessLookupError:
            pass
        proc.wait()
    return subprocess.CompletedProcess(cmd, proc.returncode, out, err)


def mpirun(tmp: Path, args: tuple[str, ...] | list[str], ranks: int = 4, env: dict[str, str] | None = None,
           limit: float = MPI_TIMEOUT) -> subprocess.CompletedProcess:
    """`mpirun -n RANKS roofline ARGS...` in tmp, the variables of `env` forwarded to every rank."""
    forward = [a for name in (env or {}) for a in ("-x", name)]
    cmd = ["mpirun", "-n", str(ranks), "--oversubscribe", *forward, sys.executable, "-m", "roofline", *args]
    return run_job(cmd, tmp, env, limit)

