"""Row softmax as five launches: row max, x - max, exp, row sum, divide (the output array is the
intermediate, so the only temporaries are two row vectors)."""
import numpy as np

from roofline.kernelapi import normal, sibling

_ROWS = sibling(__file__, "_rows_ref.py")

INTERFACE = 1
TOLERANCE = {"rtol": 1e-5, "atol": 1e-8}
TEST_PARAMS = {"rows": 257, "cols": 1001}


def inputs(p, dtype, rng):
    return {"x": normal(rng, (p["rows"], p["cols"]), 0.0, 3.0, dtype)}


def outputs(p, dtype):
    return {"y": ((p["rows"], p["cols"]), dtype)}


def reference(p, x):
    return {"y": _ROWS.softmax(x)}


def cupy(p, ctx):
    rows, cols = p["rows"], p["cols"]
    mod = ctx.module("norm.cu")
    reduce_, map_ = mod.get_function("row_reduce"), mod.get_function("row_map")
    vec = cols % 4 == 0
    grid, block = (rows,), (_ROWS.threads(cols // 4 if vec else cols),)
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
