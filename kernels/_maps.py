"""Shared by the float32 map kernels of maps.cu (copy, scale, relu, gelu_*, triad, vector_add_float4, fma_relu*,
bias_add_relu*): the launch shape of their float4 kernels and the nonzero random inputs they draw."""
import numpy as np

from roofline.kernelapi import uniform

THREADS = 128   # 128 measured best on an H200 (vs 256, 512) for these streaming kernels
VPT = 2   # float4 per thread; must match VPT in maps.cu


def blocks(n):
    """Blocks for n elements at VPT float4 per thread (at least one)."""
    return max(1, -(-n // (4 * VPT * THREADS)))


def launcher(ctx, function_name, n, *scalars):
    """launch(*arrays): maps.cu's `function_name` over n elements, with arguments (*arrays, *scalars, int64 n),
    on blocks(n) blocks of THREADS threads."""
    kernel = ctx.module("maps.cu").get_function(function_name)
    grid, block = (blocks(n),), (THREADS,)

    def launch(*arrays):
        kernel(grid, block, arrays + scalars + (np.int64(n),))
    return launch


def nonzero(rng, shape, low, high, dtype):
    """uniform(rng, shape, low, high, dtype) with any exact zero replaced by 1."""
    a = uniform(rng, shape, low, high, dtype)
    a[a == 0] = 1
    return a
