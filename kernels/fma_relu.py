"""fma_relu: out = relu(a * b + c) as THREE launches (maps.cu): mul_f32 a*b -> tmp1, add_f32 tmp1+c -> tmp2,
relu_f32 tmp2 -> out; the two temporaries make 5 tensor reads and 3 writes. Compare with fma_relu_fused, with which
inputs, reference and tolerance are shared (_fma_relu.py)."""
import numpy as np

from roofline.kernelapi import sibling

_FMA = sibling(__file__, "_fma_relu.py")
_MAPS = sibling(__file__, "_maps.py")

INTERFACE = 1
TOLERANCE = _FMA.TOLERANCE
TEST_PARAMS = _FMA.TEST_PARAMS
inputs = _FMA.inputs
outputs = _FMA.outputs
reference = _FMA.reference


def cupy(p, ctx):
    n = p["n"]
    mul, add, relu = (_MAPS.launcher(ctx, k, n) for k in ("mul_f32", "add_f32", "relu_f32"))
    tmp1 = ctx.temp((n,), np.float32)
    tmp2 = ctx.temp((n,), np.float32)

    def run(a, b, c, out):
        mul(a, b, tmp1)
        add(tmp1, c, tmp2)
        relu(tmp2, out)
    return run
