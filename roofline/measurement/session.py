"""A measurement session: pick the backend, identify the device and its spec, measure each selected kernel,
and assemble the results document (roofline/results/v1)."""

from __future__ import annotations

import datetime as _dt
import math
import sys
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence
import os

from roofline.version import __version__
from roofline.model.analysis import analyze, lacks, machine_summary
from roofline.errors import InputError
from roofline.model.expr import Expr
from roofline.measurement.harness import analysis_free, measure_kernel, prepare_host
from roofline.measurement.implementation import host_dtype_problem, load_implementation
from roofline.measurement.policy import MeasurePolicy
from roofline.measurement.progress import SILENT, Progress
from roofline.records.document import KernelResult, Status
from roofline.records.files import params_text
from roofline.model.types import KernelDescriptor, MachineSpec
from roofline.records.schema import RESULTS_SCHEMA
from roofline.load.specs import SpecCatalog
from roofline.model.workload import evaluate, resolve_params
from roofline.model.capacity import too_large
from roofline.model.units import format_param
from roofline.measurement.device import spec_for_device
from roofline.measurement.bounds import bound_entry
from roofline.model.counts import counted



def open_backend(name: str, device_id: int = 0) -> Any:
    """'auto' means the GPU: without one it is BackendUnavailable (exit 3) with the fix, never a silent fall-back to
    the host, whose full-size run of the catalogue takes minutes and gives results that cannot be gated."""
    if name == "numpy":
        # lazy: roofline.measurement.backend_numpy imports numpy (start-up)
        from roofline.measurement.backend_numpy import NumpyBackend

        return NumpyBackend()
    # lazy: roofline.measurement.backend_cupy imports numpy (start-up)
    from roofline.measurement.backend_cupy import CupyBackend

    return CupyBackend(device_id)


def memory_limit(backend: Any) -> tuple[float | None, str]:
    """The most memory one kernel's data may take on this backend, and where the figure comes from."""
    if backend.name == "numpy":
        try:
            return float(os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")), "the host's memory"
        except (ValueError, OSError, AttributeError):
            return None, "the host's memory"
    total = backend.device_info().get("total_memory")
    return (float(total) if total else None), "the GPU's memory"


def host_sizes(kernels: Sequence[KernelDescriptor], overrides: Mapping[str, Expr]) -> str:
    """'vector_add n=2^26, sum n=2^28' for the note that says what the host backend is about to run."""
    parts = []
    for d in kernels[:4]:
        work = evaluate(d, {k: v for k, v in overrides.items() if k in d.params})
        parts.append(f"{d.name} {params_text(work.params)}".strip())
    more = f" and {counted(len(kernels) - 4, 'more kernel')}" if len(kernels) > 4 else ""
    return ", ".join(parts) + more + " (full sizes can take minutes on a CPU: choose smaller ones with -p)"


def _whole(value: Any) -> bool:
    return isinstance(value, int) or (isinstance(value, float) and math.isfinite(value) and value.is_integer())


def check_fits(d: KernelDescriptor, work: Any, limit: float | None, where: str) -> None:
    """Refuse, before anything is allocated, sizes the kernel cannot take: parameters that are not whole numbers
    (they size arrays), and data larger than the memory it must live in. The largest stage's modelled traffic is
    the estimate: every byte a stage moves from DRAM is in an array that must exist."""
    defaults = resolve_params(d)
    for name, value in work.params.items():
        default = defaults.get(name)
        if not _whole(default):  # a parameter that is not a size (a scale factor, say)
            continue
        least = 1 if default >= 1 else 0  # a whole default of 0 is a switch (causal: 0), not a size
        if not _whole(value) or value < least:
            raise InputError(f"-p {name}={format_param(value)}: kernel '{d.name}' takes {name} as a whole number of at least "
                             f"{least}")
    if (why := too_large(work, limit, where)) is not None:
        raise InputError(f"{why}; choose smaller parameters with -p")


def choose_machine(spec_name: str | None, backend: Any, catalog: SpecCatalog) -> MachineSpec | None:
    """--spec auto: the GPU's own spec (matched or derived); the NumPy backend has none unless one is named."""
    if spec_name and spec_name != "auto":
        return catalog.resolve(spec_name)
    if backend.name == "numpy":
        return None

    return spec_for_device(backend.device_info(), catalog)


@dataclass
class Selection:
    runnable: list[KernelDescriptor]
    skipped: list[tuple[str, str]]  # (name, why)
    # implemented kernels this machine cannot run (a dtype NumPy lacks here): listed SKIPPED in the results file
    not_run: list[tuple[KernelDescriptor, str]] = field(default_factory=list)


def runnable(selected: Sequence[KernelDescriptor], named: bool, machine: MachineSpec | None) -> Selection:
    """Kernels that can be measured here, decided before anything runs (implementations are imported here, so a
    broken one stops the run now, not after the kernels before it). Naming one that cannot is an error; the rest
    are skipped with a note."""
    out, skipped, not_run = [], [], []
    for d in selected:
        why, listed = None, False
        if d.implementation is None:
            why = "has no implementation (analysis only)"
        elif machine is not None and (need := lacks(machine, d)) is not None:
            why = f"needs {need}, which {machine.id} does not give"
        else:
            load_implementation(d)  # its imports may give NumPy the dtype (ml_dtypes: bfloat16)
            why = host_dtype_problem(d)
            listed = why is not None
        if why is None:
            out.append(d)
        elif named:
            raise InputError(f"kernel '{d.name}' {why}")
        else:
            skipped.append((d.name, why))
            if listed:
                not_run.append((d, why))
    return Selection(out, skipped, not_run)


_MEASURED = ("time_median", "time_min", "time_max", "time_ci", "achieved_bandwidth", "achieved_flops",
             "fraction_of_ceiling")


def skipped_entry(d: KernelDescriptor, overrides: Mapping[str, Expr], machine: MachineSpec | None,
                  why: str) -> dict[str, Any]:
    """The results entry of a kernel that was not run here: its analysis, no time, status SKIPPED with the reason
    (reported, never gated: it is neither verified nor failed)."""
    work = evaluate(d, {k: v for k, v in overrides.items() if k in d.params})
    base = analyze(machine, work).to_dict() if machine is not None else analysis_free(work)
    return KernelResult.from_fields({**base, **dict.fromkeys(_MEASURED), "repeats": 0, "status": Status.SKIPPED,
                                     "verified": None, "error": f"not run: it {why}", "warnings": []}).to_json()


def measure_all(
    kernels: Sequence[KernelDescriptor],
    overrides: Mapping[str, Expr],
    backend: Any,
    machine: MachineSpec | None,
    policy: MeasurePolicy,
    progress: Progress = SILENT,
    done: list[dict[str, Any]] | None = None,
) -> list[dict[str, Any]]:
    """Each kernel in turn on the backend; the next kernel's inputs and reference are made on the host meanwhile.

    Each entry is appended to `done` (when given) as its kernel finishes, so a caller keeps what ran when a later
    kernel stops the run with an error only running could find (its implementation's output, the memory it needs).

    Overlapping host preparation with GPU timing keeps a full run of the catalogue under a minute. The GPU
    figures are unaffected: every timed sample is bounded by CUDA events on the device."""
    jobs = []
    limit, where = memory_limit(backend)
    for d in kernels:
        work = evaluate(d, {k: v for k, v in overrides.items() if k in d.params})
        check_fits(d, work, limit, where)
        jobs.append((d, work, analyze(machine, work) if machine is not None else None, load_implementation(d)))
    # While the next kernel is prepared on other threads, hand the GIL back to the timing thread quickly
    # (the default 5 ms switch interval could delay a launch by that much).
    old_interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-4)
    try:
        return _measure_jobs(jobs, backend, policy, progress, [] if done is None else done, machine)
    finally:
        sys.setswitchinterval(old_interval)


