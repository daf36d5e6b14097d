"""Fused row softmax, one block per row, one pass over DRAM. When cols % 4 == 0 and the row fits in registers
(up to 32,768 floats) each thread keeps its float4 of the row in registers through both reductions
(norm.cu: softmax_reg_T_V); otherwise the row is cached in shared memory (softmax_fused). Inputs, reference,
tolerance and test size come from the softmax family (_softmax.py, named by the descriptor)."""
import numpy as np

from roofline.kernelapi import sibling

_ROWS = sibling(__file__, "_rows_ref.py")


def cupy(p, ctx):
    rows, cols = p["rows"], p["cols"]
    mod = ctx.module("norm.cu")
    reg = _ROWS.reg_config(cols)
    if reg is not None:
        kernel = mod.get_function(f"softmax_reg_{reg[0]}_{reg[1]}")
        args = (np.int32(cols),)

        def run_reg(x, y):
            kernel((rows,), (reg[0],), (x, y) + args)
        return run_reg
    kernel = mod.get_function("softmax_fused")
    grid, block, vec = _ROWS.row_launch(rows, cols)
    smem, cached = _ROWS.shared_row_cache(ctx, kernel, cols)
    args = (np.int32(cols), np.int32(vec), np.int32(cached))

    def run(x, y):
        kernel(grid, block, (x, y) + args, shared_mem=smem)
    return run
