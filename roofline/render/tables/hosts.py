"""The several-GPU view of a report: per kernel, the host median and each device's deviation from it."""

from __future__ import annotations

from roofline.render.tables.fit import droppable

from typing import Any, Mapping, Sequence

from rich.table import Table
from rich.text import Text

from roofline.model.units import format_time
from roofline.gates.hosts import is_outlier
from roofline.records.files import params_text
from roofline.render.text import md
from roofline.render.tables.calibrate import format_value


def _deviation(d: Mapping[str, Any], limit: float | None) -> str:
    if d.get("deviation") is None:
        return str(d.get("status") or "–")

    mark = " ✗" if limit is not None and is_outlier(d, limit) else ""
    return f"{d['deviation']:+.1%}{mark}"


def _columns(rows: Sequence[Mapping[str, Any]], unit: str = "GPU") -> list[tuple[Any, Any, str]]:
    """(index, bus id, header) per device; a fleet's devices are headed by their rank and host."""
    seen: dict[tuple[Any, Any], str] = {}
    for row in rows:
        for d in row["devices"]:
            seen.setdefault((d["index"], d["pci_bus_id"]),
                            d.get("where") or _header(d["index"], d["pci_bus_id"], unit))
    return [(i, bus, header) for (i, bus), header in seen.items()]


def _header(index: Any, bus: Any, unit: str = "GPU") -> str:
    return f"{unit} {index}" + (f" {bus}" if bus else "")


def _cells(row: Mapping[str, Any], columns: list[tuple[Any, Any, str]], limit: float | None,
           first: list[str] | None = None) -> list[str]:
    """The row's leading cells (kernel, params, median time unless `first` is given), then each GPU's deviation."""
    by_device = {(d["index"], d["pci_bus_id"]): d for d in row["devices"]}
    cells = first if first is not None else [row["kernel"], params_text(row["params"]),
                                             format_time(row["median_time"])]
    for index, bus, _ in columns:
        d = by_device.get((index, bus))
        cells.append("" if d is None else _deviation(d, limit))
    return cells


def host_table(rows: Sequence[Mapping[str, Any]], limit: float | None = None, unit: str = "GPU") -> Any:
    """A rich table: kernel, params, median time across the GPUs, then each GPU's speed deviation from it (`unit`:
    'CPU' for host ranks, --backend numpy)."""
    columns = _columns(rows, unit)
    title = f"Across the host's {unit}s: speed against the median" + (
        f" (outlier limit −{limit:.0%})" if limit else "")
    table = Table(title=title)
    for name in ("kernel", "params", "median time", *(h for _, _, h in columns)):
        table.add_column(name, justify="left" if name in ("kernel", "params") else "right")
    for row in rows:
        table.add_row(*(Text(c) for c in _cells(row, columns, limit)))
    return droppable(table, "params", "median time")


def host_markdown(rows: Sequence[Mapping[str, Any]], limit: float | None = None, unit: str = "GPU") -> str:
    columns = _columns(rows, unit)
    head = ["kernel", "params", "median time", *(h for _, _, h in columns)]
    lines = ["", f"### Across the host's {unit}s (speed against the median)", "",
             "| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for row in rows:
        lines.append("| " + " | ".join(md(c) for c in _cells(row, columns, limit)) + " |")
    return "\n".join(lines) + "\n"


def figure_host_table(rows: Sequence[Mapping[str, Any]], limit: float | None = None) -> Any:
    """`calibrate --device all`: per calibrated figure, the host median and each GPU's deviation from it (below zero
    is worse, for the latency too)."""
    columns = _columns(rows)
    title = "Calibrated figures across the host's GPUs: each against the median" + \
        (f" (outlier limit −{limit:.0%})" if limit else "")
    table = Table(title=title)
    for name in ("figure", "median", *(h for _, _, h in columns)):
        table.add_column(name, justify="left" if name == "figure" else "right")
    for row in rows:
        first = [row["kernel"], format_value(row["median"], row["kind"])]
        table.add_row(*(Text(c) for c in _cells(row, columns, limit, first)))
    return table
