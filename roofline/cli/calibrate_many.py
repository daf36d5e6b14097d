"""`calibrate --device all`: every GPU at once under the progress display, then what
roofline.measurement.multi.host concluded printed and written."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from roofline.cli.common import is_stdout, note, print_tables, write_output
from roofline.cli.multi import with_progress
from roofline.measurement.multi.calibrate import CalibrateRequest, calibrate_devices
from roofline.measurement.multi.host import host_calibration
from roofline.measurement.multi.measure import bug_details
from roofline.render.tables.calibrate import calibration_notes, comparison_table
from roofline.render.tables.hosts import figure_host_table
from roofline.load.jsonio import dumps
from roofline.records.clockstate import CAPPED_FRACTION
from roofline.render.charts.interconnect import interconnect_table


def calibrate_many(devices: list[int], spec_name: str, output: Path | None, quick: bool, outlier: float | None,
                   links: bool, fmt: str, started: float) -> None:
    """Calibrate each device in its own process, then (GPUs idle) the links; print the per-device table and the
    host table; write one spec of the medians; exit 1 naming each device whose worker failed or that --outlier
    finds too slow (after writing what was measured)."""
    outcomes = with_progress("calibrate", devices,
                             lambda on: calibrate_devices(devices, CalibrateRequest(spec_name, quick), on))
    for line in bug_details(outcomes):
        click.echo(line, err=True)

    def on_link_step(name: str, skipped: str | None) -> None:
        note(f"note: {name} skipped: {skipped}" if skipped else f"calibrate links: {name} ...")

    host = host_calibration(outcomes, outlier, links, started, on_link_step)
    if output is not None:
        write_output(output, host.text, "measured-spec")
    to_stdout = output is not None and is_stdout(output)
    if fmt == "json":
        click.echo(dumps(host.document()), nl=False, err=to_stdout)
    else:
        tables: list[Any] = [comparison_table(host.comparison, host.datasheet, host.host_device, host.wall, quick,
                                              CAPPED_FRACTION),
                             figure_host_table(host.rows, outlier)]
        if host.link_doc is not None:
            tables.append(interconnect_table(host.link_doc))
        print_tables(tables, None, stderr=to_stdout)
    for line in calibration_notes(host.comparison, host.warnings):
        note(line)
    if output is not None and not to_stdout:
        note(f"wrote {output} (spec id {host.spec_doc['id']}: each figure the median of {len(host.parts)} GPUs"
             + (", with the measured links)" if host.link_doc and host.spec_doc.get("interconnect") else ")"))
    host.verdict()
