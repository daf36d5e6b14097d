"""A test implementation that declares the wrong INTERFACE version."""

INTERFACE = 2


def inputs(p, dtype, rng):
    return {"a": rng.uniform(-1, 1, p["n"]).astype(dtype)}


def outputs(p, dtype):
    return {"c": ((p["n"],), dtype)}


def reference(p, a):
    return {"c": a}
