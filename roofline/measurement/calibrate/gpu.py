"""`roofline calibrate` on the GPU: calibrate(), the orchestration of every figure, and the two helpers that reach
into CuPy itself (the TF32 compute type, the bfloat16 probe).

Bandwidth and compute peaks go through the same harness as `roofline measure` (bundled kernels, verified against
their NumPy references, CUDA-event / graph timing): copy and triad for DRAM bandwidth, fma_peak / fma_peak_fp64 for
the FP32 / FP64 roofs, cuBLAS through cupy.matmul for the tensor roofs. L2 bandwidth and DRAM latency use the small
kernels in roofline/measurement/calibrate/kernels.cu, and so does L1 / shared-memory bandwidth, each checked before its figure
is reported. The parts: plan (sizes, the kernels' loader), jobs (the harness runner), peaks (figures from harness
results), probes (L2, latency), l1 (L1 and shared memory).

CuPy arrays come through the backend object passed in; the one direct import, CuPy's internal linalg module in
tf32_compute_type, is made lazily inside it, so this module imports on any machine.
"""

from __future__ import annotations

import contextlib
from typing import Any

import numpy as np

from roofline.errors import first_line
from roofline.measurement.calibrate.figures import Figure, enforce_bounds, failed, skipped
from roofline.measurement.calibrate.jobs import Job, run_jobs
from roofline.measurement.calibrate.peaks import BF16_TOLERANCE, TF32_TOLERANCE, dram_bandwidth, flops_figure, tf32_figure
from roofline.measurement.calibrate.plan import FULL, KERNELS_FILE, Plan, load_module
from roofline.measurement.calibrate.l1 import l1_bandwidth
from roofline.measurement.calibrate.probes import current, dram_latency, l2_bandwidth
from roofline.measurement.calibrate.sizemodel import size_model_figures
from roofline.measurement.progress import SILENT, Progress

_TF32_COMPUTE_TYPE = 7  # cupy._core._routines_linalg.COMPUTE_TYPE_TF32


# ---- the whole calibration ---------------------------------------------------------------------------


def calibrate(backend: Any, datasheet: Any, plan: Plan = FULL, progress: Progress = SILENT) -> list[Figure]:
    """Every figure calibrate reports, in figures.KINDS order. Failures are Figures too (never raised). `progress`
    hears each step (a harness job, a probe) start and finish."""
    with current(backend):  # every probe's launches, checks and events on the backend's own stream
        figures = _calibrate(backend, datasheet, plan, progress)
    return enforce_bounds(figures, datasheet, backend.info)


