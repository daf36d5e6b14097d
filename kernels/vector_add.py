"""vector_add: c = a + b, float32, ONE float per thread, 4-byte accesses (maps.cu: add_f32_scalar).
The deliberately naive variant, to compare with vector_add_float4; inputs, reference, tolerance and test
size come from their family (_vector_add.py, named by the descriptor)."""
import numpy as np

THREADS = 256


def cupy(p, ctx):
    kernel = ctx.module("maps.cu").get_function("add_f32_scalar")
    n = p["n"]
    blocks = max(1, -(-n // THREADS))

    def run(a, b, c):
        kernel((blocks,), (THREADS,), (a, b, c, np.int64(n)))
    return run
