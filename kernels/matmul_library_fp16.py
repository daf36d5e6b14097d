"""C = A B in float16 (FP32 accumulate) through cuBLAS (cupy.matmul with out=)."""
import numpy as np

from roofline.kernelapi import uniform, elementwise

INTERFACE = 1
# float16 output: rounding to 11 bits gives about 2.5e-4 on |C| ~ 0.3; FP32 accumulation adds little.
TOLERANCE = {"rtol": 2e-3, "atol": 1e-3}
TEST_PARAMS = {"n": 1000}


def _signed(rng, shape):
    """Random values of either sign, bounded away from zero (so none rounds to 0 in float16)."""
    u = uniform(rng, shape, -1.0, 1.0, np.float64 if np.prod(shape) < (1 << 24) else np.float32)
    return elementwise(lambda v: np.copysign(0.25 + 0.75 * np.abs(v), v), u, dtype=u.dtype)


def inputs(p, dtype, rng):
    n = p["n"]
    # B scaled by 1/sqrt(N) keeps |C| about 0.3 for any N, so one tolerance fits every size.
    return {"a": _signed(rng, (n, n)).astype(dtype),
            "b": (_signed(rng, (n, n)) / np.sqrt(n)).astype(dtype)}


def outputs(p, dtype):
    return {"c": ((p["n"], p["n"]), dtype)}


def reference(p, a, b):
    return {"c": a.astype(np.float64) @ b.astype(np.float64)}


def cupy(p, ctx):
    matmul = ctx.cupy.matmul

    def run(a, b, c):
        matmul(a, b, out=c)
    return run
