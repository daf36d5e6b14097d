"""The MPI engine: one rank per GPU, placed by the launcher (mpirun, srun, the MPI Operator); mpi4py is imported
here only, so nothing else pays for it.

Every rank runs the same work on its node-local GPU (the local rank, from the shared-memory split of COMM_WORLD).
The results travel in two levels (docs/fleet.md): each rank sends its identity as soon as it has it, then its
document or its error, to its group's leader (point-to-point isend); a leader runs its own share on a thread and
meanwhile polls for its group's messages (a non-blocking matched probe) against a deadline. With `node` gathering
(the default) a group is one node (the shared-memory communicator) and each node's leader forwards small notices as
ranks report (identities, done or failed) and, once its node is finished or its deadline passed, one bundle of its
node's results to rank 0, which leads its own node the same way. With `flat` gathering (ROOFLINE_FLEET_GATHER=flat)
the one group is the whole job and every rank sends to rank 0 directly.

No collective follows the start (the splits and a gather of small integers), so no rank can block the others'
results: a rank that fails is named with its error, a rank that hangs is named when the deadline passes, rank 0
writes what it has and, when a rank hung, aborts the job so the launcher exits.
"""

from __future__ import annotations

import queue
import threading
import time
import traceback
from dataclasses import dataclass, field
from typing import Any, Callable

from roofline.errors import BackendUnavailable, install_extra
from roofline.fleet.identity import host_name, rank_identity
from roofline.fleet.launch import (TEST_FAIL_RANK, gather_mode, hang_for_test, injected_fault, launched_size,
                                   mpi4py_installed, simulated_node_size)
from roofline.fleet.merge import DONE, FAILED, HUNG, RankOutcome

TAG_IDENTITY = 2501  # a rank → its leader: its identity, before it measures
TAG_RESULT = 2502  # a rank → its leader: ('done', document) or ('error', kind, message, traceback)
TAG_EVENTS = 2503  # a leader → rank 0: [(rank, TAG_IDENTITY, identity) | (rank, TAG_RESULT, short outcome)]
TAG_BUNDLE = 2504  # a leader → rank 0, once: {rank: outcome} for every rank of its node ('hung',) for one still out
POLL_S = 0.02
GRACE_S = 5.0  # past --timeout, how long rank 0 still waits for a node leader's bundle (sent at --timeout)

# work(device, on_identity) → results document; on_identity(device identity) before measuring.
Work = Callable[[int, Callable[[dict[str, Any]], None]], dict[str, Any]]


def require_mpi4py() -> None:
    """A launch of several ranks needs mpi4py: without it each rank would run alone and all would write one file."""
    if not mpi4py_installed():
        raise BackendUnavailable(f"this is one of {launched_size()} ranks of an MPI launch, but mpi4py is not "
                                 "installed, so the ranks cannot gather one results file",
                                 fix=f"{install_extra('mpi')} (mpi4py, built against the cluster's MPI), "
                                     "or run without mpirun/srun")


@dataclass
class Place:
    """Where this rank runs: the world communicator, its rank and size, its node-local rank and the host; and the
    first level of the gather: its group's communicator, the group's world ranks (by group rank) and, on rank 0,
    the other groups' leaders."""

    comm: Any
    rank: int
    size: int
    local_rank: int
    host: str
    group: Any = None  # the node's ranks ('node' gathering) or COMM_WORLD ('flat'); None: the world
    members: list[int] = field(default_factory=list)
    leaders: list[int] = field(default_factory=list)
    gather: str = "flat"
    roster: dict[int, dict[str, Any]] = field(default_factory=dict)  # rank 0: each rank's host and local rank

    def __post_init__(self) -> None:
        if self.group is None:
            self.group = self.comm
        if not self.members:
            self.members = list(range(self.size))

    @property
    def leads(self) -> bool:
        return self.members[0] == self.rank


@dataclass
class GatherStats:
    """What rank 0's gather cost: the result messages it received (a rank's outcome, or a node's bundle), their
    pickled size and the time spent receiving and unpickling them; the groups (nodes, or 1 for flat)."""

    mode: str
    groups: int
    messages: int = 0
    results: int = 0
    bytes: int = 0
    receive_s: float = 0.0
    last_result_s: float = 0.0  # from the start of the work to the last result in (the slowest rank sets it)

    def to_dict(self) -> dict[str, Any]:
        return {"mode": self.mode, "groups": self.groups, "messages": self.messages, "results": self.results,
                "bytes": self.bytes, "receive_s": self.receive_s, "last_result_s": self.last_result_s}


