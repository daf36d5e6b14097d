"""Who a rank is: its host, its rank and node-local rank, and the device it measured (the GPU's UUID and PCI bus id
where the backend reads them; the host CPU's model for the NumPy backend), so a slow result names its hardware."""

from __future__ import annotations

import platform
import socket
from typing import Any, Mapping

from roofline.measurement.multi.measure import identity


def cpu_model(cpuinfo: str | None = None) -> str:
    """The host CPU's model name ('AMD EPYC 9654 96-Core Processor'); the platform's word where /proc has none."""
    if cpuinfo is None:
        try:
            with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as f:
                cpuinfo = f.read(65536)
        except OSError:
            cpuinfo = ""
    for line in cpuinfo.splitlines():
        key, _, value = line.partition(":")
        if key.strip() in ("model name", "Model", "cpu model") and value.strip():
            return value.strip()
    return platform.processor() or platform.machine() or "unknown CPU"


def host_name() -> str:
    """This node's name as the cluster knows it (short form: 'gpu-node-17')."""
    return socket.gethostname() or platform.node() or "unknown-host"


def device_identity(backend: Any) -> dict[str, Any]:
    """The measured device's identity: a GPU's name, UUID, PCI bus id and serial (roofline.measurement.multi.measure),
    or for the host backend its CPU model (a CPU has no UUID or bus id: those stay null)."""
    if backend.name == "numpy":
        return {"name": backend.device_info().get("name"), "uuid": None, "pci_bus_id": None, "serial": None,
                "cpu": cpu_model()}

    out = identity(backend)
    out.pop("index", None)
    return out


def rank_identity(host: str, rank: int, local_rank: int, device_index: int,
                  device: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The fields every fleet entry carries: host, rank, local rank, device index, UUID and PCI bus id."""
    device = device or {}
    return {"host": host, "rank": rank, "local_rank": local_rank, "device_index": device_index,
            "uuid": device.get("uuid"), "pci_bus_id": device.get("pci_bus_id")}


def rank_label(ident: Mapping[str, Any]) -> str:
    """'rank 5 on node-2 (GPU 1)': how a message and a report row name one rank's device (a rank measuring the host
    CPU, the NumPy backend, has no GPU to name)."""
    gpu = "" if ident.get("cpu") or ident.get("device_index") is None else f" (GPU {ident['device_index']})"
    return f"rank {ident.get('rank')} on {ident.get('host') or '?'}{gpu}"
