"""The MPI engine: one rank per GPU, placed by the launcher (mpirun, srun, the MPI Operator); mpi4py is imported
here only, so nothing else pays for it.

Every rank runs the same work on its node-local GPU (the local rank, from the shared-memory split of COMM_WORLD).
Ranks other than 0 send rank 0 their identity as soon as they have it and then their document or their error, with
point-to-point isend; rank 0 runs its own share on a thread and meanwhile polls for messages (a non-blocking matched
probe) against a deadline, so a rank that fails is named with its error and a rank that hangs is named when the
deadline passes. No collective follows the start, so no rank can block the others' results: rank 0 writes what it
has and, when a rank hung, aborts the job so the launcher exits.
"""

from __future__ import annotations

import queue
import sys
import threading
import time
import traceback
from dataclasses import dataclass
from typing import Any, Callable

from roofline.errors import BackendUnavailable
from roofline.fleet.identity import host_name, rank_identity
from roofline.fleet.launch import TEST_FAIL_RANK, injected_fault, launched_size, mpi4py_installed
from roofline.fleet.merge import DONE, FAILED, HUNG, RankOutcome

TAG_IDENTITY = 2501
TAG_RESULT = 2502
POLL_S = 0.02

# work(device, on_identity) → results document; on_identity(device identity) before measuring.
Work = Callable[[int, Callable[[dict[str, Any]], None]], dict[str, Any]]


def require_mpi4py() -> None:
    """A launch of several ranks needs mpi4py: without it each rank would run alone and all would write one file."""
    if not mpi4py_installed():
        raise BackendUnavailable(f"this is one of {launched_size()} ranks of an MPI launch, but mpi4py is not "
                                 "installed, so the ranks cannot gather one results file",
                                 fix="pip install 'roofline[mpi]' (mpi4py, built against the cluster's MPI), "
                                     "or run without mpirun/srun")


@dataclass
class Place:
    """Where this rank runs: the world communicator, its rank and size, its node-local rank and the host."""

    comm: Any
    rank: int
    size: int
    local_rank: int
    host: str


def place() -> Place:
    """This rank's place in the job. Split_type is the one collective, at the start, before any work."""
    from mpi4py import MPI

    comm = MPI.COMM_WORLD
    local = comm.Split_type(MPI.COMM_TYPE_SHARED)
    local_rank = local.Get_rank()
    local.Free()
    return Place(comm, comm.Get_rank(), comm.Get_size(), local_rank, host_name())


def _guarded(work: Work, where: Place, device: int, on_identity: Callable[[dict[str, Any]], None]) -> tuple:
    """('done', document) or ('error', kind, message, traceback): a rank's failure becomes a message, never a crash.
    The test hooks act once the identity is out, so the failing or hung rank is named by host."""

    def identified(ident: dict[str, Any]) -> None:
        on_identity({**ident, **rank_identity(where.host, where.rank, where.local_rank, device, ident)})
        fault = injected_fault(where.rank)
        if fault == "fail":
            raise RuntimeError(f"injected failure ({TEST_FAIL_RANK}, test-only)")
        while fault == "hang":
            time.sleep(1)

    try:
        return ("done", work(device, identified))
    except BaseException as exc:  # noqa: BLE001 - every failure goes to rank 0, named by rank and host
        message = getattr(exc, "message", None) or f"{type(exc).__name__}: {exc}"
        return ("error", type(exc).__name__, str(message), traceback.format_exc())


def run(work: Work, timeout: float | None, on_event: Callable[[str, RankOutcome, int], None] = lambda *a: None,
        where: Place | None = None) -> tuple[Place, dict[int, RankOutcome] | None]:
    """Run `work` on this rank's GPU. Rank 0 gets every rank's outcome (done, failed or hung once `timeout` seconds
    have passed since the start); the others get None once their result is delivered.
    on_event(kind, outcome, finished) on rank 0: 'identity' or 'finished' as each rank reports."""
    where = where or place()
    device = where.local_rank
    if where.rank != 0:
        requests = []

        def send_identity(ident: dict[str, Any]) -> None:
            requests.append(where.comm.isend(ident, dest=0, tag=TAG_IDENTITY))

        requests.append(where.comm.isend(_guarded(work, where, device, send_identity), dest=0, tag=TAG_RESULT))
        for request in requests:
            request.wait()
        return where, None
    return where, _collect(work, where, device, timeout, on_event)


def _collect(work: Work, where: Place, device: int, timeout: float | None,
             on_event: Callable[[str, RankOutcome, int], None]) -> dict[int, RankOutcome]:
    """Rank 0: its own work on a thread, every rank's messages polled until all are in or the deadline passes."""
    from mpi4py import MPI

    deadline = None if timeout is None else time.monotonic() + timeout
    outcomes = {r: RankOutcome(r) for r in range(where.size)}
    own: queue.Queue = queue.Queue()
    threading.Thread(target=lambda: own.put((TAG_RESULT, _guarded(work, where, device,
                                                                  lambda i: own.put((TAG_IDENTITY, i))))),
                     name="roofline-rank0-work", daemon=True).start()
    finished = 0
    status = MPI.Status()
    while finished < where.size:
        got: list[tuple[int, int, Any]] = []
        while True:
            try:
                tag, value = own.get_nowait()
            except queue.Empty:
                break
            got.append((0, tag, value))
        while (message := where.comm.improbe(MPI.ANY_SOURCE, MPI.ANY_TAG, status=status)) is not None:
            source, tag = status.Get_source(), status.Get_tag()
            got.append((source, tag, message.recv()))
        for source, tag, value in got:
            out = outcomes[source]
            if tag == TAG_IDENTITY:
                out.identity = dict(value)
                on_event("identity", out, finished)
                continue
            if value[0] == "done":
                out.state, out.document = DONE, value[1]
            else:
                out.state, (out.kind, out.error, out.detail) = FAILED, value[1:]
            finished += 1
            on_event("finished", out, finished)
        if finished < where.size and deadline is not None and time.monotonic() > deadline:
            for out in outcomes.values():
                if out.state is None:
                    out.state = HUNG
            break
        if not got:
            time.sleep(POLL_S)
    return outcomes


def abort(code: int = 1) -> None:
    """End the whole job (a rank hung: it will not finish on its own, and the launcher waits for every rank)."""
    from mpi4py import MPI

    sys.stdout.flush()
    sys.stderr.flush()
    MPI.COMM_WORLD.Abort(code)
