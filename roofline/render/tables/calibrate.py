"""`roofline calibrate` as text: the comparison table (datasheet beside measured, with the clock each figure held)
and the lines under it (why a figure failed or was skipped, remarks, warnings about the spec)."""

from __future__ import annotations

from typing import Any, Sequence

from rich.table import Table

from roofline.model.types import MachineSpec
from roofline.render.tables.fit import droppable
from roofline.render.text import literal, styled
from roofline.model.units import format_flops, format_rate, format_time, format_small

_FORMAT = {"bandwidth": format_rate, "flops": format_flops, "time": format_time}
_STYLE = {"OK": "green", "SKIPPED": "yellow"}


def format_value(value: float | None, kind: str) -> str:
    return "–" if value is None else _FORMAT[kind](value)


def _percent(fraction: float | None) -> str:
    return "–" if fraction is None else f"{fraction:.0%}"


def clock_text(row: dict[str, Any], capped_above: float) -> str:
    """'1440 MHz, power-capped 96%': the clock at the end of the figure's timed window, and the share of it spent
    at the power limit when that is above `capped_above` (clockstate.CAPPED_FRACTION)."""
    if not row.get("sm_clock"):
        return "–"
    capped = row.get("power_capped")
    held = f", power-capped {capped:.0%}" if capped is not None and capped > capped_above else ""
    return f"{row['sm_clock'] / 1e6:.0f} MHz{held}"


def comparison_table(rows: Sequence[dict[str, Any]], datasheet: MachineSpec | None, device: dict[str, Any],
                     wall: float, quick: bool, capped_above: float) -> Any:
    """The rows of measure.calibrate.figures.comparison_rows as a rich table."""
    sheet = f"datasheet {datasheet.id}" + (" [derived from device properties]" if datasheet.derived else "") \
        if datasheet is not None else "no datasheet spec"
    title = (f"Calibrated on {device.get('name')} (CuPy {device.get('cupy_version')}, CUDA {device.get('cuda_runtime')})"
             f" vs {sheet}; {wall:.0f} s{' (--quick)' if quick else ''}")
    table = Table(title=literal(title), title_justify="left")
    for col in ("figure", "datasheet", "measured", "measured / datasheet", "SM clock", "datasheet at that clock",
                "status"):
        table.add_column(col, justify="left" if col in ("figure", "SM clock", "status") else "right")
    for row in rows:
        at_clock = row["datasheet_at_clock"]
        table.add_row(row["label"], format_value(row["datasheet"], row["kind"]),
                      format_value(row["measured"], row["kind"]), _percent(row["ratio"]),
                      clock_text(row, capped_above),
                      "–" if at_clock is None else f"{format_value(at_clock, row['kind'])} "
                                                   f"(measured {_percent(row['ratio_at_clock'])})",
                      styled(row["status"], _STYLE.get(row["status"], "bold red")))
    return droppable(table, "datasheet at that clock", "SM clock", "datasheet")


def calibration_notes(rows: Sequence[dict[str, Any]], warnings: Sequence[str]) -> list[str]:
    """Lines for standard error: each figure that is not OK with its reason, remarks on OK ones, spec warnings."""
    lines = []
    for row in rows:
        if row["status"] != "OK":
            lines.append(f"{row['status']} {row['field']}: {row['note']}")
        elif row["note"]:
            lines.append(f"note {row['field']}: {row['note']}")
    return lines + [f"warning: {w}" for w in warnings]


def energy_table(runs: Sequence[dict[str, Any]]) -> Any:
    """calibrate --energy's runs: power over each loop, the rate it ran at, the energy per byte or FLOP over idle,
    the mean SM clock while busy and whether the power cap held it (roofline.measurement.calibrate.energy)."""
    table = Table(title="Energy (NVML energy counter over each loop, random data; per unit = (P - idle) / rate)",
                  title_justify="left")
    for col in ("probe", "status", "window", "power", "rate", "energy/unit", "SM clock", "capped", "note"):
        table.add_column(col, justify="left" if col in ("probe", "status", "note") else "right")
    for r in runs:
        status = r["status"]
        rate = format_rate(r["rate"]) if r["unit"] == "B" else format_flops(r["rate"]) if r["unit"] else "–"
        per = format_small(r["per_unit"], f"J/{r['unit']}") if r.get("per_unit") else "–"
        clock = f"{r['sm_clock_mean'] / 1e6:.0f} MHz" if r.get("sm_clock_mean") else "–"
        capped = "–" if r.get("capped") is None else (f"yes ({r['power_capped']:.0%})" if r["capped"] else "no")
        table.add_row(literal(r["name"]), styled(status, "green" if status == "OK" else "yellow" if
                                                 status == "SKIPPED" else "bold red"),
                      format_time(r["window"]) if r.get("window") else "–",
                      f"{r['power']:.0f} W" if r.get("power") else "–", rate if r.get("rate") else "–", per, clock,
                      capped, literal(r.get("note") or ""))
    return droppable(table, "note", "SM clock", whole=("probe",))
