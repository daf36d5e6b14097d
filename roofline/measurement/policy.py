"""The measurement protocol, written down as named numbers so results can record what was done."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any


@dataclass(frozen=True)
class MeasurePolicy:
    min_time: float = 0.5  # s of timed work per kernel ...
    min_repeats: int = 10  # ... and at least this many timed runs, whichever takes longer
    max_samples: int = 20_000
    max_time: float = 3.0  # s: stop sampling a slow kernel here even if min_repeats is not reached
    warmup_time: float = 0.05  # s of untimed runs after the checked run
    graph_below: float = 1e-3  # s: kernels shorter than this are captured in a CUDA graph and replayed
    graph_batch_time: float = 2e-3  # s: one graph replays enough launches to last about this long
    rotate_below: float = 4.0  # rotate buffer sets while the working set is under this many cache sizes
    max_buffer_sets: int = 4096
    seed: int = 20261130

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def buffer_sets(working_set: int, cache_bytes: int, policy: MeasurePolicy) -> int:
    """How many copies of inputs and outputs to rotate through so repeated runs are not cache hits."""
    if working_set <= 0 or cache_bytes <= 0 or working_set >= policy.rotate_below * cache_bytes:
        return 1
    needed = -(-int(policy.rotate_below * cache_bytes) // working_set)  # ceil
    return max(1, min(needed, policy.max_buffer_sets))


def done(repeats: int, total: float, policy: MeasurePolicy) -> bool:
    """Stop sampling: enough runs and enough timed seconds, or the time cap for slow kernels."""
    if total >= policy.max_time:
        return True
    return repeats >= policy.min_repeats and total >= policy.min_time
