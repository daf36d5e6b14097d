"""torch.autograd, faked: only its profiler module."""

from torch.autograd import profiler

__all__ = ["profiler"]
