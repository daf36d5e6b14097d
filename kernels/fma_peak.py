"""fma_peak: FP32 FMA throughput (peak.cu: fma_peak_f32_c{4,8,16}). Each thread runs `chains` independent
recurrences x <- x * a + b for `iters` steps in registers and stores the sum of its chains.

The recurrence has the closed form x_T = F + a^T (x_0 - F) with F = b / (1 - a), which the reference evaluates in
float64. a = 1 - 2^-m with 2^m >= iters keeps a^T near e^-1 (the result still depends on every step), and
F = -4 keeps x far from F so that no step rounds to a no-op; a, b, the seeds and F are exact in float32."""
import math

import numpy as np

INTERFACE = 1
# float32 rounding over iters dependent steps: under 1e-6 in an emulation at 8192 steps. One step more or less
# changes the result by about 1e-4, so this tolerance also catches a wrong step count.
TOLERANCE = {"rtol": 1e-5, "atol": 0.0}
TEST_PARAMS = {"blocks": 37, "threads": 96, "iters": 1000, "chains": 8}

FIXED_POINT = -4.0
CHAINS = (4, 8, 16)   # the kernels peak.cu instantiates
KERNEL = "fma_peak_f32_c{}"


def coefficients(iters):
    m = max(1, math.ceil(math.log2(max(iters, 1))))
    a = 1.0 - 2.0 ** -m
    return a, FIXED_POINT * (1.0 - a)


def inputs(p, dtype, rng):
    return {}


def outputs(p, dtype):
    return {"out": ((p["blocks"] * p["threads"],), dtype)}


def reference(p):
    a, _ = coefficients(p["iters"])
    tid = np.arange(p["blocks"] * p["threads"])
    x0 = (tid % 1024)[:, None] / 1024.0 + 0.25 * np.arange(1, p["chains"] + 1)[None, :]
    xt = FIXED_POINT + a ** p["iters"] * (x0 - FIXED_POINT)
    return {"out": xt.sum(axis=1)}


def cupy(p, ctx, dtype=np.float32, kernel_name=KERNEL):
    if p["chains"] not in CHAINS:
        raise ValueError(f"chains must be one of {CHAINS}, got {p['chains']}")
    kernel = ctx.module("peak.cu").get_function(kernel_name.format(p["chains"]))
    a, b = coefficients(p["iters"])
    args = (np.int32(p["iters"]), dtype(a), dtype(b))
    blocks, threads = p["blocks"], p["threads"]

    def run(out):
        kernel((blocks,), (threads,), (out,) + args)
    return run
