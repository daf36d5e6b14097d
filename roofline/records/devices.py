"""Several devices in one results document: one device's block, the merge of per-device documents (`--device all`,
a fleet under MPI) and the split back into one document per device (report, plot). Pure: documents in and out."""

from __future__ import annotations

import datetime as _dt
import json
from dataclasses import dataclass
from typing import Any, Mapping, NamedTuple, Sequence

# Fields of a device's own block that identify it; the rest of its info is shared host-wide or per-GPU detail.
IDENTITY = ("index", "name", "uuid", "pci_bus_id", "serial")
SHARED = ("driver", "cuda_runtime", "cupy_version")


def device_entry(info: Mapping[str, Any]) -> dict[str, Any]:
    """One element of a document's `devices` list: identity first, then the rest of what the backend read."""
    entry = {"index": info.get("device_id", info.get("index"))}
    entry.update({k: info.get(k) for k in IDENTITY[1:]})
    entry.update({k: v for k, v in info.items() if k not in entry and k != "device_id" and k not in SHARED})
    return entry


def merge_documents(parts: Sequence[Mapping[str, Any]], failed: Mapping[int, Any] | None = None) -> dict[str, Any]:
    """Per-device results documents (each from one worker) → one document with a `devices` list.

    `device` stays, as a summary every older reader understands (the common name, versions, spec); each kernel entry
    names its device by index. Kernels are ordered kernel by kernel, each device in turn, so a table shows them side
    by side. A sweep's per-device model blocks go in `sweeps` (roofline.measurement.multi.sweep); split_devices gives
    each device its own back. Devices whose worker failed (`failed`: device → an outcome with ok, identity and error,
    roofline.measurement.multi.pool.Outcome) are listed in `device_errors` (the file still holds the others)."""
    if not parts:
        raise ValueError("merge_documents needs at least one device's results")
    parts = sorted(parts, key=lambda p: p["device"]["device_id"])
    devices = [device_entry(p["device"]) for p in parts]
    names = sorted({str(d["name"]) for d in devices})
    first = parts[0]["device"]
    summary: dict[str, Any] = {"name": names[0] if len(names) == 1 else " + ".join(names), "kind": "gpu",
                               "count": len(devices), "indices": [d["index"] for d in devices]}
    summary.update({k: first.get(k) for k in SHARED if k in first})
    spec_ids = {p["device"].get("spec_id") for p in parts}
    machines = {str(p.get("machine")) for p in parts}
    summary["spec_id"] = first.get("spec_id") if len(spec_ids) == 1 else None
    summary["spec_derived"] = any(p["device"].get("spec_derived") for p in parts)
    order: dict[tuple[str, str], int] = {}
    kernels = []
    for rank, p in enumerate(parts):
        for k in p["kernels"]:
            key = (k["name"], json.dumps(k.get("params", {}), sort_keys=True, default=str))
            order.setdefault(key, len(order))
            kernels.append((order[key], rank, {**k, "device": p["device"]["device_id"]}))
    kernels.sort(key=lambda t: (t[0], t[1]))
    doc = {key: first_value for key, first_value in parts[0].items() if key not in ("device", "kernels", "machine")}
    doc.update(device=summary, devices=devices, machine=parts[0].get("machine") if len(machines) == 1 else None,
               kernels=[k for _, _, k in kernels])
    doc["created"] = _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")
    if failed:
        doc["device_errors"] = [{"index": d, "pci_bus_id": o.identity.get("pci_bus_id"), "error": o.error}
                                for d, o in sorted(failed.items()) if not o.ok]
    return doc


