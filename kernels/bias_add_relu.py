"""bias_add_relu: out = relu(x + bias) as TWO launches (maps.cu): bias_add x+bias -> tmp, then relu_f32 tmp -> out.
x is rows x cols row-major, bias has cols elements. Compare with bias_add_relu_fused."""
import numpy as np

from roofline.kernelapi import uniform, rowwise

INTERFACE = 1
TOLERANCE = {"rtol": 1e-6, "atol": 1e-7}
# cols % 4 == 0 takes the float4 path that the default size uses; rows and cols/4 fill no whole block.
# (cols % 4 != 0 or unaligned pointers take the scalar bias_add_f1 path.)
TEST_PARAMS = {"rows": 257, "cols": 1004}

THREADS = 128   # 128 measured best on an H200 (vs 256, 512) for these streaming kernels
VPT = 2   # float4 per thread in relu_f32; must match VPT in maps.cu
RPB = 2   # rows per thread in bias_add; must match RPB in maps.cu


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
    bias4, bias1, relu = (mod.get_function(k) for k in ("bias_add_f4", "bias_add_f1", "relu_f32"))
    rows, cols = p["rows"], p["cols"]
    n = rows * cols
    tmp = ctx.temp((rows, cols), np.float32)
    grid4, block4 = bias_grid(rows, cols // 4)
    grid1, block1 = bias_grid(rows, cols)
    blocks = max(1, -(-n // (4 * VPT * THREADS)))
    r, c = np.int64(rows), np.int64(cols)

    def run(x, bias, out):
        if cols % 4 == 0 and (x.data.ptr | bias.data.ptr | tmp.data.ptr) % 16 == 0:
            bias4(grid4, block4, (x, bias, tmp, r, c))
        else:
            bias1(grid1, block1, (x, bias, tmp, r, c))
        relu((blocks,), (THREADS,), (tmp, out, np.int64(n)))
    return run
