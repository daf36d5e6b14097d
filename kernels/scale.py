"""scale: b = s * a, float32, two float4 per thread (maps.cu: scale_f32)."""
import numpy as np

from roofline.kernelapi import elementwise, sibling

_MAPS = sibling(__file__, "_maps.py")

INTERFACE = 1
TOLERANCE = {"rtol": 1e-6, "atol": 1e-7}
TEST_PARAMS = {"n": 1_000_003}
S = 1.7   # the scalar; any non-trivial value


def inputs(p, dtype, rng):
    return {"a": _MAPS.nonzero(rng, p["n"], -1, 1, dtype)}


def outputs(p, dtype):
    return {"b": ((p["n"],), dtype)}


def reference(p, a):
    return {"b": elementwise(lambda v: np.float64(np.float32(S)) * v.astype(np.float64), a)}


def cupy(p, ctx):
    launch = _MAPS.launcher(ctx, "scale_f32", p["n"], np.float32(S))

    def run(a, b):
        launch(a, b)
    return run
