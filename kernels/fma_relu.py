"""fma_relu: out = relu(a * b + c) as THREE launches (maps.cu): mul_f32 a*b -> tmp1, add_f32 tmp1+c -> tmp2,
relu_f32 tmp2 -> out; the two temporaries make 5 tensor reads and 3 writes. Compare with fma_relu_fused."""
import numpy as np

from roofline.kernelapi import uniform, elementwise

INTERFACE = 1
TOLERANCE = {"rtol": 1e-5, "atol": 1e-6}   # a*b and +c round separately; a*b+c can cancel, hence atol
TEST_PARAMS = {"n": 1_000_003}

THREADS = 128   # 128 measured best on an H200 (vs 256, 512) for these streaming kernels
VPT = 2   # float4 per thread; must match VPT in maps.cu


def inputs(p, dtype, rng):
    n = p["n"]
    arrays = {k: uniform(rng, n, -2, 2, dtype) for k in ("a", "b", "c")}
    for v in arrays.values():
        v[v == 0] = 1
    return arrays


def outputs(p, dtype):
    return {"out": ((p["n"],), dtype)}


def reference(p, a, b, c):
    return {"out": elementwise(lambda u, v, w: np.maximum(u.astype(np.float64) * v + w, 0.0), a, b, c)}


def cupy(p, ctx):
    mod = ctx.module("maps.cu")
    mul, add, relu = (mod.get_function(k) for k in ("mul_f32", "add_f32", "relu_f32"))
    n = p["n"]
    tmp1 = ctx.temp((n,), np.float32)
    tmp2 = ctx.temp((n,), np.float32)
    blocks = max(1, -(-n // (4 * VPT * THREADS)))
    nn = np.int64(n)

    def run(a, b, c, out):
        mul((blocks,), (THREADS,), (a, b, tmp1, nn))
        add((blocks,), (THREADS,), (tmp1, c, tmp2, nn))
        relu((blocks,), (THREADS,), (tmp2, out, nn))
    return run
