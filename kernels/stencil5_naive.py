"""5-point stencil on an N x N grid with zero padding (naive variant; see stencil.cu): the launcher
(_stencil.py). Inputs, reference, tolerance and test size come from the stencil family (_stencil5.py)."""
from roofline.kernelapi import sibling

_ST = sibling(__file__, "_stencil.py")


def cupy(p, ctx):
    launch = _ST.naive_launcher(ctx.module("stencil.cu"), "stencil5", p["n"])

    def run(x, y):
        launch(x, y)
    return run
