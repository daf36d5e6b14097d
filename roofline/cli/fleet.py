"""`measure`, `sweep`, `calibrate` and `doctor` under mpirun/srun: every rank runs the command's work on its
node-local GPU (roofline.fleet.work), rank 0 gathers the results (roofline.fleet.mpi), prints and writes the one
file of what roofline.fleet.conclude makes of them, and raises its verdict: exit 1 naming each rank that failed or
hung (the others' results written); where every rank failed the same way, that error once (exit 2 for bad input, 3
with the fix where no rank has a GPU)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any, Callable, Mapping

import click

from roofline.cli.common import note, emit_document
from roofline.fleet.conclude import FleetResults, fleet_results, fleet_sweep, rank_tracebacks
from roofline.fleet.work import measure_selection, sweep_selection
from roofline.render.tables.measure import problems, results_table, ran_on
from roofline.render.tables.fleet import COLUMNS_UP_TO, fleet_table
from roofline.fleet.stream import Spool, spool_folder
from roofline.gates.nodes import fleet_rows, fleet_summary
from roofline.render.tables.sweep import explanation, sweep_table
from roofline.model.counts import counted
from rich.console import Group


def timeout_option(f: Any) -> Any:
    return click.option(
        "--timeout", type=click.FloatRange(min=0, min_open=True), default=None, metavar="SECONDS",
        help="Under mpirun/srun: how long rank 0 waits for every rank's results, from the start; a rank still "
             "running then is named as hung, the others' results are written and the job is aborted.")(f)


def rank_bugs(outcomes: Mapping[int, Any]) -> None:
    """The traceback of each rank that failed with something other than a user error (a bug), a few at most
    (roofline.fleet.conclude.rank_tracebacks chooses them)."""
    lines, more = rank_tracebacks(outcomes)
    for line in lines:
        click.echo(line, err=True)
    if more:
        note(f"fleet: {counted(more, 'more rank')} failed with a traceback; their errors are in the file")


def gather_note(stats: Any, merge_s: float, write_s: float) -> str:
    """What rank 0's gather, merge and write cost: the line the scale measurements read (docs/fleet.md)."""
    per = f", {stats.bytes / stats.messages / 1e3:.1f} kB each" if stats.messages else ""
    return (f"fleet: gather ({stats.mode}, {counted(stats.groups, 'group')}): {counted(stats.results, 'result')} in "
            f"{counted(stats.messages, 'message')}, {stats.bytes / 1e6:.3f} MB{per}, {stats.receive_s * 1e3:.2f} ms receiving, last result "
            f"{stats.last_result_s:.2f} s after the start; merge {merge_s * 1e3:.2f} ms; write {write_s * 1e3:.2f} ms")


def _print_and_write(result: Callable[[], FleetResults], stats: Any, output: Path | None, fmt: str,
                     shape: Callable[[FleetResults], tuple[Any, list[str]]], spool: Any) -> None:
    """Print and write what rank 0 concluded (roofline.fleet.conclude): the file from the spool, shape(result) →
    table function and notes; the tracebacks, the gather's cost; then the verdict (exit 1)."""
    began = time.perf_counter()
    fleet = result()
    table, notes = shape(fleet)
    merged = time.perf_counter()
    emit_streamed(fleet.doc, spool, output, fmt, table, notes)
    written = time.perf_counter()
    rank_bugs(fleet.outcomes)
    note(gather_note(stats, merged - began, written - merged))
    fleet.verdict()


def emit_streamed(doc: dict[str, Any], spool: Any, output: Path | None, fmt: str, table: Callable[[dict], object],
                  notes: list[str]) -> None:
    """emit_results for a fleet: the file assembled from the merged slim document and the spooled entries (the
    same text the whole merge would give), written atomically and, with --format json, to standard output."""
    size, chunks = spool.document(doc)
    unused = [chunks]  # the first body is the one whose size was taken; a second use (-o and stdout) assembles again
    emit_document(doc, size, lambda: unused.pop() if unused else spool.document(doc)[1], output, fmt, table, notes,
                  "measure fewer kernels, or fewer ranks at once; nothing was written")


