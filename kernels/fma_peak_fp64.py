"""fma_peak_fp64: FP64 FMA throughput (peak.cu: fma_peak_f64_c{4,8,16}); the same recurrence, seeds and closed-form
reference as fma_peak.py, which this module loads by path and reuses."""
import numpy as np

from roofline.kernelapi import sibling

_fp32 = sibling(__file__, "fma_peak.py")

INTERFACE = 1
TOLERANCE = {"rtol": 1e-10, "atol": 0.0}
TEST_PARAMS = {"blocks": 37, "threads": 96, "iters": 1000, "chains": 8}

inputs = _fp32.inputs
outputs = _fp32.outputs
reference = _fp32.reference


def cupy(p, ctx):
    return _fp32.cupy(p, ctx, dtype=np.float64, kernel_name="fma_peak_f64_c{}")
