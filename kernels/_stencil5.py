"""The family of stencil5_naive and stencil5_reuse (their descriptors name it), which compute the same 5-point
stencil y = 0.5 c + 0.125 (north + south + west + east) on an N x N float32 grid with zero padding: inputs,
outputs, float64 reference, tolerance and test size. The launchers are in _stencil.py."""
from roofline.kernelapi import sibling

_ST = sibling(__file__, "_stencil.py")
_REF = sibling(__file__, "_stencil_ref.py")

INTERFACE = 1
TOLERANCE = {"rtol": 1e-5, "atol": 1e-6}
TEST_PARAMS = {"n": 1003}   # not a multiple of 4 (the one-column streaming kernel), a partial block and band
outputs = _ST.outputs


def inputs(p, dtype, rng):
    return {"x": _ST.random_grid(p, dtype, rng)}


def reference(p, x):
    return {"y": _REF.stencil5(x)}
