"""C = A B, square N x N float32 (tiled kernel in matmul.cu). Inputs, reference and tolerance are shared with the
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
    kernel = ctx.module("matmul.cu").get_function("matmul_tiled")
    tiles = (n + 127) // 128  # 128 x 128 tile of C per block (matmul.cu)
    args = (np.int32(n), np.int32(n % 4 == 0))

    def run(a, b, c):
        kernel((tiles, tiles), (256,), (a, b, c) + args)
    return run
