"""Shared by the stencil and convolution kernels of stencil.cu (stencil5_naive/_reuse, conv3x3_naive/_reuse): the
launchers (one output per thread for the naive kernels, column streaming for the reuse kernels) and the random grid
both operations read. Each operation's inputs, reference, tolerance and test size are its family's (_stencil5.py,
_conv3x3.py)."""
import numpy as np

from roofline.kernelapi import uniform

NAIVE_ROWS = 8    # rows of output per block of the naive kernels: one output per thread
# Rows of output one block of the streaming kernels walks down. Measured on an H200 at N = 16384 (2026-11-30,
# benchmarks/kernel_variants.py): four columns per thread, 16 rows 3.79 TB/s, 32 rows 3.75, 128 rows 3.66; one
# column per thread (any N), 64 rows 3.31 TB/s. Fewer rows: more blocks in flight, at 2 halo rows (L2 hits) per band.
STREAM4_ROWS = 16
STREAM_ROWS = 64


def naive_launcher(module, op, n):
    """launch(*arrays): the naive `op` kernel ("stencil5" or "conv3x3") of the compiled stencil.cu `module` on the
    N x N grid with arguments (*arrays, int32 n), one output per thread in blocks of 32 x NAIVE_ROWS."""
    kernel = module.get_function(f"{op}_naive")
    block = (32, NAIVE_ROWS)
    grid = ((n + 31) // 32, (n + NAIVE_ROWS - 1) // NAIVE_ROWS)

    def launch(*arrays):
        kernel(grid, block, arrays + (np.int32(n),))
    return launch


def stream_launcher(module, op, n, rows=None, wide=None):
    """launch(*arrays): the streaming `op` kernel of the compiled stencil.cu `module` with arguments (*arrays,
    int32 n, int32 rows): four columns per thread (16-byte loads) when every row starts 16-byte aligned
    (N % 4 == 0), one column per thread otherwise; 128 threads per block. `rows` and `wide` override the shipped
    choice (benchmarks/kernel_variants.py compares them); wide needs N % 4 == 0."""
    wide = n % 4 == 0 if wide is None else wide
    kernel = module.get_function(f"{op}_stream4" if wide else f"{op}_stream")
    rows = rows or (STREAM4_ROWS if wide else STREAM_ROWS)
    columns = 512 if wide else 128
    grid = ((n + columns - 1) // columns, (n + rows - 1) // rows)
    extra = (np.int32(n), np.int32(rows))

    def launch(*arrays):
        kernel(grid, (128,), arrays + extra)
    return launch


def random_grid(p, dtype, rng):
    """The N x N input grid, values in [0.5, 1.5)."""
    return uniform(rng, (p["n"], p["n"]), 0.5, 1.5, dtype)


def outputs(p, dtype):
    return {"y": ((p["n"], p["n"]), dtype)}
