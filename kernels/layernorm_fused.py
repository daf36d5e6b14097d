"""Fused layer norm: one block per row, the row cached in shared memory, float4 loads."""
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
    kernel = ctx.module("norm.cu").get_function("layernorm_fused")
    vec = cols % 4 == 0
    threads = _ROWS.threads(cols // 4 if vec else cols)
    smem = cols * 4
    try:
        limit = ctx.cupy.cuda.Device().attributes["MaxSharedMemoryPerBlockOptin"] - 1024
    except Exception:
        limit = 48 * 1024 - 1024
    cached = smem <= limit
    if not cached:
        smem = 0
    elif smem > 48 * 1024 - 1024:
        kernel.max_dynamic_shared_size_bytes = smem
    args = (np.int32(cols), np.int32(vec), np.int32(cached), np.float32(EPS))

    def run(x, gamma, beta, y):
        kernel((rows,), (threads,), (x, gamma, beta, y) + args, shared_mem=smem)
    return run
