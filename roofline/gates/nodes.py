"""The slow node (pure): each node's median against the median of the fleet's node medians, by the rule that finds
the slow GPU (roofline.gates.hosts): a node is an outlier when it is more than the limit below that median and, where the
timings carry confidence intervals, its interval does not overlap the median's.

A node's figure on a kernel is the median speed of its GPUs (1 / time), and its interval the medians of its GPUs'
lower and upper bounds, the same construction the fleet's median interval uses. Each node then stands in for a GPU
in roofline.gates.hosts.host_rows (or figure_rows, for calibrated figures), so the deviation, the overlap and the
outlier test are the ones the GPUs get, not a second spelling.

Why both levels: the unit a cluster pulls out of service is often the node. A node whose every GPU runs slow (a
power cap, a hot rack, slow host memory) is named once, as a node, rather than as eight GPUs; and one slow GPU does
not move its node's median, so a node is not named for one bad GPU. A node is found when its GPUs are slow together;
the per-GPU gate still names each GPU that is slow on its own.
"""

from __future__ import annotations

from roofline.model.units import format_limit

import statistics
from typing import Any, Callable, Mapping, Sequence
import json

from roofline.gates.hosts import host_rows, figure_rows, is_outlier
from roofline.records.files import params_text
from roofline.records.devices import HostDevice, Timing, split_devices
from roofline.gates.report import recount


def _by_host(devices: Sequence[Mapping[str, Any]]) -> dict[str, list[Mapping[str, Any]]]:
    out: dict[str, list[Mapping[str, Any]]] = {}
    for d in devices:
        if d.get("host"):
            out.setdefault(str(d["host"]), []).append(d)
    return out


def _node(host: str) -> dict[str, Any]:
    return {"label": f"node {host}", "index": host, "pci_bus_id": None, "where": f"node {host}", "host": host}


