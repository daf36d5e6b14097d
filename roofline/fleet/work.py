"""The per-GPU work of a fleet: one selection measured on one device, as a single-device results document.

It knows nothing of the engine that runs it (MPI today): it takes the request as plain values and reports through
callbacks, so another engine (a Ray task, a Kubernetes job) can call it unchanged."""

from __future__ import annotations

from typing import Any, Callable

from roofline.errors import InputError
from roofline.measurement.multi.measure import MeasureRequest
from roofline.measurement.progress import SILENT, Progress


def measure_selection(request: MeasureRequest, backend_name: str, device: int, progress: Progress = SILENT,
                      on_identity: Callable[[dict[str, Any]], None] = lambda ident: None,
                      on_note: Callable[[str], None] = lambda line: None) -> dict[str, Any]:
    """`measure` of the request on `device` of `backend_name` ('cupy' or 'numpy'; NumPy has no devices and ignores
    it): the results document, its device block carrying the device's identity. on_identity hears the identity
    before anything is measured, so a device that then fails or hangs is still named."""
    from roofline.fleet.identity import device_identity
    from roofline.measurement.session import (choose_machine, measure_all, open_backend, results_document, runnable,
                                              skipped_entry)
    from roofline.load.selection import load_selection
    from roofline.load.specs import SpecCatalog

    selected, overrides = load_selection(request.names, request.kernel_paths, request.params)
    engine = open_backend(backend_name, device)
    ident = device_identity(engine)
    on_identity(ident)
    machine = choose_machine(request.spec_name, engine, SpecCatalog.bundled())
    chosen = runnable(selected, bool(request.names), machine)
    for name, why in chosen.skipped:
        on_note(f"note: {name} skipped: it {why}")
    if not chosen.runnable:
        raise InputError("no selected kernel can be measured")
    entries = measure_all(chosen.runnable, overrides, engine, machine, request.policy, progress)
    not_run = [skipped_entry(d, overrides, machine, why) for d, why in chosen.not_run]
    doc = results_document(engine, machine, entries + not_run, request.policy)
    doc["device"].update({k: v for k, v in ident.items() if v is not None and k != "name"})
    return doc
