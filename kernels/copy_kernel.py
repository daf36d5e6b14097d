"""copy: b = a, float32, two float4 per thread (maps.cu: copy_f32)."""
from roofline.kernelapi import sibling

_MAPS = sibling(__file__, "_maps.py")

INTERFACE = 1
TOLERANCE = {"rtol": 0.0, "atol": 0.0}   # a copy is exact
TEST_PARAMS = {"n": 1_000_003}


def inputs(p, dtype, rng):
    return {"a": _MAPS.nonzero(rng, p["n"], -1, 1, dtype)}


def outputs(p, dtype):
    return {"b": ((p["n"],), dtype)}


def reference(p, a):
    return {"b": a.copy()}


def cupy(p, ctx):
    launch = _MAPS.launcher(ctx, "copy_f32", p["n"])

    def run(a, b):
        launch(a, b)
    return run
