"""A test kernel in bfloat16 that imports nothing that gives NumPy that dtype: the host cannot make its arrays."""

import numpy as np

INTERFACE = 1


def inputs(p, dtype, rng):
    return {"a": rng.uniform(-1, 1, p["n"]).astype(dtype)}


def outputs(p, dtype):
    return {"c": ((p["n"],), dtype)}


def reference(p, a):
    return {"c": 2 * a.astype(np.float64)}
