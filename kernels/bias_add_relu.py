"""bias_add_relu: out = relu(x + bias) as TWO launches (maps.cu): bias_add x+bias -> tmp, then relu_f32 tmp -> out.
x is rows x cols row-major, bias has cols elements. Compare with bias_add_relu_fused, with which inputs, reference,
tolerance and the bias launch shape are shared (_bias_add_relu.py)."""
import numpy as np

from roofline.kernelapi import sibling

_BIAS = sibling(__file__, "_bias_add_relu.py")
_MAPS = sibling(__file__, "_maps.py")

INTERFACE = 1
TOLERANCE = _BIAS.TOLERANCE
TEST_PARAMS = _BIAS.TEST_PARAMS
inputs = _BIAS.inputs
outputs = _BIAS.outputs
reference = _BIAS.reference


def cupy(p, ctx):
    mod = ctx.module("maps.cu")
    bias4, bias1 = mod.get_function("bias_add_f4"), mod.get_function("bias_add_f1")
    rows, cols = p["rows"], p["cols"]
    relu = _MAPS.launcher(ctx, "relu_f32", rows * cols)
    tmp = ctx.temp((rows, cols), np.float32)
    grid4, block4 = _BIAS.bias_grid(rows, cols // 4)
    grid1, block1 = _BIAS.bias_grid(rows, cols)
    r, c = np.int64(rows), np.int64(cols)

    def run(x, bias, out):
        if cols % 4 == 0 and (x.data.ptr | bias.data.ptr | tmp.data.ptr) % 16 == 0:
            bias4(grid4, block4, (x, bias, tmp, r, c))
        else:
            bias1(grid1, block1, (x, bias, tmp, r, c))
        relu(tmp, out)
    return run
