"""`calibrate --device all`: every GPU at once, the host table, the links, one spec of the host's medians."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any
import datetime as dt

import click

from roofline.cli.common import is_stdout, note, print_tables, write_output
from roofline.version import __version__
from roofline.errors import GateFailed, first_line
from roofline.gates.hosts import device_name, figure_rows, outliers
from roofline.measurement.calibrate.links import with_interconnect
from roofline.measurement.calibrate.figures import calibration_document, comparison_rows
from roofline.measurement.calibrate.spec import check_loads, measured_spec, spec_yaml
from roofline.measurement.multi.pool import failure_lines
from roofline.measurement.multi.calibrate import CalibrateRequest, calibrate_devices, device_figure_lists, host_figures
from roofline.measurement.multi.measure import bug_details
from roofline.render.tables.calibrate import calibration_notes, comparison_table
from roofline.render.tables.hosts import figure_host_table
from roofline.cli.multi import with_progress
from roofline.measurement import interconnect as ic
from roofline.load.jsonio import dumps
from roofline.records.clockstate import CAPPED_FRACTION
from roofline.render.charts.interconnect import interconnect_table

# The links step inside calibrate: big enough to reach the plateau (1 GiB copies gain < 1 % on an H200 pair),
# small enough to keep calibrate's time; `roofline interconnect` measures the whole 1 MiB..4 GiB range.
LINK_COPY_BYTES = 256 << 20
LINK_ALLREDUCE_MAX = 256 << 20


def calibrate_many(devices: list[int], spec_name: str, output: Path | None, quick: bool, outlier: float | None,
                   links: bool, fmt: str, started: float) -> None:
    """Calibrate each device in its own process, then (GPUs idle) the links; print the per-device table and the
    host table; write one spec of the medians; exit 1 naming each device whose worker failed or that --outlier
    finds too slow (after writing what was measured)."""
    outcomes = with_progress("calibrate", devices,
                             lambda on: calibrate_devices(devices, CalibrateRequest(spec_name, quick), on))
    parts = sorted((o.result for o in outcomes.values() if o.ok), key=lambda p: p["device"]["index"])
    failures = failure_lines(outcomes)
    for line in bug_details(outcomes):
        click.echo(line, err=True)
    if not parts:
        raise GateFailed("every device failed: " + "; ".join(failures))
    datasheet = parts[0]["datasheet"]
    figures = host_figures(parts)
    host_device = {**parts[0]["device"], "name": _host_name(parts)}
    date = dt.datetime.now(dt.timezone.utc).date().isoformat()
    spec_doc, warnings = measured_spec(figures, host_device, datasheet, date, __version__)
    link_doc, link_error = None, None
    if links and len(parts) > 1:
        try:
            link_doc = _links([p["device"]["index"] for p in parts], datasheet)
        except Exception as exc:  # noqa: BLE001 - a copy that delivered wrong data, a driver error: the devices'
            # figures stand and are written; the links are reported as not measured, and the run exits 1
            link_error = f"links not measured: {type(exc).__name__}: {first_line(exc, 300)}"
        else:
            spec_doc = with_interconnect(spec_doc, link_doc, f"roofline calibrate {__version__} on "
                                                              f"{host_device['name']}, {date}")
    text = spec_yaml(spec_doc)
    check_loads(text)
    rows = figure_rows(device_figure_lists(parts))
    slow = outliers(rows, outlier) if outlier is not None else []
    comparison = comparison_rows(figures, datasheet)
    wall = time.perf_counter() - started

    if output is not None:
        write_output(output, text, "measured-spec")
    to_stdout = output is not None and is_stdout(output)
    if fmt == "json":
        doc = calibration_document(figures, datasheet, host_device, spec_doc, wall)
        doc.update(devices=[calibration_document(p["figures"], datasheet, p["device"], None) for p in parts],
                   hosts=rows, interconnect=link_doc, device_errors=failures, outliers=slow)
        click.echo(dumps(doc), nl=False, err=to_stdout)
    else:
        tables: list[Any] = [comparison_table(comparison, datasheet, host_device, wall, quick, CAPPED_FRACTION),
                             figure_host_table(rows, outlier)]
        if link_doc is not None:
            tables.append(interconnect_table(link_doc))
        print_tables(tables, None, stderr=to_stdout)
    for line in calibration_notes(comparison, warnings):
        note(line)
    if output is not None and not to_stdout:
        note(f"wrote {output} (spec id {spec_doc['id']}: each figure the median of {len(parts)} GPUs"
             + (", with the measured links)" if link_doc and spec_doc.get("interconnect") else ")"))
    problems = [*failures, *(f"{device_name(o['index'], o['pci_bus_id'])}: {o['kernel']} {-o['deviation']:.1%} "
                             f"below the host median (limit {outlier:.0%})" for o in slow),
                *([link_error] if link_error else [])]
    if problems:
        raise GateFailed(f"{len(problems)} problem(s) across {len(devices)} GPUs: " + "; ".join(problems))


def _host_name(parts: list[dict[str, Any]]) -> str:
    names = sorted({str(p["device"].get("name")) for p in parts})
    return f"{len(parts)} × {names[0]}" if len(names) == 1 else " + ".join(names)


def _links(devices: list[int], datasheet: Any) -> dict[str, Any]:
    def on_step(name: str, skipped: str | None) -> None:
        note(f"note: {name} skipped: {skipped}" if skipped else f"calibrate links: {name} ...")

    return ic.links_document(devices, datasheet, LINK_COPY_BYTES,
                             [s for s in ic.ALLREDUCE_SIZES if s <= LINK_ALLREDUCE_MAX], on_step)
