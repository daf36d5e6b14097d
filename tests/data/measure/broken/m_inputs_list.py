"""A test kernel whose inputs() returns a list, not a dict: an input error found only when the kernel runs."""

INTERFACE = 1


def inputs(p, dtype, rng):
    return [rng.uniform(-1, 1, p["n"]).astype(dtype)]


def outputs(p, dtype):
    return {"c": ((p["n"],), dtype)}


def reference(p, a):
    return {"c": a}
