"""Are we one rank of a distributed launch (mpirun, srun, the MPI Operator)? Read from the launcher's environment,
so the question costs no import: without a launcher (or with one rank) nothing about a command changes."""

from __future__ import annotations

import importlib.util
import os
import time
from typing import Mapping

from roofline.errors import InputError

# Each launcher's variable for the number of ranks in the job: Open MPI, PMI-1/2 (MPICH, Slurm's --mpi=pmi2),
# MVAPICH2. Slurm's PMIx plugin sets PMIX_RANK but no size: there SLURM_NTASKS is the job's rank count.
SIZE_VARIABLES = ("OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "MV2_COMM_WORLD_SIZE")

# Test-only fault injection (tests/test_fleet.py): the rank named fails (raises) or hangs (sleeps) in its work.
# Not an interface: nothing outside the tests sets them.
TEST_FAIL_RANK = "ROOFLINE_FLEET_TEST_FAIL_RANK"
TEST_HANG_RANK = "ROOFLINE_FLEET_TEST_HANG_RANK"


def launched_size(environ: Mapping[str, str] | None = None) -> int:
    """The job's rank count as the launcher announced it; 1 when there is no launcher (or it says nothing we read)."""
    env = os.environ if environ is None else environ
    for name in SIZE_VARIABLES:
        value = env.get(name, "").strip()
        if value.isdigit():
            return max(1, int(value))
    if "PMIX_RANK" in env and env.get("SLURM_NTASKS", "").strip().isdigit():
        return max(1, int(env["SLURM_NTASKS"]))
    return 1


# Any of these says a launcher started this process, even as its only rank: Open MPI (which forwards each rank's
# output through a pseudo-terminal), PMI-1/2 and PMIx (MPICH, Slurm's plugins), srun. roofline.render.console reads
# it: a launcher's pseudo-terminal is no terminal a person watches, so it gets no colour and no spinner.
LAUNCHER_VARIABLES = ("OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "PMI_RANK", "PMIX_RANK", "SLURM_PROCID")


def under_launcher(environ: Mapping[str, str] | None = None) -> bool:
    """Whether an MPI launcher (mpirun, srun) started this process, with one rank or many (under_mpi: many)."""
    env = os.environ if environ is None else environ
    return any(env.get(name) for name in LAUNCHER_VARIABLES)


def mpi4py_installed() -> bool:
    """Whether mpi4py can be imported, without importing it (that would start MPI)."""
    return importlib.util.find_spec("mpi4py") is not None


def under_mpi(environ: Mapping[str, str] | None = None) -> bool:
    """True when this process is one of several ranks of a launch: the fleet path. A launch of several ranks without
    mpi4py is refused (roofline.fleet.mpi.require_mpi4py), never run as N independent copies writing one file."""
    return launched_size(environ) > 1


def injected_fault(rank: int, environ: Mapping[str, str] | None = None) -> str | None:
    """'fail' or 'hang' when a test asked this rank to misbehave (TEST_FAIL_RANK / TEST_HANG_RANK); else None."""
    env = os.environ if environ is None else environ
    for kind, name in (("fail", TEST_FAIL_RANK), ("hang", TEST_HANG_RANK)):
        wanted = {p.strip() for p in env.get(name, "").split(",") if p.strip()}
        if str(rank) in wanted:
            return kind
    return None


_LAUNCHER = os.getppid()  # the process that started this one, read at import (as a rank starts, mpirun is there)


def hang_for_test() -> None:
    """A test's injected hang: this rank stops answering, but never outlives its launcher (a test that timed out
    kills mpirun; a rank left spinning under PID 1 would load every test after it)."""
    while os.getppid() == _LAUNCHER:
        time.sleep(1)
    os._exit(1)


# How the results travel to rank 0 (roofline.fleet.mpi): 'node' (the default) gathers each node's ranks at its
# leader first, 'flat' sends every rank's straight to rank 0; the same files either way (docs/fleet.md measures both).
GATHER_VARIABLE = "ROOFLINE_FLEET_GATHER"
GATHER_MODES = ("node", "flat")
# Test and benchmark only: split one host's ranks into nodes of this many ranks (named host~n0, host~n1, ...), so
# the two-level gather and the per-node outliers run on one machine. Not an interface for real jobs.
TEST_NODE_SIZE = "ROOFLINE_FLEET_TEST_NODE_SIZE"


def gather_mode(environ: Mapping[str, str] | None = None) -> str:
    """'node' or 'flat' from ROOFLINE_FLEET_GATHER (default 'node'); another value is an input error."""
    env = os.environ if environ is None else environ
    value = env.get(GATHER_VARIABLE, "").strip().lower() or "node"
    if value not in GATHER_MODES:
        raise InputError(f"{GATHER_VARIABLE}={value[:40]!r}: expected one of {', '.join(GATHER_MODES)}")
    return value


def simulated_node_size(environ: Mapping[str, str] | None = None) -> int | None:
    """The ranks per simulated node (TEST_NODE_SIZE), or None for the real nodes."""
    env = os.environ if environ is None else environ
    value = env.get(TEST_NODE_SIZE, "").strip()
    return int(value) if value.isdigit() and int(value) > 0 else None
