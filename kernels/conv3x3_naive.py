"""Single-channel 3x3 convolution on an N x N grid with zero padding (naive variant; see stencil.cu): the launcher
(_stencil.py). Inputs, reference, tolerance and test size come from the convolution family (_conv3x3.py)."""
from roofline.kernelapi import sibling

_ST = sibling(__file__, "_stencil.py")


def cupy(p, ctx):
    launch = _ST.naive_launcher(ctx.module("stencil.cu"), "conv3x3", p["n"])

    def run(x, w, y):
        launch(x, w, y)
    return run
