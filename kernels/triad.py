"""triad (STREAM): a = b + s * c, float32, two float4 per thread (maps.cu: triad_f32, one fmaf per element)."""
import numpy as np

from roofline.kernelapi import elementwise, sibling

_MAPS = sibling(__file__, "_maps.py")

INTERFACE = 1
TOLERANCE = {"rtol": 1e-6, "atol": 1e-6}
TEST_PARAMS = {"n": 1_000_003}
S = 3.0   # the STREAM scalar


def inputs(p, dtype, rng):
    n = p["n"]
    return {"b": _MAPS.nonzero(rng, n, -1, 1, dtype), "c": _MAPS.nonzero(rng, n, -1, 1, dtype)}


def outputs(p, dtype):
    return {"a": ((p["n"],), dtype)}


def reference(p, b, c):
    return {"a": elementwise(lambda u, v: u.astype(np.float64) + S * v.astype(np.float64), b, c)}


def cupy(p, ctx):
    launch = _MAPS.launcher(ctx, "triad_f32", p["n"], np.float32(S))

    def run(b, c, a):
        launch(b, c, a)
    return run
