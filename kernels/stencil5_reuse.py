"""5-point stencil on an N x N grid with zero padding (reuse variant; see stencil.cu). Inputs, reference and
tolerance are shared with the other stencil variant (_stencil.py)."""
from roofline.kernelapi import sibling

_ST = sibling(__file__, "_stencil.py")

INTERFACE = 1
TOLERANCE = _ST.TOLERANCE
TEST_PARAMS = _ST.TEST_PARAMS
inputs = _ST.stencil5_inputs
outputs = _ST.outputs
reference = _ST.stencil5_reference


def cupy(p, ctx):
    launch = _ST.stream_launcher(ctx.module("stencil.cu"), "stencil5", p["n"])

    def run(x, y):
        launch(x, y)
    return run
