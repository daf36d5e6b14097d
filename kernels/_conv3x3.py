"""The family of conv3x3_naive and conv3x3_reuse (their descriptors name it), which compute the same single-channel
3x3 convolution (cross-correlation) on an N x N float32 grid with zero padding: inputs, outputs, float64
reference, tolerance and test size. The launchers are in _stencil.py."""
from roofline.kernelapi import sibling, uniform

_ST = sibling(__file__, "_stencil.py")
_REF = sibling(__file__, "_stencil_ref.py")

INTERFACE = 1
TOLERANCE = {"rtol": 1e-5, "atol": 1e-6}
TEST_PARAMS = {"n": 1003}   # not a multiple of 4 (the one-column streaming kernel), a partial block and band
outputs = _ST.outputs


def inputs(p, dtype, rng):
    return {"x": _ST.random_grid(p, dtype, rng), "w": uniform(rng, (3, 3), 0.05, 0.2, dtype)}


def reference(p, x, w):
    return {"y": _REF.conv3x3(x, w)}
