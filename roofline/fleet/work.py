"""The per-GPU work of a fleet: what `measure`, `sweep`, `calibrate` and `doctor` do on one device, as the document
each makes for one GPU (a results document, a sweep's results, calibrated figures, a doctor verdict).

It knows nothing of the engine that runs it (MPI today): it takes the request as plain values and reports through
callbacks, so another engine (a Ray task, a Kubernetes job) can call it unchanged."""

from __future__ import annotations

from typing import Any, Callable

from roofline.errors import InputError, BackendUnavailable
from roofline.measurement.multi.measure import MeasureRequest
from roofline.measurement.progress import SILENT, Progress
from roofline.fleet.identity import device_identity
from roofline.load.selection import load_selection
from roofline.load.specs import SpecCatalog
from roofline.measurement.multi.sweep import sweep_args_request, sweep_on
from roofline.measurement.calibrate.plan import FULL, QUICK
from roofline.ncu.doctor import doctor as run_doctor


def measure_selection(request: MeasureRequest, backend_name: str, device: int, progress: Progress = SILENT,
                      on_identity: Callable[[dict[str, Any]], None] = lambda ident: None,
                      on_note: Callable[[str], None] = lambda line: None) -> dict[str, Any]:
    """`measure` of the request on `device` of `backend_name` ('cupy' or 'numpy'; NumPy has no devices and ignores
    it): the results document, its device block carrying the device's identity. on_identity hears the identity
    before anything is measured, so a device that then fails or hangs is still named."""
    # lazy: roofline.measurement.session imports numpy (start-up)
    from roofline.measurement.session import (choose_machine, measure_all, open_backend, results_document, runnable,
                                              skipped_entry)

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


def sweep_selection(args: Any, backend_name: str, device: int, progress: Progress = SILENT,
                    on_identity: Callable[[dict[str, Any]], None] = lambda ident: None) -> dict[str, Any]:
    """`sweep` (roofline.measurement.multi.sweep.SweepArgs) on `device`: the results document with its `sweep`
    block. The options are checked here, on the rank, so a bad one comes back as every rank's input error."""
    from roofline.measurement.session import open_backend  # lazy: roofline.measurement.session imports numpy (start-up)

    request = sweep_args_request(args)
    engine = open_backend(backend_name, device)
    ident = device_identity(engine)
    on_identity(ident)
    doc = sweep_on(request, engine, args.spec_name, args.policy, progress)
    doc["device"].update({k: v for k, v in ident.items() if v is not None and k != "name"})
    return doc


def _gpu_backend(command: str, device: int) -> Any:
    """The CuPy backend of `device`, or BackendUnavailable (exit 3) saying that `command` measures a GPU, with the fix
    (the shared '--backend numpy' hint does not apply to calibrate and doctor)."""
    # lazy: roofline.measurement.backend_cupy imports numpy (start-up)
    from roofline.measurement.backend_cupy import CUPY_INSTALL, CupyBackend

    try:
        return CupyBackend(device)
    except BackendUnavailable as exc:
        raise BackendUnavailable(f"{command} measures a GPU: {exc.reason}",
                                 fix=CUPY_INSTALL + ", on a machine with an NVIDIA GPU") from None


def calibrate_device(spec_name: str, quick: bool, device: int, progress: Progress = SILENT,
                     on_identity: Callable[[dict[str, Any]], None] = lambda ident: None) -> dict[str, Any]:
    """`calibrate` of `device`: {device (info and identity), datasheet, figures}, as `--device all` gets it from
    each GPU (roofline.measurement.multi.calibrate)."""
    # lazy: roofline.measurement.calibrate.gpu imports numpy (start-up)
    from roofline.measurement.calibrate.gpu import calibrate
    # lazy: roofline.measurement.session imports numpy (start-up)
    from roofline.measurement.session import choose_machine
    backend = _gpu_backend("calibrate", device)
    ident = device_identity(backend)
    on_identity(ident)
    datasheet = choose_machine(spec_name, backend, SpecCatalog.bundled())
    figures = calibrate(backend, datasheet, QUICK if quick else FULL, progress)
    return {"device": {**backend.device_info(), **ident}, "datasheet": datasheet, "figures": figures}


def doctor_device(spec_name: str, use_ncu: bool, ncu_path: str | None, device: int, progress: Progress = SILENT,
                  on_identity: Callable[[dict[str, Any]], None] = lambda ident: None) -> dict[str, Any]:
    """`doctor` of `device`: its verdict as the JSON `roofline doctor --format json` prints (roofline/doctor/v1)."""
    # lazy: roofline.measurement.session imports numpy (start-up)
    from roofline.measurement.session import choose_machine
    backend = _gpu_backend("doctor", device)
    ident = device_identity(backend)
    on_identity(ident)
    spec = choose_machine(spec_name, backend, SpecCatalog.bundled())
    verdict = run_doctor(backend, spec, progress=progress, use_ncu=use_ncu, ncu_path=ncu_path)
    doc = verdict.to_dict()
    doc["device"] = {**doc["device"], **{k: v for k, v in ident.items() if v is not None}}
    return doc