def node_rows(rows: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Per-kernel rows of roofline.gates.hosts.host_rows (GPUs) → the same rows with one entry per node, each node's
    deviation from the median of the node medians. Empty when the rows span fewer than two hosts."""
    nodes: dict[str, list[Timing]] = {}
    for row in rows:
        for host, devices in _by_host(row["devices"]).items():
            times = [d["time"] for d in devices if d.get("time")]
            cis = [d["ci"] for d in devices if d.get("time") and d.get("ci")]
            speed = statistics.median(1.0 / t for t in times) if times else None
            nodes.setdefault(host, []).append(Timing(
                row["kernel"], row["params"], "OK" if speed else "FAILED", 1.0 / speed if speed else None,
                [statistics.median(c[0] for c in cis), statistics.median(c[1] for c in cis)] if cis else None))
    if len(nodes) < 2:
        return []
    return host_rows([HostDevice(**_node(host), timings=tuple(timings)) for host, timings in nodes.items()])


def node_figure_rows(rows: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Calibrated figures across the fleet (roofline.gates.hosts.figure_rows) → one entry per node, its median figure
    against the median of the node medians (below zero worse, for the latency too)."""
    nodes: dict[str, dict[str, Any]] = {}
    for row in rows:
        for host, devices in _by_host(row["devices"]).items():
            node = nodes.setdefault(host, {**_node(host), "figures": []})
            values = [d["value"] for d in devices if d.get("value")]
            node["figures"].append({"field": row["field"], "label": row["kernel"], "kind": row["kind"],
                                    "status": "OK" if values else "FAILED",
                                    "value": statistics.median(values) if values else None})
    return figure_rows(list(nodes.values())) if len(nodes) >= 2 else []


def node_failure(o: Mapping[str, Any], limit: float) -> str:
    """'node gpu-17 is 8.1% below the median of the fleet's node medians, over the 5% outlier limit'."""
    return (f"node {o['index']} is {-o['deviation']:.1%} below the median of the fleet's node medians, over the "
            f"{format_limit(limit)} outlier limit")


def apply_node_outliers(report: dict[str, Any], found: Sequence[Mapping[str, Any]], host_of: Callable[[str], Any],
                        limit: float) -> dict[str, Any]:
    """Fail every report row of a slow node's GPUs on the kernel the node is slow on (each row names the node);
    `host_of(row's device label)` is the row's host. Returns the report with `node_outliers` and the summary
    recounted."""
    by_key = {(str(o["index"]), o["kernel"], params_text(o["params"])): o for o in found}
    rows = []
    for row in report["rows"]:
        o = by_key.get((str(host_of(row["device"])), row["kernel"], row["params_text"]))
        if o is not None and row["verdict"] != "skip":
            row = {**row, "verdict": "fail", "failures": [*row["failures"], node_failure(o, limit)],
                   "failed_gates": [*row["failed_gates"], "node_outlier"]}
        rows.append(row)

    return {**report, "rows": rows, "summary": recount(report, rows), "node_outliers": list(found)}


def _worst(devices: Sequence[Mapping[str, Any]]) -> Mapping[str, Any] | None:
    judged = [d for d in devices if d.get("deviation") is not None]
    return min(judged, key=lambda d: d["deviation"]) if judged else None


def fleet_summary(rows: Sequence[Mapping[str, Any]], nodes: Sequence[Mapping[str, Any]],
                  limit: float | None) -> list[dict[str, Any]]:
    """One line per kernel (or calibrated figure) however many GPUs: how many GPUs and nodes, the fleet median, the
    slowest GPU and node, and every GPU and node over the limit, worst first. The table a 10,000-GPU fleet can read,
    where a column per GPU cannot."""
    node_by_key = {(r["kernel"], _params_key(r["params"])): r for r in nodes}
    out = []
    for row in rows:
        node = node_by_key.get((row["kernel"], _params_key(row["params"])))
        node_devices = node["devices"] if node else []

        def slow(devices: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
            hits = [d for d in devices if limit is not None and is_outlier(d, limit)]
            return [{"where": d.get("where") or d["label"], "deviation": d["deviation"]}
                    for d in sorted(hits, key=lambda d: d["deviation"])]

        worst, worst_node = _worst(row["devices"]), _worst(node_devices)
        out.append({
            "kernel": row["kernel"], "params": row["params"], "field": row.get("field"), "kind": row.get("kind"),
            "median_time": row.get("median_time"), "median": row.get("median"),
            "gpus": sum(d.get("deviation") is not None for d in row["devices"]),
            "nodes": sum(d.get("deviation") is not None for d in node_devices),
            "slowest_gpu": {"where": worst.get("where") or worst["label"], "deviation": worst["deviation"]}
            if worst else None,
            "slowest_node": {"where": worst_node["where"], "deviation": worst_node["deviation"]}
            if worst_node else None,
            "slow_gpus": slow(row["devices"]), "slow_nodes": slow(node_devices),
        })
    return out


def _params_key(params: Any) -> str:
    return json.dumps(params or {}, sort_keys=True, default=str)


def slow_nodes_text(report: Mapping[str, Any], named: int = 5) -> str:
    """'; slow node(s): gpu-17 (vector_add −8.1%), ...' for the exit-1 line, or '' without a slow node."""
    found = report.get("node_outliers") or []
    if not found:
        return ""
    worst: dict[str, Mapping[str, Any]] = {}
    for o in found:  # worst first already: each node once, at its worst kernel
        worst.setdefault(str(o["index"]), o)
    items = [f"{host} ({o['kernel']} {o['deviation']:+.1%})" for host, o in list(worst.items())[:named]]
    more = f" and {len(worst) - named} more" if len(worst) > named else ""
    return f"; slow node(s): {', '.join(items)}{more}"


def fleet_rows(doc: Mapping[str, Any]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """A fleet results document → (GPU rows, node rows): per kernel, each rank against the fleet median and each
    node against the median of the node medians (what `report --outlier` judges and `plot` draws)."""
    rows = host_rows([HostDevice.of_part(p) for p in split_devices(doc)])
    return rows, node_rows(rows)
