"""5-point stencil on an N x N grid with zero padding (reuse variant; see stencil.cu)."""
import numpy as np

from roofline.kernelapi import uniform

INTERFACE = 1
TOLERANCE = {"rtol": 1e-5, "atol": 1e-6}
TEST_PARAMS = {"n": 1003}


def inputs(p, dtype, rng):
    return {"x": uniform(rng, (p["n"], p["n"]), 0.5, 1.5, dtype)}


def outputs(p, dtype):
    return {"y": ((p["n"], p["n"]), dtype)}


def reference(p, x):
    n = p["n"]
    y = np.empty((n, n), np.float64)
    for r in range(0, n, 1024):  # row blocks keep the float64 temporaries small
        lo, hi = max(r - 1, 0), min(r + 1025, n)
        t = np.zeros((hi - lo + 2, n + 2), np.float64)
        t[1:-1, 1:-1] = x[lo:hi]
        k = r - lo + 1  # row of t that holds grid row r
        m = min(1024, n - r)
        c = t[k:k + m, 1:-1]
        y[r:r + m] = 0.5 * c + 0.125 * (t[k - 1:k - 1 + m, 1:-1] + t[k + 1:k + 1 + m, 1:-1]
                                        + t[k:k + m, :-2] + t[k:k + m, 2:])
    return {"y": y}


def cupy(p, ctx):
    n = p["n"]
    kernel = ctx.module("stencil.cu").get_function("stencil5_reuse")
    block = (32, 8)
    rows_per_block = 32  # TILE rows per block (stencil.cu)
    grid = ((n + 31) // 32, (n + rows_per_block - 1) // rows_per_block)

    def run(x, y):
        kernel(grid, block, (x, y, np.int32(n)))
    return run
