"""Helpers for kernel implementations (NAME.py files): fast host-side inputs and references.

A 2^28-element float32 input takes over a second to draw with one core, and a float64 reference of a GELU
over it takes many; `roofline measure` of the whole catalogue must stay well under a minute. These helpers
split such work into chunks that run on all host cores (NumPy releases the GIL inside its loops), with one
independent random stream per chunk, so results do not depend on the number of cores.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from types import ModuleType
from typing import Any, Callable, Sequence

import numpy as np

CHUNK = 1 << 22  # elements per task: large enough to amortise the thread hand-off, small enough to balance


HOST_THREADS = "ROOFLINE_HOST_THREADS"  # this process's share of the cores: set for each worker of --device all


def _workers() -> int:
    """Threads for the parallel helpers: one per core, or the share a several-GPU run gives each worker (its results
    do not depend on it: the random streams and chunks follow the array, not the threads)."""
    share = os.environ.get(HOST_THREADS, "")
    return int(share) if share.isdigit() and int(share) > 0 else max(1, os.cpu_count() or 1)


def _spans(size: int, chunk: int = CHUNK) -> list[tuple[int, int]]:
    return [(s, min(s + chunk, size)) for s in range(0, size, chunk)]


def uniform(rng: np.random.Generator, shape: Any, low: float, high: float, dtype: Any = np.float32) -> np.ndarray:
    """Uniform random numbers in [low, high) of `dtype`, drawn in parallel from streams spawned off `rng`."""
    dtype = np.dtype(dtype)
    out = np.empty(shape, dtype=dtype)
    flat = out.reshape(-1)
    spans = _spans(flat.size)
    streams = rng.spawn(len(spans))
    draw_dtype = dtype if dtype in (np.float32, np.float64) else np.float64

    def fill(i: int) -> None:
        s, e = spans[i]
        if draw_dtype == dtype:
            streams[i].random(out=flat[s:e], dtype=dtype)
            flat[s:e] *= high - low
            flat[s:e] += low
        else:
            flat[s:e] = streams[i].random(e - s) * (high - low) + low

    _run(fill, len(spans))
    return out


def normal(rng: np.random.Generator, shape: Any, mean: float, std: float, dtype: Any = np.float32) -> np.ndarray:
    """Normal random numbers of `dtype`, drawn in parallel from streams spawned off `rng`."""
    dtype = np.dtype(dtype)
    out = np.empty(shape, dtype=dtype)
    flat = out.reshape(-1)
    spans = _spans(flat.size)
    streams = rng.spawn(len(spans))

    def fill(i: int) -> None:
        s, e = spans[i]
        if dtype in (np.float32, np.float64):
            streams[i].standard_normal(out=flat[s:e], dtype=dtype)
        else:
            flat[s:e] = streams[i].standard_normal(e - s)
        flat[s:e] *= std
        flat[s:e] += mean

    _run(fill, len(spans))
    return out


def elementwise(fn: Callable[..., np.ndarray], *arrays: np.ndarray, dtype: Any = np.float64) -> np.ndarray:
    """fn applied to matching chunks of same-shaped arrays, in parallel; fn must be elementwise."""
    shape = arrays[0].shape
    if any(a.shape != shape for a in arrays):
        raise ValueError("elementwise() needs arrays of one shape")
    out = np.empty(shape, dtype=dtype)
    flat_out = out.reshape(-1)
    flats = [a.reshape(-1) for a in arrays]
    spans = _spans(flat_out.size)

    def apply(i: int) -> None:
        s, e = spans[i]
        flat_out[s:e] = fn(*(f[s:e] for f in flats))

    _run(apply, len(spans))
    return out


def rowwise(fn: Callable[..., np.ndarray], *arrays: np.ndarray, dtype: Any = np.float64,
            rows_per_task: int | None = None) -> np.ndarray:
    """fn applied to blocks of rows of 2-D arrays (same number of rows), in parallel; fn must treat rows alone."""
    rows = arrays[0].shape[0]
    cols = arrays[0].shape[1] if arrays[0].ndim > 1 else 1
    step = rows_per_task or max(1, CHUNK // max(cols, 1))
    spans = _spans(rows, step)
    parts: list[np.ndarray | None] = [None] * len(spans)

    def apply(i: int) -> None:
        s, e = spans[i]
        parts[i] = np.asarray(fn(*(a[s:e] for a in arrays)), dtype=dtype)

    _run(apply, len(spans))
    return np.concatenate(parts, axis=0) if len(parts) > 1 else parts[0]  # type: ignore[return-value]


def blocks(task: Callable[[int, int], None], size: int, step: int) -> None:
    """task(start, stop) for consecutive blocks of range(size), in parallel; each task writes its own slice."""
    spans = _spans(size, step)
    _run(lambda i: task(*spans[i]), len(spans))


def import_file(path: Path) -> ModuleType:
    """Import a Python file by its path, once per process (implementations are files, not a package).

    A file that fails to import is not left half-registered in sys.modules."""
    path = Path(path).resolve()
    module_name = f"roofline_kernel_{path.stem}_{hashlib.sha1(str(path).encode()).hexdigest()[:10]}"
    if module_name in sys.modules:
        return sys.modules[module_name]
    spec = importlib.util.spec_from_file_location(module_name, path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot import {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[module_name]
        raise
    return module


def sibling(caller_file: str, name: str) -> ModuleType:
    """Import another file from the caller's folder, e.g. a family module shared by kernel variants."""
    return import_file(Path(caller_file).resolve().parent / name)


def _run(task: Callable[[int], None], count: int) -> None:
    if count == 1:
        task(0)
        return
    with ThreadPoolExecutor(max_workers=min(count, _workers())) as pool:
        for _ in pool.map(task, range(count)):
            pass


__all__: Sequence[str] = ("uniform", "normal", "elementwise", "rowwise", "blocks", "sibling", "import_file")
