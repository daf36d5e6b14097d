"""Shared by layernorm_2pass, layernorm_3pass and layernorm_fused, which compute the same row layer norm
y = (x - mean) / sqrt(var + EPS) * gamma + beta (float32, rows x cols): inputs, outputs, reference, tolerance,
test size and EPS."""
from roofline.kernelapi import normal, sibling, uniform

_ROWS = sibling(__file__, "_rows_ref.py")

INTERFACE = 1
TOLERANCE = {"rtol": 1e-5, "atol": 1e-5}
TEST_PARAMS = {"rows": 257, "cols": 1001}
EPS = 1e-5


def inputs(p, dtype, rng):
    rows, cols = p["rows"], p["cols"]
    return {"x": normal(rng, (rows, cols), 1.0, 2.0, dtype),
            "gamma": uniform(rng, cols, 0.5, 1.5, dtype),
            "beta": uniform(rng, cols, -0.5, 0.5, dtype)}


def outputs(p, dtype):
    return {"y": ((p["rows"], p["cols"]), dtype)}


def reference(p, x, gamma, beta):
    return {"y": _ROWS.layernorm(x, gamma, beta, EPS)}
