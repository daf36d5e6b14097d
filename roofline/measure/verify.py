"""Checking a kernel's outputs against its reference: every element written, every element within tolerance.

Large outputs (2^28 elements) are checked in chunks on all host cores: NumPy releases the GIL, and a check that
takes seconds per kernel would dominate a full `roofline measure`.
"""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, Mapping

import numpy as np

DEFAULT_TOLERANCE = {
    np.dtype("float64"): {"rtol": 1e-12, "atol": 1e-12},
    np.dtype("float32"): {"rtol": 1e-5, "atol": 1e-6},
    np.dtype("float16"): {"rtol": 1e-2, "atol": 1e-3},
}
CHUNK = 1 << 22


def poison_value(dtype: np.dtype) -> Any:
    """NaN for floats; for integers a sentinel no correct kernel is likely to write everywhere."""
    if dtype.kind in "fc":
        return np.nan
    if dtype.kind in "iu":
        return np.iinfo(dtype).max
    return 0


@dataclass
class _Chunk:
    unwritten: int = 0
    first_unwritten: int = -1
    bad: int = 0
    worst: int = -1
    worst_excess: float = -np.inf


def _check_chunk(out: np.ndarray, ref: np.ndarray, start: int, rtol: float, atol: float) -> _Chunk:
    result = _Chunk()
    if out.dtype.kind in "fc":
        unwritten = np.isnan(out) & ~np.isnan(ref)
    else:
        sentinel = poison_value(out.dtype)
        unwritten = (out == sentinel) & (ref != sentinel)
    result.unwritten = int(unwritten.sum())
    if result.unwritten:
        result.first_unwritten = start + int(np.argmax(unwritten))
    wide = np.complex128 if out.dtype.kind == "c" or ref.dtype.kind == "c" else np.float64
    out64 = out.astype(wide)
    ref64 = ref.astype(wide)
    excess = np.abs(out64 - ref64) - (atol + rtol * np.abs(ref64))
    both_nan = np.isnan(out64) & np.isnan(ref64)
    bad = ~(excess <= 0) & ~both_nan
    result.bad = int(bad.sum())
    if result.bad:
        scored = np.where(bad, np.nan_to_num(excess, nan=np.inf), -np.inf)
        i = int(np.argmax(scored))
        result.worst, result.worst_excess = start + i, float(scored[i])
    return result


def check_outputs(
    got: Mapping[str, np.ndarray], reference: Mapping[str, Any], tolerance: Mapping[str, float]
) -> str | None:
    """None when every output matches; otherwise one line saying where and by how much it does not."""
    missing = set(reference) - set(got)
    if missing:
        return f"reference has outputs the kernel does not write: {', '.join(sorted(missing))}"
    for name, ref_value in reference.items():
        ref = np.asarray(ref_value)
        out = np.asarray(got[name])
        if out.shape != ref.shape:
            if out.size != ref.size:
                return f"{name}: shape {out.shape}, reference shape {ref.shape}"
            out = out.reshape(ref.shape)
        tol = {**DEFAULT_TOLERANCE.get(out.dtype, {"rtol": 0.0, "atol": 0.0}), **tolerance}
        rtol, atol = float(tol.get("rtol", 0.0)), float(tol.get("atol", 0.0))
        flat_out, flat_ref = out.reshape(-1), ref.reshape(-1)
        starts = range(0, flat_out.size, CHUNK)
        if len(starts) > 1:
            with ThreadPoolExecutor(max_workers=min(len(starts), os.cpu_count() or 1)) as pool:
                chunks = list(pool.map(
                    lambda s: _check_chunk(flat_out[s:s + CHUNK], flat_ref[s:s + CHUNK], s, rtol, atol), starts
                ))
        else:
            chunks = [_check_chunk(flat_out, flat_ref, 0, rtol, atol)]
        unwritten = sum(c.unwritten for c in chunks)
        if unwritten:
            first = min(c.first_unwritten for c in chunks if c.unwritten)
            index = tuple(int(i) for i in np.unravel_index(first, out.shape))
            return f"{name}: {unwritten} of {out.size} elements not written (still poisoned), first at index {index}"
        bad = sum(c.bad for c in chunks)
        if bad:
            worst = max((c for c in chunks if c.bad), key=lambda c: c.worst_excess).worst
            index = tuple(int(i) for i in np.unravel_index(worst, out.shape))
            return (
                f"{name}: {bad} of {out.size} elements outside tolerance (rtol {rtol:g}, atol {atol:g}); "
                f"worst at {index}: got {flat_out[worst].item()!r}, expected {flat_ref[worst].item()!r}"
            )
    return None
