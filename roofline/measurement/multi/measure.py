"""`measure` on several GPUs: the worker each device's process runs, and the driver that merges their documents."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping, NoReturn, Sequence

from roofline.errors import BackendUnavailable, GateFailed, InputError, RooflineError
from roofline.measurement.multi.pool import Outcome, Relay, failure_lines, run_workers
from roofline.records.devices import merge_documents, split_devices
from roofline.records.document import entry_failed
from roofline.gates.hosts import host_rows
from roofline.measurement.policy import MeasurePolicy
from roofline.load.selection import load_selection
from roofline.load.specs import SpecCatalog
from roofline.model.counts import counted


@dataclass(frozen=True)
class MeasureRequest:
    """Everything a worker needs, as plain picklable values: it loads the kernels and spec itself."""

    names: tuple[str, ...]
    kernel_paths: tuple[Path, ...]
    params: tuple[str, ...]
    spec_name: str
    policy: MeasurePolicy


def identity(backend: Any) -> dict[str, Any]:
    """Index, name, UUID, PCI bus id and serial of the backend's GPU (serial and UUID where NVML or CUDA give them)."""
    info = backend.device_info()
    out: dict[str, Any] = {"index": backend.device_id, "name": info.get("name"), "uuid": None, "pci_bus_id": None,
                           "serial": None}
    rt = backend.cp.cuda.runtime
    try:
        out["pci_bus_id"] = str(rt.deviceGetPCIBusId(backend.device_id))
    except Exception:  # noqa: BLE001 - a runtime without it
        pass
    try:
        raw = rt.getDeviceProperties(backend.device_id).get("uuid")
        if isinstance(raw, (bytes, bytearray)) and len(raw) == 16:
            h = raw.hex()
            out["uuid"] = f"GPU-{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"
    except Exception:  # noqa: BLE001
        pass
    out.update({k: v for k, v in nvml_identity(out["pci_bus_id"]).items() if v})
    return out


def nvml_identity(pci_bus_id: str | None) -> dict[str, str | None]:
    """UUID and board serial from NVML for the GPU at this PCI bus id; empty where NVML or the field is missing
    (GeForce boards report no serial)."""
    if not pci_bus_id:
        return {}
    try:
        import pynvml  # lazy: pynvml is a start-up cost only this path pays

        pynvml.nvmlInit()
        handle = pynvml.nvmlDeviceGetHandleByPciBusId(pci_bus_id)
    except Exception:  # noqa: BLE001 - no NVML: identity from CUDA alone
        return {}
    out: dict[str, str | None] = {}
    for key, read in (("uuid", pynvml.nvmlDeviceGetUUID), ("serial", pynvml.nvmlDeviceGetSerial)):
        try:
            value = read(handle)
            out[key] = value.decode() if isinstance(value, bytes) else str(value)
        except Exception:  # noqa: BLE001 - NVML_ERROR_NOT_SUPPORTED and the like
            out[key] = None
    return out


def measure_worker(device: int, request: MeasureRequest, send: Callable[[str, Any], None]) -> dict[str, Any]:
    """One device's whole `measure`, in its own process: the single-device results document, device_id set."""
    # lazy: roofline.measurement.session imports numpy (start-up)
    from roofline.measurement.session import choose_machine, measure_all, open_backend, results_document, runnable
    selected, overrides = load_selection(request.names, request.kernel_paths, request.params)
    engine = open_backend("cupy", device)
    ident = identity(engine)
    send("identity", ident)
    machine = choose_machine(request.spec_name, engine, SpecCatalog.bundled())
    chosen = runnable(selected, bool(request.names), machine)
    for name, why in chosen.skipped:
        send("note", f"note: {name} skipped: it {why}")
    if not chosen.runnable:
        raise InputError("no selected kernel can be measured")
    send("total", len(chosen.runnable))
    entries = measure_all(chosen.runnable, overrides, engine, machine, request.policy, Relay(send))
    doc = results_document(engine, machine, entries, request.policy)
    doc["device"].update({k: v for k, v in ident.items() if k != "index"})
    return doc


