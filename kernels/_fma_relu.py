"""Shared by fma_relu (three launches) and fma_relu_fused (one launch), which compute the same
out = relu(a * b + c) (float32): inputs, outputs, reference, tolerance and test size."""
import numpy as np

from roofline.kernelapi import elementwise, sibling

_MAPS = sibling(__file__, "_maps.py")

INTERFACE = 1
TOLERANCE = {"rtol": 1e-5, "atol": 1e-6}   # a*b+c can cancel, hence atol (unfused, a*b and +c also round apart)
TEST_PARAMS = {"n": 1_000_003}


def inputs(p, dtype, rng):
    n = p["n"]
    return {k: _MAPS.nonzero(rng, n, -2, 2, dtype) for k in ("a", "b", "c")}


def outputs(p, dtype):
    return {"out": ((p["n"],), dtype)}


def reference(p, a, b, c):
    return {"out": elementwise(lambda u, v, w: np.maximum(u.astype(np.float64) * v + w, 0.0), a, b, c)}
