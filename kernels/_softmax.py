"""Shared by softmax_5pass and softmax_fused, which compute the same row softmax (float32, rows x cols): inputs,
outputs, reference, tolerance and test size."""
from roofline.kernelapi import normal, sibling

_ROWS = sibling(__file__, "_rows_ref.py")

INTERFACE = 1
TOLERANCE = {"rtol": 1e-5, "atol": 1e-8}
TEST_PARAMS = {"rows": 257, "cols": 1001}


def inputs(p, dtype, rng):
    return {"x": normal(rng, (p["rows"], p["cols"]), 0.0, 3.0, dtype)}


def outputs(p, dtype):
    return {"y": ((p["rows"], p["cols"]), dtype)}


def reference(p, x):
    return {"y": _ROWS.softmax(x)}
