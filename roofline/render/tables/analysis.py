"""Analysis documents (roofline/analysis/v1) as a rich table, CSV or Markdown."""

from __future__ import annotations

import csv
import io
from typing import Any, Sequence

from roofline.render.tables.fit import droppable
from roofline.render.text import csv_cell, literal, md
from roofline.model.units import format_bytes, format_count, format_flops, format_intensity, format_rate, format_time
from roofline.model.units import format_si, format_small


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
_DROP_ORDER = ("min energy", "threads for BW", "latency-bound", "launches", "L1 AI", "L2 AI", "ridge", "attainable",
               "AI (FLOP/B)",
               "DRAM bytes", "FLOPs", "roof", "bound", "SOL time")
_LEVEL_NAMES = {"l1": "L1", "l2": "L2"}


def _number(x: float) -> str:
    return format_intensity(x).replace(" FLOP/B", "")


def _has_energy(doc: dict[str, Any]) -> bool:
    """Whether any kernel has energy figures (a spec with an energy block): only then are energy columns shown."""
    return any(k.get("energy") for k in doc["kernels"])


def _energy_cells(k: dict[str, Any], full: bool) -> list[str]:
    """A kernel's energy cells: its minimum energy, and with `full` its energy balance, energy-bound regime (with a
    '≠ time' mark where it is bound differently in time), FLOP/J and power at the ceiling (docs/energy.md)."""
    e = k.get("energy")
    if not e:
        return ["–"] * (5 if full else 1)
    cells = [format_small(e["min_energy"], "J")]
    if full:
        bound = e["energy_bound"] + (" (≠ time)" if e["differs"] else "")
        cells += [_number(e["energy_balance"]), bound, format_si(e["flops_per_joule"], "FLOP/J"),
                  format_small(e["power"], "W")]
    return cells


_ENERGY_COLUMNS = ("min energy", "energy balance", "energy-bound", "FLOP/J", "power at SOL")


def energy_line(m: dict[str, Any]) -> str | None:
    """The machine's energy figures in one line, or None without them."""
    e = m.get("energy")
    if not e:
        return None
    mem = ", ".join(f"{level} {format_small(v, 'J/B')}" for level, v in e["memory"].items())
    flop = ", ".join(f"{roof} {format_small(v, 'J/FLOP')}" for roof, v in e["compute"].items())
    return (f"energy (Choi et al. 2013; {e['inputs']} inputs): idle {format_small(e['idle_power'], 'W')}; {mem}; "
            f"{flop}; source: {e['source']}")


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


def power_line(m: dict[str, Any]) -> str:
    """The machine's power roof in one line (roofline.model.power; Choi et al., IPDPS 2014), or why it has none."""
    limit, e = m.get("power_limit"), m.get("energy")
    if not e:
        return "no power roof: the spec has no energy block (measure one: roofline calibrate --energy)"
    if not limit:
        return "no power roof: the spec has no power_limit (give one, or --power-limit 700W)"
    whose = "--power-limit, a what-if" if m.get("power_limit_what_if") else "the spec's power_limit"
    memory = f"; DRAM energy charged up to {format_rate(e['dram_bandwidth'])}" if e.get("dram_bandwidth") else ""
    return (f"power roof (Choi et al. 2014): {format_small(limit, 'W')} ({whose}), "
            f"rate = (P - idle) / (pJ/FLOP + pJ/B / AI){memory}")


def rich_tables(docs: Sequence[dict[str, Any]]) -> list[Any]:
    # lazy: not needed by `roofline analyze --format csv`, which imports this module (start-up)
    from rich.table import Table

    tables = []
    for doc in docs:
        levels = _levels(doc)
        energy = _has_energy(doc)
        title = machine_line(doc["machine"]) + (f"\n{line}" if (line := energy_line(doc["machine"])) else "")
        title += "\n" + power_line(doc["machine"])
        table = Table(title=literal(title), title_justify="left", show_lines=False)
        columns = [*_columns(levels), *(["min energy"] if energy else [])]
        for col in columns:
            table.add_column(col, justify="left" if col in _TEXT_COLUMNS else "right", )
        bound = columns.index("bound")
        for k in doc["kernels"]:
            cells = [*_row(k, levels), *(_energy_cells(k, full=False) if energy else [])]
            cells[bound] = _short_bound(cells[bound])
            table.add_row(*(literal(cell) for cell in cells))
        tables.append(droppable(table, *_DROP_ORDER, whole=("kernel",)))
    return tables


_CSV_FIELDS = (
    "machine", "name", "params", "dtype", "roof", "launches", "flops", "bytes", "intensity", "peak_flops",
    "bandwidth", "ridge", "bound", "attainable_flops", "memory_time", "compute_time", "sol_time", "access_bytes",
    "threads_needed", "latency_bound", "l1_bytes", "l1_intensity", "l2_bytes", "l2_intensity",
)


# Appended only when a spec gives energy figures (roofline.model.energy.KernelEnergy; J, FLOP/B, FLOP/J, B/J, W).
_CSV_ENERGY_FIELDS = ("min_energy", "flop_energy", "memory_energy", "idle_energy", "energy_balance",
                      "effective_balance", "energy_bound", "energy_differs", "flops_per_joule", "bytes_per_joule",
                      "power_at_ceiling")


def to_csv(docs: Sequence[dict[str, Any]]) -> str:
    """One row per kernel and machine, base SI units, for spreadsheets and scripts."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    fields = _CSV_FIELDS + (_CSV_ENERGY_FIELDS if any(_has_energy(d) for d in docs) else ())
    writer.writerow(fields)
    for doc in docs:
        for k in doc["kernels"]:
            row = {**k, "machine": doc["machine"]["id"], "params": _params(k["params"])}
            for level in _LEVEL_NAMES:  # empty cells where the descriptor gives no traffic at that level
                t = (k.get("traffic") or {}).get(level) or {}
                row[f"{level}_bytes"], row[f"{level}_intensity"] = t.get("bytes"), t.get("intensity")
            e = k.get("energy") or {}
            row.update({f: e.get(f) for f in _CSV_ENERGY_FIELDS})
            row["energy_bound"], row["energy_differs"] = e.get("energy_bound"), e.get("differs")
            row["power_at_ceiling"] = e.get("power")
            writer.writerow([_csv_value(row[f]) for f in fields])
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
        if line := energy_line(doc["machine"]):
            lines += [md(line), ""]
        lines += [md(power_line(doc["machine"])), ""]
        levels = _levels(doc)
        energy = _has_energy(doc)
        columns = [*_columns(levels), *(_ENERGY_COLUMNS if energy else ())]
        lines.append("| " + " | ".join(columns) + " |")
        lines.append("|" + "|".join(" --- " if c in (*_TEXT_COLUMNS, "energy-bound") else " ---: "
                                    for c in columns) + "|")
        for k in doc["kernels"]:
            cells = [*_row(k, levels), *(_energy_cells(k, full=True) if energy else [])]
            lines.append("| " + " | ".join(md(cell) for cell in cells) + " |")
        lines.append("")
    return "\n".join(lines)
