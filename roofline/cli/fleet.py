"""`measure`, `sweep`, `calibrate` and `doctor` under mpirun/srun: every rank runs the command's work on its
node-local GPU (roofline.fleet.work), rank 0 gathers the results (roofline.fleet.mpi), prints and writes the one
file, and judges the job: exit 1 naming each rank that failed or hung (the others' results written); where every
rank failed the same way, that error once (exit 2 for bad input, 3 with the fix where no rank has a GPU)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any, Callable, Mapping

import click

from roofline.cli.common import note
from roofline.records.document import entry_failed

KNOWN_ERRORS = ("InputError", "BackendUnavailable", "GateFailed", "RooflineError", "ProgramFailed", "TimedOut")
TRACEBACKS = 3  # ranks whose traceback (a bug, not a user error) is printed; the rest are counted


def timeout_option(f: Any) -> Any:
    return click.option(
        "--timeout", type=click.FloatRange(min=0, min_open=True), default=None, metavar="SECONDS",
        help="Under mpirun/srun: how long rank 0 waits for every rank's results, from the start; a rank still "
             "running then is named as hung, the others' results are written and the job is aborted.")(f)


def rank_bugs(outcomes: Mapping[int, Any]) -> None:
    """The traceback of each rank that failed with something other than a user error (a bug), a few at most."""
    bugs = [(r, o) for r, o in sorted(outcomes.items()) if o.detail and o.kind not in KNOWN_ERRORS]
    for rank, out in bugs[:TRACEBACKS]:
        click.echo(f"{out.label()}: {out.detail}", err=True)
    if len(bugs) > TRACEBACKS:
        note(f"fleet: {len(bugs) - TRACEBACKS} more rank(s) failed with a traceback; their errors are in the file")


def gather_note(stats: Any, merge_s: float, write_s: float) -> str:
    """What rank 0's gather, merge and write cost: the line the scale measurements read (docs/fleet.md)."""
    per = f", {stats.bytes / stats.messages / 1e3:.1f} kB each" if stats.messages else ""
    return (f"fleet: gather ({stats.mode}, {stats.groups} group(s)): {stats.results} result(s) in {stats.messages} "
            f"message(s), {stats.bytes / 1e6:.3f} MB{per}, {stats.receive_s * 1e3:.2f} ms receiving, last result "
            f"{stats.last_result_s:.2f} s after the start; merge {merge_s * 1e3:.2f} ms; write {write_s * 1e3:.2f} ms")


def _results(outcomes: Mapping[int, Any], size: int, stats: Any, timeout: float | None, output: Path | None,
             fmt: str, shape: Callable[[dict[str, Any]], tuple[Any, list[str]]], spool: Any) -> dict[str, Any]:
    """Merge the ranks' (slim) documents, write the file from the spool and print it (shape(doc) → table function
    and notes), note the gather's cost, and judge the ranks."""
    from roofline.fleet.merge import fleet_document
    from roofline.fleet.runner import judge

    began = time.perf_counter()
    doc = fleet_document(outcomes, size, timeout, stats.to_dict())
    table, notes = shape(doc)
    merged = time.perf_counter()
    emit_streamed(doc, spool, output, fmt, table, notes)
    written = time.perf_counter()
    rank_bugs(outcomes)
    note(gather_note(stats, merged - began, written - merged))
    judge(outcomes, size, timeout)
    return doc


def emit_streamed(doc: dict[str, Any], spool: Any, output: Path | None, fmt: str, table: Callable[[dict], object],
                  notes: list[str]) -> None:
    """emit_results for a fleet: the file assembled from the merged slim document and the spooled entries (the
    same text the whole merge would give), written atomically and, with --format json, to standard output."""
    from roofline.cli.common import emit_document

    size, chunks = spool.document(doc)
    unused = [chunks]  # the first body is the one whose size was taken; a second use (-o and stdout) assembles again
    emit_document(doc, size, lambda: unused.pop() if unused else spool.document(doc)[1], output, fmt, table, notes,
                  "measure fewer kernels, or fewer ranks at once; nothing was written")


def _kernels_failed(doc: dict[str, Any]) -> None:
    from roofline.errors import GateFailed

    failed = sorted({k["name"] for k in doc["kernels"] if entry_failed(k)})
    if failed:
        raise GateFailed(f"{len(failed)} kernel(s) FAILED verification: {', '.join(failed[:5])}")


def _what(backend: str) -> str:
    return "on its node-local " + ("GPU" if backend != "numpy" else "host CPU (--backend numpy)")


# ---- the commands -----------------------------------------------------------------------------------------------

