"""fma_relu_fused: out = relu(a * b + c) in one launch (maps.cu: fma_relu_f32, fmaf then fmaxf): 3 reads, 1 write.
Inputs, reference and tolerance are shared with fma_relu (_fma_relu.py)."""
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
    launch = _MAPS.launcher(ctx, "fma_relu_f32", p["n"])

    def run(a, b, c, out):
        launch(a, b, c, out)
    return run
