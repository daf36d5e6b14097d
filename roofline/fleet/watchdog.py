"""A deadline for every step of `roofline fleet links --timeout`: no collective can hold the job forever.

The run is a sequence of steps, the same on every rank (setting up a scope, each size of each collective, gathering
the results). The main thread says where it is (`Watch.step`, `Watch.phase`: doing its own work, or waiting for the
other ranks inside a collective or an agreement); a watchdog thread on every rank reads that and, once a step has
run past `timeout` seconds, acts:

- a rank other than 0 tells rank 0 (a point-to-point message on a communicator of its own, so it passes beside the
  collective the main thread is blocked in; MPI_THREAD_MULTIPLE);
- rank 0 (told, or past the deadline itself) asks every rank where it is, waits a few seconds for the answers, names
  the ranks that did not report (those still doing their own work in an overdue step: they never reached the
  collective the others wait in; and those whose process did not answer), has its writer save what was completed
  (atomically, the sizes cut short named in the file), and ends the job with MPI_Abort(1);
- when rank 0 does not ask within those seconds, its process does not respond (a C call holding Python's lock, a
  machine that froze): the rank that noticed names it and aborts the job, and no file is written, since rank 0 holds
  the results;
- a backstop for a rank whose Python cannot run at all (GIL held in C): faulthandler's timer, a C thread, dumps the
  rank's stacks and ends the process a little later, and the launcher then ends the job.

Rank 0's watchdog thread writes even when rank 0's own main thread is the one that hung: the results it completed
are in memory, and the watchdog does not need the main thread. Without MPI (NCCL on one GPU, no launcher) the one
rank's watchdog does the same and ends the process.

The decision (`verdict`) is a pure function of the ranks' answers; the threads only carry messages.
"""

from __future__ import annotations

import faulthandler
import os
import sys
import threading
import time
import traceback
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping

from roofline.fleet.abort import abort, flush_streams
from roofline.fleet.merge import rank_ranges
from roofline.model.counts import counted

TAG_LATE, TAG_QUERY, TAG_ANSWER = 2511, 2512, 2513
POLL_S = 0.05
NAMED = 8  # ranks named one by one in a message; the rest are counted
EXIT_CUT = 1  # the job's exit status when a deadline passed (a hung rank is a finding, as a failed rank is)


def response_s(timeout: float) -> float:
    """How long rank 0 waits for the ranks' answers, and a rank for rank 0's question, once a deadline passed:
    a few seconds (the answers are small), longer for a long --timeout (a busy machine), 30 s at most."""
    return min(30.0, max(2.0, timeout / 2))


def backstop_s(timeout: float) -> float:
    """When the C-level backstop ends a rank whose Python cannot run: after the cooperative path had its chance."""
    return timeout + 2 * response_s(timeout) + 5.0


def _stderr_fd() -> int:
    """The descriptor the backstop writes to (a C thread: it needs a real one, not a Python stream)."""
    try:
        return sys.stderr.fileno()
    except (AttributeError, OSError, ValueError):  # a replaced stderr (a test's runner): the process's own
        return 2


class Unwatched:
    """The watch of a run without --timeout: nothing is recorded, nothing is watched."""

    timeout = None

    def step(self, label: str, size: Mapping[str, Any] | None = None) -> None:
        return None

    def phase(self, doing: str, waiting: bool = False) -> None:
        return None

    def hold(self, **values: Any) -> None:
        return None

    def add_point(self, point: Mapping[str, Any]) -> None:
        return None


