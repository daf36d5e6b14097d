"""bias_add_relu: out = relu(x + bias) as TWO launches (maps.cu): bias_add x+bias -> tmp, then relu_f32 tmp -> out.
x is rows x cols row-major, bias has cols elements. Compare with bias_add_relu_fused; inputs, reference, tolerance,
test size and the bias kernels' launcher come from their family (_bias_add_relu.py, named by the descriptor)."""
import numpy as np

from roofline.kernelapi import sibling

_BIAS = sibling(__file__, "_bias_add_relu.py")
_MAPS = sibling(__file__, "_maps.py")


def cupy(p, ctx):
    rows, cols = p["rows"], p["cols"]
    bias_add = _BIAS.launcher(ctx, "bias_add", rows, cols)
    relu = _MAPS.launcher(ctx, "relu_f32", rows * cols)
    tmp = ctx.temp((rows, cols), np.float32)

    def run(x, bias, out):
        bias_add(x, bias, tmp)
        relu(tmp, out)
    return run
