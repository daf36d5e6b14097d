"""fma_relu_fused: out = relu(a * b + c) in one launch (maps.cu: fma_relu_f32, fmaf then fmaxf): 3 reads, 1 write."""
import numpy as np

from roofline.kernelapi import uniform, elementwise

INTERFACE = 1
TOLERANCE = {"rtol": 1e-5, "atol": 1e-6}   # a*b+c can cancel, hence atol
TEST_PARAMS = {"n": 1_000_003}

THREADS = 128   # 128 measured best on an H200 (vs 256, 512) for these streaming kernels
VPT = 2   # float4 per thread; must match VPT in maps.cu


def inputs(p, dtype, rng):
    n = p["n"]
    arrays = {k: uniform(rng, n, -2, 2, dtype) for k in ("a", "b", "c")}
    for v in arrays.values():
        v[v == 0] = 1
    return arrays


def outputs(p, dtype):
    return {"out": ((p["n"],), dtype)}


def reference(p, a, b, c):
    return {"out": elementwise(lambda u, v, w: np.maximum(u.astype(np.float64) * v + w, 0.0), a, b, c)}


def cupy(p, ctx):
    kernel = ctx.module("maps.cu").get_function("fma_relu_f32")
    n = p["n"]
    blocks = max(1, -(-n // (4 * VPT * THREADS)))

    def run(a, b, c, out):
        kernel((blocks,), (THREADS,), (a, b, c, out, np.int64(n)))
    return run
