"""A correct float32 test kernel beside m_bf16: run on the host through its NumPy reference."""

import numpy as np

INTERFACE = 1
TOLERANCE = {"rtol": 1e-6, "atol": 1e-6}


def inputs(p, dtype, rng):
    return {"a": rng.uniform(-1, 1, p["n"]).astype(dtype)}


def outputs(p, dtype):
    return {"c": ((p["n"],), dtype)}


def reference(p, a):
    return {"c": 2 * a.astype(np.float64)}
