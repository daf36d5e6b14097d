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

// hi = v with its low 13 mantissa bits cleared (a TF32 value), lo = v - hi (exact in FP32). LOMASK clears lo's low
// 13 bits too, so that both are TF32 bit patterns (truncated, an error under 2^-21 of |v|); without it the MMA is
// given lo's FP32 bits and reads its TF32 part itself (one instruction fewer an element; the PTX ISA does not
// promise what it does with the low bits, so verification decides).
template <bool LOMASK>
__device__ __forceinline__ void split_mask(float v, unsigned& hi, unsigned& lo) {
    hi = __float_as_uint(v) & 0xffffe000u;
    lo = __float_as_uint(v - __uint_as_float(hi));
    if (LOMASK) lo &= 0xffffe000u;
}

// EDGE: the block holds rows past n, or float4 loads are not aligned (n % 4), or its K range is not a whole number
// of groups; then every load is guarded. Without EDGE, loads are unguarded: separate code, so that the common case
// has no branch per load.
template <int NT, int U, bool LOMASK, bool EDGE>
__device__ __forceinline__ void v16_xs_body(const float* __restrict__ w, const float* __restrict__ x,
                                            float* __restrict__ out, int n, int klen, int vec,
                                            uint4 (&xs)[2][U][4][32]) {
    constexpr int PX = (U * 32 + 127) / 128;  // (step, lane) fragment slots a thread stages per group
    const int tid = threadIdx.x, lane = tid % 32, warp = tid / 32, g = lane / 4, q = lane % 4;
    const int row0 = (blockIdx.x * 4 + warp) * 8 * NT;
    const int kbeg = blockIdx.y * klen, kend = min(n, kbeg + klen);
    const float* wr[NT];
    bool rok[NT];
    float acc[NT][4];
#pragma unroll
    for (int t = 0; t < NT; ++t) {
        const int row = row0 + 8 * t + g;
        rok[t] = row < n;
        wr[t] = w + (long long)(rok[t] ? row : 0) * n;
        acc[t][0] = acc[t][1] = acc[t][2] = acc[t][3] = 0.0f;
    }

    // x[gl][k..k+3] and x[gl + 8][k..k+3] for each staged slot of the group at k0
    float4 xr[PX][2];
    auto load_x = [&](int k0) {
        const bool full = !EDGE || (vec && k0 + 16 * U <= kend);
#pragma unroll
        for (int i = 0; i < PX; ++i) {
            const int p = tid + 128 * i, l = p % 32, k = k0 + 16 * (p / 32) + 4 * (l % 4);
            const float* xa = x + (long long)(l / 4) * n;
            const float* xb = x + (long long)(l / 4 + 8) * n;
            if (p < U * 32 && full) {
                xr[i][0] = __ldg(reinterpret_cast<const float4*>(xa + k));
                xr[i][1] = __ldg(reinterpret_cast<const float4*>(xb + k));
            } else if (p < U * 32) {
                xr[i][0] = load_k4<false>(xa, k, kend, true, vec);
                xr[i][1] = load_k4<false>(xb, k, kend, true, vec);
            }
        }
    };
    auto store_x = [&](int buf) {
#pragma unroll
        for (int i = 0; i < PX; ++i) {
            const int p = tid + 128 * i;
            if (p < U * 32) {
                uint4 h0, h1, l0, l1;  // a0 = x[g][k0], a1 = x[g+8][k0], a2 = x[g][k1], a3 = x[g+8][k1]
                split_tf32(xr[i][0].x, h0.x, l0.x); split_tf32(xr[i][1].x, h0.y, l0.y);
                split_tf32(xr[i][0].y, h0.z, l0.z); split_tf32(xr[i][1].y, h0.w, l0.w);
                split_tf32(xr[i][0].z, h1.x, l1.x); split_tf32(xr[i][1].z, h1.y, l1.y);
                split_tf32(xr[i][0].w, h1.z, l1.z); split_tf32(xr[i][1].w, h1.w, l1.w);
                const int s = p / 32, l = p % 32;
                xs[buf][s][0][l] = h0; xs[buf][s][1][l] = h1; xs[buf][s][2][l] = l0; xs[buf][s][3][l] = l1;
            }
        }
    };

    load_x(kbeg);
    int buf = 0;
    for (int k0 = kbeg; k0 < kend; k0 += 16 * U, buf ^= 1) {
        float4 wv[U][NT];  // the edge path loads each step's W just before its MMAs (fewer live registers)
        if (!EDGE) {
#pragma unroll
            for (int u = 0; u < U; ++u)
#pragma unroll
                for (int t = 0; t < NT; ++t)
                    wv[u][t] = __ldcs(reinterpret_cast<const float4*>(wr[t] + k0 + 16 * u + 4 * q));
        }
        store_x(buf);
        __syncthreads();
        if (k0 + 16 * U < kend) load_x(k0 + 16 * U);

        float part[NT][4];
#pragma unroll
        for (int t = 0; t < NT; ++t) part[t][0] = part[t][1] = part[t][2] = part[t][3] = 0.0f;
#pragma unroll
        for (int u = 0; u < U; ++u) {
            if (EDGE) {
#pragma unroll
                for (int t = 0; t < NT; ++t) wv[u][t] = load_k4<true>(wr[t], k0 + 16 * u + 4 * q, kend, rok[t], vec);
            }
#pragma unroll
            for (int j = 0; j < 2; ++j) {
                const uint4 ah = xs[buf][u][j][lane], al = xs[buf][u][2 + j][lane];
#pragma unroll
                for (int t = 0; t < NT; ++t) {
                    unsigned bh0, bl0, bh1, bl1;  // b0 = W[row][k0], b1 = W[row][k1]
                    split_mask<LOMASK>(j ? wv[u][t].z : wv[u][t].x, bh0, bl0);
                    split_mask<LOMASK>(j ? wv[u][t].w : wv[u][t].y, bh1, bl1);
                    mma_tf32(part[t], al.x, al.y, al.z, al.w, bh0, bh1);
                    mma_tf32(part[t], ah.x, ah.y, ah.z, ah.w, bl0, bl1);
                    mma_tf32(part[t], ah.x, ah.y, ah.z, ah.w, bh0, bh1);
                }
            }
        }
#pragma unroll
        for (int t = 0; t < NT; ++t) {
            acc[t][0] += part[t][0]; acc[t][1] += part[t][1]; acc[t][2] += part[t][2]; acc[t][3] += part[t][3];
        }
    }

    // c0, c1: vector g, rows 8t + 2q and + 1; c2, c3: vector g + 8, the same rows
    float* o = out + (long long)blockIdx.y * 16 * n;
#pragma unroll
    for (int t = 0; t < NT; ++t) {
        const int row = row0 + 8 * t + 2 * q;
#pragma unroll
        for (int h = 0; h < 2; ++h) {
            float* p = o + (long long)(g + 8 * h) * n + row;
            if (row < n) p[0] = acc[t][2 * h];
            if (row + 1 < n) p[1] = acc[t][2 * h + 1];
        }
    }
}

#define V16_XS(NAME, NT, U, B, LOMASK) \
    extern "C" __global__ void __launch_bounds__(128, B) NAME##_##NT##_##U##_##B( \
        const float* __restrict__ w, const float* __restrict__ x, float* __restrict__ out, int n, int klen, int vec) { \
        __shared__ __align__(16) uint4 xs[2][U][4][32]; \
        const int kbeg = blockIdx.y * klen, kend = min(n, kbeg + klen); \
        if (vec && (blockIdx.x + 1) * 32 * NT <= n && (kend - kbeg) % (16 * U) == 0) \
            v16_xs_body<NT, U, LOMASK, false>(w, x, out, n, klen, vec, xs); \
        else \
            v16_xs_body<NT, U, LOMASK, true>(w, x, out, n, klen, vec, xs); \
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