def merged_or_raise(outcomes: Mapping[int, Outcome]) -> tuple[dict[str, Any], list[str]]:
    """(merged document, failure lines). When no device produced results there is nothing to write: raise the
    workers' own error class where they agree (all InputError: exit 2; all BackendUnavailable: exit 3), else exit 1."""
    parts = [o.result for o in outcomes.values() if o.ok]
    lines = failure_lines(outcomes)
    if parts:
        return merge_documents(parts, {d: o for d, o in outcomes.items() if not o.ok}), lines
    raise_for_none(outcomes.values(), "; ".join(lines), "device")


def raise_for_none(outcomes: Iterable[Any], text: str, what: str) -> NoReturn:
    """No worker (a device, a rank) produced results, so there is nothing to write: raise the workers' own error
    class where they agree (all InputError: exit 2; all BackendUnavailable: exit 3), else GateFailed (exit 1)."""
    outcomes = list(outcomes)
    kinds = {o.kind for o in outcomes}
    if kinds == {"InputError"}:
        raise InputError(outcomes[0].error or text)
    if kinds == {"BackendUnavailable"}:
        raise BackendUnavailable(text)
    raise GateFailed(f"every {what} failed: {text}")


@dataclass
class HostRun:
    """`measure` or `sweep` run on every GPU of a host, merged: what the command prints, writes and judges. The
    command line only renders it (the progress, the tables, the file) and raises what `verdict` raises."""

    doc: dict[str, Any]  # the one results document: every device's entries (a sweep's with its `sweeps` block)
    failures: list[str]  # a line per device whose worker failed
    outcomes: dict[int, Outcome] = field(repr=False)
    count: int = 0  # the devices asked for

    @property
    def bugs(self) -> list[str]:
        """The tracebacks worth printing: workers that failed with something other than a user error."""
        return bug_details(self.outcomes)

    def parts(self) -> list[dict[str, Any]]:
        """One single-device document per GPU (roofline.records.devices.split_devices)."""
        return split_devices(self.doc)

    def host_rows(self) -> list[dict[str, Any]]:
        """The sizes side by side across the GPUs (roofline.gates.hosts.host_rows): the median time, each GPU's
        deviation from it."""
        return host_rows([{"label": p["device"]["name"], "index": p["device"]["index"],
                           "pci_bus_id": p["device"].get("pci_bus_id"), "kernels": p["kernels"]}
                          for p in self.parts()])

    def verdict(self) -> None:
        """Exit 1 (GateFailed) naming each device whose worker failed (the others' results were kept), else each
        kernel entry that FAILED verification."""
        if self.failures:
            raise GateFailed(f"{len(self.failures)} of {counted(self.count, 'device')} failed; the others' results were "
                             "kept: " + "; ".join(self.failures))
        failed = [k["name"] for k in self.doc["kernels"] if entry_failed(k)]
        if failed:
            raise GateFailed(f"{len(failed)} kernel entr(ies) FAILED verification: "
                             f"{', '.join(sorted(set(failed))[:5])}")


def measure_devices(devices: Sequence[int], request: MeasureRequest,
                    on_message: Callable[[int, str, Any], None] = lambda d, k, v: None) -> HostRun:
    """Run `measure` on each device concurrently, one process each, and merge what they measured."""
    outcomes = run_workers(devices, measure_worker, request, on_message)
    doc, lines = merged_or_raise(outcomes)
    return HostRun(doc, lines, outcomes, len(devices))


def bug_details(outcomes: Mapping[int, Outcome]) -> list[str]:
    """Tracebacks of workers that failed with something other than a RooflineError: a bug worth its traceback."""
    known = {cls.__name__ for cls in (RooflineError, InputError, BackendUnavailable, GateFailed)}
    return [f"GPU {d}: {o.detail}" for d, o in sorted(outcomes.items())
            if not o.ok and o.kind not in known and o.detail]
