"""A test implementation without reference()."""

INTERFACE = 1


def inputs(p, dtype, rng):
    return {"a": rng.uniform(-1, 1, p["n"]).astype(dtype)}


def outputs(p, dtype):
    return {"c": ((p["n"],), dtype)}
