"""C = A B, square N x N float32 (naive kernel in matmul.cu): the launcher. Inputs, reference,
tolerance and test size come from the matmul family (_matmul.py, named by the descriptor)."""
import numpy as np


def cupy(p, ctx):
    n = p["n"]
    kernel = ctx.module("matmul.cu").get_function("matmul_naive")
    grid, block = ((n + 31) // 32, (n + 7) // 8), (32, 8)

    def run(a, b, c):
        kernel(grid, block, (a, b, c, np.int32(n)))
    return run
