"""`calibrate` and `doctor` under mpirun/srun: the commands that need a GPU on every rank. Each rank calibrates (or
checks) its node-local GPU; rank 0 prints the fleet's view (roofline.fleet.conclude works it out) and judges it.
Without a GPU each rank's error comes back through the same gather, and rank 0 says it once (exit 3 with the fix)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any, Mapping

import click

from roofline.cli.common import is_stdout, note, print_tables, write_output
from roofline.cli.fleet import gather_note, rank_bugs
from roofline.fleet.runner import run_ranks
from roofline.fleet.work import calibrate_device, doctor_device
from roofline.fleet.conclude import doctor_fleet_document, doctor_verdict, fleet_calibration, rank_checks
from roofline.records.clockstate import CAPPED_FRACTION
from roofline.render.tables.calibrate import calibration_notes, comparison_table
from roofline.render.tables.fleet import COLUMNS_UP_TO, fleet_table, doctor_fleet_table
from roofline.render.tables.hosts import figure_host_table
from roofline.load.jsonio import dumps
from roofline.render.tables.doctor import doctor_notes


# ---- calibrate ----------------------------------------------------------------------------------------------------

def calibrate_fleet(spec_name: str, output: Path | None, quick: bool, outlier: float | None, fmt: str,
                    timeout: float | None) -> None:
    started = time.perf_counter()

    def work(device: int, on_identity: Any) -> dict[str, Any]:
        return calibrate_device(spec_name, quick, device, on_identity=on_identity)

    def finish(outcomes: Mapping[int, Any], size: int, stats: Any) -> None:
        finish_calibration(outcomes, size, stats, output, quick, outlier, fmt, timeout, started)

    run_ranks("calibrating its node-local GPU", work, timeout, finish, note,
              ("note: under mpirun calibrate measures each GPU's own ceilings, not the links between ranks",))


def finish_calibration(outcomes: Mapping[int, Any], size: int, stats: Any, output: Path | None, quick: bool,
                       outlier: float | None, fmt: str, timeout: float | None, started: float) -> None:
    """Rank 0: one spec of the fleet's medians (-o), the comparison with the datasheet, the figures across the fleet
    (each GPU against the fleet median, each node against the median of the node medians), and exit 1 naming each
    rank that failed or hung and, with --outlier, each GPU and node too far below."""
    began = time.perf_counter()
    fleet = fleet_calibration(outcomes, timeout, outlier)
    merged = time.perf_counter()
    if output is not None:
        write_output(output, fleet.text, "measured-spec")
    to_stdout = output is not None and is_stdout(output)
    if fmt == "json":
        doc = fleet.document(time.perf_counter() - started, size, timeout, stats.to_dict())
        click.echo(dumps(doc), nl=False, err=to_stdout)
    else:
        tables: list[Any] = [comparison_table(fleet.comparison, fleet.datasheet, fleet.device,
                                              time.perf_counter() - started, quick, CAPPED_FRACTION)]
        if len(fleet.parts) <= COLUMNS_UP_TO:
            tables.append(figure_host_table(fleet.rows, outlier))
        tables.append(fleet_table(fleet.summary, outlier))
        print_tables(tables, None, stderr=to_stdout)
    written = time.perf_counter()
    for line in calibration_notes(fleet.comparison, fleet.warnings):
        note(line)
    if output is not None and not to_stdout:
        note(f"wrote {output} (spec id {fleet.spec_doc['id']}: each figure the median of {len(fleet.parts)} GPUs)")
    rank_bugs(outcomes)
    note(gather_note(stats, merged - began, written - merged))
    fleet.verdict(size)


# ---- doctor -------------------------------------------------------------------------------------------------------

def doctor_fleet(spec_name: str, use_ncu: bool, ncu_path: str | None, fmt: str, timeout: float | None) -> None:
    def work(device: int, on_identity: Any) -> dict[str, Any]:
        return doctor_device(spec_name, use_ncu, ncu_path, device, on_identity=on_identity)

    def finish(outcomes: Mapping[int, Any], size: int, stats: Any) -> None:
        finish_doctor(outcomes, size, stats, fmt, timeout)

    run_ranks("checking its node-local GPU", work, timeout, finish, note)


def finish_doctor(outcomes: Mapping[int, Any], size: int, stats: Any, fmt: str, timeout: float | None) -> None:
    """Rank 0: a row per rank (its verdict, or its error), the WARN and FAIL lines named by rank, exit 1 when any
    rank FAILED a check, failed or hung."""
    began = time.perf_counter()
    doc = doctor_fleet_document(outcomes, size, timeout, stats.to_dict())
    ranks = doc["ranks"]
    merged = time.perf_counter()
    if fmt == "json":
        click.echo(dumps(doc), nl=False)
    else:
        print_tables([doctor_fleet_table(ranks)], None)
        for where, checks in rank_checks(ranks):
            for line in doctor_notes(checks):
                note(f"{where}: {line}")
    written = time.perf_counter()
    rank_bugs(outcomes)
    note(gather_note(stats, merged - began, written - merged))
    doctor_verdict(doc, outcomes, size, timeout)
