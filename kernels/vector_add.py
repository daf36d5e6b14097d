"""vector_add: c = a + b, float32, ONE float per thread, 4-byte accesses (maps.cu: add_f32_scalar).
The deliberately naive variant, to compare with vector_add_float4."""
import numpy as np

from roofline.kernelapi import uniform, elementwise

INTERFACE = 1
TOLERANCE = {"rtol": 1e-6, "atol": 1e-7}
TEST_PARAMS = {"n": 1_000_003}

THREADS = 256


def inputs(p, dtype, rng):
    n = p["n"]
    a = uniform(rng, n, -1, 1, dtype)
    b = uniform(rng, n, -1, 1, dtype)
    a[a == 0] = 1
    b[b == 0] = 1
    return {"a": a, "b": b}


def outputs(p, dtype):
    return {"c": ((p["n"],), dtype)}


def reference(p, a, b):
    return {"c": elementwise(lambda u, v: u.astype(np.float64) + v, a, b)}


def cupy(p, ctx):
    kernel = ctx.module("maps.cu").get_function("add_f32_scalar")
    n = p["n"]
    blocks = max(1, -(-n // THREADS))

    def run(a, b, c):
        kernel((blocks,), (THREADS,), (a, b, c, np.int64(n)))
    return run
