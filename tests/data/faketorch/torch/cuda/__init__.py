"""torch.cuda, faked: a device unless $FAKE_TORCH_CUDA is 0."""

import os

from torch.cuda import nvtx, profiler


def is_available():
    return os.environ.get("FAKE_TORCH_CUDA", "1") != "0"


def synchronize():
    pass

__all__ = ["nvtx", "profiler", "is_available", "synchronize"]