class Watch:
    """Where this rank is: the step (its number, label, start), the phase within it, and what it holds that the
    writer needs (its identity and transport; a group leader's points so far). The main thread writes, the watchdog
    thread reads, under one lock. `timeout`: seconds a step may last (None: no deadline, nothing is watched)."""

    def __init__(self, timeout: float | None, rank: int = 0, host: str = "",
                 clock: Callable[[], float] = time.monotonic, backstop: bool = False):
        self.timeout, self.rank, self.host, self.clock = timeout, rank, host, clock
        self.backstop = backstop and timeout is not None
        self.lock = threading.Lock()
        self.index, self.label, self.since = 0, "starting", clock()
        self.doing, self.waiting = "starting", False
        self.size: dict[str, Any] | None = None  # the size in progress: the head of its point
        self.held: dict[str, Any] = {}  # identity, transport, block (a group leader's scope so far)
        self.state = "running"  # running, finished (the main thread is done), cut (a deadline passed)

    def step(self, label: str, size: Mapping[str, Any] | None = None) -> None:
        """The next step of the run (the last one ends): its deadline starts now. `size`: the head of the point a
        size's step measures."""
        with self.lock:
            self.index += 1
            self.label, self.since, self.size = label, self.clock(), dict(size) if size else None
            self.doing, self.waiting = "working", False
        if self.backstop:
            faulthandler.dump_traceback_later(backstop_s(self.timeout or 0), exit=True, file=_stderr_fd())

    def phase(self, doing: str, waiting: bool = False) -> None:
        """What the step is doing now; `waiting`: inside a collective or an agreement, so waiting on the others."""
        with self.lock:
            self.doing, self.waiting = doing, waiting

    def hold(self, **values: Any) -> None:
        with self.lock:
            self.held.update(values)

    def add_point(self, point: Mapping[str, Any]) -> None:
        """A group leader's finished point, into the block it holds (the writer's, should the job be cut)."""
        with self.lock:
            block = self.held.get("block")
            if block is not None:
                block["points"].append(dict(point))

    def overdue(self, now: float | None = None) -> bool:
        if self.timeout is None:
            return False
        with self.lock:
            return self.state == "running" and (self.clock() if now is None else now) - self.since > self.timeout

    def snapshot(self) -> dict[str, Any]:
        """This rank's answer to 'where are you?': plain values (pickled to rank 0)."""
        with self.lock:
            block = self.held.get("block")
            return {"rank": self.rank, "host": self.host, "index": self.index, "step": self.label,
                    "doing": self.doing, "waiting": self.waiting, "seconds": self.clock() - self.since,
                    "finished": self.state == "finished", "size": dict(self.size) if self.size else None,
                    "identity": self.held.get("identity"), "transport": self.held.get("transport"),
                    "block": None if block is None else {**block, "points": [dict(p) for p in block["points"]]}}

    def finish(self) -> bool:
        """The main thread is done: no deadline from now on. False when a deadline already passed (the watchdog is
        ending the job: the caller must not write, only wait)."""
        with self.lock:
            if self.state == "cut":
                return False
            self.state = "finished"
        if self.backstop:
            faulthandler.cancel_dump_traceback_later()
        return True

    def cut(self) -> bool:
        """The watchdog takes over (a deadline passed); False when the main thread already finished."""
        with self.lock:
            if self.state != "running":
                return False
            self.state = "cut"
            return True


# ---- the decision (pure) -----------------------------------------------------------------------------------------

@dataclass
class Verdict:
    """What passed its deadline and who did not report: `stuck` ranks still doing their own work in an overdue step,
    `silent` ranks whose process did not answer, `waiting` ranks blocked on the others; `message` says it all."""

    step: str
    timeout: float
    stuck: list[int] = field(default_factory=list)
    silent: list[int] = field(default_factory=list)
    waiting: list[int] = field(default_factory=list)
    reason: str = ""

    @property
    def message(self) -> str:
        return f"--timeout {self.timeout:g} s passed in the {self.step}: {self.reason}"

    @property
    def not_reported(self) -> list[int]:
        """The ranks that did not report: stuck or silent; every overdue rank when all of them were waiting."""
        return sorted(self.stuck + self.silent) or sorted(self.waiting)


def _ranks(ranks: list[int], hosts: Mapping[int, str]) -> str:
    """'rank 3 on node-1', 'ranks 0-2, 5 on node-0, node-1': a set of ranks named in a line."""
    names = sorted({hosts.get(r, "?") for r in ranks})
    on = ", ".join(names[:4]) + (f" and {len(names) - 4} more" if len(names) > 4 else "")
    return (f"rank {ranks[0]}" if len(ranks) == 1 else f"ranks {rank_ranges(ranks)}") + f" on {on}"


