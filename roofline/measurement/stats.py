"""Summary statistics of timing samples. Pure."""

from __future__ import annotations

import statistics
from dataclasses import dataclass
from typing import Sequence

SPREAD_WARNING = 1.2  # max/min above this is reported: the figure is noisy


@dataclass(frozen=True)
class TimingSummary:
    median: float
    minimum: float
    maximum: float
    samples: int

    @property
    def spread(self) -> float:
        return self.maximum / self.minimum if self.minimum > 0 else float("inf")

    @property
    def noisy(self) -> bool:
        return self.spread > SPREAD_WARNING


def summarize(samples: Sequence[float]) -> TimingSummary:
    if not samples:
        raise ValueError("no timing samples")
    return TimingSummary(statistics.median(samples), min(samples), max(samples), len(samples))


def median_interval(samples: Sequence[float], level: float = 0.95, resamples: int = 1000,
                    seed: int = 0) -> tuple[float, float]:
    """A percentile-bootstrap confidence interval of the median: what a regression gate compares, so that two runs
    of the same kernel on a shared GPU are not called different by noise (pyperf and asv compare likewise)."""
    import numpy as np  # lazy: numpy is a start-up cost only this path pays

    x = np.asarray(samples, dtype=float)
    if x.size == 0:
        raise ValueError("no timing samples")
    if x.size == 1:
        return float(x[0]), float(x[0])
    rng = np.random.default_rng(seed)
    batch = max(1, 2_000_000 // x.size)  # at most ~16 MB of resampled values at a time
    medians = []
    for start in range(0, resamples, batch):
        rows = min(batch, resamples - start)
        medians.append(np.median(x[rng.integers(0, x.size, size=(rows, x.size))], axis=1))
    tail = (1.0 - level) / 2.0 * 100.0
    lo, hi = np.percentile(np.concatenate(medians), [tail, 100.0 - tail])
    return float(lo), float(hi)
