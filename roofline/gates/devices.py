"""`report` over files measured on several GPUs at once (`--device all`, a fleet under MPI): each device judged on
its own, the GPUs of each file side by side, and the outliers among GPUs and among a fleet's nodes."""

from __future__ import annotations

from typing import Any, Sequence

from roofline.records.devices import HostDevice
from roofline.records.files import ResultsFile, device_labels, split_file
from roofline.errors import InputError
from roofline.gates.nodes import apply_node_outliers, fleet_summary, node_rows
from roofline.gates.hosts import host_rows, outliers
from roofline.gates.report import apply_outlier, build_report


def host_report(files: Sequence[ResultsFile], baseline: Sequence[ResultsFile], config: Any,
                outlier: float | None) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """(report, host rows). A several-GPU file becomes one document per GPU, so every existing gate judges each
    device on its own (and a several-GPU baseline is compared GPU by GPU); the host rows put the GPUs of each file
    side by side, and --outlier fails the ones too far below their host's median. In a fleet file (roofline.fleet)
    the host is the fleet, and --outlier also fails each node whose median is too far below the median of the node
    medians (roofline.gates.nodes); the report then carries `nodes` and the one-line-per-kernel `fleet_summary`."""
    parted: list[ResultsFile] = []
    groups: list[list[int]] = []
    fleets: list[bool] = []  # per group: a fleet file (mpirun), whose nodes are judged too
    for results in files:
        fleets.append(results.typed.fleet)
        parts = split_file(results)
        groups.append(list(range(len(parted), len(parted) + len(parts))) if results.typed.several_devices else [])
        parted += parts
    base = [part for results in baseline for part in split_file(results)]
    report = build_report(parted, config, base)
    labels = device_labels(parted)
    typed = [part.typed for part in parted]
    rows: list[dict[str, Any]] = []
    nodes: list[dict[str, Any]] = []  # a fleet's nodes, each against the median of the node medians
    for group, fleet in zip(groups, fleets):
        group_rows = host_rows([HostDevice.of_results(labels[i], typed[i]) for i in group])
        rows += group_rows
        nodes += node_rows(group_rows) if fleet else []
    if outlier is not None:
        if not any(len(g) > 1 for g in groups):
            raise InputError("--outlier compares the GPUs of one host: give a results file measured with "
                             "'roofline measure --device all'")
        report = apply_outlier(report, rows, outlier)
        if nodes:
            host_of = {label: part.host for label, part in zip(labels, typed)}
            report = apply_node_outliers(report, outliers(nodes, outlier), host_of.get, outlier)
    if rows:
        report = {**report, "hosts": rows}
    if any(fleets):
        report = {**report, "nodes": nodes, "fleet_summary": fleet_summary(rows, nodes, outlier)}
    return report, rows
