"""C = A B, square N x N float32 (tiled kernel in matmul.cu): the launcher. Inputs, reference,
tolerance and test size come from the matmul family (_matmul.py, named by the descriptor)."""
import numpy as np


def cupy(p, ctx):
    n = p["n"]
    kernel = ctx.module("matmul.cu").get_function("matmul_tiled")
    tiles = (n + 127) // 128  # 128 x 128 tile of C per block (matmul.cu), numbered 1-D in groups of 8 block rows
    args = (np.int32(n), np.int32(n % 4 == 0))

    def run(a, b, c):
        kernel((tiles * tiles,), (256,), (a, b, c) + args)
    return run