def _what(backend: str) -> str:
    return "on its node-local " + ("GPU" if backend != "numpy" else "host CPU (--backend numpy)")


# ---- the commands -----------------------------------------------------------------------------------------------

def measure_fleet(request: Any, backend: str, output: Path | None, fmt: str, timeout: float | None) -> None:
    """The fleet `measure`; on ranks other than 0 it returns once rank 0 has its result (rank 0 speaks for the job)."""
    from roofline.fleet.runner import run_ranks  # the MPI runner only under a launch (measure's start stays light)

    def work(device: int, on_identity: Any) -> dict[str, Any]:
        return measure_selection(request, backend, device, on_identity=on_identity)

    spool = _spool(output)

    def finish(outcomes: Mapping[int, Any], size: int, stats: Any) -> None:
        _print_and_write(lambda: fleet_results(outcomes, size, timeout, stats.to_dict()), stats, output, fmt,
                         lambda f: (_measure_table(f.doc), problems(f.doc)), spool)

    run_ranks(f"measuring {_what(backend)}", work, timeout, finish, note, spool=spool)


def _measure_table(doc: dict[str, Any]) -> Callable[[dict[str, Any]], Any]:
    """A row per rank and kernel for a small fleet; past COLUMNS_UP_TO ranks, a line per kernel naming the slowest
    GPU and node (the rows are in the file: `roofline report FILE` shows them, `--outlier 5%` judges them)."""
    if len(doc.get("devices") or ()) <= COLUMNS_UP_TO:
        return results_table

    def table(d: dict[str, Any]) -> Any:
        return fleet_table(fleet_summary(*fleet_rows(d), None), None, unit=ran_on(d))

    return table


def sweep_fleet(args: Any, backend: str, output: Path | None, fmt: str, timeout: float | None) -> None:
    """The fleet `sweep`: every rank sweeps the same sizes; one document with each rank's entries and model block
    (`sweeps`), the sizes across the fleet, each rank's model lines (up to COLUMNS_UP_TO ranks)."""
    from roofline.fleet.runner import run_ranks  # the MPI runner only under a launch (sweep's start stays light)

    def work(device: int, on_identity: Any) -> dict[str, Any]:
        return sweep_selection(args, backend, device, on_identity=on_identity)

    spool = _spool(output)

    def finish(outcomes: Mapping[int, Any], size: int, stats: Any) -> None:
        _print_and_write(lambda: fleet_sweep(outcomes, size, timeout, stats.to_dict(), COLUMNS_UP_TO, spool),
                         stats, output, fmt, _sweep_view, spool)

    run_ranks(f"sweeping {_what(backend)}", work, timeout, finish, note, spool=spool)


def _spool(output: Path | None) -> Any:
    """Rank 0's streaming writer (roofline.fleet.stream): a fleet of up to COLUMNS_UP_TO ranks keeps its full
    documents too, for the table of every entry."""
    return Spool(spool_folder(output), COLUMNS_UP_TO)


def _sweep_view(fleet: FleetResults) -> tuple[Any, list[str]]:
    """What the fleet sweep prints: the shown ranks' sweep tables and model lines (each rank's for a small fleet,
    the first rank's alone past COLUMNS_UP_TO), and for any fleet the sizes across it."""
    doc, shown = fleet.doc, fleet.shown

    def tables(_: Any) -> Any:
        return Group(*(sweep_table(p) for p in shown),
                     *([fleet_table(fleet.summary, None, unit=ran_on(doc))] if fleet.summary else []))

    notes = [f"{p['device']['label']}: {line}" for p in shown for line in explanation(p)]
    if fleet.hidden:
        notes.append(f"note: the sweep tables and model lines of the other {fleet.hidden} ranks are in "
                     "the results (-o FILE, --format json)")
    return tables, notes