def measure_fleet(request: Any, backend: str, output: Path | None, fmt: str, timeout: float | None) -> None:
    """The fleet `measure`; on ranks other than 0 it returns once rank 0 has its result (rank 0 speaks for the job)."""
    from roofline.fleet.runner import run_ranks  # the MPI runner only under a launch (measure's start stays light)
    from roofline.fleet.work import measure_selection
    from roofline.render.tables.measure import problems

    def work(device: int, on_identity: Any) -> dict[str, Any]:
        return measure_selection(request, backend, device, on_identity=on_identity)

    spool = _spool(output)

    def finish(outcomes: Mapping[int, Any], size: int, stats: Any) -> None:
        doc = _results(outcomes, size, stats, timeout, output, fmt, lambda d: (_measure_table(d), problems(d)),
                       spool)
        _kernels_failed(doc)

    run_ranks(f"measuring {_what(backend)}", work, timeout, finish, note, spool=spool)


def _measure_table(doc: dict[str, Any]) -> Callable[[dict[str, Any]], Any]:
    """A row per rank and kernel for a small fleet; past COLUMNS_UP_TO ranks, a line per kernel naming the slowest
    GPU and node (the rows are in the file: `roofline report FILE` shows them, `--outlier 5%` judges them)."""
    from roofline.render.tables.fleet import COLUMNS_UP_TO
    from roofline.render.tables.measure import results_table

    if len(doc.get("devices") or ()) <= COLUMNS_UP_TO:
        return results_table

    def table(d: dict[str, Any]) -> Any:
        from roofline.gates.nodes import fleet_rows, fleet_summary
        from roofline.render.tables.fleet import fleet_table
        from roofline.render.tables.measure import ran_on

        return fleet_table(fleet_summary(*fleet_rows(d), None), None, unit=ran_on(d))

    return table


def sweep_fleet(args: Any, backend: str, output: Path | None, fmt: str, timeout: float | None) -> None:
    """The fleet `sweep`: every rank sweeps the same sizes; one document with each rank's entries and model block
    (`sweeps`), the sizes across the fleet, each rank's model lines (up to COLUMNS_UP_TO ranks)."""
    from roofline.fleet.runner import run_ranks  # the MPI runner only under a launch (sweep's start stays light)
    from roofline.fleet.work import sweep_selection

    def work(device: int, on_identity: Any) -> dict[str, Any]:
        return sweep_selection(args, backend, device, on_identity=on_identity)

    spool = _spool(output)

    def finish(outcomes: Mapping[int, Any], size: int, stats: Any) -> None:
        doc = _results(outcomes, size, stats, timeout, output, fmt, lambda d: _sweep_view(d, outcomes, spool), spool)
        _kernels_failed(doc)

    run_ranks(f"sweeping {_what(backend)}", work, timeout, finish, note, spool=spool)


def _spool(output: Path | None) -> Any:
    """Rank 0's streaming writer (roofline.fleet.stream): a fleet of up to COLUMNS_UP_TO ranks keeps its full
    documents too, for the table of every entry."""
    from roofline.fleet.stream import Spool, spool_folder
    from roofline.render.tables.fleet import COLUMNS_UP_TO

    return Spool(spool_folder(output), COLUMNS_UP_TO)


def _sweep_view(doc: dict[str, Any], outcomes: Mapping[int, Any], spool: Any = None) -> tuple[Any, list[str]]:
    """The fleet sweep's `sweeps` block, and what it prints: each rank's sweep table and model lines for a small
    fleet (the first rank's alone past COLUMNS_UP_TO, its entries read back from the spool), and for any fleet the
    sizes across it (the slowest GPU and node per size)."""
    from roofline.gates.nodes import fleet_rows, fleet_summary
    from roofline.records.devices import split_devices
    from roofline.render.tables.fleet import COLUMNS_UP_TO, fleet_table
    from roofline.render.tables.sweep import explanation, sweep_table

    doc["sweeps"] = [{"device": r, **o.document["sweep"]} for r, o in sorted(outcomes.items())
                     if o.state == "done" and o.document is not None and o.document.get("sweep")]
    parts = split_devices(doc)
    shown = parts if len(parts) <= COLUMNS_UP_TO else parts[:1]
    if len(parts) > COLUMNS_UP_TO and spool is not None:  # slim entries held: the shown rank's read back in full
        shown = [{**parts[0], "kernels": spool.entries(int(parts[0]["device"]["index"]))}]
    summary = fleet_summary(*fleet_rows(doc), None)

    def tables(_: Any) -> Any:
        from rich.console import Group

        from roofline.render.tables.measure import ran_on

        return Group(*(sweep_table(p) for p in shown),
                     *([fleet_table(summary, None, unit=ran_on(doc))] if summary else []))

    notes = [f"{p['device']['label']}: {line}" for p in shown for line in explanation(p)]
    if len(parts) > len(shown):
        notes.append(f"note: the sweep tables and model lines of the other {len(parts) - len(shown)} ranks are in "
                     "the results (-o FILE, --format json)")
    return tables, notes
