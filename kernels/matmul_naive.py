"""C = A B, square N x N float32 (naive kernel in matmul.cu)."""
import numpy as np

from roofline.kernelapi import uniform, elementwise

INTERFACE = 1
# B is scaled by 1/sqrt(N) so |C| stays about 0.3 for any N: the float32 rounding error then grows
# like sqrt(N) * 6e-8 * |C|, far below atol even at N = 16384.
TOLERANCE = {"rtol": 1e-4, "atol": 2e-4}
TEST_PARAMS = {"n": 517}


def _signed(rng, shape):
    """Random values of either sign, bounded away from zero (so none rounds to 0 in float16)."""
    u = uniform(rng, shape, -1.0, 1.0, np.float64 if np.prod(shape) < (1 << 24) else np.float32)
    return elementwise(lambda v: np.copysign(0.25 + 0.75 * np.abs(v), v), u, dtype=u.dtype)


def inputs(p, dtype, rng):
    n = p["n"]
    return {"a": _signed(rng, (n, n)).astype(dtype),
            "b": (_signed(rng, (n, n)) / np.sqrt(n)).astype(dtype)}


def outputs(p, dtype):
    return {"c": ((p["n"], p["n"]), dtype)}


def reference(p, a, b):
    return {"c": a.astype(np.float64) @ b.astype(np.float64)}


def cupy(p, ctx):
    n = p["n"]
    kernel = ctx.module("matmul.cu").get_function("matmul_naive")
    grid, block = ((n + 31) // 32, (n + 7) // 8), (32, 8)

    def run(a, b, c):
        kernel(grid, block, (a, b, c, np.int32(n)))
    return run
