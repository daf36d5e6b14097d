"""Analysis documents (roofline/analysis/v1) as a rich table, CSV or Markdown."""

from __future__ import annotations

import csv
import io
from typing import Any, Sequence

from roofline.units import format_bytes, format_count, format_flops, format_intensity, format_rate, format_time


def _params(params: dict[str, Any]) -> str:
    return " ".join(f"{k}={v}" for k, v in params.items())


def machine_line(m: dict[str, Any]) -> str:
    threads = f"{m['resident_threads']:,} resident threads" if m.get("resident_threads") else "resident threads unknown"
    return (
        f"{m['name']} ({m['id']}): {format_rate(m['bandwidth'])}, DRAM latency {format_time(m['latency'])}; "
        f"Little's Law: {format_bytes(m['bytes_in_flight'])} in flight, {threads}"
    )


_COLUMNS = ("kernel", "roof", "FLOPs", "bytes", "AI (FLOP/B)", "ridge", "bound", "attainable", "SOL time", "launches", "threads for BW", "latency-bound")


def _number(x: float) -> str:
    return format_intensity(x).replace(" FLOP/B", "")


def _row(k: dict[str, Any]) -> list[str]:
    return [
        k["name"],
        k["roof"],
        format_count(k["flops"]),
        format_bytes(k["bytes"]),
        _number(k["intensity"]),
        _number(k["ridge"]),
        k["bound"],
        format_flops(k["attainable_flops"]),
        format_time(k["sol_time"]),
        str(k["launches"]),
        f"{k['threads_needed']:,.0f}",
        "yes" if k["latency_bound"] else "no",
    ]


def rich_tables(docs: Sequence[dict[str, Any]]) -> list[Any]:
    from rich.table import Table

    tables = []
    for doc in docs:
        table = Table(title=machine_line(doc["machine"]), title_justify="left", show_lines=False)
        for i, col in enumerate(_COLUMNS):
            table.add_column(col, justify="left" if i in (0, 1, 6) else "right", no_wrap=i == 0)
        for k in doc["kernels"]:
            table.add_row(*_row(k))
        tables.append(table)
    return tables


_CSV_FIELDS = (
    "machine", "name", "params", "dtype", "roof", "launches", "flops", "bytes", "intensity", "peak_flops",
    "bandwidth", "ridge", "bound", "attainable_flops", "memory_time", "compute_time", "sol_time", "access_bytes",
    "threads_needed", "latency_bound",
)


def to_csv(docs: Sequence[dict[str, Any]]) -> str:
    """One row per kernel and machine, base SI units, for spreadsheets and scripts."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(_CSV_FIELDS)
    for doc in docs:
        for k in doc["kernels"]:
            row = {**k, "machine": doc["machine"]["id"], "params": _params(k["params"])}
            writer.writerow([_csv_value(row[f]) for f in _CSV_FIELDS])
    return out.getvalue()


def _csv_value(v: Any) -> Any:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, float):
        return repr(v)
    return v


def to_markdown(docs: Sequence[dict[str, Any]]) -> str:
    lines: list[str] = []
    for doc in docs:
        lines.append(f"### {machine_line(doc['machine'])}")
        lines.append("")
        lines.append("| " + " | ".join(_COLUMNS) + " |")
        lines.append("|" + "|".join(" --- " if i in (0, 1, 6) else " ---: " for i in range(len(_COLUMNS))) + "|")
        for k in doc["kernels"]:
            lines.append("| " + " | ".join(cell.replace("|", "\\|") for cell in _row(k)) + " |")
        lines.append("")
    return "\n".join(lines)
