"""A correct test kernel that records every call of its run function (tests/test_measure_harness.py reads CALLS)."""

import numpy as np

INTERFACE = 1
TOLERANCE = {"rtol": 1e-6, "atol": 1e-6}

CALLS = []  # one dict per run(...) call: the array objects passed and whether the output was still all NaN


def inputs(p, dtype, rng):
    n = p["n"]
    return {"a": rng.uniform(-1, 1, n).astype(dtype), "b": rng.uniform(-1, 1, n).astype(dtype)}


def outputs(p, dtype):
    return {"c": ((p["n"],), dtype)}


def reference(p, a, b):
    return {"c": a.astype(np.float64) + b}


def numpy(p, ctx):
    def run(a, b, c):
        CALLS.append({"a": a, "b": b, "c": c, "c_all_nan": bool(np.isnan(c).all())})
        np.add(a, b, out=c)

    return run
