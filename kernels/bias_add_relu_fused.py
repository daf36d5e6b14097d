"""bias_add_relu_fused: out = relu(x + bias) in one launch (maps.cu: bias_add_relu_f4, or _f1 when cols % 4 != 0
or a pointer is not 16-byte aligned). x is rows x cols row-major, bias has cols elements; each thread loads its
bias once and applies it to RPB rows. Inputs, reference, tolerance, test size and the launcher come from
the family it shares with bias_add_relu (_bias_add_relu.py, named by the descriptor)."""
from roofline.kernelapi import sibling

_BIAS = sibling(__file__, "_bias_add_relu.py")


def cupy(p, ctx):
    launch = _BIAS.launcher(ctx, "bias_add_relu", p["rows"], p["cols"])

    def run(x, bias, out):
        launch(x, bias, out)
    return run
