"""How the variant scripts (kernel_variants.py, sgemm_variants.py, gemv16_variants.py) time a launch: CUDA events
around each call, so one slow launch shows as one sample and the median ignores it."""

from __future__ import annotations

import statistics
import time
from typing import Any, Callable


def timed(cp: Any, fn: Callable[[], None], min_time: float = 0.3, warmup: float = 0.0) -> float:
    """Median seconds of one call of fn: 3 warm-up calls (and more until `warmup` seconds have passed), then batches
    of 20 calls with an event pair around each, until at least `min_time` seconds and 10 samples."""
    start = time.perf_counter()
    calls = 0
    while calls < 3 or time.perf_counter() - start < warmup:
        fn()
        calls += 1
    cp.cuda.Device().synchronize()
    samples: list[float] = []
    start = time.perf_counter()
    while time.perf_counter() - start < min_time or len(samples) < 10:
        ev = [(cp.cuda.Event(), cp.cuda.Event()) for _ in range(20)]
        for s, e in ev:
            s.record()
            fn()
            e.record()
        ev[-1][1].synchronize()
        samples += [cp.cuda.get_elapsed_time(s, e) * 1e-3 for s, e in ev]
    return statistics.median(samples)
