"""What rank 0 concludes from the ranks' outcomes of `measure`, `sweep`, `calibrate` and `doctor` under mpirun/srun,
before anything is printed or written: the merged results and the sweep's per-rank model blocks; the fleet's spec of
medians, the figures across GPUs and nodes and the outliers; the doctor's row per rank; each command's verdict (the
GateFailed that makes the job exit 1) and the tracebacks worth printing. Functions of the gathered outcomes, so
they are tested with outcomes written by hand (tests/test_fleet_commands.py, tests/test_fleet_conclude.py) on
machines with no GPU."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

from roofline.errors import GateFailed

from roofline.fleet.identity import rank_label
from roofline.fleet.merge import DONE, FAILED, fleet_document, grouped_failures, raise_if_none
from roofline.fleet.runner import judge
from roofline.gates.doctor import FAIL, Check
from roofline.gates.hosts import figure_rows, outliers
from roofline.gates.nodes import fleet_rows, fleet_summary, node_failure, node_figure_rows
from roofline.records.devices import split_devices
from roofline.records.document import entry_failed
from roofline.measurement.calibrate.figures import Figure, calibration_document, comparison_rows
from roofline.measurement.calibrate.spec import written_spec
from roofline.measurement.multi.calibrate import device_figure_lists, host_figures
from roofline.measurement.multi.host import gpus_name
from roofline.model.counts import counted

DOCTOR_FLEET_SCHEMA = "roofline/doctor-fleet/v1"
# the errors a rank reports as a message (a user error, no GPU, a gate); any other class is a bug: its traceback
KNOWN_ERRORS = ("InputError", "BackendUnavailable", "GateFailed", "RooflineError", "ProgramFailed", "TimedOut")
TRACEBACKS = 3  # ranks whose traceback (a bug, not a user error) is printed; the rest are counted
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


def rank_tracebacks(outcomes: Mapping[int, Any]) -> tuple[list[str], int]:
    """The tracebacks to print, a few at most: each rank that failed with something other than a user error (a
    bug); and how many more there were (their errors are in the file)."""
    bugs = [o for _, o in sorted(outcomes.items()) if o.detail and o.kind not in KNOWN_ERRORS]
    return [f"{o.label()}: {o.detail}" for o in bugs[:TRACEBACKS]], max(0, len(bugs) - TRACEBACKS)


# ---- measure and sweep ----------------------------------------------------------------------------------------------

@dataclass
class FleetResults:
    """`measure` or `sweep` under mpirun, on rank 0: the merged (slim) document the file is assembled from and, for a
    sweep, what its tables show; the verdict on the ranks and their kernels."""

    doc: dict[str, Any]
    outcomes: Mapping[int, Any]
    size: int
    timeout: float | None
    shown: list[dict[str, Any]] = field(default_factory=list)  # sweep: the ranks whose tables and model lines print
    hidden: int = 0  # sweep: the ranks whose tables and model lines are in the file only
    summary: list[dict[str, Any]] = field(default_factory=list)  # sweep: the sizes across the fleet

    def verdict(self) -> None:
        """Exit 1 (GateFailed) naming the ranks that failed or hung, else the kernels that FAILED verification."""
        judge(self.outcomes, self.size, self.timeout)
        failed = sorted({k["name"] for k in self.doc["kernels"] if entry_failed(k)})
        if failed:
            raise GateFailed(f"{counted(len(failed), 'kernel')} FAILED verification: {', '.join(failed[:5])}")


def fleet_results(outcomes: Mapping[int, Any], size: int, timeout: float | None,
                  gather: Mapping[str, Any]) -> FleetResults:
    """The fleet `measure`: the ranks' (slim) documents merged (every rank failing the same way is that error)."""
    return FleetResults(fleet_document(outcomes, size, timeout, gather), outcomes, size, timeout)


def fleet_sweep(outcomes: Mapping[int, Any], size: int, timeout: float | None, gather: Mapping[str, Any],
                shown_up_to: int, spool: Any = None) -> FleetResults:
    """The fleet `sweep`: the merged document with each rank's own model block (`sweeps`); the ranks whose sweep
    tables are shown (every rank up to `shown_up_to`, past it the first alone, its entries read back in full from
    the spool, roofline.fleet.stream.Spool, when it holds slim ones), and the sizes across the fleet (the slowest
    GPU and node per size)."""
    doc = fleet_document(outcomes, size, timeout, gather)
    doc["sweeps"] = [{"device": r, **o.document["sweep"]} for r, o in sorted(outcomes.items())
                     if o.state == DONE and o.document is not None and o.document.get("sweep")]
    parts = split_devices(doc)
    shown = parts if len(parts) <= shown_up_to else parts[:1]
    if len(parts) > shown_up_to and spool is not None:  # slim entries held: the shown rank's read back in full
        shown = [{**parts[0], "kernels": spool.entries(int(parts[0]["device"]["index"]))}]
    return FleetResults(doc, outcomes, size, timeout, shown, len(parts) - len(shown),
                        fleet_summary(*fleet_rows(doc), None))


# ---- calibrate ------------------------------------------------------------------------------------------------------

def fleet_name(parts: list[dict[str, Any]]) -> str:
    return f"{gpus_name(parts)} on {counted(len({p['device'].get('host') for p in parts}), 'node')}"


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

    def verdict(self, size: int) -> None:
        """Exit 1 (GateFailed) with every problem: ranks that failed or hung, GPUs and nodes too slow."""
        problems = self.problems()
        if problems:
            raise GateFailed(f"{counted(len(problems), 'problem')} across {counted(size, 'rank')}: " + "; ".join(problems))


def fleet_calibration(outcomes: Mapping[int, Any], timeout: float | None, outlier: float | None) -> FleetCalibration:
    """Rank 0's calibration of the fleet from the ranks' outcomes (every rank failing the same way is that error)."""
    raise_if_none(outcomes, timeout)
    parts = rank_parts(outcomes)
    hosts = len({p["device"].get("host") for p in parts})
    datasheet = parts[0]["datasheet"]
    figures = host_figures(parts, scope=f"a fleet of {counted(hosts, 'node')}", unit="rank")
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


# ---- doctor ---------------------------------------------------------------------------------------------------------

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


def rank_checks(ranks: Sequence[Mapping[str, Any]]) -> list[tuple[str, list[Check]]]:
    """Each rank that gave a verdict, where it ran and its checks (roofline.gates.doctor.Check), for its WARN and
    FAIL lines."""
    return [(r["where"], [Check(**{**c, "limits": tuple(c["limits"])}) for c in r["verdict"]["checks"]])
            for r in ranks if r.get("verdict")]


def doctor_verdict(doc: Mapping[str, Any], outcomes: Mapping[int, Any], size: int, timeout: float | None) -> None:
    """Exit 1 (GateFailed) naming the ranks that failed or hung, else each rank that FAILED a check (five named)."""
    judge(outcomes, size, timeout)
    failed = [r for r in doc["ranks"] if r["status"] == FAIL]
    if failed:
        named = "; ".join(f"{r['where']}: " + ", ".join(c["name"] for c in r["verdict"]["checks"]
                                                       if c["status"] == FAIL) for r in failed[:5])
        more = f"; and {len(failed) - 5} more" if len(failed) > 5 else ""
        raise GateFailed(f"doctor FAILED on {len(failed)} of {counted(size, 'rank')}: {named}{more}")
