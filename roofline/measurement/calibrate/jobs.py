"""The harness job runner of the calibration: each Job (a bundled kernel, its sizes, optional tolerance, dtype and
a context around the GPU part) goes through the same harness as `roofline measure`, verified and timed.

It exists so the pipelined runner (host inputs for the next job prepared on another thread while the GPU times the
current one) lives apart from the figures made from its results (peaks) and from the
orchestration (gpu). CuPy is reached only through the backend object passed in.
"""

from __future__ import annotations

import contextlib
import sys
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from typing import Any, Callable, ContextManager, Sequence

from roofline.errors import RooflineError
from roofline.measurement.calibrate.figures import FAILED
from roofline.measurement.policy import MeasurePolicy
from roofline.measurement.progress import SILENT, Progress
from roofline.model.expr import compile_expr
from roofline.load.kernels import KernelCatalog
from roofline.model.workload import evaluate


@dataclass
class Job:
    key: str
    kernel: str
    overrides: dict[str, int]
    tolerance: dict[str, float] | None = None  # replaces the implementation's TOLERANCE (TF32, BF16)
    dtype: str | None = None  # replaces the descriptor's dtype (the FP16 GEMM run in bfloat16)
    around: Callable[[], ContextManager[Any]] | None = None  # wraps the GPU part (TF32 compute type)


def run_jobs(backend: Any, jobs: Sequence[Job], policy: MeasurePolicy,
             progress: Progress = SILENT) -> dict[str, dict[str, Any]]:
    """Each job through the harness (prepare_host → measure_kernel); the next job's host inputs and reference are
    made on another thread while the GPU times the current one. Returns key → result entry (status OK or FAILED)."""
    # lazy: roofline.measurement.harness imports numpy (start-up)
    from roofline.measurement.harness import measure_kernel, prepare_host
    # lazy: roofline.measurement.implementation imports numpy (start-up)
    from roofline.measurement.implementation import load_implementation
    catalog = {d.name: d for d in KernelCatalog.load().descriptors}
    prepared: list[tuple[Job, Any, Any, Any] | tuple[Job, str]] = []
    for job in jobs:
        d = catalog.get(job.kernel)
        if d is None:
            prepared.append((job, f"the bundled kernel '{job.kernel}' is missing"))
            continue
        if job.dtype is not None:
            d = replace(d, name=f"{d.name}[{job.dtype}]", dtype=job.dtype)
        try:
            work = evaluate(d, {k: compile_expr(v) for k, v in job.overrides.items() if k in d.params})
            impl = load_implementation(d)
            if job.tolerance is not None:
                impl = replace(impl, tolerance=dict(job.tolerance))
            prepared.append((job, d, work, impl))
        except RooflineError as exc:
            prepared.append((job, exc.message))

    results: dict[str, dict[str, Any]] = {}

    def submit(pool: ThreadPoolExecutor, i: int) -> Any:
        item = prepared[i]
        if len(item) == 2:
            return None
        _, d, work, impl = item  # type: ignore[misc]
        return pool.submit(prepare_host, d, work, impl, policy)

    old_interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-4)  # the host thread hands the GIL back quickly to the timing thread
    try:
        with ThreadPoolExecutor(max_workers=1) as pool:
            pending = submit(pool, 0) if prepared else None
            for i, item in enumerate(prepared):
                job = item[0]
                progress.start(job.key)
                current, pending = pending, (submit(pool, i + 1) if i + 1 < len(prepared) else None)
                if len(item) == 2:
                    results[job.key] = {"status": FAILED, "error": item[1]}  # type: ignore[misc]
                    progress.finish(job.key, FAILED)
                    continue
                _, d, work, impl = item  # type: ignore[misc]
                try:
                    with (job.around() if job.around else contextlib.nullcontext()):
                        entry = measure_kernel(d, work, None, impl, backend, policy, host=current.result)
                except RooflineError as exc:
                    entry = {"status": FAILED, "error": exc.message}
                except Exception as exc:  # noqa: BLE001 - a failed figure is reported, never a crash
                    entry = {"status": FAILED, "error": f"{type(exc).__name__}: {exc}"}
                finally:
                    current = None
                    backend.release()
                entry["params"] = dict(work.params)
                entry.setdefault("bytes", work.bytes)
                entry.setdefault("flops", work.flops)
                results[job.key] = entry
                progress.finish(job.key, str(entry.get("status")))
    finally:
        sys.setswitchinterval(old_interval)
    return results