def _calibrate(backend: Any, datasheet: Any, plan: Plan, progress: Progress) -> list[Figure]:
    info = backend.info
    policy = plan.policy()
    sms = int(info.get("sm_count") or 0)
    cc = _cc(info.get("compute_capability"))
    n, m = plan.stream_n, plan.matmul_n

    jobs = [Job("copy", "copy", {"n": n}), Job("triad", "triad", {"n": n})]
    fma = {"blocks": plan.blocks_per_sm * sms} if sms else {}
    jobs += [Job("fp32", "fma_peak", dict(fma)), Job("fp64", "fma_peak_fp64", dict(fma))]
    if cc >= 7.0:
        jobs.append(Job("fp16_tensor", "matmul_library_fp16", {"n": m}))
    bf16_why = bf16_probe(backend.cp) if cc >= 8.0 else f"compute capability {cc} has no BF16 tensor cores"
    if bf16_why is None:
        jobs.append(Job("bf16_tensor", "matmul_library_fp16", {"n": m}, tolerance=BF16_TOLERANCE, dtype="bfloat16"))
    if cc >= 8.0:
        jobs.append(Job("tf32_tensor", "matmul_library", {"n": m}, tolerance=TF32_TOLERANCE,
                        around=lambda: tf32_compute_type(backend.cp)))
    results = run_jobs(backend, jobs, policy, progress)

    figures = [dram_bandwidth(results, plan)]
    progress.start("L2 bandwidth")
    try:
        module = load_module(backend)
    except Exception as exc:  # noqa: BLE001
        module = None
        compile_error = f"compiling {KERNELS_FILE.name} failed: {type(exc).__name__}: {first_line(exc, 300)}"
    figures.append(l2_bandwidth(backend, module, plan, policy) if module is not None
                   else failed("caches.l2.bandwidth", compile_error))
    progress.finish("L2 bandwidth", figures[-1].status)
    progress.start("L1 bandwidth")
    figures.append(l1_bandwidth(backend, module, plan, policy) if module is not None
                   else failed("caches.l1.bandwidth", compile_error))
    progress.finish("L1 bandwidth", figures[-1].status)
    progress.start("DRAM latency")
    figures.append(dram_latency(backend, module, plan) if module is not None
                   else failed("memory.latency", compile_error))
    progress.finish("DRAM latency", figures[-1].status)

    grid = f"{fma.get('blocks', 'default')} blocks × 256 threads" if fma else "the descriptor's default grid"
    fp32 = flops_figure("compute.fp32", results.get("fp32"),
                        f"fma_peak kernel: 8 independent FP32 FMA chains per thread, {grid}, 2 FLOP per FMA")
    figures.append(fp32)
    figures.append(flops_figure("compute.fp64", results.get("fp64"),
                                f"fma_peak_fp64 kernel: 8 independent FP64 FMA chains per thread, {grid}"))
    if cc >= 7.0:
        figures.append(flops_figure("compute.fp16_tensor", results.get("fp16_tensor"),
                                    f"cuBLAS GEMM through cupy.matmul, float16 {m}×{m}×{m}, FP32 accumulate, "
                                    "2N³ FLOP, result checked against a float64 NumPy reference"))
    else:
        figures.append(skipped("compute.fp16_tensor", f"compute capability {cc} has no FP16 tensor cores"))
    if bf16_why is None:
        figures.append(flops_figure("compute.bf16_tensor", results.get("bf16_tensor"),
                                    f"cuBLAS GEMM through cupy.matmul, bfloat16 (ml_dtypes) {m}×{m}×{m}, FP32 "
                                    "accumulate, 2N³ FLOP, result checked against a float64 NumPy reference"))
    else:
        figures.append(skipped("compute.bf16_tensor", bf16_why))
    if cc >= 8.0:
        fp32_ref = fp32.value if fp32.ok else (datasheet.roofs.get("fp32") if datasheet is not None else None)
        figures.append(tf32_figure(results.get("tf32_tensor"), fp32_ref,
                                   f"cuBLAS GEMM through cupy.matmul, float32 {m}×{m}×{m} with CuPy's compute type "
                                   "set to TF32, 2N³ FLOP, result checked against a float64 NumPy reference "
                                   f"(rtol/atol {TF32_TOLERANCE['rtol']:g})"))
    else:
        figures.append(skipped("compute.tf32_tensor", f"compute capability {cc} has no TF32 tensor cores"))
    figures.append(skipped("compute.fp8_tensor", "not reachable from CuPy: it has no float8 dtypes, so cupy.matmul "
                                                 "cannot call an FP8 GEMM (use the datasheet figure)"))
    figures += size_model_figures(backend, plan, figures[0].value if figures[0].ok else None, progress)
    return figures


def _cc(value: Any) -> float:
    try:
        return float(str(value))
    except (TypeError, ValueError):
        return 0.0


@contextlib.contextmanager
def tf32_compute_type(cp: Any) -> Any:
    """cuBLAS FP32 GEMMs in TF32 (CuPy's COMPUTE_TYPE_TF32) for the duration, then the previous setting.

    CuPy reads CUPY_TF32 only the first time it needs the float32 compute type, so setting the environment variable
    after import does not apply reliably; the compute type is set directly instead."""
    from cupy._core import _routines_linalg as linalg  # noqa: PLC0415 - a CuPy internal, stable since CuPy 8

    tf32 = getattr(linalg, "COMPUTE_TYPE_TF32", _TF32_COMPUTE_TYPE)
    previous = linalg.get_compute_type(np.float32)
    linalg.set_compute_type(np.float32, tf32)
    try:
        yield
    finally:
        linalg.set_compute_type(np.float32, previous)


def bf16_probe(cp: Any) -> str | None:
    """None when cupy.matmul runs a bfloat16 GEMM on this machine (CuPy 14+ with ml_dtypes), else why it cannot."""
    try:
        import ml_dtypes  # noqa: PLC0415 - optional: CuPy's bfloat16 comes from it
    except ImportError:
        return ("not reachable from CuPy: bfloat16 arrays need the ml_dtypes package (and CuPy 14 or later), "
                "which is not installed")
    try:
        bf16 = np.dtype(ml_dtypes.bfloat16)
        a = cp.asarray(np.full((64, 64), 0.5, dtype=bf16))
        got = cp.asnumpy(cp.matmul(a, a)).astype(np.float32)
        if not np.all(got == 16.0):
            return f"not reachable from CuPy {getattr(cp, '__version__', '?')}: a bfloat16 probe GEMM gave wrong values"
    except Exception as exc:  # noqa: BLE001 - any failure means "not reachable", reported with the reason
        return (f"not reachable from CuPy {getattr(cp, '__version__', '?')}: a bfloat16 matmul raised "
                f"{type(exc).__name__}: {first_line(exc, 300)}")
    return None
