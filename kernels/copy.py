"""copy: b = a, float32, two float4 per thread (maps.cu: copy_f32)."""
import numpy as np

from roofline.kernelapi import uniform

INTERFACE = 1
TOLERANCE = {"rtol": 0.0, "atol": 0.0}   # a copy is exact
TEST_PARAMS = {"n": 1_000_003}

THREADS = 128   # 128 measured best on an H200 (vs 256, 512) for these streaming kernels
VPT = 2   # float4 per thread; must match VPT in maps.cu


def inputs(p, dtype, rng):
    a = uniform(rng, p["n"], -1, 1, dtype)
    a[a == 0] = 1
    return {"a": a}


def outputs(p, dtype):
    return {"b": ((p["n"],), dtype)}


def reference(p, a):
    return {"b": a.copy()}


def cupy(p, ctx):
    kernel = ctx.module("maps.cu").get_function("copy_f32")
    n = p["n"]
    blocks = max(1, -(-n // (4 * VPT * THREADS)))

    def run(a, b):
        kernel((blocks,), (THREADS,), (a, b, np.int64(n)))
    return run
