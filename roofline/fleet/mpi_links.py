"""MPI for `roofline fleet links`: the control channel every engine agrees through, the node split that tells
intra-node from inter-node ranks, and the NumPy engine (mpi4py's Allreduce, Allgather, Reduce_scatter_block and
Sendrecv on host buffers), which measures the host transport MPI uses (shared memory within a node, the network
between nodes) and runs anywhere MPI does, CI included.

mpi4py is imported here and in roofline.fleet.mpi only, and only once a launch (or --backend numpy) asks for it.
"""

from __future__ import annotations

import os
import time
from typing import Any

from roofline.fleet import collectives as cv
from roofline.fleet.identity import cpu_model

# Test-only (tests/test_fleet_links.py): split the ranks of one host into this many pretend nodes (consecutive
# blocks of ranks), so a localhost job has an inter-node scope and several intra-node groups. Not an interface.
TEST_NODES = "ROOFLINE_FLEET_TEST_NODES"


class MpiControl:
    """The control of a group: an mpi4py communicator's pickled collectives (small objects only)."""

    def __init__(self, comm: Any, node_tag: str | None = None):
        self.comm = comm
        self.rank = comm.Get_rank()
        self.size = comm.Get_size()
        self.node_tag = node_tag  # set on a pretend node (TEST_NODES): its hosts read 'host#1'

    def allgather(self, value: Any) -> list[Any]:
        return list(self.comm.allgather(value))

    def gather(self, value: Any) -> list[Any] | None:
        got = self.comm.gather(value, root=0)
        return None if got is None else list(got)

    def bcast(self, value: Any) -> Any:
        return self.comm.bcast(value, root=0)

    def barrier(self) -> None:
        self.comm.Barrier()


def world() -> MpiControl:
    from mpi4py import MPI  # lazy: mpi4py is a start-up cost only this path pays

    return MpiControl(MPI.COMM_WORLD)


def node_group(control: MpiControl) -> MpiControl:
    """The ranks that share this rank's node (MPI's shared-memory split): its size says whether the job is all on
    one node, its rank is the node-local rank (the GPU this rank takes)."""
    from mpi4py import MPI  # lazy: mpi4py is a start-up cost only this path pays

    pretend = os.environ.get(TEST_NODES, "").strip()
    if pretend.isdigit() and int(pretend) > 1:
        color = control.rank * int(pretend) // control.size
        return MpiControl(control.comm.Split(color, key=control.rank), node_tag=str(color))
    return MpiControl(control.comm.Split_type(MPI.COMM_TYPE_SHARED, key=control.rank))


def watchdog_comm(control: MpiControl) -> Any:
    """A duplicate of the control's communicator for the watchdog thread alone (roofline.fleet.watchdog), whose
    messages must pass while the main thread is blocked in a collective: that needs MPI_THREAD_MULTIPLE (mpi4py
    asks for it); None where this MPI does not give it. Every rank calls it (the duplicate is collective)."""
    from mpi4py import MPI  # lazy: mpi4py is a start-up cost only this path pays

    comm = control.comm.Dup()
    if MPI.Query_thread() < MPI.THREAD_MULTIPLE:
        return None
    return comm


def library_version() -> str:
    """'Open MPI v4.1.4' (the first line of MPI_Get_library_version)."""
    from mpi4py import MPI  # lazy: mpi4py is a start-up cost only this path pays

    text = MPI.Get_library_version().strip().splitlines()
    return (text[0] if text else "MPI").split(",")[0].strip()


class NumpyEngine:
    """Collectives through MPI on host memory (float32 NumPy arrays, summed with MPI_SUM)."""

    name = "numpy"

    def __init__(self, control: MpiControl):
        import numpy  # lazy: numpy is a start-up cost only this path pays

        self.xp = numpy
        self.control = control
        self.comm = control.comm
        self._op: Any = None

    def identity(self) -> dict[str, Any]:
        """A CPU has no index, UUID or bus id: its model names it."""
        return {"index": None, "name": "host CPU", "uuid": None, "pci_bus_id": None, "cpu": cpu_model()}

    def transport(self) -> str:
        return f"MPI ({library_version()}), host memory"

    def prepare(self, s: cv.Shape, rank: int) -> None:
        from mpi4py import MPI  # lazy: mpi4py is a start-up cost only this path pays

        np = self.xp
        self.send = cv.send_buffer(np, s, rank)
        self.recv = np.full(s.recv_count, np.nan, dtype=np.float32)  # poisoned: an unwritten element never matches
        comm, send, recv = self.comm, self.send, self.recv
        if s.collective == cv.ALL_REDUCE:
            self._op = lambda: comm.Allreduce(send, recv, op=MPI.SUM)
        elif s.collective == cv.ALL_GATHER:
            self._op = lambda: comm.Allgather(send, recv)
        elif s.collective == cv.REDUCE_SCATTER:
            self._op = lambda: comm.Reduce_scatter_block(send, recv, op=MPI.SUM)
        else:
            to, source = cv.ring_peers(rank, s.ranks)
            self._op = lambda: comm.Sendrecv(send, dest=to, sendtag=25, recvbuf=recv, source=source, recvtag=25)

    def launch(self) -> None:
        self._op()

    def sync(self) -> None:
        return None  # MPI's blocking calls have ended when they return

    def output(self) -> Any:
        return self.recv

    def timed(self, iters: int, warmup: int) -> list[float]:
        """Each run between a barrier and its end on this rank (host clock): the barrier lines the ranks up, so a
        run measures the collective, not the skew of the ranks' arrival."""
        for _ in range(warmup):
            self._op()
        out = []
        for _ in range(iters):
            self.comm.Barrier()
            start = time.perf_counter()
            self._op()
            out.append(time.perf_counter() - start)
        return out

    def release(self) -> None:
        self.send = self.recv = self._op = None
