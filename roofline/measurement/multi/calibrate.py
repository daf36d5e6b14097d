"""`calibrate` on several GPUs: each device calibrated in its own process at once, then the links between them.

Why the links come last: a peer copy or an all-reduce would disturb the figures of the devices it touches, and the
calibration of one device must not see another's traffic. The spec written for the host holds, per figure, the
median across its GPUs (the host's typical GPU); each device's own figures are in the JSON, and the host table
shows how far each one is from that median.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass
from typing import Any, Callable, Mapping, Sequence

from roofline.measurement.calibrate.figures import KIND_BY_FIELD, OK, Figure, failed, KINDS
from roofline.measurement.multi.pool import Outcome, Relay, run_workers
from roofline.measurement.calibrate.plan import FULL, QUICK
from roofline.measurement.multi.measure import identity
from roofline.load.specs import SpecCatalog
from roofline.model.counts import counted


@dataclass(frozen=True)
class CalibrateRequest:
    spec_name: str
    quick: bool


def calibrate_worker(device: int, request: CalibrateRequest, send: Callable[[str, Any], None]) -> dict[str, Any]:
    """One device's whole calibration in its own process: {device (info and identity), datasheet, figures}."""
    # lazy: roofline.measurement.backend_cupy imports numpy (start-up)
    from roofline.measurement.backend_cupy import CupyBackend
    # lazy: roofline.measurement.calibrate.gpu imports numpy (start-up)
    from roofline.measurement.calibrate.gpu import calibrate
    # lazy: roofline.measurement.session imports numpy (start-up)
    from roofline.measurement.session import choose_machine
    backend = CupyBackend(device)
    ident = identity(backend)
    send("identity", ident)
    datasheet = choose_machine(request.spec_name, backend, SpecCatalog.bundled())
    figures = calibrate(backend, datasheet, QUICK if request.quick else FULL, Relay(send))
    return {"device": {**backend.device_info(), **ident}, "datasheet": datasheet, "figures": figures}


def calibrate_devices(devices: Sequence[int], request: CalibrateRequest,
                      on_message: Callable[[int, str, Any], None] = lambda d, k, v: None) -> dict[int, Outcome]:
    return run_workers(devices, calibrate_worker, request, on_message)


LISTED = 8  # devices whose values a figure's method lists one by one; a fleet's are summed up as a range


def host_figures(parts: Sequence[Mapping[str, Any]], scope: str = "one host", unit: str = "GPU") -> list[Figure]:
    """Per figure, the median of the devices' OK values, cited with every device's value (up to LISTED, then their
    range); a figure no device measured keeps the first device's FAILED/SKIPPED reason. `scope` and `unit` word the
    citation: 'one host' and 'GPU 1', or for a fleet 'a fleet of 4 nodes' and 'rank 5'."""
    out = []
    for kind in KINDS:
        per_device = [(p["device"].get("index"), f) for p in parts for f in p["figures"] if f.field == kind.field]
        if not per_device:
            continue
        good = [(i, f) for i, f in per_device if f.ok]
        if not good:
            out.append(per_device[0][1])
            continue
        values = ", ".join(f"{unit} {i} {f.value:.6g}" for i, f in good[:LISTED])
        if len(good) > LISTED:
            low, high = min(f.value for _, f in good), max(f.value for _, f in good)
            values += f", … {len(good) - LISTED} more; all within {low:.6g}..{high:.6g}"
        method = (f"median over {counted(len(good), 'GPU')} of {scope} ({values}); each: {good[0][1].method}")
        missing = [i for i, f in per_device if not f.ok]
        note = f"not measured on {unit} {', '.join(map(str, missing))}" if missing else None
        out.append(Figure(kind.field, OK, statistics.median(f.value for _, f in good), method, note,
                          {"per_device": {str(i): f.value for i, f in good}}))
    return out or [failed("memory.bandwidth", "no device produced a figure")]


def device_figure_lists(parts: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The input of roofline.gates.hosts.figure_rows: one mapping per device with its figures as dicts (a fleet's device,
    labelled 'rank 5 on node-2 (GPU 1)', keeps that label and its host)."""
    return [{"label": p["device"].get("label") or f"GPU {p['device']['index']}", "index": p["device"]["index"],
             "pci_bus_id": p["device"].get("pci_bus_id"), "where": p["device"].get("label"),
             "host": p["device"].get("host"),
             "figures": [{**f.to_dict(), "kind": KIND_BY_FIELD[f.field].kind} for f in p["figures"]]}
            for p in parts]