class Timing(NamedTuple):
    """What the host gate (roofline.gates.hosts) compares of one device's result on one kernel: a KernelResult's
    part, or a node's median standing in for one (roofline.gates.nodes). A NamedTuple, not a frozen dataclass: a
    fleet's plot makes one per entry, and a tuple is built several times faster."""

    name: str
    params: Mapping[str, Any]
    status: str | None  # "OK" when timed
    time_median: float | None
    time_ci: Any = None  # (low, high) where known; anything else is treated as unknown
    fraction_of_ceiling: float | None = None

    @classmethod
    def of_entry(cls, k: Mapping[str, Any]) -> "Timing":
        """A results entry as read from a file (a dict)."""
        return cls(k["name"], k.get("params", {}), k.get("status"), k.get("time_median"), k.get("time_ci"),
                   k.get("fraction_of_ceiling"))

    @classmethod
    def of_result(cls, k: Any) -> "Timing":
        """A roofline.records.document.KernelResult."""
        return cls(k.name, k.params, k.status.value, k.time_median, k.time_ci, k.fraction_of_ceiling)


@dataclass(frozen=True)
class HostDevice:
    """One GPU (or, for roofline.gates.nodes, one node) among those a host gate compares: who it is and its
    timings."""

    label: str
    index: Any  # the GPU's index (a node's host name)
    pci_bus_id: str | None
    where: str | None  # a fleet's 'rank 5 on node-2 (GPU 1)'
    host: str | None
    timings: tuple[Timing, ...]

    @classmethod
    def of(cls, dev: "HostDevice | Mapping[str, Any]") -> "HostDevice":
        """The dict form {label, index, pci_bus_id, where, host, kernels: results entries} as well as the typed (a
        calibrated figures' device, roofline.gates.hosts.figure_rows, has no kernels: no timings)."""
        if isinstance(dev, HostDevice):
            return dev
        return cls(dev["label"], dev["index"], dev.get("pci_bus_id"), dev.get("where"), dev.get("host"),
                   tuple(Timing.of_entry(k) for k in dev.get("kernels") or ()))

    @classmethod
    def of_part(cls, part: Mapping[str, Any]) -> "HostDevice":
        """One device's part of a fleet document as split_devices gives it (dicts: a fleet's plot builds no
        KernelResult), named where it ran."""
        device = part["device"]
        return cls(device.get("label") or device["name"], device.get("index"), device.get("pci_bus_id"),
                   device.get("label"), device.get("host"), tuple(Timing.of_entry(k) for k in part["kernels"]))

    @classmethod
    def of_results(cls, label: str, doc: Any) -> "HostDevice":
        """One device's part of a several-GPU file (a roofline.records.document.ResultsDocument of split_devices)."""
        return cls(label, doc.device_index, doc.pci_bus_id, doc.device_label, doc.host,
                   tuple(Timing.of_result(k) for k in doc.kernels))


def split_devices(doc: Mapping[str, Any]) -> list[dict[str, Any]]:
    """A multi-device document → one single-device document per GPU (for the per-device report rows and gates).
    Each device's name gets its index, 'NVIDIA H200 (GPU 1)', so rows, baselines and messages tell them apart.
    A single-device document comes back as it is."""
    devices = doc.get("devices")
    if not devices:
        return [dict(doc)]
    out = []
    shared = {k: v for k, v in doc["device"].items() if k not in ("name", "count", "indices")}
    for dev in devices:
        kernels = [k for k in doc["kernels"] if k.get("device") == dev["index"]]
        if not kernels:
            continue
        where = dev.get("label") or f"GPU {dev['index']}"  # a fleet's device: 'rank 5 on node-2 (GPU 1)'
        device = {**shared, **dev, "name": f"{dev['name']} ({where})", "base_name": dev["name"]}
        part = {**{k: v for k, v in doc.items() if k not in ("devices", "device", "kernels", "sweeps")},
                "device": device, "kernels": kernels}
        own = [s for s in doc.get("sweeps") or () if s.get("device") == dev["index"]]
        if own:  # a several-GPU sweep: each device's own model block (its launch overheads, its fit)
            part["sweep"] = {k: v for k, v in own[0].items() if k != "device"}
        out.append(part)
    return out
