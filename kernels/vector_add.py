"""vector_add: c = a + b, float32, ONE float per thread, 4-byte accesses (maps.cu: add_f32_scalar).
The deliberately naive variant, to compare with vector_add_float4; inputs, reference and tolerance are shared
with it (_vector_add.py)."""
import numpy as np

from roofline.kernelapi import sibling

_ADD = sibling(__file__, "_vector_add.py")

INTERFACE = 1
TOLERANCE = _ADD.TOLERANCE
TEST_PARAMS = _ADD.TEST_PARAMS
inputs = _ADD.inputs
outputs = _ADD.outputs
reference = _ADD.reference

THREADS = 256


def cupy(p, ctx):
    kernel = ctx.module("maps.cu").get_function("add_f32_scalar")
    n = p["n"]
    blocks = max(1, -(-n // THREADS))

    def run(a, b, c):
        kernel((blocks,), (THREADS,), (a, b, c, np.int64(n)))
    return run
