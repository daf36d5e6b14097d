"""fma_relu: out = relu(a * b + c) as THREE launches (maps.cu): mul_f32 a*b -> tmp1, add_f32 tmp1+c -> tmp2,
relu_f32 tmp2 -> out; the two temporaries make 5 tensor reads and 3 writes. Compare with fma_relu_fused; inputs,
reference, tolerance and test size come from their family (_fma_relu.py, named by the descriptor)."""
import numpy as np

from roofline.kernelapi import sibling

_MAPS = sibling(__file__, "_maps.py")


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
