"""C = A B, square N x N float32 (naive kernel in matmul.cu). Inputs, reference and tolerance are shared with the
other matmul variants (_matmul.py)."""
import numpy as np

from roofline.kernelapi import sibling

_MM = sibling(__file__, "_matmul.py")

INTERFACE = 1
TOLERANCE = _MM.TOLERANCE
TEST_PARAMS = {"n": 517}
inputs = _MM.inputs
outputs = _MM.outputs
reference = _MM.reference


def cupy(p, ctx):
    n = p["n"]
    kernel = ctx.module("matmul.cu").get_function("matmul_naive")
    grid, block = ((n + 31) // 32, (n + 7) // 8), (32, 8)

    def run(a, b, c):
        kernel(grid, block, (a, b, c, np.int32(n)))
    return run
