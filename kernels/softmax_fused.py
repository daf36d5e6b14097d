"""Fused row softmax: one block per row, the row cached in shared memory, float4 loads. Inputs, reference and
tolerance are shared with softmax_5pass (_softmax.py)."""
import numpy as np

from roofline.kernelapi import sibling

_SM = sibling(__file__, "_softmax.py")
_ROWS = sibling(__file__, "_rows_ref.py")

INTERFACE = 1
TOLERANCE = _SM.TOLERANCE
TEST_PARAMS = _SM.TEST_PARAMS
inputs = _SM.inputs
outputs = _SM.outputs
reference = _SM.reference


def cupy(p, ctx):
    rows, cols = p["rows"], p["cols"]
    kernel = ctx.module("norm.cu").get_function("softmax_fused")
    grid, block, vec = _ROWS.row_launch(rows, cols)
    smem, cached = _ROWS.shared_row_cache(ctx, kernel, cols)
    args = (np.int32(cols), np.int32(vec), np.int32(cached))

    def run(x, y):
        kernel(grid, block, (x, y) + args, shared_mem=smem)
    return run
