"""Shared by the attention kernels (attention_materialized, attention_fused, attention_fused_bf16), which compute
O = softmax(Q Kᵀ / sqrt(d)) V for batch_heads heads of [S, d] Q, K, V: inputs, outputs, the float64 reference, the
parameter checks and the launchers of attention.cu (benchmarks/attention.py uses the launchers too, with other
compile-time choices)."""
import math

import numpy as np

from roofline.errors import InputError
from roofline.kernelapi import blocks, normal, uniform

HEAD_DIMS = (64, 128)  # what the fused kernels are written for (register tiles of 64 columns)
BC = 64  # keys per tile of both fused kernels
F32_ROWS = 128  # query rows per block of attn_fwd_f32
F32_THREADS = 256
LOG2E = 1.4426950408889634
# S = 1001: not a multiple of the 64-key tile or the 128-row block, and odd (the softmax stage's scalar path);
# three heads so a head offset is exercised.
TEST_PARAMS = {"S": 1001, "d": 64, "batch_heads": 3}


def shape(p):
    return (p["batch_heads"], p["S"], p["d"])


def inputs(p, dtype, rng):
    """Q, K normal (scores q·k/sqrt(d) about N(0, 1), so the softmax is neither flat nor one-hot), V in [-1, 1)."""
    s = shape(p)
    return {"q": normal(rng, s, 0.0, 1.0, dtype), "k": normal(rng, s, 0.0, 1.0, dtype),
            "v": uniform(rng, s, -1.0, 1.0, dtype)}


def outputs(p, dtype):
    return {"o": (shape(p), dtype)}


def attention64(q, k, v, causal=False):
    """float64 attention, one head per task on the host cores; causal masks key j > query i."""
    heads, S, d = q.shape
    out = np.empty(q.shape, np.float64)
    upper = np.triu(np.ones((S, S), dtype=bool), 1) if causal else None

    def run(h0, h1):
        for h in range(h0, h1):
            s = (q[h].astype(np.float64) @ k[h].astype(np.float64).T) / math.sqrt(d)
            if upper is not None:
                s[upper] = -np.inf
            s -= s.max(axis=1, keepdims=True)
            np.exp(s, out=s)
            out[h] = (s @ v[h].astype(np.float64)) / s.sum(axis=1, keepdims=True)

    blocks(run, heads, 1)
    return out


def reference(p, q, k, v):
    return {"o": attention64(q, k, v, bool(p.get("causal", 0)))}


def check_params(p, descriptor, fused=True):
    """InputError naming the descriptor file and parameter when the kernels cannot run these parameters."""
    where = f"{descriptor}: params"
    if fused and p["d"] not in HEAD_DIMS:
        raise InputError(f"{where}.d: the fused kernels are written for d = 64 or 128, got {p['d']}")
    if p.get("causal", 0) not in (0, 1):
        raise InputError(f"{where}.causal: must be 0 or 1, got {p['causal']}")
    if p["S"] < 1 or p["batch_heads"] < 1 or p["batch_heads"] > 65535:
        raise InputError(f"{where}: need S >= 1 and 1 <= batch_heads <= 65535, got S={p['S']}, "
                         f"batch_heads={p['batch_heads']}")


def f32_options(d, min_blocks=None):
    """NVRTC options of attn_fwd_f32: two blocks of 256 threads per SM at d = 64 (128 registers), one at d = 128."""
    if min_blocks is None:
        min_blocks = 2 if d == 64 else 1
    return (f"-DHEAD_DIM={d}", f"-DF32_MIN_BLOCKS={min_blocks}")


def f32_launcher(module, p):
    """run(q, k, v, o) of attn_fwd_f32 from a module compiled with f32_options."""
    S, d, heads, causal = p["S"], p["d"], p["batch_heads"], int(p.get("causal", 0))
    kernel = module.get_function("attn_fwd_f32")
    smem = 4 * (F32_ROWS * (d + 4) + BC * (d + 4) + BC * d + F32_ROWS * (BC + 4))  # Q, K, V, P tiles
    kernel.max_dynamic_shared_size_bytes = smem
    grid, block = (-(-S // F32_ROWS), heads), (F32_THREADS,)
    args = (np.int32(S), np.float32(LOG2E / math.sqrt(d)), np.int32(causal))

    def run(q, k, v, o):
        kernel(grid, block, (q, k, v, o) + args, shared_mem=smem)
    return run


def bf16_shape(d):
    """(warps, row tiles of 16 per warp) of attn_fwd_bf16: 4 x 32 rows at d = 64 (254 registers, no spill);
    8 x 16 at d = 128, where 32 rows a warp would spill."""
    return (4, 2) if d == 64 else (8, 1)


def bf16_options(d, warps=None, row_tiles=None):
    """NVRTC options of attn_fwd_bf16: `warps` warps of 16 * row_tiles query rows each (default bf16_shape)."""
    dw, dr = bf16_shape(d)
    return (f"-DHEAD_DIM={d}", f"-DBF_WARPS={warps or dw}", f"-DBF_MT={row_tiles or dr}")


def bf16_launcher(module, p, warps=None, row_tiles=None):
    """run(q, k, v, o) of attn_fwd_bf16 from a module compiled with bf16_options(d, warps, row_tiles)."""
    S, d, heads, causal = p["S"], p["d"], p["batch_heads"], int(p.get("causal", 0))
    dw, dr = bf16_shape(d)
    warps, row_tiles = warps or dw, row_tiles or dr
    kernel = module.get_function("attn_fwd_bf16")
    smem = 4 * BC * (d + 8) * 2  # K and V, double-buffered, rows padded by 8 bf16
    if smem > 48 * 1024:
        kernel.max_dynamic_shared_size_bytes = smem
    rows = 16 * row_tiles * warps
    grid, block = (-(-S // rows), heads), (32 * warps,)
    args = (np.int32(S), np.float32(LOG2E / math.sqrt(d)), np.int32(causal))

    def run(q, k, v, o):
        kernel(grid, block, (q, k, v, o) + args, shared_mem=smem)
    return run
