"""Shared by the softmax and layer-norm kernels: float64 NumPy references (row blocks in parallel on the host
cores) and the launch rules of their row kernels in norm.cu (block size, register-resident rows, shared-memory row
cache)."""
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


# (threads T, float4 per thread V) of the register-resident row kernels compiled in norm.cu (ROW_REG)
REG_CONFIGS = ((64, 1), (128, 1), (128, 2), (128, 4), (256, 2), (256, 4), (256, 8), (512, 4), (512, 8),
               (1024, 2), (1024, 4), (1024, 8))
PER_THREAD = 4   # float4 per thread preferred among equal fits (8192 columns: 512 threads x 4)


def reg_config(cols, per_thread=PER_THREAD):
    """(T, V) of the register-resident kernel for rows of `cols` floats: the smallest compiled T x V that holds the
    row, V nearest per_thread among equal fits; None when cols % 4 != 0 (rows not 16-byte aligned) or the row is
    longer than 1024 x 8 float4 (then the shared-memory kernel runs)."""
    n4 = cols // 4
    if cols % 4 or n4 == 0:
        return None
    fits = [c for c in REG_CONFIGS if c[0] * c[1] >= n4]
    if not fits:
        return None
    return min(fits, key=lambda c: (c[0] * c[1], abs(c[1] - per_thread)))
