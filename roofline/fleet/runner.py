"""The runner of a command under mpirun/srun: every rank runs the command's work on its node-local GPU
(roofline.fleet.work), rank 0 gathers the results (roofline.fleet.mpi) and hands them to the command's `finish`,
and the job ends cleanly whatever happens: a rank that hung is named and the job aborted once rank 0 is done (the
launcher waits for every rank), a bug on rank 0 prints its traceback and aborts the job rather than leaving ranks
waiting in MPI_Finalize. `say` carries lines for people (the command line passes its note)."""

from __future__ import annotations

import traceback
from typing import Any, Callable, Mapping

from roofline.errors import EXIT_INTERNAL, GateFailed, RooflineError
from roofline.fleet import mpi
from roofline.fleet.abort import abort
from roofline.fleet.merge import HUNG, grouped_failures, part
from roofline.fleet.progress import FleetProgress, progress_style
from roofline.model.counts import counted

Say = Callable[[str], None]


def fleet_progress(size: int, say: Say, style: str = "auto") -> Callable[[str, Any, int], None]:
    """Rank 0's progress on standard error (roofline.fleet.progress): a line as each rank finishes in a small
    fleet, a counter throttled to a line a second and every 5 % past 16 ranks; failures as they come, each error
    once."""
    progress = FleetProgress(size, style)

    def on_event(kind: str, out: Any, finished: int) -> None:
        for line in progress.event(kind, out, finished):
            say(line)

    return on_event


Finish = Callable[[Mapping[int, Any], int, Any], None]


def run_ranks(what: str, work: Callable[[int, Any], dict[str, Any]], timeout: float | None, finish: Finish,
              say: Say, notes: tuple[str, ...] = (), spool: Any = None) -> None:
    """Run `work` on every rank; on rank 0, finish(outcomes, size, gather stats) prints, writes and raises the
    verdict (`notes` go out first, from rank 0 only). When a rank hung, the job is aborted once rank 0 is done (the
    launcher waits for every rank). `spool` (roofline.fleet.stream.Spool): rank 0 streams each rank's entries into
    it as they arrive and holds a slim copy."""
    mpi.require_mpi4py()
    where = mpi.place()
    style, warning = progress_style()
    if where.rank == 0:
        groups = f"{counted(len(where.leaders) + 1, 'node leader')} gather first" if where.gather == "node" else "flat gather"
        say(f"fleet: {where.size} MPI ranks, each {what}; rank 0 writes the results ({groups})"
            + (f"; --timeout {timeout:g} s" if timeout is not None else ""))
        for line in notes + ((warning,) if warning else ()):
            say(line)
    hung: list[Any] = []
    code = 0
    try:
        keep: Callable[[int, Any], dict[str, Any]] | None = None
        if spool is not None and where.rank == 0:
            keep = lambda rank, out: spool.add(rank, part(out), where.size)  # noqa: E731 - stream each as it lands

        _, outcomes, stats = mpi.run(work, timeout, fleet_progress(where.size, say, style), where, keep)
        if outcomes is None:
            return
        hung = [o for o in outcomes.values() if o.state == HUNG]
        finish(outcomes, where.size, stats)
    except RooflineError as exc:
        if not hung:
            raise
        say(f"error: {exc.message}")
        code = exc.exit_code
    except BaseException:  # noqa: BLE001 - a bug: its traceback, then the abort, or the job would wait on a rank
        # that waits for this one (MPI_Finalize waits for every rank)
        traceback.print_exc()
        say(f"fleet: aborting the job after an internal error on rank {where.rank}")
        abort(EXIT_INTERNAL)
    if hung:
        say(f"fleet: aborting the job: {counted(len(hung), 'rank')} still running will not finish on their own")
        abort(code or 1)


def judge(outcomes: Mapping[int, Any], size: int, timeout: float | None) -> None:
    """Exit 1 naming the ranks that failed or hung (their results were not written; the others' were)."""
    failures = grouped_failures(outcomes, timeout)
    if failures:
        count = sum(o.state != "done" for o in outcomes.values())
        raise GateFailed(f"{count} of {counted(size, 'rank')} failed or hung; the others' results were kept: "
                         + "; ".join(failures))
