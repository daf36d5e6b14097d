"""The NumPy backend: the references run on the host CPU through the same harness, timed by wall clock.

It makes the whole pipeline work and testable without a GPU. Its figures describe the host CPU, and the
output says so.
"""

from __future__ import annotations

import time
from typing import Any, Mapping
import os
import platform

import numpy as np

from roofline.measurement.context import KernelContext
from roofline.measurement.harness import Run, Timing
from roofline.measurement.implementation import Implementation
from roofline.measurement.policy import MeasurePolicy, done as _done
from roofline.measurement.verify import check_outputs, poison_value
from roofline.model.types import KernelDescriptor

HOST_CACHE_BYTES = 64 << 20  # a generous last-level cache; rotation defeats it for small kernels


class NumpyBackend:
    name = "numpy"
    cache_bytes = HOST_CACHE_BYTES

    def __init__(self, clock: Any = time.perf_counter):
        self._clock = clock

    def device_info(self) -> dict[str, Any]:
        return {
            "name": f"host CPU ({platform.processor() or platform.machine()}, {os.cpu_count()} logical cores)",
            "kind": "cpu",
            "numpy_version": np.__version__,
            "python": platform.python_version(),
        }

    def context(self, d: KernelDescriptor) -> KernelContext:
        folder = d.path.parent if d.path else None
        return KernelContext(folder, {"name": "host CPU", "sm_count": None}, np)

    def build(self, impl: Implementation, params: Mapping[str, Any], ctx: KernelContext, outputs: tuple[str, ...]) -> Run:
        custom = impl.fn("numpy")
        if custom is not None:
            return custom(params, ctx)
        reference = impl.module.reference

        def run(**arrays: Any) -> None:
            results = reference(params, **{k: v for k, v in arrays.items() if k not in outputs})
            for name in outputs:
                np.copyto(arrays[name], results[name], casting="unsafe")

        return run

    def upload(self, host: np.ndarray) -> np.ndarray:
        return np.array(host, copy=True)

    def poisoned(self, shape: tuple[int, ...], dtype: np.dtype) -> np.ndarray:
        return np.full(shape, poison_value(dtype), dtype=dtype)

    def check(self, outputs: Mapping[str, Any], reference: Mapping[str, Any], tolerance: Mapping[str, float]) -> str | None:
        return check_outputs(outputs, reference, tolerance)

    def free_bytes(self) -> int | None:
        return None

    def synchronize(self) -> None:
        return None

    def release(self) -> None:
        return None

    def time_runs(self, run: Run, sets: list[dict[str, Any]], policy: MeasurePolicy) -> Timing:
        clock = self._clock
        start = clock()
        while clock() - start < policy.warmup_time:
            run(**sets[0])
        samples: list[float] = []
        total = 0.0
        i = 0
        while len(samples) < policy.max_samples and not _done(len(samples), total, policy):
            arrays = sets[i % len(sets)]
            t0 = clock()
            run(**arrays)
            elapsed = clock() - t0
            samples.append(elapsed)
            total += elapsed
            i += 1
        return Timing(samples=samples, repeats=len(samples), mode="wall")

