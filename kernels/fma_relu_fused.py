"""fma_relu_fused: out = relu(a * b + c) in one launch (maps.cu: fma_relu_f32, fmaf then fmaxf): 3 reads, 1 write.
Inputs, reference, tolerance and test size come from the family it shares with fma_relu (_fma_relu.py)."""
from roofline.kernelapi import sibling

_MAPS = sibling(__file__, "_maps.py")


def cupy(p, ctx):
    launch = _MAPS.launcher(ctx, "fma_relu_f32", p["n"])

    def run(a, b, c, out):
        launch(a, b, c, out)
    return run
