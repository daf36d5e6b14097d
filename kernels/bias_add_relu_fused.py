"""bias_add_relu_fused: out = relu(x + bias) in one launch (maps.cu: bias_add_relu_f4, or _f1 when cols % 4 != 0
or a pointer is not 16-byte aligned). x is rows x cols row-major, bias has cols elements; each thread loads its
bias once and applies it to RPB rows. Inputs, reference, tolerance and the bias launch shape are shared with
bias_add_relu (_bias_add_relu.py)."""
import numpy as np

from roofline.kernelapi import sibling

_BIAS = sibling(__file__, "_bias_add_relu.py")

INTERFACE = 1
TOLERANCE = _BIAS.TOLERANCE
TEST_PARAMS = _BIAS.TEST_PARAMS
inputs = _BIAS.inputs
outputs = _BIAS.outputs
reference = _BIAS.reference


def cupy(p, ctx):
    mod = ctx.module("maps.cu")
    k4, k1 = mod.get_function("bias_add_relu_f4"), mod.get_function("bias_add_relu_f1")
    rows, cols = p["rows"], p["cols"]
    grid4, block4 = _BIAS.bias_grid(rows, cols // 4)
    grid1, block1 = _BIAS.bias_grid(rows, cols)
    r, c = np.int64(rows), np.int64(cols)

    def run(x, bias, out):
        if cols % 4 == 0 and (x.data.ptr | bias.data.ptr | out.data.ptr) % 16 == 0:
            k4(grid4, block4, (x, bias, out, r, c))
        else:
            k1(grid1, block1, (x, bias, out, r, c))
    return run