def _measure_jobs(jobs: list, backend: Any, policy: MeasurePolicy, progress: Progress,
                  entries: list[dict[str, Any]], machine: MachineSpec | None = None) -> list[dict[str, Any]]:
    """Each job measured and held to the physics of its GPU (measure.bounds) as it is appended, so the results kept
    when a later kernel stops the run are bounded too."""
    device = backend.device_info()
    with ThreadPoolExecutor(max_workers=1) as pool:
        pending = pool.submit(prepare_host, jobs[0][0], jobs[0][1], jobs[0][3], policy) if jobs else None
        for i, (d, work, analysis, impl) in enumerate(jobs):
            label = f"{d.name} {params_text(work.params)}".strip()
            progress.start(label)
            current = pending
            pending = None
            if i + 1 < len(jobs) and backend.name != "numpy":  # on the host backend the CPU is what is timed
                pending = pool.submit(prepare_host, jobs[i + 1][0], jobs[i + 1][1], jobs[i + 1][3], policy)
            try:
                entries.append(bound_entry(measure_kernel(d, work, analysis, impl, backend, policy,
                                                          host=current.result), machine, device))
                progress.finish(label, entries[-1]["status"])
            finally:
                current = None
                backend.release()
            if pending is None and i + 1 < len(jobs):
                pending = pool.submit(prepare_host, jobs[i + 1][0], jobs[i + 1][1], jobs[i + 1][3], policy)
    return entries


def results_document(
    backend: Any, machine: MachineSpec | None, entries: list[dict[str, Any]], policy: MeasurePolicy | None
) -> dict[str, Any]:
    """The results file of entries measured on `backend` against `machine` (no policy block when the entries were
    measured under several, as the API's are)."""
    device = backend.device_info()
    device.update(spec_id=machine.id if machine else None, spec_derived=bool(machine and machine.derived))
    doc = {
        "schema": RESULTS_SCHEMA,
        "created": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "tool_version": __version__,
        "backend": backend.name,
        "device": device,
        "machine": machine_summary(machine) if machine is not None else None,
    }
    if policy is not None:
        doc["policy"] = policy.to_dict()
    doc["kernels"] = entries
    return doc
