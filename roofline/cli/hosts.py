"""`report` over files measured on several GPUs at once: split them per device, add the host view and gate."""

from __future__ import annotations

from typing import Any, Sequence


def host_report(docs: Sequence[dict[str, Any]], baseline: Sequence[dict[str, Any]], config: Any,
                outlier: float | None) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """(report, host rows). A several-GPU file becomes one document per GPU, so every existing gate judges each
    device on its own (and a several-GPU baseline is compared GPU by GPU); the host rows put the GPUs of each file
    side by side, and --outlier fails the ones too far below their host's median."""
    from roofline.errors import InputError
    from roofline.gates.report import apply_outlier, build_report
    from roofline.gates.hosts import host_rows
    from roofline.measurement.multi.pool import split_devices
    from roofline.records.files import device_labels

    expanded: list[dict[str, Any]] = []
    groups: list[list[int]] = []
    for doc in docs:
        parts = split_devices(doc)
        groups.append(list(range(len(expanded), len(expanded) + len(parts))) if doc.get("devices") else [])
        expanded += parts
    base = [part for doc in baseline for part in split_devices(doc)]
    report = build_report(expanded, config, base)
    labels = device_labels(expanded)
    rows: list[dict[str, Any]] = []
    for group in groups:
        rows += host_rows([{"label": labels[i], "index": expanded[i]["device"].get("index"),
                            "pci_bus_id": expanded[i]["device"].get("pci_bus_id"),
                            "where": expanded[i]["device"].get("label"),
                            "kernels": expanded[i]["kernels"]} for i in group])
    if outlier is not None:
        if not any(len(g) > 1 for g in groups):
            raise InputError("--outlier compares the GPUs of one host: give a results file measured with "
                             "'roofline measure --device all'")
        report = apply_outlier(report, rows, outlier)
    if rows:
        report = {**report, "hosts": rows}
    return report, rows
