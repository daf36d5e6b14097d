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
CHUNK = 1 << 22  # host: elements per thread task
DEVICE_CHUNK = 1 << 26  # GPU: bounds the float64 temporaries to a few hundred MiB


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


def _check_chunk(out: Any, ref: Any, start: int, rtol: float, atol: float, xp: Any = np) -> _Chunk:
    """Counts for one slice; `xp` is numpy for host arrays or cupy for device arrays (the same arithmetic)."""
    result = _Chunk()
    if out.dtype.kind in "fc":
        unwritten = xp.isnan(out) & ~xp.isnan(ref)
    else:
        sentinel = poison_value(out.dtype)
        unwritten = (out == sentinel) & (ref != sentinel)
    result.unwritten = int(unwritten.sum())
    if result.unwritten:
        result.first_unwritten = start + int(xp.argmax(unwritten))
    wide = xp.complex128 if out.dtype.kind == "c" or ref.dtype.kind == "c" else xp.float64
    out64 = out.astype(wide)
    ref64 = ref.astype(wide)
    excess = xp.abs(out64 - ref64) - (atol + rtol * xp.abs(ref64))
    both_nan = xp.isnan(out64) & xp.isnan(ref64)
    bad = ~(excess <= 0) & ~both_nan
    result.bad = int(bad.sum())
    if result.bad:
        scored = xp.where(bad, xp.nan_to_num(excess, nan=np.inf), -np.inf)
        i = int(xp.argmax(scored))
        result.worst, result.worst_excess = start + i, float(scored[i])
    return result


def check_outputs(
    got: Mapping[str, Any], reference: Mapping[str, Any], tolerance: Mapping[str, float], xp: Any = np
) -> str | None:
    """None when every output matches; otherwise one line saying where and by how much it does not.

    `got` holds the kernel's outputs (host arrays, or device arrays with xp=cupy, when the comparison runs on the
    GPU against the uploaded NumPy reference); `reference` holds the NumPy reference on the host.
    """
    missing = set(reference) - set(got)
    if missing:
        return f"reference has outputs the kernel does not write: {', '.join(sorted(missing))}"
    for name, ref_value in reference.items():
        ref = np.asarray(ref_value)
        out = got[name]
        if tuple(out.shape) != ref.shape:
            if out.size != ref.size:
                return f"{name}: shape {tuple(out.shape)}, reference shape {ref.shape}"
            out = out.reshape(ref.shape)
        tol = {**DEFAULT_TOLERANCE.get(np.dtype(out.dtype), {"rtol": 0.0, "atol": 0.0}), **tolerance}
        rtol, atol = float(tol.get("rtol", 0.0)), float(tol.get("atol", 0.0))
        flat_out, flat_ref = out.reshape(-1), ref.reshape(-1)
        starts = range(0, flat_out.size, CHUNK if xp is np else DEVICE_CHUNK)
        step = starts.step

        def one(s: int) -> _Chunk:
            ref_part = flat_ref[s:s + step] if xp is np else xp.asarray(flat_ref[s:s + step])
            return _check_chunk(flat_out[s:s + step], ref_part, s, rtol, atol, xp)

        if len(starts) > 1 and xp is np:
            with ThreadPoolExecutor(max_workers=min(len(starts), os.cpu_count() or 1)) as pool:
                chunks = list(pool.map(one, starts))
        else:
            chunks = [one(s) for s in starts]
        unwritten = sum(c.unwritten for c in chunks)
        if unwritten:
            first = min(c.first_unwritten for c in chunks if c.unwritten)
            index = tuple(int(i) for i in np.unravel_index(first, ref.shape))
            return f"{name}: {unwritten} of {ref.size} elements not written (still poisoned), first at index {index}"
        bad = sum(c.bad for c in chunks)
        if bad:
            worst = max((c for c in chunks if c.bad), key=lambda c: c.worst_excess).worst
            index = tuple(int(i) for i in np.unravel_index(worst, ref.shape))
            got_value = flat_out[worst].item()
            return (
                f"{name}: {bad} of {ref.size} elements outside tolerance (rtol {rtol:g}, atol {atol:g}); "
                f"worst at {index}: got {got_value!r}, expected {flat_ref[worst].item()!r}"
            )
    return None
