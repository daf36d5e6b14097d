"""Shared by the stencil and convolution kernels of stencil.cu (stencil5_naive/_reuse, conv3x3_naive/_reuse): the
inputs, outputs, references, tolerance and test size of each operation (naive and reuse compute the same thing),
and the launcher, which differs between the variants only in the rows of output one block covers."""
import numpy as np

from roofline.kernelapi import sibling, uniform

_REF = sibling(__file__, "_stencil_ref.py")

TOLERANCE = {"rtol": 1e-5, "atol": 1e-6}
TEST_PARAMS = {"n": 1003}
NAIVE_ROWS = 8    # rows of output per block of the naive kernels: one output per thread
REUSE_ROWS = 32   # rows of output per block of the reuse kernels: TILE in stencil.cu


def launcher(ctx, function_name, n, rows_per_block):
    """launch(*arrays): stencil.cu's `function_name` on the N x N grid with arguments (*arrays, int32 n), blocks of
    32 x 8 threads, each block covering 32 columns and `rows_per_block` rows."""
    kernel = ctx.module("stencil.cu").get_function(function_name)
    block = (32, 8)
    grid = ((n + 31) // 32, (n + rows_per_block - 1) // rows_per_block)

    def launch(*arrays):
        kernel(grid, block, arrays + (np.int32(n),))
    return launch


def _grid(p, dtype, rng):
    return uniform(rng, (p["n"], p["n"]), 0.5, 1.5, dtype)


def outputs(p, dtype):
    return {"y": ((p["n"], p["n"]), dtype)}


def stencil5_inputs(p, dtype, rng):
    return {"x": _grid(p, dtype, rng)}


def stencil5_reference(p, x):
    return {"y": _REF.stencil5(x)}


def conv3x3_inputs(p, dtype, rng):
    return {"x": _grid(p, dtype, rng), "w": uniform(rng, (3, 3), 0.05, 0.2, dtype)}


def conv3x3_reference(p, x, w):
    return {"y": _REF.conv3x3(x, w)}
