"""A test kernel whose inputs() raises."""

INTERFACE = 1


def inputs(p, dtype, rng):
    raise ValueError("cannot make inputs for this test kernel")


def outputs(p, dtype):
    return {"c": ((p["n"],), dtype)}


def reference(p, a):
    return {"c": a}
