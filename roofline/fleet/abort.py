"""Ending a whole MPI job from one rank: MPI_Abort, with a backstop for an MPI_Abort that does not return.

A rank that hung (or a rank's bug) leaves the others waiting for ever, in MPI_Finalize or in a collective, and the
launcher waits for every rank: so the rank that knows ends the job with MPI_Abort, which asks the launcher to kill
every rank. Open MPI has shipped versions whose aborting process itself stalls inside MPI_Abort, waiting on its
help message or on the runtime's abort call (open-mpi/ompi#3225, #5528), and the C exit() at its end runs the
libraries' exit handlers (a BLAS thread pool's, CUDA's), any of which can block: then nothing ends and the job
outlives every deadline the user set. So two backstops are armed first: a thread that leaves with os._exit(code)
ABORT_GRACE_S after the ask (it needs Python's lock, which mpi4py releases around MPI calls), and the kernel's
alarm twice as late, which needs nothing (SIGALRM's default action ends the process). A rank that ends without
MPI_Finalize makes the launcher end the job just the same, with a plainer message.
"""

from __future__ import annotations

import math
import os
import signal
import sys
import threading

ABORT_GRACE_S = 10.0  # s: long enough for MPI_Abort's message and kill to go out on a loaded node


def flush_streams() -> None:
    """Flush stdout and stderr, ignoring a closed or broken stream: what was said must reach the launcher first."""
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass


def arm_backstop(code: int, grace_s: float = ABORT_GRACE_S) -> None:
    """End this process after grace_s whatever its threads do: os._exit(code) from a daemon thread, and SIGALRM from
    the kernel at twice grace_s should that thread never get Python's lock."""
    timer = threading.Timer(grace_s, os._exit, args=(code,))
    timer.daemon = True
    timer.start()
    # Not faulthandler.dump_traceback_later: the links watchdog owns that one timer (each step re-arms it and
    # finish() cancels it), and an abort asked from the watchdog thread must not be cancelled by the main thread.
    signal.alarm(max(1, math.ceil(2 * grace_s)))


def abort(code: int = 1, grace_s: float = ABORT_GRACE_S) -> None:
    """End every rank of the job with exit status `code`; does not return."""
    from mpi4py import MPI  # lazy: mpi4py is a start-up cost only this path pays

    flush_streams()
    arm_backstop(code, grace_s)
    MPI.COMM_WORLD.Abort(code)
    os._exit(code)  # an MPI_Abort that returned (it may not, by the standard): leave all the same