def place(gather: str | None = None) -> Place:
    """This rank's place in the job. The splits and one gather of each rank's host and local rank (so rank 0 can
    name a rank that fails before it reports) are the only collectives, at the start, before any work."""
    from mpi4py import MPI  # lazy: mpi4py is a start-up cost only this path pays

    comm = MPI.COMM_WORLD
    rank, size = comm.Get_rank(), comm.Get_size()
    per_node = simulated_node_size()
    if per_node:  # test and benchmark only: nodes of per_node ranks on one host, named host~nK
        node = comm.Split(rank // per_node, rank)
        host = f"{host_name()}~n{rank // per_node}"
    else:
        node = comm.Split_type(MPI.COMM_TYPE_SHARED, key=rank)
        host = host_name()
    local_rank = node.Get_rank()
    mode = gather or gather_mode()
    if mode == "flat":
        node.Free()
        group = comm
    else:
        group = node
    members = [int(r) for r in group.allgather(rank)]
    everyone = comm.gather((host, local_rank, members[0] == rank), root=0)  # ~50 B a rank: 0.5 MB at 10,000
    leaders, roster = [], {}
    if rank == 0:
        leaders = [r for r, (_, _, leads) in enumerate(everyone) if leads and r != 0]
        roster = {r: rank_identity(h, r, local, local) for r, (h, local, _) in enumerate(everyone)}
    return Place(comm, rank, size, local_rank, host, group, members, leaders, mode, roster)


def _guarded(work: Work, where: Place, device: int, on_identity: Callable[[dict[str, Any]], None]) -> tuple:
    """('done', document) or ('error', kind, message, traceback): a rank's failure becomes a message, never a crash.
    The test hooks act once the identity is out, so the failing or hung rank is named by host."""

    def identified(ident: dict[str, Any]) -> None:
        on_identity({**ident, **rank_identity(where.host, where.rank, where.local_rank, device, ident)})
        fault = injected_fault(where.rank)
        if fault == "fail":
            raise RuntimeError(f"injected failure ({TEST_FAIL_RANK}, test-only)")
        if fault == "hang":
            hang_for_test()

    try:
        return ("done", work(device, identified))
    except BaseException as exc:  # noqa: BLE001 - every failure goes to rank 0, named by rank and host
        message = getattr(exc, "message", None) or f"{type(exc).__name__}: {exc}"
        return ("error", type(exc).__name__, str(message), traceback.format_exc())


Keep = Callable[[int, RankOutcome], dict[str, Any]]


def run(work: Work, timeout: float | None, on_event: Callable[[str, RankOutcome, int], None] = lambda *a: None,
        where: Place | None = None, keep: Keep | None = None,
        ) -> tuple[Place, dict[int, RankOutcome] | None, GatherStats | None]:
    """Run `work` on this rank's GPU. Rank 0 gets every rank's outcome (done, failed, or hung once `timeout`
    seconds have passed since the start) and what the gather cost; the others get None once their result is
    delivered. on_event(kind, outcome, finished) on rank 0: 'identity' or 'finished' as each rank reports.
    keep(rank, outcome) on rank 0, as each rank's document arrives: what to hold of it instead (a streaming writer
    takes the document and returns a slim copy: roofline.fleet.stream)."""
    where = where or place()
    device = where.local_rank
    if not where.leads:
        requests = []

        def send_identity(ident: dict[str, Any]) -> None:
            requests.append(where.group.isend(ident, dest=0, tag=TAG_IDENTITY))

        requests.append(where.group.isend(_guarded(work, where, device, send_identity), dest=0, tag=TAG_RESULT))
        for request in requests:
            request.wait()
        return where, None, None
    outcomes, stats = _lead(work, where, device, timeout, on_event, keep)
    return where, outcomes, stats


def settle(out: RankOutcome, result: tuple) -> None:
    """Record a rank's outcome as it travels: ('done', document), ('error', kind, message, traceback), ('hung',)."""
    if result[0] == "done":
        out.state, out.document = DONE, result[1] if len(result) > 1 else None
    elif result[0] == "error":
        out.state, (out.kind, out.error, out.detail) = FAILED, result[1:]
    else:
        out.state = HUNG


def _short(result: tuple) -> tuple:
    """A result as a leader's notice to rank 0: the verdict and error, without the document or the traceback."""
    return ("done",) if result[0] == "done" else ("error", result[1], result[2], None)


def _lead(work: Work, where: Place, device: int, timeout: float | None,
          on_event: Callable[[str, RankOutcome, int], None],
          keep: Keep | None = None) -> tuple[dict[int, RankOutcome] | None, GatherStats]:
    """A group's leader: its own work on a thread, its group's messages polled until all are in or the deadline
    passes. Rank 0 also takes the other leaders' notices and bundles; another leader forwards notices as its ranks
    report and sends rank 0 one bundle at the end."""
    from mpi4py import MPI  # lazy: mpi4py is a start-up cost only this path pays

    root = where.rank == 0
    started = time.monotonic()
    deadline = None if timeout is None else started + timeout
    hard_stop = None if deadline is None else deadline + (GRACE_S if root and where.leaders else 0.0)
    outcomes = {r: RankOutcome(r, dict(where.roster.get(r, {}))) for r in (range(where.size) if root else where.members)}
    raw: dict[int, tuple] = {}  # a leader's group's results as they came, for its bundle (not on rank 0)
    waiting = set(where.leaders)  # rank 0: the leaders whose bundle is still to come
    reported: set[int] = set()  # rank 0: ranks counted in the progress
    stats = GatherStats(where.gather, len(where.leaders) + 1)
    own: queue.Queue = queue.Queue()
    threading.Thread(target=lambda: own.put((TAG_RESULT, _guarded(work, where, device,
                                                                   lambda i: own.put((TAG_IDENTITY, i))))),
                     name="roofline-leader-work", daemon=True).start()
    sends: list[Any] = []
    status = MPI.Status()

    def kept(rank: int) -> None:
        out = outcomes[rank]
        if keep is not None and out.state == DONE and out.document is not None:
            out.document = keep(rank, out)

    def count(rank: int, short: tuple) -> None:
        if rank in reported:
            return
        reported.add(rank)
        shown = RankOutcome(rank, outcomes[rank].identity)
        settle(shown, short)
        on_event("finished", shown, len(reported))

    while True:
        got: list[tuple[int, int, Any]] = []
        busy = False
        while True:
            try:
                tag, value = own.get_nowait()
            except queue.Empty:
                break
            got.append((where.rank, tag, value))
        while (message := where.group.improbe(MPI.ANY_SOURCE, MPI.ANY_TAG, status=status)) is not None:
            source, tag, size = where.members[status.Get_source()], status.Get_tag(), status.Get_count(MPI.BYTE)
            began = time.perf_counter()
            value = message.recv()
            if tag == TAG_RESULT:
                stats.messages, stats.bytes = stats.messages + 1, stats.bytes + size
                stats.receive_s += time.perf_counter() - began
            got.append((source, tag, value))
        forward: list[tuple[int, int, Any]] = []
        for rank, tag, value in got:
            if tag == TAG_IDENTITY:
                outcomes[rank].identity = {**outcomes[rank].identity, **value}
                forward.append((rank, TAG_IDENTITY, dict(value)))
                if root:
                    on_event("identity", outcomes[rank], len(reported))
                continue
            if not root:
                raw[rank] = value
            settle(outcomes[rank], value)
            if root:
                kept(rank)
            stats.results += 1
            stats.last_result_s = time.monotonic() - started
            forward.append((rank, TAG_RESULT, _short(value)))
            if root:
                count(rank, _short(value))
        if root and where.leaders:
            while (message := where.comm.improbe(MPI.ANY_SOURCE, MPI.ANY_TAG, status=status)) is not None:
                source, tag, size = status.Get_source(), status.Get_tag(), status.Get_count(MPI.BYTE)
                began = time.perf_counter()
                value = message.recv()
                busy = True
                if tag == TAG_EVENTS:
                    for rank, kind, item in value:
                        if kind == TAG_IDENTITY:
                            outcomes[rank].identity = {**outcomes[rank].identity, **item}
                            on_event("identity", outcomes[rank], len(reported))
                        else:
                            count(rank, item)
                    continue
                stats.messages, stats.bytes = stats.messages + 1, stats.bytes + size
                stats.receive_s += time.perf_counter() - began
                for rank, result in value.items():
                    settle(outcomes[rank], result)
                    kept(rank)
                    if result[0] != "hung":
                        stats.results += 1
                        count(rank, _short(result))
                stats.last_result_s = time.monotonic() - started
                waiting.discard(source)
        if forward and not root:
            sends.append(where.comm.isend(forward, dest=0, tag=TAG_EVENTS))
        now = time.monotonic()
        mine_done = all(outcomes[r].state is not None for r in where.members)
        if mine_done or (deadline is not None and now > deadline):
            if not root:
                bundle = {r: raw.get(r, ("hung",)) for r in where.members}
                sends.append(where.comm.isend(bundle, dest=0, tag=TAG_BUNDLE))
                for request in sends:
                    request.wait()
                return None, stats
            if not waiting or (hard_stop is not None and now > hard_stop):
                break
        if not (got or busy):
            time.sleep(POLL_S)
    for out in outcomes.values():
        if out.state is None:
            out.state = HUNG
    return outcomes, stats
