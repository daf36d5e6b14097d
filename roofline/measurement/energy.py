"""What data a kernel ran on, for its energy figure (roofline.records.energy): power depends on the data (an H200
FP16 GEMM drew 377 W on all-ones matrices and 688 W on random normal ones, issue 33), so a measured energy says
whether its inputs varied."""

from __future__ import annotations

from typing import Any, Mapping

import numpy as np

# Inputs are judged on a strided sample of at most this many elements per array: enough to see a constant array.
_SAMPLE = 1 << 16


def input_kind(inputs: Mapping[str, Any]) -> str:
    """'random' when every input array varies (the implementation drew it, as the bundled kernels do, from the
    seeded generator), 'constant' when any array holds one value throughout (a sampled check), 'none' when the kernel
    takes no arrays (it makes its operands in registers)."""
    arrays = [np.asarray(a) for a in inputs.values()]
    arrays = [a for a in arrays if a.size > 1]
    if not arrays:
        return "none"
    for a in arrays:
        flat = a.reshape(-1)
        sample = flat[:: max(1, flat.size // _SAMPLE)]
        try:
            if bool(np.all(sample == sample[0])):
                return "constant"
        except TypeError:  # an object array: nothing to say
            continue
    return "random"
