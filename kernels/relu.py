"""relu: b = max(a, 0), float32, two float4 per thread (maps.cu: relu_f32)."""
import numpy as np

from roofline.kernelapi import elementwise, sibling

_MAPS = sibling(__file__, "_maps.py")

INTERFACE = 1
TOLERANCE = {"rtol": 0.0, "atol": 0.0}   # max(a, 0) is exact
TEST_PARAMS = {"n": 1_000_003}


def inputs(p, dtype, rng):
    return {"a": _MAPS.nonzero(rng, p["n"], -3, 3, dtype)}   # both signs, so both sides of the max are taken


def outputs(p, dtype):
    return {"b": ((p["n"],), dtype)}


def reference(p, a):
    return {"b": elementwise(lambda v: np.maximum(v, 0), a, dtype=a.dtype)}


def cupy(p, ctx):
    launch = _MAPS.launcher(ctx, "relu_f32", p["n"])

    def run(a, b):
        launch(a, b)
    return run
