"""Single-channel 3x3 convolution on an N x N grid with zero padding (reuse variant; see stencil.cu). Inputs,
reference and tolerance are shared with the other convolution variant (_stencil.py)."""
from roofline.kernelapi import sibling

_ST = sibling(__file__, "_stencil.py")

INTERFACE = 1
TOLERANCE = _ST.TOLERANCE
TEST_PARAMS = _ST.TEST_PARAMS
inputs = _ST.conv3x3_inputs
outputs = _ST.outputs
reference = _ST.conv3x3_reference


def cupy(p, ctx):
    launch = _ST.stream_launcher(ctx.module("stencil.cu"), "conv3x3", p["n"])

    def run(x, w, y):
        launch(x, w, y)
    return run
