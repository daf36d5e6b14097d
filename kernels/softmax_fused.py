"""Fused row softmax: one block per row, the row cached in shared memory, float4 loads."""
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
    kernel = ctx.module("norm.cu").get_function("softmax_fused")
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
    args = (np.int32(cols), np.int32(vec), np.int32(cached))

    def run(x, y):
        kernel((rows,), (threads,), (x, y) + args, shared_mem=smem)
    return run
