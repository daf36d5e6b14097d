"""A measurement session: pick the backend, identify the device and its spec, measure each selected kernel,
and assemble the results document (roofline/results/v1)."""

from __future__ import annotations

import datetime as _dt
import sys
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, Callable, Mapping, Sequence

from roofline import __version__
from roofline.analysis import analyze, machine_summary
from roofline.errors import BackendUnavailable, InputError
from roofline.expr import Expr
from roofline.measure.harness import measure_kernel, prepare_host
from roofline.measure.implementation import load_implementation
from roofline.measure.policy import MeasurePolicy
from roofline.model import KernelDescriptor, MachineSpec
from roofline.specs import SpecCatalog
from roofline.workload import evaluate

RESULTS_SCHEMA = "roofline/results/v1"


def open_backend(name: str, device_id: int = 0) -> Any:
    """'auto' is CuPy when a CUDA device is usable, else the NumPy backend (and the caller says so)."""
    if name == "numpy":
        from roofline.measure.backend_numpy import NumpyBackend

        return NumpyBackend()
    from roofline.measure.backend_cupy import CupyBackend

    if name == "cupy":
        return CupyBackend(device_id)
    try:
        return CupyBackend(device_id)
    except BackendUnavailable:
        from roofline.measure.backend_numpy import NumpyBackend

        return NumpyBackend()


def choose_machine(spec_name: str | None, backend: Any, catalog: SpecCatalog) -> MachineSpec | None:
    """--spec auto: the GPU's own spec (matched or derived); the NumPy backend has none unless one is named."""
    if spec_name and spec_name != "auto":
        return catalog.resolve(spec_name)
    if backend.name == "numpy":
        return None
    from roofline.measure.device import spec_for_device

    return spec_for_device(backend.device_info(), catalog)


@dataclass
class Selection:
    runnable: list[KernelDescriptor]
    skipped: list[tuple[str, str]]  # (name, why)


def runnable(selected: Sequence[KernelDescriptor], named: bool, machine: MachineSpec | None) -> Selection:
    """Kernels that can be measured here; naming one that cannot is an error, the rest are skipped with a note."""
    out, skipped = [], []
    for d in selected:
        why = None
        if d.implementation is None:
            why = "has no implementation (analysis only)"
        elif machine is not None and d.roof not in machine.roofs:
            why = f"needs the {d.roof} roof, which {machine.id} does not give"
        if why is None:
            out.append(d)
        elif named:
            raise InputError(f"kernel '{d.name}' {why}")
        else:
            skipped.append((d.name, why))
    return Selection(out, skipped)


def measure_all(
    kernels: Sequence[KernelDescriptor],
    overrides: Mapping[str, Expr],
    backend: Any,
    machine: MachineSpec | None,
    policy: MeasurePolicy,
    progress: Callable[[str], None] = lambda name: None,
) -> list[dict[str, Any]]:
    """Each kernel in turn on the backend; the next kernel's inputs and reference are made on the host meanwhile.

    Overlapping host preparation with GPU timing keeps a full run of the catalogue under a minute. The GPU
    figures are unaffected: every timed sample is bounded by CUDA events on the device."""
    jobs = []
    for d in kernels:
        work = evaluate(d, {k: v for k, v in overrides.items() if k in d.params})
        jobs.append((d, work, analyze(machine, work) if machine is not None else None, load_implementation(d)))
    # While the next kernel is prepared on other threads, hand the GIL back to the timing thread quickly
    # (the default 5 ms switch interval could delay a launch by that much).
    old_interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-4)
    try:
        return _measure_jobs(jobs, backend, policy, progress)
    finally:
        sys.setswitchinterval(old_interval)


def _measure_jobs(jobs: list, backend: Any, policy: MeasurePolicy, progress: Callable[[str], None]) -> list[dict[str, Any]]:
    entries: list[dict[str, Any]] = []
    with ThreadPoolExecutor(max_workers=1) as pool:
        pending = pool.submit(prepare_host, jobs[0][0], jobs[0][1], jobs[0][3], policy) if jobs else None
        for i, (d, work, analysis, impl) in enumerate(jobs):
            progress(d.name)
            current = pending
            pending = None
            if i + 1 < len(jobs) and backend.name != "numpy":  # on the host backend the CPU is what is timed
                pending = pool.submit(prepare_host, jobs[i + 1][0], jobs[i + 1][1], jobs[i + 1][3], policy)
            try:
                entries.append(measure_kernel(d, work, analysis, impl, backend, policy, host=current.result))
            finally:
                current = None
                backend.release()
            if pending is None and i + 1 < len(jobs):
                pending = pool.submit(prepare_host, jobs[i + 1][0], jobs[i + 1][1], jobs[i + 1][3], policy)
    return entries


def results_document(
    backend: Any, machine: MachineSpec | None, entries: list[dict[str, Any]], policy: MeasurePolicy
) -> dict[str, Any]:
    device = backend.device_info()
    device.update(spec_id=machine.id if machine else None, spec_derived=bool(machine and machine.derived))
    return {
        "schema": RESULTS_SCHEMA,
        "created": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "tool_version": __version__,
        "backend": backend.name,
        "device": device,
        "machine": machine_summary(machine) if machine is not None else None,
        "policy": policy.to_dict(),
        "kernels": entries,
    }
