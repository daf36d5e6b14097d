"""triad (STREAM): a = b + s * c, float32, two float4 per thread (maps.cu: triad_f32, one fmaf per element)."""
import numpy as np

from roofline.kernelapi import uniform, elementwise

INTERFACE = 1
TOLERANCE = {"rtol": 1e-6, "atol": 1e-6}
TEST_PARAMS = {"n": 1_000_003}

THREADS = 128   # 128 measured best on an H200 (vs 256, 512) for these streaming kernels
VPT = 2   # float4 per thread; must match VPT in maps.cu
S = 3.0   # the STREAM scalar


def inputs(p, dtype, rng):
    n = p["n"]
    b = uniform(rng, n, -1, 1, dtype)
    c = uniform(rng, n, -1, 1, dtype)
    b[b == 0] = 1
    c[c == 0] = 1
    return {"b": b, "c": c}


def outputs(p, dtype):
    return {"a": ((p["n"],), dtype)}


def reference(p, b, c):
    return {"a": elementwise(lambda u, v: u.astype(np.float64) + S * v.astype(np.float64), b, c)}


def cupy(p, ctx):
    kernel = ctx.module("maps.cu").get_function("triad_f32")
    n = p["n"]
    blocks = max(1, -(-n // (4 * VPT * THREADS)))

    def run(b, c, a):
        kernel((blocks,), (THREADS,), (b, c, a, np.float32(S), np.int64(n)))
    return run
