"""vector_add_float4: c = a + b, float32, two float4 per thread, scalar fallback for unaligned views and the
n % 4 tail (maps.cu: add_f32). Inputs, reference and tolerance are shared with vector_add (_vector_add.py)."""
from roofline.kernelapi import sibling

_ADD = sibling(__file__, "_vector_add.py")
_MAPS = sibling(__file__, "_maps.py")

INTERFACE = 1
TOLERANCE = _ADD.TOLERANCE
TEST_PARAMS = _ADD.TEST_PARAMS
inputs = _ADD.inputs
outputs = _ADD.outputs
reference = _ADD.reference


def cupy(p, ctx):
    launch = _MAPS.launcher(ctx, "add_f32", p["n"])

    def run(a, b, c):
        launch(a, b, c)
    return run
