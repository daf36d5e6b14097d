"""torch.cuda, faked: a device unless $FAKE_TORCH_CUDA is 0."""

import os

from torch.cuda import nvtx, profiler


class CUDAGraph:
    """torch.cuda.CUDAGraph, faked: capture and replay mark what they do (torch.mark)."""

    def capture_begin(self, pool=None, capture_error_mode="global"):
        from torch import mark

        mark("capture_begin")

    def capture_end(self):
        from torch import mark

        mark("capture_end")

    def replay(self):
        from torch import mark

        mark("replay")


def is_available():
    return os.environ.get("FAKE_TORCH_CUDA", "1") != "0"


def synchronize():
    pass


def current_device():
    return 0


def get_device_properties(device):
    """The PCI address the energy meter matches NVML by (tests/data/fakenvml answers for it)."""
    import types

    return types.SimpleNamespace(pci_domain_id=0, pci_bus_id=0x19, pci_device_id=0, uuid="fake")

__all__ = ["CUDAGraph", "nvtx", "profiler", "is_available", "synchronize", "current_device", "get_device_properties"]
