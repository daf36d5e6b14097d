"""fma_peak_fp64: FP64 FMA throughput (peak.cu: fma_peak_f64_c{4,8,16}). Its family is fma_peak.py (named by the
descriptor): the same recurrence, seeds, closed-form reference and test size; this file gives the float64
tolerance and the launcher of the f64 kernels."""
import numpy as np

from roofline.kernelapi import sibling

_FP32 = sibling(__file__, "fma_peak.py")

TOLERANCE = {"rtol": 1e-10, "atol": 0.0}


def cupy(p, ctx):
    return _FP32.cupy(p, ctx, dtype=np.float64, kernel_name="fma_peak_f64_c{}")
