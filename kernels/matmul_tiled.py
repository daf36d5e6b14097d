"""C = A B, square N x N float32 (tiled kernel in matmul.cu)."""
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
    kernel = ctx.module("matmul.cu").get_function("matmul_tiled")
    tiles = (n + 127) // 128  # 128 x 128 tile of C per block (matmul.cu)
    args = (np.int32(n), np.int32(n % 4 == 0))

    def run(a, b, c):
        kernel((tiles, tiles), (256,), (a, b, c) + args)
    return run
