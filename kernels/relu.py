"""relu: b = max(a, 0), float32, two float4 per thread (maps.cu: relu_f32)."""
import numpy as np

from roofline.kernelapi import uniform, elementwise

INTERFACE = 1
TOLERANCE = {"rtol": 0.0, "atol": 0.0}   # max(a, 0) is exact
TEST_PARAMS = {"n": 1_000_003}

THREADS = 128   # 128 measured best on an H200 (vs 256, 512) for these streaming kernels
VPT = 2   # float4 per thread; must match VPT in maps.cu


def inputs(p, dtype, rng):
    a = uniform(rng, p["n"], -3, 3, dtype)   # both signs, so both sides of the max are taken
    a[a == 0] = 1
    return {"a": a}


def outputs(p, dtype):
    return {"b": ((p["n"],), dtype)}


def reference(p, a):
    return {"b": elementwise(lambda v: np.maximum(v, 0), a, dtype=a.dtype)}


def cupy(p, ctx):
    kernel = ctx.module("maps.cu").get_function("relu_f32")
    n = p["n"]
    blocks = max(1, -(-n // (4 * VPT * THREADS)))

    def run(a, b):
        kernel((blocks,), (THREADS,), (a, b, np.int64(n)))
    return run
