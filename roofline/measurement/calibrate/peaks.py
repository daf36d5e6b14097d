"""The peak figures made from harness results: DRAM bandwidth (best of copy and triad), the FP32 / FP64 and tensor
FLOP/s figures, and the tolerances of the tensor GEMMs.

It exists so the rules that turn a verified, timed harness entry into a calibrate Figure (what counts as OK, what
the method text says, when TF32 did not apply) live in one place, apart from the job runner (jobs), the custom
probes (probes) and the helpers that touch CuPy itself (gpu). It reads result entries only.
"""

from __future__ import annotations

from typing import Any

from roofline.measurement.calibrate.figures import FAILED, OK, Figure, measured
from roofline.measurement.calibrate.plan import Plan

TF32_TOLERANCE = {"rtol": 1e-2, "atol": 1e-2}  # TF32 keeps 10 mantissa bits: ~1e-3 relative per product
BF16_TOLERANCE = {"rtol": 2e-2, "atol": 1e-2}  # bfloat16 output keeps 8 significant bits: ~2e-3 relative


def _pow2(n: int) -> str:
    return f"2^{n.bit_length() - 1}" if n > 0 and n & (n - 1) == 0 else str(n)


def _timing_text(entry: dict[str, Any]) -> str:
    return f"median of {entry.get('repeats')} runs, CUDA {'graph replay' if entry.get('timing') == 'graph' else 'events'}"


def _ok(entry: dict[str, Any] | None) -> bool:
    return bool(entry) and entry.get("status") == OK and bool(entry.get("time_median"))


def _why(entry: dict[str, Any] | None) -> str:
    if not entry:
        return "not run"
    return str(entry.get("error") or f"status {entry.get('status')}")


def _brief(entry: dict[str, Any]) -> dict[str, Any]:
    keys = ("status", "error", "params", "bytes", "flops", "time_median", "time_min", "time_max", "repeats",
            "achieved_bandwidth", "achieved_flops", "timing", "buffer_sets", "warnings", "gpu_state")
    return {k: entry.get(k) for k in keys if k in entry}


def dram_bandwidth(results: dict[str, dict[str, Any]], plan: Plan) -> Figure:
    field = "memory.bandwidth"
    details = {k: _brief(results[k]) for k in ("copy", "triad") if k in results}
    good = {k: results[k] for k in ("copy", "triad") if _ok(results.get(k))}
    if not good:
        return Figure(field, FAILED, None, "copy and triad", "; ".join(
            f"{k} FAILED: {_why(results.get(k))}" for k in ("copy", "triad")), details)
    best_key = max(good, key=lambda k: good[k]["achieved_bandwidth"])
    best = good[best_key]
    parts = [f"{k} {good[k]['achieved_bandwidth'] / 1e12:.3f} TB/s" for k in ("copy", "triad") if k in good]
    method = (f"{best_key} kernel, {_pow2(plan.stream_n)} float32 elements, bytes read plus written "
              f"({'2' if best_key == 'copy' else '3'} × n × 4 B per run); best of copy and triad ({', '.join(parts)}); "
              f"{_timing_text(best)}")
    note = None
    missing = [k for k in ("copy", "triad") if k not in good]
    if missing:
        note = "; ".join(f"{k} FAILED: {_why(results.get(k))}" for k in missing)
    return measured(field, float(best["achieved_bandwidth"]), method, note, details, best.get("gpu_state"))


def flops_figure(field: str, entry: dict[str, Any] | None, method: str) -> Figure:
    details = _brief(entry) if entry else {}
    if not _ok(entry):
        return Figure(field, FAILED, None, method, _why(entry), details)
    assert entry is not None
    return measured(field, float(entry["achieved_flops"]), f"{method}; {_timing_text(entry)}", None, details,
                    entry.get("gpu_state"))


def tf32_figure(entry: dict[str, Any] | None, fp32_peak: float | None, method: str) -> Figure:
    """TF32 counts only when the GEMM ran clearly faster than the FP32 CUDA cores can (else TF32 did not apply)."""
    field = "compute.tf32_tensor"
    fig = flops_figure(field, entry, method)
    if not fig.ok or fp32_peak is None:
        return fig
    assert fig.value is not None
    if fig.value <= 1.2 * fp32_peak:
        return Figure(field, "SKIPPED", None, method,
                      f"TF32 did not apply: the float32 GEMM ran at {fig.value / 1e12:.1f} TFLOP/s, no faster than "
                      f"the FP32 CUDA cores ({fp32_peak / 1e12:.1f}); left out", fig.details)
    return fig