def verdict(answers: Mapping[int, Mapping[str, Any] | None], trigger: Mapping[str, Any], timeout: float,
            hosts: Mapping[int, str] | None = None) -> Verdict:
    """Who held the job up. `answers`: each rank's snapshot, None where its process did not answer; `trigger`: the
    snapshot of the first rank found past its deadline. A rank past its deadline doing its own work never reached the
    collective the others wait in; when every overdue rank is waiting, the collective itself never completed."""
    hosts = {**(hosts or {}), **{r: str(a["host"]) for r, a in answers.items() if a and a.get("host")}}
    overdue = {r: a for r, a in answers.items() if a and not a.get("finished") and a["seconds"] > timeout}
    stuck = sorted(r for r, a in overdue.items() if not a["waiting"])
    waiting = sorted(r for r, a in overdue.items() if a["waiting"])
    silent = sorted(r for r, a in answers.items() if a is None)
    v = Verdict(str(trigger["step"]), timeout, stuck, silent, waiting)
    parts = []
    for r in stuck[:NAMED]:
        a = overdue[r]
        where = "" if a["step"] == v.step else f" in the {a['step']}"
        parts.append(f"rank {r} on {hosts.get(r, '?')} was still {a['doing']}{where} after {a['seconds']:.1f} s")
    if len(stuck) > NAMED:
        parts.append(f"{counted(len(stuck) - NAMED, 'more rank')} were still doing their own work")
    if silent:
        parts.append(f"{_ranks(silent, hosts)} did not answer (the process does not respond)")
    if parts and waiting:
        parts.append(f"{_ranks(waiting, hosts)} {'was' if len(waiting) == 1 else 'were'} waiting for "
                     f"{'it' if len(stuck) + len(silent) == 1 else 'them'}")
    elif waiting:
        parts.append(f"no rank completed it: {_ranks(waiting, hosts)} "
                     f"{'was' if len(waiting) == 1 else 'were all'} waiting inside it (a collective that never "
                     "completes: a link or a GPU that does not answer)")
    elif not parts:
        parts.append(f"rank {trigger['rank']} on {hosts.get(int(trigger['rank']), '?')} passed it")
    v.reason = "; ".join(parts)
    return v


# ---- the threads --------------------------------------------------------------------------------------------------

CutHandler = Callable[[Verdict, Mapping[int, Mapping[str, Any] | None]], None]


class _Dog(ABC):
    """The thread and its stop. `on_cut` runs on rank 0 once a deadline passed (write, print); then `end` ends
    the job."""

    def __init__(self, watch: Watch, on_cut: CutHandler, say: Callable[[str], None], end: Callable[[int], None],
                 poll_s: float = POLL_S):
        self.watch, self.on_cut, self.say, self.end, self.poll_s = watch, on_cut, say, end, poll_s
        self.stopped = threading.Event()
        self.thread = threading.Thread(target=self._run, name="roofline-watchdog", daemon=True)

    def start(self) -> "_Dog":
        self.thread.start()
        return self

    def stop(self) -> bool:
        """The main thread is done. False when the watchdog is ending the job: the caller must wait, not write."""
        if not self.watch.finish():
            return False
        self.stopped.set()
        if self.thread.is_alive() and threading.current_thread() is not self.thread:
            self.thread.join()
        return True

    def _run(self) -> None:
        try:
            self._loop()
        except BaseException:  # noqa: BLE001 - the watchdog itself failed: say so, and end rather than hang
            traceback.print_exc()
            self.say(f"fleet links: the watchdog of rank {self.watch.rank} failed; aborting the job")
            flush_streams()
            self.end(EXIT_CUT)

    @abstractmethod
    def _loop(self) -> None:
        """Watch until stopped; past a deadline, act (and return)."""

    def _cut(self, trigger: Mapping[str, Any], answers: Mapping[int, Mapping[str, Any] | None],
             hosts: Mapping[int, str]) -> None:
        v = verdict(answers, trigger, self.watch.timeout or 0.0, hosts)
        try:
            self.on_cut(v, answers)
        except BaseException:  # noqa: BLE001 - the writer failed: the job must still end
            traceback.print_exc()
            self.say("fleet links: writing the completed sizes failed (above)")
        flush_streams()
        self.end(EXIT_CUT)


class BackstopOnly:
    """An MPI without MPI_THREAD_MULTIPLE: no thread may talk while the main thread is in a collective, so only the
    backstop ends a rank stuck past its deadline (its stacks printed; the launcher ends the job)."""

    def __init__(self, watch: Watch):
        self.watch = watch

    def start(self) -> "BackstopOnly":
        return self

    def stop(self) -> bool:
        return self.watch.finish()


