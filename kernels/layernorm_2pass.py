"""Layer norm as two launches: Welford mean/variance in one read, then normalise with gamma and beta."""
import numpy as np

from roofline.kernelapi import uniform, normal, sibling

_ROWS = sibling(__file__, "_rows_ref.py")

INTERFACE = 1
TOLERANCE = {"rtol": 1e-5, "atol": 1e-5}
TEST_PARAMS = {"rows": 257, "cols": 1001}
EPS = 1e-5


def inputs(p, dtype, rng):
    rows, cols = p["rows"], p["cols"]
    return {"x": normal(rng, (rows, cols), 1.0, 2.0, dtype),
            "gamma": uniform(rng, cols, 0.5, 1.5, dtype),
            "beta": uniform(rng, cols, -0.5, 0.5, dtype)}


def outputs(p, dtype):
    return {"y": ((p["rows"], p["cols"]), dtype)}


def reference(p, x, gamma, beta):
    return {"y": _ROWS.layernorm(x, gamma, beta, EPS)}


def cupy(p, ctx):
    rows, cols = p["rows"], p["cols"]
    mod = ctx.module("norm.cu")
    stats, apply_ = mod.get_function("layernorm_welford"), mod.get_function("layernorm_apply")
    vec = cols % 4 == 0
    grid, block = (rows,), (_ROWS.threads(cols // 4 if vec else cols),)
    mean = ctx.temp((rows,), np.float32)
    rstd = ctx.temp((rows,), np.float32)
    c, v = np.int32(cols), np.int32(vec)

    def run(x, gamma, beta, y):
        stats(grid, block, (x, mean, rstd, c, v, np.float32(EPS)))
        apply_(grid, block, (x, mean, rstd, gamma, beta, y, c, v))
    return run
