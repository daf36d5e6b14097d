"""The family of gemv_batch1 and gemv_batch16 (their descriptors name it, `family: _gemv.py`, and no variant file):
the skinny GEMM of LLM decode y[b, :] = W x[b, :] with a square float32 W (gemv.cu). Inputs, outputs, reference,
tolerance and the launcher, which picks its kernel by p["batch"]; each descriptor gives its test batch."""
import numpy as np

from roofline.kernelapi import sibling

_MM = sibling(__file__, "_matmul.py")

INTERFACE = 1
# x is scaled by 1/sqrt(N) so |y| stays about 0.3 for any N and one tolerance fits every size.
TOLERANCE = {"rtol": 1e-4, "atol": 1e-5}
# batch -> (kernel in gemv.cu, rows per warp); a block has 4 warps (GW). Batch 16 runs on the tensor cores
# (3xTF32, gemv_b16_xs_4_4: 4 tiles of 8 rows a warp, 4 steps of 16 k loaded ahead, x staged in shared memory,
# issue 13); the earlier gemv_b16_tc_NT_U (x reloaded per warp) and the CUDA-core gemv_b16 (8 rows a warp) stay in
# gemv.cu for benchmarks/kernel_variants.py and benchmarks/gemv16_variants.py to compare.
KERNELS = {1: ("gemv_b1", 8), 2: ("gemv_b2", 8), 4: ("gemv_b4", 8), 8: ("gemv_b8", 8), 16: ("gemv_b16_xs_4_4", 32)}
# target blocks per SM of the K split, by batch: gemv_b16_xs_4_4 was fastest with 8 (9 K slices at n = 16384:
# 282.8 us against 326.3 us with 4, docs/measurements/h200-2026-11-30-gemv16-variants.txt)
BLOCKS_PER_SM = {16: 8}
CHUNK = 128  # CH in gemv.cu


def inputs(p, dtype, rng):
    n, b = p["n"], p["batch"]
    return {"w": _MM.signed(rng, (n, n)).astype(dtype),
            "x": (_MM.signed(rng, (b, n)) / np.sqrt(n)).astype(dtype)}


def outputs(p, dtype):
    return {"y": ((p["batch"], p["n"]), dtype)}


def reference(p, w, x):
    n = p["n"]
    x64 = x.astype(np.float64)
    y = np.empty((p["batch"], n), np.float64)
    for r in range(0, n, 2048):  # row blocks of W keep the float64 copy small
        y[:, r:r + 2048] = x64 @ w[r:r + 2048].astype(np.float64).T
    return {"y": y}


def split_k(n, groups, target_blocks):
    """(slices, klen): K split into slices of whole chunks so that groups x slices reaches about target_blocks (the
    kernel keeps about 8 blocks per SM busy; benchmarks/kernel_variants.py tries other targets)."""
    slices = max(1, min(-(-target_blocks // groups), n // (2 * CHUNK)))
    klen = -(-(-(-n // slices)) // CHUNK) * CHUNK
    return -(-n // klen), klen


def cupy(p, ctx):
    n, batch = p["n"], p["batch"]
    if batch not in KERNELS:
        raise ValueError(f"gemv.cu has kernels for batch {sorted(KERNELS)}, not {batch}")
    name, rows_per_warp = KERNELS[batch]
    per_sm = BLOCKS_PER_SM.get(batch, 8)
    run, _ = launcher(ctx.module("gemv.cu"), name, rows_per_warp, n, batch,
                      per_sm * ctx.device.get("sm_count", 132), ctx.temp)
    return run


def launcher(module, name, rows_per_warp, n, batch, target_blocks, temp):
    """(run(w, x, y), slices): gemv.cu's `name` with K split for about target_blocks blocks, and gemv_reduce adding
    the slices' partial sums when there is more than one. temp(shape, dtype) gives the partial-sum buffer."""
    kernel, reduce_ = module.get_function(name), module.get_function("gemv_reduce")
    groups = -(-n // (4 * rows_per_warp))
    slices, klen = split_k(n, groups, target_blocks)
    part = temp((slices, batch, n), np.float32) if slices > 1 else None
    args = (np.int32(n), np.int32(klen), np.int32(n % 4 == 0))
    count = batch * n

    def run(w, x, y):
        if part is None:
            kernel((groups, 1), (128,), (w, x, y) + args)
        else:
            kernel((groups, slices), (128,), (w, x, part) + args)
            reduce_(((count + 255) // 256,), (256,), (part, y, np.int64(count), np.int32(slices)))
    return run, slices
