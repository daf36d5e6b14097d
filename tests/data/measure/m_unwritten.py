"""A wrong test kernel: its run skips the last output element, which stays NaN-poisoned."""

import numpy as np

INTERFACE = 1


def inputs(p, dtype, rng):
    n = p["n"]
    return {"a": rng.uniform(-1, 1, n).astype(dtype), "b": rng.uniform(-1, 1, n).astype(dtype)}


def outputs(p, dtype):
    return {"c": ((p["n"],), dtype)}


def reference(p, a, b):
    return {"c": a.astype(np.float64) + b}


def numpy(p, ctx):
    def run(a, b, c):
        np.add(a[:-1], b[:-1], out=c[:-1])

    return run
