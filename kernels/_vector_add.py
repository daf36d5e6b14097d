"""Shared by vector_add and vector_add_float4, which compute the same c = a + b (float32): inputs, outputs,
reference, tolerance and test size. The variants differ only in their launch."""
import numpy as np

from roofline.kernelapi import elementwise, sibling

_MAPS = sibling(__file__, "_maps.py")

INTERFACE = 1
TOLERANCE = {"rtol": 1e-6, "atol": 1e-7}
TEST_PARAMS = {"n": 1_000_003}


def inputs(p, dtype, rng):
    n = p["n"]
    return {"a": _MAPS.nonzero(rng, n, -1, 1, dtype), "b": _MAPS.nonzero(rng, n, -1, 1, dtype)}


def outputs(p, dtype):
    return {"c": ((p["n"],), dtype)}


def reference(p, a, b):
    return {"c": elementwise(lambda u, v: u.astype(np.float64) + v, a, b)}
