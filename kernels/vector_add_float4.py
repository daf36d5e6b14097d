"""vector_add_float4: c = a + b, float32, two float4 per thread, scalar fallback for unaligned views and the
n % 4 tail (maps.cu: add_f32). Inputs, reference, tolerance and test size come from
the family it shares with vector_add (_vector_add.py, named by the descriptor)."""
from roofline.kernelapi import sibling

_MAPS = sibling(__file__, "_maps.py")


def cupy(p, ctx):
    launch = _MAPS.launcher(ctx, "add_f32", p["n"])

    def run(a, b, c):
        launch(a, b, c)
    return run
