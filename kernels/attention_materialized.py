"""Attention as three launches with the S x S matrices in DRAM: S = Q Kᵀ (cuBLAS batched SGEMM through
cupy.matmul), the row softmax with the 1/sqrt(d) scale (attn_row_softmax in attention.cu), O = P V (cuBLAS).
Inputs and reference are shared with the fused kernels (_attention.py)."""
import math

import numpy as np

from roofline.errors import InputError
from roofline.kernelapi import sibling

_AT = sibling(__file__, "_attention.py")

INTERFACE = 1
TOLERANCE = {"rtol": 1e-4, "atol": 2e-6}  # as attention_fused: fails if cuBLAS ran the products in TF32
THREADS = 256


def cupy(p, ctx):
    where = ctx.folder / "attention_materialized.yaml"
    _AT.check_params(p, where, fused=False)
    S, d, heads = p["S"], p["d"], p["batch_heads"]
    cp = ctx.cupy
    softmax = ctx.module("attention.cu").get_function("attn_row_softmax")
    smem = 4 * S  # the row cached in shared memory
    limit = cp.cuda.Device().attributes["MaxSharedMemoryPerBlockOptin"] - 1024
    if smem > limit:
        raise InputError(f"{where}: params.S: the softmax stage caches a row of S floats in shared memory; "
                         f"S = {S} needs {smem} B, this GPU allows {limit}")
    if smem > 48 * 1024 - 1024:
        softmax.max_dynamic_shared_size_bytes = smem
    scores = ctx.temp((heads, S, S), np.float32)
    probs = ctx.temp((heads, S, S), np.float32)
    args = (np.int32(S), np.float32(_AT.LOG2E / math.sqrt(d)))

    def run(q, k, v, o):
        cp.matmul(q, k.transpose(0, 2, 1), out=scores)
        softmax((heads * S,), (THREADS,), (scores, probs) + args, shared_mem=smem)
        cp.matmul(probs, v, out=o)
    return run
