"""Shared by bias_add_relu (two launches) and bias_add_relu_fused (one launch), which compute the same
out = relu(x + bias), x rows x cols row-major, bias cols (float32): inputs, outputs, reference, tolerance, test
size, and the launch shape of the bias kernels in maps.cu."""
import numpy as np

from roofline.kernelapi import rowwise, sibling

_MAPS = sibling(__file__, "_maps.py")

TOLERANCE = {"rtol": 1e-6, "atol": 1e-7}
# cols % 4 == 0 takes the float4 path that the default size uses; rows and cols/4 fill no whole block.
# (cols % 4 != 0 or unaligned pointers take the scalar _f1 path.)
TEST_PARAMS = {"rows": 257, "cols": 1004}

THREADS = _MAPS.THREADS
RPB = 2   # rows per thread in the bias kernels; must match RPB in maps.cu


def bias_grid(rows, width):
    """Launch shape for the bias kernels: x over `width` column units, y over groups of RPB rows."""
    threads = THREADS if width >= THREADS else max(32, -(-width // 32) * 32)
    return (-(-width // threads), min(-(-rows // RPB), 65535)), (threads,)


def inputs(p, dtype, rng):
    rows, cols = p["rows"], p["cols"]
    return {"x": _MAPS.nonzero(rng, (rows, cols), -3, 3, dtype), "bias": _MAPS.nonzero(rng, cols, -1, 1, dtype)}


def outputs(p, dtype):
    return {"out": ((p["rows"], p["cols"]), dtype)}


def reference(p, x, bias):
    return {"out": rowwise(lambda rows: np.maximum(rows.astype(np.float64) + bias, 0.0), x)}
