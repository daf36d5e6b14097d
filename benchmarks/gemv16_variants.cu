// Issue 13, gemv_batch16: designs of the 3xTF32 tensor-core batch-16 GEMV beside the shipped gemv_b16_tc_NT_U
// (kernels/gemv.cu, whose helpers to_tf32, split_tf32, mma_tf32 and load_k4 this file reuses by #include).
// benchmarks/gemv16_variants.py verifies and times them on the GPU.
//
// Why a new design: on the H200 the shipped kernel (166 registers, 3 blocks of 4 warps an SM) issues about 1,300
// instructions per warp and group of U = 4 steps for 96 MMAs (SASS of sm_90): every warp reloads x from L1/L2 and
// splits it, cvt.rna.tf32 costs several instructions, and every W load sits behind its own boundary branch. With 3
// warps a scheduler that instruction stream, not DRAM, set the pace (ncu: 53 % of DRAM peak).
//
// v16_xs_NT_U_B and v16_xr_NT_U_B (x staged in shared memory):
//  - The block's 16 vectors for the next group of U steps (16 U values of k) are loaded into registers one group
//    ahead, split once per block into TF32 hi and lo, and stored in shared memory in MMA A-fragment order
//    (xs[buf][step][part][lane], part = hi j0, hi j1, lo j0, lo j1, one uint4 a lane): a warp reads its A fragments
//    with four conflict-free 16-byte loads a step and holds no x between steps. Two buffers, one barrier a group.
//  - W is split by masking (hi = the top 19 bits, lo = v - hi, exact; the MMA reads lo's top TF32 bits): two
//    instructions an element instead of cvt.rna's sequence. The product error stays about 2^-21 of |w x|.
//  - The W loads of a group are issued before the barrier, so they are in flight while the block syncs; in blocks
//    and K ranges wholly inside the matrix (all but the edges) they are plain 16-byte streaming loads, no branches.
//  - B = minimum blocks an SM for __launch_bounds__, which caps registers (65536 / (128 B)).
//  Each group's MMAs go into a zeroed `part` tile added to `acc` in registers, as in the shipped kernel (a whole
//  K slice in one MMA accumulator exceeded the tolerance). Same arguments and grid as the shipped kernel, so
//  kernels/_gemv.py's launcher runs it unchanged (klen a multiple of 128, a multiple of 16 U for U <= 8).
#include "gemv.cu"

// split_mask and gemv16_xs_body are in kernels/gemv.cu (the shipped gemv_b16_xs_4_4 is v16_xs_4_4_4).
#define V16_XS(NAME, NT, U, B, LOMASK) \
    extern "C" __global__ void __launch_bounds__(128, B) NAME##_##NT##_##U##_##B( \
        const float* __restrict__ w, const float* __restrict__ x, float* __restrict__ out, int n, int klen, int vec) { \
        __shared__ __align__(16) uint4 xs[2][U][4][32]; \
        const int kbeg = blockIdx.y * klen, kend = min(n, kbeg + klen); \
        if (vec && (blockIdx.x + 1) * 32 * NT <= n && (kend - kbeg) % (16 * U) == 0) \
            gemv16_xs_body<NT, U, LOMASK, false>(w, x, out, n, klen, vec, xs); \
        else \
            gemv16_xs_body<NT, U, LOMASK, true>(w, x, out, n, klen, vec, xs); \
    }
// v16_xs: lo masked to TF32 (every operand a TF32 bit pattern); v16_xr: lo's raw FP32 bits
V16_XS(v16_xs, 4, 4, 4, true)
V16_XS(v16_xs, 4, 4, 3, true)
V16_XS(v16_xs, 4, 2, 4, true)
V16_XS(v16_xs, 2, 8, 4, true)
V16_XS(v16_xs, 2, 4, 6, true)
V16_XS(v16_xs, 8, 2, 3, true)
V16_XS(v16_xr, 4, 4, 4, false)
V16_XS(v16_xr, 2, 4, 6, false)