class SoloWatchdog(_Dog):
    """One rank without MPI (NCCL on one GPU): past the deadline, write what was completed and end the process."""

    def __init__(self, watch: Watch, on_cut: CutHandler, say: Callable[[str], None],
                 end: Callable[[int], None] = os._exit, poll_s: float = POLL_S):
        super().__init__(watch, on_cut, say, end, poll_s)

    def _loop(self) -> None:
        while not self.stopped.wait(self.poll_s):
            if self.watch.overdue() and self.watch.cut():
                mine = self.watch.snapshot()
                self._cut(mine, {self.watch.rank: mine}, {self.watch.rank: self.watch.host})
                return


class MpiWatchdog(_Dog):
    """Every rank of an MPI job: `comm` is a duplicate of the world communicator, used by this thread alone (the
    main thread's collectives never see its messages); `hosts` (rank 0: every rank's host; the others: rank 0's)
    names the ranks that cannot name themselves."""

    def __init__(self, watch: Watch, comm: Any, on_cut: CutHandler, say: Callable[[str], None],
                 hosts: Mapping[int, str], end: Callable[[int], None] | None = None, poll_s: float = POLL_S):
        super().__init__(watch, on_cut, say, end or abort, poll_s)
        self.comm, self.hosts = comm, hosts  # filled once the run has gathered them
        self.rank, self.size = comm.Get_rank(), comm.Get_size()

    def _loop(self) -> None:
        if self.rank == 0:
            self._lead()
        else:
            self._follow()

    def _drain(self, tag: int, source: Any = None) -> list[tuple[int, Any]]:
        from mpi4py import MPI  # lazy: mpi4py is a start-up cost only this path pays

        status = MPI.Status()
        got = []
        while (message := self.comm.improbe(MPI.ANY_SOURCE if source is None else source, tag,
                                            status=status)) is not None:
            got.append((status.Get_source(), message.recv()))
        return got

    def _lead(self) -> None:
        trigger: Mapping[str, Any] | None = None
        while not self.stopped.wait(self.poll_s):
            late = self._drain(TAG_LATE)
            if trigger is None and late:
                trigger = late[0][1]
            if trigger is None and self.watch.overdue():
                trigger = self.watch.snapshot()
            if trigger is None:
                continue
            if not self.watch.cut():
                return  # the main thread finished first: nothing is cut
            asked = [self.comm.isend(("where",), dest=r, tag=TAG_QUERY) for r in range(1, self.size)]
            answers: dict[int, Mapping[str, Any] | None] = {0: self.watch.snapshot()}
            until = time.monotonic() + response_s(self.watch.timeout or 0.0)
            while len(answers) < self.size and time.monotonic() < until:
                answers.update(self._drain(TAG_ANSWER))
                self._drain(TAG_LATE)
                time.sleep(self.poll_s)
            answers.update({r: None for r in range(self.size) if r not in answers})
            del asked  # never waited for: the job ends
            self._cut(trigger, answers, self.hosts)
            return

    def _follow(self) -> None:
        told: float | None = None  # when this rank told rank 0 its step was past the deadline
        asked: float | None = None  # when rank 0 asked where it is
        sent: list[Any] = []
        wait = response_s(self.watch.timeout or 0.0) + 0.25 * min(self.rank, 16)  # the first to notice speaks
        while not self.stopped.wait(self.poll_s):
            now = time.monotonic()
            if self._drain(TAG_QUERY, 0):
                asked = asked or now
                sent.append(self.comm.isend(self.watch.snapshot(), dest=0, tag=TAG_ANSWER))
            if told is None and self.watch.overdue():
                told = now
                sent.append(self.comm.isend(self.watch.snapshot(), dest=0, tag=TAG_LATE))
            if told is not None and asked is None and now > told + wait:
                mine = self.watch.snapshot()
                self.say(f"fleet links: --timeout {self.watch.timeout:g} s passed in the {mine['step']} on rank "
                         f"{self.rank} on {self.watch.host}, and rank 0 on {self.hosts.get(0, '?')}, which writes "
                         f"the file, did not answer within {wait:.0f} s (its process does not respond): no file "
                         "is written; aborting the job")
                flush_streams()
                self.end(EXIT_CUT)
                return
            if asked is not None and now > asked + 60.0:
                self.say(f"fleet links: rank 0 asked rank {self.rank} where it was 60 s ago and has not ended the "
                         "job; aborting it")
                flush_streams()
                self.end(EXIT_CUT)
                return
