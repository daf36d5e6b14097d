"""One sweep of collectives over the sizes, on any engine: each result checked, agreed on by every rank, then timed.

An engine (roofline.fleet.mpi_links for MPI with NumPy buffers, roofline.fleet.nccl for NCCL with CuPy buffers)
moves the data; a control (the same MPI communicator, or Solo for one rank without a launcher) carries the small
messages by which every rank agrees. At each size every rank prepares its buffers, runs the collective once and
checks what it received; then all ranks exchange their verdicts, so a failure on any rank (a wrong element, an
allocation that failed) fails that size on all of them and nobody is left waiting inside a collective the others
skipped. Only a size every rank got right is timed (warm-up, then `iters` runs, the median per rank), and the
result is checked again after timing. The time of a size is the slowest rank's median: a collective ends when its
last rank does.
"""

from __future__ import annotations

import os
import statistics
from dataclasses import dataclass
from typing import Any, Callable, Protocol
import ctypes

from roofline.fleet import collectives as cv
from roofline.fleet.launch import hang_for_test
from roofline.fleet.watchdog import Unwatched
from roofline.model.counts import counted

OK, FAILED = "OK", "FAILED"

# Test-only fault injection (tests/test_fleet_links.py): the ranks named ('1', or '1:all_reduce' for one collective)
# change one element of what they received before checking it, as a faulty link would. Not an interface.
TEST_CORRUPT_RANK = "ROOFLINE_FLEET_TEST_CORRUPT_RANK"
# Test-only too: the ranks named ('1', '1:all_reduce', '1:all_reduce:4096' for one requested size) stop after
# preparing that size's buffers, so the others wait for them in the agreement: HANG sleeps in Python (the watchdog
# thread still runs), FREEZE blocks the whole process in C holding Python's lock (as a C call that never returns
# would). What --timeout is for (roofline.fleet.watchdog). Not an interface.
TEST_HANG = "ROOFLINE_FLEET_TEST_LINK_HANG"
TEST_FREEZE = "ROOFLINE_FLEET_TEST_LINK_FREEZE"


class Control(Protocol):
    """The small messages of the job (verdicts, times, identities) among the ranks of one group."""

    rank: int
    size: int

    def allgather(self, value: Any) -> list[Any]: ...

    def gather(self, value: Any) -> list[Any] | None: ...  # the list on rank 0, None elsewhere

    def bcast(self, value: Any) -> Any: ...

    def barrier(self) -> None: ...


class Engine(Protocol):
    """Moves the data of one collective among the ranks of its group, on buffers it owns."""

    xp: Any  # the array module of its buffers (numpy, cupy)

    def prepare(self, s: cv.Shape, rank: int) -> None: ...  # allocate, fill the input, poison the output

    def launch(self) -> None: ...  # one collective on the prepared buffers (may return before it ends)

    def sync(self) -> None: ...  # wait until what was launched has ended

    def output(self) -> Any: ...  # the received buffer (after sync)

    def timed(self, iters: int, warmup: int) -> list[float]: ...  # seconds of each of `iters` runs

    def release(self) -> None: ...


class Solo:
    """The control of a group of one rank: nothing to agree with (no MPI needed)."""

    rank, size = 0, 1

    def allgather(self, value: Any) -> list[Any]:
        return [value]

    def gather(self, value: Any) -> list[Any] | None:
        return [value]

    def bcast(self, value: Any) -> Any:
        return value

    def barrier(self) -> None:
        return None


@dataclass(frozen=True)
class Plan:
    """What to sweep: the collectives, the requested sizes (B), and the timing policy."""

    collectives: tuple[str, ...]
    sizes: tuple[int, ...]
    iters: int = 20
    warmup: int = 5


def corrupt_targets(rank: int, environ: Any = None) -> set[str]:
    """The collectives whose result this rank is told to corrupt (TEST_CORRUPT_RANK); empty normally."""
    env = os.environ if environ is None else environ
    out: set[str] = set()
    for part in env.get(TEST_CORRUPT_RANK, "").split(","):
        who, _, which = part.strip().partition(":")
        if who.strip() == str(rank):
            out |= {which.strip()} if which.strip() else set(cv.COLLECTIVES)
    return out


def stall_kind(rank: int, collective: str, requested: int, environ: Any = None) -> str | None:
    """'hang' or 'freeze' when a test asked this rank to stop at this size (TEST_HANG, TEST_FREEZE); else None."""
    env = os.environ if environ is None else environ
    for kind, name in (("hang", TEST_HANG), ("freeze", TEST_FREEZE)):
        for part in env.get(name, "").split(","):
            who, which, size = (part.strip().split(":") + ["", ""])[:3]
            if who.strip() == str(rank) and which.strip() in ("", collective) and size.strip() in ("", str(requested)):
                return kind
    return None


