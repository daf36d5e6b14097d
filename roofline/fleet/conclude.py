"""What rank 0 concludes from the ranks' outcomes of `calibrate` and `doctor` under mpirun/srun, before anything
is printed or written: the fleet's spec of medians, the figures across GPUs and nodes and the outliers; the doctor's
row per rank and the fleet's verdict. Functions of the gathered outcomes, so they are tested with outcomes written by
hand (tests/test_fleet_commands.py) on machines with no GPU."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping

from roofline.fleet.identity import rank_label
from roofline.fleet.merge import DONE, FAILED, grouped_failures, raise_if_none
from roofline.gates.doctor import FAIL
from roofline.gates.hosts import figure_rows, outliers
from roofline.gates.nodes import fleet_summary, node_failure, node_figure_rows
from roofline.measurement.calibrate.figures import Figure, calibration_document, comparison_rows
from roofline.measurement.calibrate.spec import written_spec
from roofline.measurement.multi.calibrate import device_figure_lists, host_figures
from roofline.measurement.multi.host import gpus_name

DOCTOR_FLEET_SCHEMA = "roofline/doctor-fleet/v1"
# a fleet spec's device block: what every rank shares, not where one of them ran
_RANK_ONLY = ("rank", "local_rank", "device_index", "uuid", "pci_bus_id", "serial", "label", "host", "index")


def rank_parts(outcomes: Mapping[int, Any]) -> list[dict[str, Any]]:
    """The ranks' documents that came back, each device block naming its rank, host and label, index = rank."""
    parts = []
    for rank, out in sorted(outcomes.items()):
        if out.state != DONE or out.document is None:
            continue
        ident = {**out.identity, "rank": rank}
        device = {**out.document["device"], **{k: v for k, v in ident.items() if v is not None},
                  "index": rank, "label": rank_label(ident)}
        parts.append({**out.document, "device": device})
    return parts


def fleet_name(parts: list[dict[str, Any]]) -> str:
    return f"{gpus_name(parts)} on {len({p['device'].get('host') for p in parts})} node(s)"


@dataclass
class FleetCalibration:
    """The fleet's calibration: its spec (each figure the median of its ranks), the figures across GPUs and nodes,
    and what --outlier finds too slow."""

    parts: list[dict[str, Any]]
    datasheet: Any
    figures: list[Figure]
    device: dict[str, Any]
    spec_doc: dict[str, Any]
    warnings: list[str]
    text: str  # the measured spec's YAML, checked to load
    rows: list[dict[str, Any]]  # each figure on each GPU
    nodes: list[dict[str, Any]]  # each figure on each node (the median of its GPUs)
    summary: Any
    comparison: list[Any]
    failures: list[str]  # the ranks that failed or hung, grouped
    outlier: float | None = None
    slow: list[dict[str, Any]] = field(default_factory=list)
    slow_nodes: list[dict[str, Any]] = field(default_factory=list)

    def document(self, wall: float, size: int, timeout: float | None, gather: Mapping[str, Any]) -> dict[str, Any]:
        """--format json."""
        doc = calibration_document(self.figures, self.datasheet, self.device, self.spec_doc, wall)
        doc.update(devices=[calibration_document(p["figures"], self.datasheet, p["device"], None) for p in self.parts],
                   hosts=self.rows, nodes=self.nodes, fleet_summary=self.summary, outliers=self.slow,
                   node_outliers=self.slow_nodes, device_errors=self.failures,
                   fleet={"engine": "mpi", "size": size, "timeout": timeout, "gather": dict(gather)})
        return doc

    def problems(self) -> list[str]:
        """Why the run exits 1: ranks that failed or hung, GPUs and nodes too far below the fleet's median."""
        limit = self.outlier or 0
        return [*self.failures,
                *(f"{o['where']}: {o['kernel']} {-o['deviation']:.1%} below the fleet median (limit {limit:.0%})"
                  for o in self.slow),
                *(f"{o['kernel']}: {node_failure(o, limit)}" for o in self.slow_nodes)]


def fleet_calibration(outcomes: Mapping[int, Any], timeout: float | None, outlier: float | None) -> FleetCalibration:
    """Rank 0's calibration of the fleet from the ranks' outcomes (every rank failing the same way is that error)."""
    raise_if_none(outcomes, timeout)
    parts = rank_parts(outcomes)
    hosts = len({p["device"].get("host") for p in parts})
    datasheet = parts[0]["datasheet"]
    figures = host_figures(parts, scope=f"a fleet of {hosts} node(s)", unit="rank")
    device = {k: v for k, v in parts[0]["device"].items() if k not in _RANK_ONLY}
    device["name"] = fleet_name(parts)
    spec = written_spec(figures, device, datasheet)
    rows = figure_rows(device_figure_lists(parts))
    nodes = node_figure_rows(rows)
    return FleetCalibration(parts=parts, datasheet=datasheet, figures=figures, device=device, spec_doc=spec.doc,
                            warnings=spec.warnings, text=spec.text, rows=rows, nodes=nodes,
                            summary=fleet_summary(rows, nodes, outlier), comparison=comparison_rows(figures, datasheet),
                            failures=grouped_failures(outcomes, timeout), outlier=outlier,
                            slow=outliers(rows, outlier) if outlier is not None else [],
                            slow_nodes=outliers(nodes, outlier) if outlier is not None else [])


def doctor_ranks(outcomes: Mapping[int, Any], timeout: float | None) -> list[dict[str, Any]]:
    """One entry per rank: where it ran and its verdict (roofline/doctor/v1), or ERROR / HUNG with its error."""
    out = []
    for rank, o in sorted(outcomes.items()):
        ident = {k: o.identity.get(k) for k in ("host", "local_rank", "device_index", "uuid", "pci_bus_id")}
        entry: dict[str, Any] = {"rank": rank, **ident, "where": rank_label({**o.identity, "rank": rank})}
        if o.state == DONE and o.document is not None:
            entry.update(status=o.document["status"], verdict=o.document)
        elif o.state == FAILED:
            entry.update(status="ERROR", error=o.error)
        else:
            within = f" within --timeout {timeout:g} s" if timeout is not None else ""
            entry.update(status="HUNG", error=f"hung: no result{within}")
        out.append(entry)
    return out


def doctor_fleet_document(outcomes: Mapping[int, Any], size: int, timeout: float | None,
                          gather: Mapping[str, Any]) -> dict[str, Any]:
    """The fleet's verdict (roofline/doctor-fleet/v1): FAIL when any rank failed a check, failed or hung; else the
    worst of PASS and WARN; the counts and a row per rank."""
    raise_if_none(outcomes, timeout)
    ranks = doctor_ranks(outcomes, timeout)
    statuses = [r["status"] for r in ranks]
    worst = FAIL if any(s in (FAIL, "ERROR", "HUNG") for s in statuses) else max(
        statuses, key=lambda s: {"PASS": 0, "WARN": 1}.get(s, 0))
    return {"schema": DOCTOR_FLEET_SCHEMA, "status": worst,
            "counts": {s: statuses.count(s) for s in ("PASS", "WARN", "FAIL", "ERROR", "HUNG")},
            "fleet": {"engine": "mpi", "size": size, "timeout": timeout, "gather": dict(gather)}, "ranks": ranks}
