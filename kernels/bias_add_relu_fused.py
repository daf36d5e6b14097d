"""bias_add_relu_fused: out = relu(x + bias) in one launch (maps.cu: bias_add_relu_f4, or _f1 when cols % 4 != 0
or a pointer is not 16-byte aligned). x is rows x cols row-major, bias has cols elements; each thread loads its
bias once and applies it to RPB rows."""
import numpy as np

from roofline.kernelapi import uniform, rowwise

INTERFACE = 1
TOLERANCE = {"rtol": 1e-6, "atol": 1e-7}
# cols % 4 == 0 takes the float4 path that the default size uses; rows and cols/4 fill no whole block.
TEST_PARAMS = {"rows": 257, "cols": 1004}

THREADS = 128   # 128 measured best on an H200 (vs 256, 512) for these streaming kernels
RPB = 2   # rows per thread; must match RPB in maps.cu


def bias_grid(rows, width):
    """Launch shape for the bias kernels: x over `width` column units, y over groups of RPB rows."""
    threads = THREADS if width >= THREADS else max(32, -(-width // 32) * 32)
    return (-(-width // threads), min(-(-rows // RPB), 65535)), (threads,)


def inputs(p, dtype, rng):
    rows, cols = p["rows"], p["cols"]
    x = uniform(rng, (rows, cols), -3, 3, dtype)
    bias = uniform(rng, cols, -1, 1, dtype)
    x[x == 0] = 1
    bias[bias == 0] = 1
    return {"x": x, "bias": bias}


def outputs(p, dtype):
    return {"out": ((p["rows"], p["cols"]), dtype)}


def reference(p, x, bias):
    return {"out": rowwise(lambda rows: np.maximum(rows.astype(np.float64) + bias, 0.0), x)}


def cupy(p, ctx):
    mod = ctx.module("maps.cu")
    k4, k1 = mod.get_function("bias_add_relu_f4"), mod.get_function("bias_add_relu_f1")
    rows, cols = p["rows"], p["cols"]
    grid4, block4 = bias_grid(rows, cols // 4)
    grid1, block1 = bias_grid(rows, cols)
    r, c = np.int64(rows), np.int64(cols)

    def run(x, bias, out):
        if cols % 4 == 0 and (x.data.ptr | bias.data.ptr | out.data.ptr) % 16 == 0:
            k4(grid4, block4, (x, bias, out, r, c))
        else:
            k1(grid1, block1, (x, bias, out, r, c))
    return run
