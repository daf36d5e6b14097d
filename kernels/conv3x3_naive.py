"""Single-channel 3x3 convolution on an N x N grid with zero padding (naive variant; see stencil.cu)."""
import numpy as np

from roofline.kernelapi import uniform

INTERFACE = 1
TOLERANCE = {"rtol": 1e-5, "atol": 1e-6}
TEST_PARAMS = {"n": 1003}


def inputs(p, dtype, rng):
    return {"x": uniform(rng, (p["n"], p["n"]), 0.5, 1.5, dtype),
            "w": uniform(rng, (3, 3), 0.05, 0.2, dtype)}


def outputs(p, dtype):
    return {"y": ((p["n"], p["n"]), dtype)}


def reference(p, x, w):
    n = p["n"]
    w = w.astype(np.float64)
    y = np.empty((n, n), np.float64)
    for r in range(0, n, 1024):  # row blocks keep the float64 temporaries small
        lo, hi = max(r - 1, 0), min(r + 1025, n)
        t = np.zeros((hi - lo + 2, n + 2), np.float64)
        t[1:-1, 1:-1] = x[lo:hi]
        k = r - lo + 1  # row of t that holds grid row r
        m = min(1024, n - r)
        acc = np.zeros((m, n), np.float64)
        for a in range(3):
            for b in range(3):
                acc += w[a, b] * t[k + a - 1:k + a - 1 + m, b:b + n]
        y[r:r + m] = acc
    return {"y": y}


def cupy(p, ctx):
    n = p["n"]
    kernel = ctx.module("stencil.cu").get_function("conv3x3_naive")
    block = (32, 8)
    rows_per_block = 8  # one output per thread
    grid = ((n + 31) // 32, (n + rows_per_block - 1) // rows_per_block)

    def run(x, w, y):
        kernel(grid, block, (x, w, y, np.int32(n)))
    return run
