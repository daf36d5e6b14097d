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
