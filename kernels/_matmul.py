"""The family of the square matmul kernels (matmul_naive, matmul_tiled, matmul_library, matmul_library_fp16), which
all compute C = A B for N x N A and B: inputs, outputs, float64 reference, the float32 tolerance, and cuBLAS as the
launcher that the hand-written variants replace with their own. Also the signed random values that gemv (_gemv.py)
draws the same way."""
import numpy as np

from roofline.kernelapi import elementwise, uniform

INTERFACE = 1
# B is scaled by 1/sqrt(N) so |C| stays about 0.3 for any N: the float32 rounding error then grows
# like sqrt(N) * 6e-8 * |C|, far below atol even at N = 16384.
TOLERANCE = {"rtol": 1e-4, "atol": 2e-4}
TEST_PARAMS = {"n": 517}   # not a multiple of the 32 x 8 naive block or the 128 x 128 tile


def signed(rng, shape):
    """Random values of either sign, bounded away from zero (so none rounds to 0 in float16)."""
    u = uniform(rng, shape, -1.0, 1.0, np.float64 if np.prod(shape) < (1 << 24) else np.float32)
    return elementwise(lambda v: np.copysign(0.25 + 0.75 * np.abs(v), v), u, dtype=u.dtype)


def inputs(p, dtype, rng):
    n = p["n"]
    # B scaled by 1/sqrt(N) keeps |C| about 0.3 for any N, so one tolerance fits every size.
    return {"a": signed(rng, (n, n)).astype(dtype),
            "b": (signed(rng, (n, n)) / np.sqrt(n)).astype(dtype)}


def outputs(p, dtype):
    return {"c": ((p["n"], p["n"]), dtype)}


def reference(p, a, b):
    return {"c": a.astype(np.float64) @ b.astype(np.float64)}


def cupy(p, ctx):
    """cuBLAS through cupy.matmul with out=: the launcher of matmul_library and matmul_library_fp16 (matmul_naive
    and matmul_tiled give their own)."""
    matmul = ctx.cupy.matmul

    def run(a, b, c):
        matmul(a, b, out=c)
    return run
