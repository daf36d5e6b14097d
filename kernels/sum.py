"""sum: out[0] = sum of n floats (reduce.cu): sum_partial (grid-stride, float4 loads, a few blocks per SM, one
double partial per block in a temporary) then sum_finish (one block adds the partials). Deterministic."""
import numpy as np

from roofline.kernelapi import uniform

INTERFACE = 1
TOLERANCE = {"rtol": 1e-5, "atol": 0.0}
TEST_PARAMS = {"n": 1_000_003}

THREADS = 256        # must match THREADS in reduce.cu
BLOCKS_PER_SM = 6   # 6 x 256 threads fit at 40 registers; measured best of 2..8 on an H200


def inputs(p, dtype, rng):
    x = uniform(rng, p["n"], 0, 1, dtype)   # one sign, so the sum does not cancel towards 0
    x[x == 0] = 0.5
    return {"x": x}


def outputs(p, dtype):
    return {"out": ((1,), dtype)}


def reference(p, x):
    return {"out": np.array([x.sum(dtype=np.float64)])}


def cupy(p, ctx):
    mod = ctx.module("reduce.cu")
    partial_k, finish_k = mod.get_function("sum_partial"), mod.get_function("sum_finish")
    n = p["n"]
    blocks = max(1, min(BLOCKS_PER_SM * ctx.device["sm_count"], -(-n // (4 * THREADS))))
    partial = ctx.temp((blocks,), np.float64)

    def run(x, out):
        partial_k((blocks,), (THREADS,), (x, partial, np.int64(n)))
        finish_k((1,), (THREADS,), (partial, np.int32(blocks), out))
    return run
