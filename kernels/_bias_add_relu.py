"""Shared by bias_add_relu (two launches) and bias_add_relu_fused (one launch), which compute the same
out = relu(x + bias), x rows x cols row-major, bias cols (float32): inputs, outputs, reference, tolerance, test
size, and the launcher of the bias kernels in maps.cu (float4 or scalar, by shape and alignment)."""
import numpy as np

from roofline.kernelapi import rowwise, sibling

_MAPS = sibling(__file__, "_maps.py")

INTERFACE = 1
TOLERANCE = {"rtol": 1e-6, "atol": 1e-7}
# cols % 4 == 0 takes the float4 path that the default size uses; rows and cols/4 fill no whole block.
# (cols % 4 != 0 or unaligned pointers take the scalar _f1 path.)
TEST_PARAMS = {"rows": 257, "cols": 1004}

THREADS = _MAPS.THREADS
RPB = 2   # rows per thread in the bias kernels; must match RPB in maps.cu


def bias_grid(rows, width):
    """Launch shape for the bias kernels: x over `width` column units, y over groups of RPB rows."""
    threads = THREADS if width >= THREADS else max(32, -(-width // 32) * 32)
    return (-(-width // threads), min(-(-rows // RPB), 65535)), (threads,)


def launcher(ctx, prefix, rows, cols):
    """launch(x, bias, out): maps.cu's `prefix`_f4 (float4 loads) when cols % 4 == 0 and all three arrays start
    16-byte aligned, else `prefix`_f1; both take (x, bias, out, int64 rows, int64 cols)."""
    mod = ctx.module("maps.cu")
    k4, k1 = mod.get_function(f"{prefix}_f4"), mod.get_function(f"{prefix}_f1")
    grid4, block4 = bias_grid(rows, cols // 4)
    grid1, block1 = bias_grid(rows, cols)
    r, c = np.int64(rows), np.int64(cols)

    def launch(x, bias, out):
        if cols % 4 == 0 and (x.data.ptr | bias.data.ptr | out.data.ptr) % 16 == 0:
            k4(grid4, block4, (x, bias, out, r, c))
        else:
            k1(grid1, block1, (x, bias, out, r, c))
    return launch


def inputs(p, dtype, rng):
    rows, cols = p["rows"], p["cols"]
    return {"x": _MAPS.nonzero(rng, (rows, cols), -3, 3, dtype), "bias": _MAPS.nonzero(rng, cols, -1, 1, dtype)}


def outputs(p, dtype):
    return {"out": ((p["rows"], p["cols"]), dtype)}


def reference(p, x, bias):
    return {"out": rowwise(lambda rows: np.maximum(rows.astype(np.float64) + bias, 0.0), x)}
