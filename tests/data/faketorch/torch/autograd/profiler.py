"""torch.autograd.profiler, faked: emit_nvtx runs the legacy profiler, which cannot run beside the Kineto one."""

import contextlib


@contextlib.contextmanager
def emit_nvtx(enabled=True, record_shapes=False):
    from torch.profiler import _ACTIVE, LEGACY

    if _ACTIVE:
        raise RuntimeError("fake torch: emit_nvtx cannot run while the Kineto profiler records")
    LEGACY["on"] = True
    try:
        yield
    finally:
        LEGACY["on"] = False
