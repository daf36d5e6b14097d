"""The several-GPU side of the measuring commands: `--device all` / `--device 0,2,3`."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from roofline.cli.common import note, emit_results
import sys
from roofline.cli.progress import Steps
from roofline.render.console import interactive, make_console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from roofline.render.text import markup
from roofline.measurement.multi.measure import measure_devices
from roofline.render.tables.measure import problems, results_table
from roofline.measurement.multi.sweep import sweep_devices
from roofline.render.tables.hosts import host_table
from roofline.render.tables.sweep import explanation, sweep_table
from rich.console import Group


def with_progress(command: str, devices: list[int], run: Any) -> Any:
    """run(on_message) with each device's progress on standard error: a bar per GPU on a terminal (transient), or
    off one (a CI log) a line per finished step, 'measure GPU 1: copy n=2^28: OK, 1.02 s'. Worker notes print once."""
    seen_notes: set[str] = set()

    def noted(kind: str, value: Any) -> bool:
        if kind == "note" and value not in seen_notes:
            seen_notes.add(value)
            note(str(value))
        return kind == "note"

    if not interactive(sys.stderr):  # a CI log, a dumb terminal, a rank under mpirun: plain lines
        lines = {d: Steps(f"{command} GPU {d}") for d in devices}

        def on_line(device: int, kind: str, value: Any) -> None:
            if noted(kind, value):
                return
            if kind == "progress":
                lines[device].start(str(value))
            elif kind == "finished":
                lines[device].finish(*value)

        return run(on_line)

    with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                  console=make_console(stderr=True), transient=True) as bar:
        tasks = {d: bar.add_task(f"GPU {d}: starting", total=None) for d in devices}

        def on_message(device: int, kind: str, value: Any) -> None:
            if noted(kind, value):
                return
            task = tasks[device]
            if kind == "total":
                bar.update(task, total=value)
            elif kind == "progress":
                bar.update(task, description=f"GPU {device}: {markup(str(value))}")
            elif kind == "finished":
                bar.advance(task)

        return run(on_message)


def measure_many(devices: list[int], request: Any, output: Path | None, fmt: str) -> None:
    """Measure on every device at once (roofline.measurement.multi.measure), print the side-by-side table, write
    one document; exit 1 naming each device whose worker failed (after writing the others' results)."""
    run = with_progress("measure", devices, lambda on: measure_devices(devices, request, on))
    emit_results(run.doc, output, fmt, results_table, problems(run.doc))
    for line in run.bugs:
        click.echo(line, err=True)
    run.verdict()


def sweep_many(devices: list[int], args: Any, output: Path | None, fmt: str) -> None:
    """Sweep on every device at once: each device's table and model lines, then the sizes side by side (median
    time across the GPUs, each one's deviation); one document with every device's entries; exit 1 as measure."""
    run = with_progress("sweep", devices, lambda on: sweep_devices(devices, args, on))
    parts, rows = run.parts(), run.host_rows()

    def tables(_: Any) -> Any:
        return Group(*(sweep_table(p) for p in parts), *([host_table(rows)] if rows else []))

    notes = [f"GPU {p['device']['index']}: {line}" for p in parts for line in explanation(p)]
    emit_results(run.doc, output, fmt, tables, notes)
    for line in run.bugs:
        click.echo(line, err=True)
    run.verdict()
