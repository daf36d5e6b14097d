"""Row softmax as five launches: row max, x - max, exp, row sum, divide (the output array is the
intermediate, so the only temporaries are two row vectors). Inputs, reference, tolerance and test
size come from the softmax family (_softmax.py, named by the descriptor)."""
import numpy as np

from roofline.kernelapi import sibling

_ROWS = sibling(__file__, "_rows_ref.py")


def cupy(p, ctx):
    rows, cols = p["rows"], p["cols"]
    mod = ctx.module("norm.cu")
    reduce_, map_ = mod.get_function("row_reduce"), mod.get_function("row_map")
    grid, block, vec = _ROWS.row_launch(rows, cols)
    rmax = ctx.temp((rows,), np.float32)
    rsum = ctx.temp((rows,), np.float32)
    c, v, eps = np.int32(cols), np.int32(vec), np.float32(0)

    def run(x, y):
        reduce_(grid, block, (x, x, rmax, c, v, np.int32(0), eps))   # row max
        map_(grid, block, (x, rmax, y, c, v, np.int32(0)))           # y = x - max
        map_(grid, block, (y, rmax, y, c, v, np.int32(1)))           # y = exp(y)
        reduce_(grid, block, (y, y, rsum, c, v, np.int32(1), eps))   # row sum
        map_(grid, block, (y, rsum, y, c, v, np.int32(2)))           # y = y / sum
    return run
