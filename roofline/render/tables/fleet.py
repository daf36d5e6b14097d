"""A fleet as text: one line per kernel (or calibrated figure) naming the slow GPUs and the slow nodes, however many
GPUs there are, and one line per rank for `doctor` under mpirun. A column per GPU (roofline.render.tables.hosts) is kept for
small fleets, where it reads."""

from __future__ import annotations

from typing import Any, Mapping, Sequence

from rich.table import Table
from rich.text import Text

from roofline.render.tables.fit import droppable
from roofline.model.units import format_time
from roofline.records.files import params_text
from roofline.render.text import md, literal, styled
from roofline.render.tables.hosts import host_table, host_markdown
from roofline.gates.doctor import FAIL, PASS, SKIP, WARN
from roofline.render.tables.calibrate import format_value

COLUMNS_UP_TO = 8  # GPUs: up to this many, the column-per-GPU table is printed beside the fleet lines
NAMED_UP_TO = 5  # slow GPUs or nodes named in a cell; the rest counted


def _median(line: Mapping[str, Any]) -> str:
    if line.get("median_time") is not None:
        return format_time(line["median_time"])
    if line.get("median") is not None:
        return format_value(line["median"], line.get("kind") or "bandwidth")
    return "–"


def _one(item: Mapping[str, Any] | None) -> str:
    return "–" if item is None else f"{item['where']} {item['deviation']:+.1%}"


def _many(items: Sequence[Mapping[str, Any]], limit: float | None) -> str:
    if limit is None:
        return "(no --outlier)"
    if not items:
        return "none"
    named = "; ".join(f"{i['where']} {i['deviation']:+.1%} ✗" for i in items[:NAMED_UP_TO])
    return named + (f"; and {len(items) - NAMED_UP_TO} more" if len(items) > NAMED_UP_TO else "")


def _cells(line: Mapping[str, Any], limit: float | None) -> list[str]:
    return [str(line["kernel"]), params_text(line["params"]), str(line["gpus"]), _median(line),
            _one(line["slowest_gpu"]), _many(line["slow_gpus"], limit), str(line["nodes"] or "–"),
            _one(line["slowest_node"]), _many(line["slow_nodes"], limit) if line["nodes"] else "–"]


HEADERS = ("kernel", "params", "GPUs", "fleet median", "slowest GPU", "slow GPUs", "nodes", "slowest node",
           "slow nodes")


def headers(unit: str = "GPU") -> tuple[str, ...]:
    """The columns, naming what ran: 'GPU', or 'CPU' for a fleet of host ranks (--backend numpy)."""
    return tuple(h.replace("GPU", unit) for h in HEADERS)


def _title(limit: float | None, unit: str = "GPU") -> str:
    return (f"Across the fleet: each {unit} against the fleet median, each node's median against the median of the "
            "node medians" + (f" (outlier limit −{limit:.0%}, intervals not overlapping)" if limit is not None else ""))


def fleet_table(summary: Sequence[Mapping[str, Any]], limit: float | None, unit: str = "GPU") -> Any:
    """roofline.gates.nodes.fleet_summary as a rich table; `unit` is what each rank ran on ('GPU' or 'CPU')."""
    table = Table(title=_title(limit, unit))
    names = headers(unit)
    for name in names:
        table.add_column(name, justify="right" if name in (names[2], "nodes", "fleet median") else "left")
    for line in summary:
        table.add_row(*(Text(c) for c in _cells(line, limit)))
    return droppable(table, "params", "slowest node", names[4])


def fleet_markdown(summary: Sequence[Mapping[str, Any]], limit: float | None, unit: str = "GPU") -> str:
    names = headers(unit)
    lines = ["", f"### {_title(limit, unit)}", "", "| " + " | ".join(names) + " |", "|" + "---|" * len(names)]
    lines += ["| " + " | ".join(md(c) for c in _cells(line, limit)) + " |" for line in summary]
    return "\n".join(lines) + "\n"


def _gpu_count(rows: Sequence[Mapping[str, Any]]) -> int:
    return max((len(r["devices"]) for r in rows), default=0)


def host_view(report: Mapping[str, Any], rows: Sequence[Mapping[str, Any]], limit: float | None) -> list[Any]:
    """The tables under a report of several GPUs: the column-per-GPU table (for a fleet only up to COLUMNS_UP_TO
    GPUs), and for a fleet the line-per-kernel table naming slow GPUs and nodes."""
    fleet, unit = report.get("fleet_summary"), report_unit(report)
    tables = [host_table(rows, limit, unit)] if rows and (fleet is None or _gpu_count(rows) <= COLUMNS_UP_TO) else []
    return tables + ([fleet_table(fleet, limit, unit)] if fleet else [])


def report_unit(report: Mapping[str, Any]) -> str:
    """'CPU' when every device of the report ran on the host (--backend numpy), else 'GPU'."""
    devices = report.get("devices") or []
    return "CPU" if devices and all(d.get("backend") == "numpy" for d in devices) else "GPU"


def host_view_markdown(report: Mapping[str, Any], rows: Sequence[Mapping[str, Any]], limit: float | None) -> str:
    fleet, unit = report.get("fleet_summary"), report_unit(report)
    text = host_markdown(rows, limit, unit) if rows and (fleet is None or _gpu_count(rows) <= COLUMNS_UP_TO) else ""
    return text + (fleet_markdown(fleet, limit, unit) if fleet else "")


# ---- doctor under mpirun -------------------------------------------------------------------------------------------

def doctor_fleet_table(ranks: Sequence[Mapping[str, Any]]) -> Any:
    """One row per rank: where, GPU, its verdict and counts, and the checks that failed or warned (or its error)."""
    style = {PASS: "green", WARN: "yellow", FAIL: "bold red", "ERROR": "bold red", "HUNG": "bold red"}
    table = Table(title="roofline doctor across the fleet: one row per rank", title_justify="left")
    for name in ("rank", "GPU", "bus id", "", "passed", "warned", "failed", "skipped", "FAIL / WARN checks"):
        table.add_column(name, justify="right" if name in ("passed", "warned", "failed", "skipped") else "left",
                         overflow="fold")
    for r in ranks:
        verdict = r.get("verdict")
        if verdict is None:
            table.add_row(literal(r["where"]), "", "", styled(r["status"], style[r["status"]]), "", "", "", "",
                          literal(r.get("error") or ""))
            continue
        counts = verdict["counts"]
        flagged = "; ".join(f"{c['status']}: {c['name']}" for c in verdict["checks"] if c["status"] in (FAIL, WARN))
        table.add_row(literal(r["where"]), literal(verdict["device"].get("name") or ""),
                      literal(verdict["device"].get("pci_bus_id") or ""), styled(verdict["status"], style[verdict["status"]]),
                      str(counts[PASS]), str(counts[WARN]), str(counts[FAIL]), str(counts[SKIP]), literal(flagged))
    return droppable(table, "bus id", "skipped", "GPU")
