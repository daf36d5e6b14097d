"""Single-channel 3x3 convolution on an N x N grid with zero padding (reuse variant; see stencil.cu)."""
import numpy as np

from roofline.kernelapi import sibling, uniform

_REF = sibling(__file__, "_stencil_ref.py")

INTERFACE = 1
TOLERANCE = {"rtol": 1e-5, "atol": 1e-6}
TEST_PARAMS = {"n": 1003}


def inputs(p, dtype, rng):
    return {"x": uniform(rng, (p["n"], p["n"]), 0.5, 1.5, dtype),
            "w": uniform(rng, (3, 3), 0.05, 0.2, dtype)}


def outputs(p, dtype):
    return {"y": ((p["n"], p["n"]), dtype)}


def reference(p, x, w):
    return {"y": _REF.conv3x3(x, w)}


def cupy(p, ctx):
    n = p["n"]
    kernel = ctx.module("stencil.cu").get_function("conv3x3_reuse")
    block = (32, 8)
    rows_per_block = 32  # TILE rows per block (stencil.cu)
    grid = ((n + 31) // 32, (n + rows_per_block - 1) // rows_per_block)

    def run(x, w, y):
        kernel(grid, block, (x, w, y, np.int32(n)))
    return run
