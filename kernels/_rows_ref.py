"""Shared by the softmax and layer-norm kernels: float64 NumPy references (row blocks in parallel on the host
cores) and the launch rules of their row kernels in norm.cu (block size, shared-memory row cache)."""
import numpy as np

from roofline.kernelapi import blocks

ROWS = 256


def softmax(x):
    y = np.empty(x.shape, np.float64)

    def rows(r, stop):
        t = x[r:stop].astype(np.float64)
        t = np.exp(t - t.max(axis=1, keepdims=True))
        y[r:stop] = t / t.sum(axis=1, keepdims=True)

    blocks(rows, x.shape[0], ROWS)
    return y


def layernorm(x, gamma, beta, eps):
    y = np.empty(x.shape, np.float64)
    g, b = gamma.astype(np.float64), beta.astype(np.float64)

    def rows(r, stop):
        t = x[r:stop].astype(np.float64)
        t -= t.mean(axis=1, keepdims=True)
        y[r:stop] = t / np.sqrt((t * t).mean(axis=1, keepdims=True) + eps) * g + b

    blocks(rows, x.shape[0], ROWS)
    return y


def threads(n):
    """About four items per thread, a whole number of warps, 64..1024 threads."""
    per_thread = -(-n // 4)
    return int(min(1024, max(64, -(-per_thread // 32) * 32)))


def row_launch(rows, cols):
    """(grid, block, vec) of the one-block-per-row kernels in norm.cu: a block a row, float4 items when
    cols % 4 == 0 (vec), threads() of the items."""
    vec = cols % 4 == 0
    return (rows,), (threads(cols // 4 if vec else cols),), vec


def shared_row_cache(ctx, kernel, cols):
    """(dynamic shared-memory bytes, cached) for a fused row kernel that caches its row of `cols` floats in shared
    memory when the device allows it (1 KiB kept for the kernel's own reductions); otherwise 0 bytes and uncached.
    Above the default 48 KiB the kernel's opt-in limit is raised to the bytes it needs."""
    smem = cols * 4
    try:
        limit = ctx.cupy.cuda.Device().attributes["MaxSharedMemoryPerBlockOptin"] - 1024
    except Exception:
        limit = 48 * 1024 - 1024
    cached = smem <= limit
    if not cached:
        smem = 0
    elif smem > 48 * 1024 - 1024:
        kernel.max_dynamic_shared_size_bytes = smem
    return smem, cached
