"""Analysis documents (roofline/analysis/v1) as a rich table, CSV or Markdown."""

from __future__ import annotations

import csv
import io
from typing import Any, Sequence

from roofline.render.tables.fit import droppable
from roofline.render.text import csv_cell, literal, md
from roofline.model.units import format_bytes, format_count, format_flops, format_intensity, format_rate, format_time


def _params(params: dict[str, Any]) -> str:
    return " ".join(f"{k}={v}" for k, v in params.items())


def machine_line(m: dict[str, Any]) -> str:
    threads = f"{m['resident_threads']:,} resident threads" if m.get("resident_threads") else "resident threads unknown"
    return (
        f"{m['name']} ({m['id']}): {format_rate(m['bandwidth'])}, DRAM latency {format_time(m['latency'])}; "
        f"Little's Law: {format_bytes(m['bytes_in_flight'])} in flight, {threads}"
    )


_COLUMNS = ("kernel", "roof", "FLOPs", "DRAM bytes", "AI (FLOP/B)", "ridge", "bound", "attainable", "SOL time",
            "launches", "threads for BW", "latency-bound")
_TEXT_COLUMNS = ("kernel", "roof", "bound")
# What a narrow terminal leaves out first (roofline.render.tables.fit). attainable (FLOPs / SOL time) and AI
# (FLOPs / bytes) follow from the columns kept, so at 80 columns a kernel keeps its roof, FLOPs, bytes, bound and
# SOL time: what the model was given and what it concluded.
_DROP_ORDER = ("threads for BW", "latency-bound", "launches", "L1 AI", "L2 AI", "ridge", "attainable", "AI (FLOP/B)",
               "DRAM bytes", "FLOPs", "roof", "bound", "SOL time")
_LEVEL_NAMES = {"l1": "L1", "l2": "L2"}


def _number(x: float) -> str:
    return format_intensity(x).replace(" FLOP/B", "")


def _levels(doc: dict[str, Any]) -> list[str]:
    """The cache levels any kernel of the document gives traffic for (a column each), in a fixed order."""
    given = {level for k in doc["kernels"] for level in (k.get("traffic") or {})}
    return [level for level in _LEVEL_NAMES if level in given]


def _columns(levels: Sequence[str]) -> list[str]:
    return [*_COLUMNS[:5], *(f"{_LEVEL_NAMES[lv]} AI" for lv in levels), *_COLUMNS[5:]]


def _level_ai(k: dict[str, Any], level: str) -> str:
    t = (k.get("traffic") or {}).get(level)
    if t is None:
        return "–"
    return "∞" if t["intensity"] is None else _number(t["intensity"])


def _row(k: dict[str, Any], levels: Sequence[str] = ()) -> list[str]:
    """A kernel's cells: the DRAM figures, with its intensity at each of `levels` after the DRAM intensity."""
    cells = _base_row(k)
    return [*cells[:5], *(_level_ai(k, lv) for lv in levels), *cells[5:]]


def _base_row(k: dict[str, Any]) -> list[str]:
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


def _short_bound(bound: str) -> str:
    """'interconnect (nvlink)' as the table shows it: 'nvlink' (bound by NVLink), as narrow as 'memory' and 'compute';
    CSV and Markdown keep the document's words."""
    prefix = "interconnect ("
    return bound[len(prefix):-1] if bound.startswith(prefix) and bound.endswith(")") else bound


def rich_tables(docs: Sequence[dict[str, Any]]) -> list[Any]:
    # lazy: not needed by `roofline analyze --format csv`, which imports this module (start-up)
    from rich.table import Table

    tables = []
    for doc in docs:
        levels = _levels(doc)
        table = Table(title=literal(machine_line(doc["machine"])), title_justify="left", show_lines=False)
        for col in _columns(levels):
            table.add_column(col, justify="left" if col in _TEXT_COLUMNS else "right", )
        bound = _columns(levels).index("bound")
        for k in doc["kernels"]:
            cells = _row(k, levels)
            cells[bound] = _short_bound(cells[bound])
            table.add_row(*(literal(cell) for cell in cells))
        tables.append(droppable(table, *_DROP_ORDER, whole=("kernel",)))
    return tables


_CSV_FIELDS = (
    "machine", "name", "params", "dtype", "roof", "launches", "flops", "bytes", "intensity", "peak_flops",
    "bandwidth", "ridge", "bound", "attainable_flops", "memory_time", "compute_time", "sol_time", "access_bytes",
    "threads_needed", "latency_bound", "l1_bytes", "l1_intensity", "l2_bytes", "l2_intensity",
)


def to_csv(docs: Sequence[dict[str, Any]]) -> str:
    """One row per kernel and machine, base SI units, for spreadsheets and scripts."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(_CSV_FIELDS)
    for doc in docs:
        for k in doc["kernels"]:
            row = {**k, "machine": doc["machine"]["id"], "params": _params(k["params"])}
            for level in _LEVEL_NAMES:  # empty cells where the descriptor gives no traffic at that level
                t = (k.get("traffic") or {}).get(level) or {}
                row[f"{level}_bytes"], row[f"{level}_intensity"] = t.get("bytes"), t.get("intensity")
            writer.writerow([_csv_value(row[f]) for f in _CSV_FIELDS])
    return out.getvalue()


def _csv_value(v: Any) -> Any:
    if v is None:
        return ""
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, float):
        return repr(v)
    return csv_cell(v)  # a name like '=HYPERLINK(...)' stays text in a spreadsheet


def to_markdown(docs: Sequence[dict[str, Any]]) -> str:
    lines: list[str] = []
    for doc in docs:
        lines.append(f"### {md(machine_line(doc['machine']))}")
        lines.append("")
        levels = _levels(doc)
        columns = _columns(levels)
        lines.append("| " + " | ".join(columns) + " |")
        lines.append("|" + "|".join(" --- " if c in _TEXT_COLUMNS else " ---: " for c in columns) + "|")
        for k in doc["kernels"]:
            lines.append("| " + " | ".join(md(cell) for cell in _row(k, levels)) + " |")
        lines.append("")
    return "\n".join(lines)
