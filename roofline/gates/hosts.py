"""Several GPUs of one host, side by side (pure): per kernel, the median across the devices and each device's
deviation from it, the figures the node-acceptance gate (`report --outlier 5%`) judges.

A device's figure is its speed on the kernel, 1 / median time (the same ratio as its fraction of the ceiling, which
a file measured without a spec lacks). Its deviation is speed / host median speed − 1: −0.08 means 8 % slower than
the host's median. With two GPUs the median is their mean, so one GPU 10 % slower than the other sits about 5 %
below the median: the gate's limit is a distance from the median, not between devices.

Where the devices' timings carry confidence intervals (time_ci), a device is an outlier only when it is also
outside the noise: its interval and the median interval (the medians of the devices' lower and upper bounds) do
not overlap. A fleet (roofline.fleet) is one such set: each rank against the fleet median, named by its `where`
('rank 5 on node-2 (GPU 1)').
"""

from __future__ import annotations

import json
import statistics
from typing import Any, Mapping, Sequence

from roofline.records.devices import HostDevice, Timing


def _key(kernel: Timing) -> tuple[str, str]:
    return str(kernel.name), json.dumps(kernel.params, sort_keys=True, default=str)


def _device(dev: HostDevice) -> dict[str, Any]:
    """Who a row's cell is: the GPU's label and index, PCI bus id, and (in a fleet) where it runs and its host."""
    return {"label": dev.label, "index": dev.index, "pci_bus_id": dev.pci_bus_id, "where": dev.where,
            "host": dev.host}


def host_rows(devices: Sequence[HostDevice | Mapping[str, Any]]) -> list[dict[str, Any]]:
    """devices: one HostDevice per GPU of one host (or its dict form, {label, index, pci_bus_id, kernels}). One row
    per kernel that at least two devices timed: its median time across them and each device's time, speed ratio and
    deviation. Kernels a device failed or skipped are listed for it with deviation None (the verification gate fails
    those)."""
    order: dict[tuple[str, str], dict[str, Any]] = {}
    for dev in map(HostDevice.of, devices):
        for k in dev.timings:
            row = order.setdefault(_key(k), {"kernel": k.name, "params": k.params, "devices": []})
            time = k.time_median if k.status == "OK" else None
            ci = k.time_ci if time else None
            row["devices"].append({**_device(dev), "time": time, "status": k.status,
                                   "ci": list(ci) if _interval(ci) else None,
                                   "fraction_of_ceiling": k.fraction_of_ceiling})
    rows = []
    for row in order.values():
        times = [d["time"] for d in row["devices"] if d["time"]]
        if len(times) < 2:
            continue
        median_speed = statistics.median(1.0 / t for t in times)
        row["median_time"] = statistics.median(times)
        row["median_speed"] = median_speed
        cis = [d["ci"] for d in row["devices"] if d["ci"]]
        row["median_ci"] = ([statistics.median(c[0] for c in cis), statistics.median(c[1] for c in cis)]
                            if len(cis) >= 2 else None)
        for d in row["devices"]:
            d["deviation"] = (1.0 / d["time"]) / median_speed - 1.0 if d["time"] else None
            d["overlaps"] = overlaps(d["ci"], row["median_ci"])
        rows.append(row)
    return rows


def _interval(ci: Any) -> bool:
    return (isinstance(ci, (list, tuple)) and len(ci) == 2
            and all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in ci) and ci[0] <= ci[1])


def overlaps(ci: Sequence[float] | None, median_ci: Sequence[float] | None) -> bool | None:
    """Whether a device's time interval overlaps the median interval; None when either is unknown (then the
    deviation alone decides)."""
    if not ci or not median_ci:
        return None
    return not (ci[0] > median_ci[1] or ci[1] < median_ci[0])


def is_outlier(d: Mapping[str, Any], limit: float) -> bool:
    """More than `limit` below the median, and (where intervals are known) outside the median's interval."""
    return d.get("deviation") is not None and d["deviation"] < -limit and d.get("overlaps") is not True


def outliers(rows: Sequence[Mapping[str, Any]], limit: float) -> list[dict[str, Any]]:
    """Each (device, kernel) more than `limit` (0.05 = 5 %) below its host's median, worst first."""
    out = []
    for row in rows:
        for d in row["devices"]:
            if is_outlier(d, limit):
                out.append({"kernel": row["kernel"], "params": row["params"], "label": d["label"],
                            "index": d["index"], "pci_bus_id": d["pci_bus_id"], "where": d.get("where"),
                            "deviation": d["deviation"]})
    return sorted(out, key=lambda o: o["deviation"])


def device_name(index: Any, pci_bus_id: Any) -> str:
    """'GPU 1 (0000:1B:00.0)': how a message names a device, by index and PCI bus id."""
    return f"GPU {index}" + (f" ({pci_bus_id})" if pci_bus_id else "")


# ---- calibrated figures across the GPUs (`calibrate --device all`) ------------------------------------------------

LOWER_IS_BETTER = ("memory.latency",)  # the one calibrated figure where a smaller value is the better GPU


def figure_rows(devices: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """devices: one mapping per GPU, {label, index, pci_bus_id, figures: [{field, label, kind, status, value}]}. One row per
    figure at least two devices measured: the host median and each device's value and deviation, signed so that
    below zero is always worse (a latency 10 % longer than the median is −9 %, as a bandwidth 9 % lower is).
    The row's `kernel` and `params` are the figure's label and {} so `outliers` judges figures as it judges kernels."""
    order: dict[str, dict[str, Any]] = {}
    for dev in devices:
        who = _device(HostDevice.of(dev))
        for fig in dev["figures"]:
            row = order.setdefault(fig["field"], {"kernel": fig.get("label") or fig["field"], "field": fig["field"],
                                                  "kind": fig.get("kind", "bandwidth"), "params": {}, "devices": []})
            value = fig.get("value") if fig.get("status") == "OK" else None
            row["devices"].append({**who, "value": value, "status": fig.get("status")})
    rows = []
    for row in order.values():
        values = [d["value"] for d in row["devices"] if d["value"]]
        if len(values) < 2:
            continue
        median = statistics.median(values)
        row["median"] = median
        for d in row["devices"]:
            if not d["value"]:
                d["deviation"] = None
            elif row["field"] in LOWER_IS_BETTER:
                d["deviation"] = median / d["value"] - 1.0
            else:
                d["deviation"] = d["value"] / median - 1.0
        rows.append(row)
    return rows