def _stall(kind: str | None) -> None:
    if kind == "freeze":
        ctypes.PyDLL(None).sleep(3600)  # libc's sleep called without releasing the GIL: no Python thread runs
    if kind == "hang":
        hang_for_test()


def _guard(step: Callable[[], str | None], doing: str = "") -> str | None:
    """A step's failure as a message: what it returned, or the exception it raised (after `doing`), never an
    escape that would leave the other ranks waiting for this one."""
    try:
        return step()
    except Exception as exc:  # noqa: BLE001 - every failure becomes this rank's verdict, agreed on by all
        text = str(exc).strip().splitlines()
        return doing + f"{type(exc).__name__}: {text[0] if text else ''}".rstrip(": ")


def run_sweep(engine: Engine, control: Control, plan: Plan, who: str,
              on_point: Callable[[dict[str, Any]], None] = lambda p: None,
              corrupt: set[str] | None = None, watch: Any = None, scope: str = "",
              rank: int | None = None) -> list[dict[str, Any]]:
    """Every collective of the plan at every size on this group: the same list of points on every rank.
    `who` names this rank in messages ('rank 3 on node-1'); `corrupt` is the test hook's set of collectives;
    `watch` (roofline.fleet.watchdog.Watch) hears each size begin as a step named after `scope`, and each phase;
    `rank` (the world rank, default the group's) is whom the test hooks name."""
    corrupt = corrupt if corrupt is not None else set()
    watch = watch if watch is not None else Unwatched()
    points = []
    for collective in plan.collectives:
        for requested in plan.sizes:
            s = cv.shape(collective, requested, control.size)
            if s is None:
                continue  # too small to give every rank one element (all-gather, reduce-scatter on many ranks)
            stall = stall_kind(control.rank if rank is None else rank, collective, requested)
            point = _one(engine, control, plan, s, who, collective in corrupt, watch, scope, stall)
            points.append(point)
            on_point(point)
    return points


def _agreed(control: Control, who: str, step: Callable[[], str | None], doing: str, watch: Any) -> str | None:
    """Run one step on this rank and exchange verdicts: None when every rank succeeded, else the failures, each
    naming its rank and what it was doing (the same text on every rank, so all of them take the same branch)."""
    mine = _guard(step, doing)
    watch.phase("agreeing with the other ranks on the result", waiting=True)
    errors = [e for e in control.allgather(f"{who}: {mine}" if mine else None) if e]
    if not errors:
        return None
    more = f"; and {counted(len(errors) - 4, 'more rank')}" if len(errors) > 4 else ""
    return "; ".join(errors[:4]) + more


def _one(engine: Engine, control: Control, plan: Plan, s: cv.Shape, who: str, corrupt: bool, watch: Any,
         scope: str, stall: str | None) -> dict[str, Any]:
    point: dict[str, Any] = {"collective": s.collective, "bytes": s.bytes, "requested_bytes": s.requested,
                             "count": s.bytes // cv.ITEMSIZE, "ranks": s.ranks}
    what = f"{cv.LABELS[s.collective]} of {s.bytes} B"
    watch.step(f"{scope} {what}".strip(), point)
    want: list[Any] = []
    times: list[float] = []

    def check(when: str) -> str | None:
        watch.phase(f"in the {cv.LABELS[s.collective]}", waiting=True)
        engine.sync()
        watch.phase("checking what it received")
        got = engine.output()
        if corrupt:
            got[0] = got[0] + 1
        if not want:
            want.append(cv.expected(engine.xp, s, control.rank))
        why = cv.mismatch(engine.xp, got, want[0])
        return f"{what} wrong {when}: {why}" if why else None

    def prepare() -> None:
        watch.phase("preparing its buffers")
        engine.prepare(s, control.rank)
        _stall(stall)

    def first_run() -> str | None:
        watch.phase(f"in the {cv.LABELS[s.collective]}", waiting=True)
        engine.launch()
        return check("on its first run")

    def timing() -> str | None:
        watch.phase(f"timing the {cv.LABELS[s.collective]}", waiting=True)
        times.extend(engine.timed(plan.iters, plan.warmup))
        return check("after timing")

    try:
        for step, doing in ((prepare, f"preparing the {what}: "), (first_run, f"{what}: "), (timing, f"{what}: ")):
            failed = _agreed(control, who, step, doing, watch)
            if failed:
                point.update(status=FAILED, error=failed)
                return point
    finally:
        watch.phase("releasing its buffers")
        _guard(engine.release)
    watch.phase("agreeing with the other ranks on the time", waiting=True)
    slowest = max(control.allgather(statistics.median(times)))
    point.update(status=OK, time=slowest, algbw=cv.algbw(s.bytes, slowest),
                 busbw=cv.busbw(s.collective, s.bytes, slowest, s.ranks), iters=len(times))
    return point
