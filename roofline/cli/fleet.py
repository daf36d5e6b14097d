"""`roofline measure` under mpirun/srun: every rank measures its node-local GPU, rank 0 prints and writes the one
fleet document and judges the job (exit 1 naming each rank that failed or hung)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from roofline.cli.common import note
from roofline.records.document import entry_failed


def fleet_progress(size: int) -> Any:
    """Rank 0's progress on standard error: a line as each rank finishes, 'ranks done 3/4'."""

    def on_event(kind: str, out: Any, finished: int) -> None:
        if kind == "finished":
            verdict = "done" if out.state == "done" else f"FAILED ({out.error})"
            note(f"fleet: {out.label()} {verdict}; ranks done {finished}/{size}")

    return on_event


def measure_fleet(request: Any, backend: str, output: Path | None, fmt: str, timeout: float | None) -> None:
    """The fleet `measure`; on ranks other than 0 it returns once rank 0 has its result (rank 0 speaks for the job)."""
    from roofline.errors import GateFailed, RooflineError
    from roofline.fleet import mpi
    from roofline.fleet.launch import launched_size
    from roofline.fleet.merge import HUNG
    from roofline.fleet.work import measure_selection

    mpi.require_mpi4py()
    where = mpi.place()
    if where.rank == 0:
        note(f"fleet: {where.size} MPI ranks, each measuring its node-local "
             f"{'GPU' if backend != 'numpy' else 'host CPU (--backend numpy)'}; rank 0 writes the results"
             + (f"; --timeout {timeout:g} s" if timeout is not None else ""))

    def work(device: int, on_identity: Any) -> dict[str, Any]:
        return measure_selection(request, backend, device, on_identity=on_identity)

    _, outcomes = mpi.run(work, timeout, fleet_progress(where.size or launched_size()), where)
    if outcomes is None:
        return
    hung = [o for o in outcomes.values() if o.state == HUNG]
    try:
        _finish(outcomes, where.size, output, fmt, timeout)
    except RooflineError as exc:
        if not hung:
            raise
        from roofline.render.text import clean

        click.echo(f"error: {clean(exc.message)}", err=True)
        note(f"fleet: aborting the job: {len(hung)} rank(s) still running will not finish on their own")
        mpi.abort(exc.exit_code)
        raise GateFailed(exc.message) from None  # not reached: Abort ends the process


def _finish(outcomes: Any, size: int, output: Path | None, fmt: str, timeout: float | None) -> None:
    from roofline.cli.common import emit_results
    from roofline.errors import GateFailed
    from roofline.fleet.merge import failure_lines, fleet_document
    from roofline.render.tables.measure import problems, results_table

    doc = fleet_document(outcomes, size, timeout)
    emit_results(doc, output, fmt, results_table, problems(doc))
    for rank, out in sorted(outcomes.items()):
        if out.detail and out.kind not in ("InputError", "BackendUnavailable", "GateFailed", "RooflineError"):
            click.echo(f"rank {rank}: {out.detail}", err=True)
    failures = failure_lines(outcomes, timeout)
    if failures:
        raise GateFailed(f"{len(failures)} of {size} rank(s) failed or hung; the others' results were kept: "
                         + "; ".join(failures))
    failed = sorted({k["name"] for k in doc["kernels"] if entry_failed(k)})
    if failed:
        raise GateFailed(f"{len(failed)} kernel(s) FAILED verification: {', '.join(failed[:5])}")
