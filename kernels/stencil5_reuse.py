"""5-point stencil on an N x N grid with zero padding (reuse variant; see stencil.cu)."""
import numpy as np

from roofline.kernelapi import sibling, uniform

_REF = sibling(__file__, "_stencil_ref.py")

INTERFACE = 1
TOLERANCE = {"rtol": 1e-5, "atol": 1e-6}
TEST_PARAMS = {"n": 1003}


def inputs(p, dtype, rng):
    return {"x": uniform(rng, (p["n"], p["n"]), 0.5, 1.5, dtype)}


def outputs(p, dtype):
    return {"y": ((p["n"], p["n"]), dtype)}


def reference(p, x):
    return {"y": _REF.stencil5(x)}


def cupy(p, ctx):
    n = p["n"]
    kernel = ctx.module("stencil.cu").get_function("stencil5_reuse")
    block = (32, 8)
    rows_per_block = 32  # TILE rows per block (stencil.cu)
    grid = ((n + 31) // 32, (n + rows_per_block - 1) // rows_per_block)

    def run(x, y):
        kernel(grid, block, (x, y, np.int32(n)))
    return run
