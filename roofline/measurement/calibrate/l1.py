"""The L1 / shared-memory bandwidth probe of the calibration: every SM reads a 32 KiB working set of its own many
times, once through L1 (l1_read: 16-byte ld.global.ca loads of one global buffer that every SM caches) and once
from shared memory (smem_read: the same 32 KiB copied into each block's shared memory, then 16-byte ld.shared
loads). Both run from roofline/measurement/calibrate/kernels.cu and are checked against the host (every word summed) before
their figure counts; the figure is the faster of the two, and its note says which and gives both.

It exists because no datasheet quotes an L1 bandwidth, and the hierarchical roofline (`plot --hierarchy`) needs one
to draw the L1 roof. On Volta and later an SM's L1 and shared memory are one 128 B/clock array, so the two
variants should agree within a few percent; a large gap says one path is held back (the L1 tags, bank conflicts).
CuPy is reached only through the backend object passed in.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from roofline.errors import first_line
from roofline.measurement.calibrate.figures import FAILED, OK, Figure, failed, measured, skipped
from roofline.measurement.calibrate.plan import Plan, median
from roofline.measurement.calibrate.probes import l2_expected_sum, timed_read
from roofline.measurement.policy import MeasurePolicy

FIELD = "caches.l1.bandwidth"
THREADS = 256  # L1_THREADS in kernels.cu
WORKING_SET = 2048 * 16  # L1_VECS 16-byte vectors: the 32 KiB every block reads
ROTATE = 256  # vectors each repeat's loads move on by (a multiple of THREADS): see kernels.cu
MAX_BLOCKS_PER_SM = 4  # __launch_bounds__(256, 4): at most 64 registers, so four blocks fit by registers
SHARED_RESERVED = 1024  # bytes of shared memory the driver reserves per block (sm_80 and later)
BYTES_PER_CLOCK = 128  # an SM's L1 / shared-memory data path per clock (Volta and later), for the sanity figure
PLAUSIBLE = 1.1  # above this share of SMs × 128 B/clock a figure is refused (sm_70 and later), not reported
_ATTR_SHARED_PER_SM = 81  # cudaDevAttrMaxSharedMemoryPerMultiprocessor
VARIANTS = (("l1_read", "L1 (ld.global.ca)"), ("smem_read", "shared memory (ld.shared)"))


def blocks_per_sm(shared_per_sm: int | None, uses_shared: bool) -> int:
    """Resident blocks per SM of one probe: 4 (registers), fewer when 32 KiB of shared memory each do not fit.
    Launching exactly this many per SM makes one wave, so no SM idles through a tail."""
    if not uses_shared or not shared_per_sm:
        return MAX_BLOCKS_PER_SM
    return max(1, min(MAX_BLOCKS_PER_SM, shared_per_sm // (WORKING_SET + SHARED_RESERVED)))


def repeats_for(blocks: int, bytes_per_launch: float) -> int:
    """Passes over the working set per launch so that one launch reads about `bytes_per_launch` (the first pass,
    which fills L1 or shared memory from L2, then costs well under 1 %)."""
    return max(1, int(round(bytes_per_launch / (blocks * WORKING_SET))))


def theoretical(sm_count: int, sm_clock_hz: float | None) -> float | None:
    """SMs × 128 B/clock × the SM clock: the L1 / shared-memory peak (an H200 at 1.98 GHz: 33.5 TB/s)."""
    if not sm_count or not sm_clock_hz:
        return None
    return sm_count * BYTES_PER_CLOCK * sm_clock_hz


def _cc(value: Any) -> float:
    try:
        return float(str(value))
    except (TypeError, ValueError):
        return 0.0


def shared_per_sm(backend: Any) -> int | None:
    """Shared memory per SM as the driver reports it, or None (an emulated device, an old runtime)."""
    try:
        rt = backend.cp.cuda.runtime
        return int(rt.deviceGetAttribute(_ATTR_SHARED_PER_SM, int(backend.info.get("device_id") or 0)))
    except Exception:  # noqa: BLE001 - unknown: the probe assumes the register limit alone
        return None


def _variant(backend: Any, module: Any, plan: Plan, policy: MeasurePolicy, kernel_name: str, words: np.ndarray,
             blocks: int) -> dict[str, Any]:
    """One variant, run, checked, timed and checked again: a dict with status OK and its numbers, or FAILED."""
    cp = backend.cp
    repeats = repeats_for(blocks, plan.l1_bytes_per_launch)
    expected = l2_expected_sum(words, blocks * repeats)
    out_info: dict[str, Any] = {"kernel": kernel_name, "blocks": blocks, "threads": THREADS, "repeats": repeats}
    try:
        buf = cp.asarray(np.concatenate([words, words]))  # two equal halves: l1_read's rotated window never wraps
        out = cp.full(blocks * THREADS, 0xFFFFFFFF, dtype=cp.uint32)
        timing, problem = timed_read(backend, module.get_function(kernel_name), blocks, THREADS,
                                     (buf, np.int32(repeats), np.int32(ROTATE), out), out, expected, policy)
    except Exception as exc:  # noqa: BLE001 - a failed variant is reported, never a crash
        problem = f"{type(exc).__name__}: {first_line(exc, 300)}"
    finally:
        backend.release()
    if problem:
        return {**out_info, "status": FAILED, "error": f"{kernel_name}: {problem}"}
    t = median(timing.samples)
    nbytes = blocks * repeats * WORKING_SET
    return {**out_info, "status": OK, "bytes": nbytes, "bandwidth": nbytes / t, "time_median": t,
            "time_min": min(timing.samples), "time_max": max(timing.samples), "runs": timing.repeats,
            "timing": timing.mode, "gpu_state": timing.gpu_state}


def l1_bandwidth(backend: Any, module: Any, plan: Plan, policy: MeasurePolicy,
                 seed: int = MeasurePolicy.seed) -> Figure:
    """The faster of the L1 and shared-memory variants (both verified), with both in the note and details."""
    info = backend.info
    sms = int(info.get("sm_count") or 0)
    if sms <= 0:
        return skipped(FIELD, "the device reports no SM count")
    smem = shared_per_sm(backend)
    words = np.random.default_rng(seed).integers(0, 2**32, WORKING_SET // 4, dtype=np.uint32)
    runs = {}
    for name, _ in VARIANTS:
        per_sm = blocks_per_sm(smem, uses_shared=name == "smem_read")
        runs[name] = _variant(backend, module, plan, policy, name, words, sms * per_sm)
    per_sm = {n: r["blocks"] // sms for n, r in runs.items()}
    method = (f"l1_read and smem_read kernels (roofline/measurement/calibrate/kernels.cu): one wave of {THREADS}-thread blocks "
              f"({per_sm['l1_read']} per SM through L1, {per_sm['smem_read']} per SM from shared memory), each "
              f"reading a {WORKING_SET // 1024} KiB per-SM working set repeatedly with 16-byte loads: ld.global.ca of "
              "one buffer that every SM caches in its L1, and ld.shared of a copy in each block's shared memory; "
              "bytes = blocks × repeats × 32 KiB; results checked (sum of the words); the faster variant")
    details: dict[str, Any] = {"working_set_bytes": WORKING_SET, "shared_per_sm": smem,
                               "variants": {n: {k: v for k, v in r.items() if k != "gpu_state"} for n, r in runs.items()}}
    good = {n: r for n, r in runs.items() if r["status"] == OK}
    if not good:
        return failed(FIELD, "; ".join(r["error"] for r in runs.values()), method)
    best_name = max(good, key=lambda n: good[n]["bandwidth"])
    best = good[best_name]
    label = dict(VARIANTS)
    parts = [f"{label[n]} {r['bandwidth'] / 1e12:.2f} TB/s" if r["status"] == OK else f"{label[n]} FAILED: {r['error']}"
             for n, r in runs.items()]
    state = best.get("gpu_state") or {}
    peak = theoretical(sms, state.get("sm_clock_end") or info.get("sm_clock"))
    if peak:
        details["theoretical"] = peak
        details["fraction_of_theoretical"] = best["bandwidth"] / peak
    if peak and best["bandwidth"] > PLAUSIBLE * peak and _cc(info.get("compute_capability")) >= 7.0:
        return Figure(FIELD, FAILED, None, method, f"implausible: {best['bandwidth'] / 1e12:.3g} TB/s is "
                      f"{best['bandwidth'] / peak:.1f}× {sms} SMs × {BYTES_PER_CLOCK} B/clock at the SM clock (were "
                      "the loads hoisted out of the loop?); " + ", ".join(parts), details)
    note = f"the {label[best_name]} variant; " + ", ".join(parts)
    if peak:
        note += f" ({best['bandwidth'] / peak:.0%} of {sms} SMs × {BYTES_PER_CLOCK} B/clock at the SM clock)"
    timing = f"median of {best['runs']} runs, CUDA {'graph replay' if best['timing'] == 'graph' else 'events'}"
    return measured(FIELD, best["bandwidth"], f"{method}; {timing}", note, details, best.get("gpu_state"))
