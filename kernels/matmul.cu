// C = A B for square N x N float32 matrices, row-major.

// Naive: one output per thread, both operands straight from global memory. Block (32, 8): a warp
// shares one row of A (a broadcast) and reads 32 consecutive elements of a row of B (coalesced).
extern "C" __global__ void matmul_naive(const float* __restrict__ a, const float* __restrict__ b,
                                        float* __restrict__ c, int n) {
    const int j = blockIdx.x * blockDim.x + threadIdx.x, i = blockIdx.y * blockDim.y + threadIdx.y;
    if (i >= n || j >= n) return;
    const float* ar = a + (long long)i * n;
    float s = 0.0f;
    for (int k = 0; k < n; ++k) s += ar[k] * b[(long long)k * n + j];
    c[(long long)i * n + j] = s;
}

// Tiled SGEMM (benchmarks/sgemm_variants.cu's sg_bk16_s2_w64_g8, here with static shared memory). H200 2026-11-30,
// N = 4096, same run as cuBLAS FP32: this kernel 2856 us, 0.940x cuBLAS; the variant 0.916x; the previous
// register-prefetch 128 x 128 x 8 design 0.823x (docs/measurements/h200-2026-11-30-sgemm-variants.txt). A 128 x 128 tile of C per block of
// 256 threads, 8 x 8 outputs per thread in registers, FFMA on the CUDA cores only.
// - K in steps of 16 through two shared-memory stages filled by cp.async: tile kt+1 is in flight while tile kt is
//   multiplied, no registers hold it and no thread waits for it; one barrier per 16 k (the old design: per 8).
// - Warp tiling: the 8 warps are 2 x 4 sub-tiles of 64 x 32; a thread owns rows {r0..r0+3, r0+32..} and columns
//   {c0..c0+3, c0+16..}, so every fragment read is one LDS.128 and a warp reads 8 + 4 distinct float4 per k.
// - A is stored transposed (as[k][m], rows padded by 4 floats): 4-byte cp.async, a warp covering 8 k x 4 rows
//   (four full 32-byte sectors from global memory, 32 distinct banks in shared memory). B: 16-byte cp.async.
// - K is walked residue first: tile kt covers k in [kt*16 - kofs, +16) with kofs = tiles*16 - n, so only tile 0
//   can hold k out of range (k < 0, zero-filled by a source size of 0) and the main loop checks no k.
// - Interior blocks (the whole tile inside C, n % 4 == 0: every block at N = 4096) copy and store unpredicated;
//   edge blocks predicate every copy (zero fill, the masked copy pointed at the matrix base) and store (masked;
//   float4 only when vec = n % 4 == 0).
// - Blocks are numbered in groups of 8 block rows walking the block columns (grid: tiles^2 blocks, 1-D).
#define BM 128
#define BN 128
#define BK 16
#define APAD 4   // the transposed A tile's rows are padded so its 4-byte copies land in distinct banks
#define GROUP 8

#include "cp_async.cuh"

template <bool INTERIOR, bool VEC>
__device__ __forceinline__ void matmul_tile(const float* __restrict__ a, const float* __restrict__ b,
                                            float* __restrict__ c, int n, int m0, int n0,
                                            float (*as)[BK][BM + APAD], float (*bs)[BK][BN]) {
    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
    const int r0 = (warp / 4) * 64 + (lane / 4) * 4, c0 = (warp % 4) * 32 + (lane % 4) * 4;

    const int ktiles = (n + BK - 1) / BK, kofs = ktiles * BK - n;
    // A copy (i, h): A[m0 + i*32 + arow][k0 + h*8 + ak] -> as[.][h*8 + ak][i*32 + arow].
    const int arow = warp * 4 + lane / 8, ak = lane % 8;
    bool a_ok[4];
#pragma unroll
    for (int i = 0; i < 4; ++i) a_ok[i] = m0 + i * 32 + arow < n;
    const long long a_row_step = 32LL * n;
    const float* a_src = a + (long long)(m0 + arow) * n + ak - kofs;
    const unsigned a_dst = smem_addr(&as[0][ak][arow]);
    // B copy j: B[k0 + j*8 + warp][n0 + lane*4 .. +3] -> bs[.][j*8 + warp][lane*4 ..].
    const int bcol = n0 + lane * 4;
    const float* b_src = b + (long long)(warp - kofs) * n + bcol;
    const unsigned b_dst = smem_addr(&bs[0][warp][lane * 4]);
    constexpr unsigned A_STAGE = BK * (BM + APAD) * 4, B_STAGE = BK * BN * 4;  // bytes

    auto load = [&](int stage, int kt, bool first) {
        const int k0 = kt * BK - kofs;
        const float* ap = a_src + kt * BK;
        const float* bp = b_src + (long long)kt * BK * n;
#pragma unroll
        for (int i = 0; i < 4; ++i)
#pragma unroll
            for (int h = 0; h < BK / 8; ++h) {
                const unsigned dst = a_dst + stage * A_STAGE + 4u * (h * 8 * (BM + APAD) + i * 32);
                const float* src = ap + i * a_row_step + h * 8;
                if (INTERIOR && !first) {
                    cp_async4(dst, src);
                } else {
                    const bool ok = (INTERIOR || a_ok[i]) && k0 + h * 8 + ak >= 0;
                    cp_async4_zfill(dst, ok ? src : a, ok);
                }
            }
#pragma unroll
        for (int j = 0; j < BK / 8; ++j) {
            const unsigned dst = b_dst + stage * B_STAGE + 4u * (j * 8 * BN);
            const float* src = bp + (long long)j * 8 * n;
            const int k = k0 + j * 8 + warp;
            if (INTERIOR && !first) {
                cp_async16(dst, src);
            } else if (VEC) {
                const bool ok = k >= 0 && bcol < n;
                cp_async16_zfill(dst, ok ? src : b, ok);
            } else {
#pragma unroll
                for (int e = 0; e < 4; ++e) {
                    const bool ok = k >= 0 && bcol + e < n;
                    cp_async4_zfill(dst + 4u * e, ok ? src + e : b, ok);
                }
            }
        }
        cp_async_commit();
    };

    float acc[8][8];
#pragma unroll
    for (int i = 0; i < 8; ++i)
#pragma unroll
        for (int j = 0; j < 8; ++j) acc[i][j] = 0.0f;

    load(0, 0, true);
    for (int kt = 0; kt < ktiles; ++kt) {
        const int cur = kt & 1;
        cp_async_wait<0>();
        __syncthreads();  // tile kt is in, and every thread is done with the other stage (tile kt-1)
        if (kt + 1 < ktiles) load(cur ^ 1, kt + 1, false);
#pragma unroll
        for (int kk = 0; kk < BK; ++kk) {
            float av[8], bv[8];
            *reinterpret_cast<float4*>(av) = *reinterpret_cast<const float4*>(&as[cur][kk][r0]);
            *reinterpret_cast<float4*>(av + 4) = *reinterpret_cast<const float4*>(&as[cur][kk][r0 + 32]);
            *reinterpret_cast<float4*>(bv) = *reinterpret_cast<const float4*>(&bs[cur][kk][c0]);
            *reinterpret_cast<float4*>(bv + 4) = *reinterpret_cast<const float4*>(&bs[cur][kk][c0 + 16]);
#pragma unroll
            for (int i = 0; i < 8; ++i)
#pragma unroll
                for (int j = 0; j < 8; ++j) acc[i][j] = fmaf(av[i], bv[j], acc[i][j]);
        }
    }

#pragma unroll
    for (int i = 0; i < 8; ++i) {
        const int row = m0 + r0 + (i < 4 ? i : 28 + i);
        if (!INTERIOR && row >= n) continue;
#pragma unroll
        for (int h = 0; h < 2; ++h) {
            const int col = n0 + c0 + h * 16;
            float* p = c + (long long)row * n + col;
            if (INTERIOR || (VEC && col < n)) {
                *reinterpret_cast<float4*>(p) =
                    make_float4(acc[i][h * 4], acc[i][h * 4 + 1], acc[i][h * 4 + 2], acc[i][h * 4 + 3]);
            } else {
#pragma unroll
                for (int j = 0; j < 4; ++j)
                    if (col + j < n) p[j] = acc[i][h * 4 + j];
            }
        }
    }
}

// Launch: ((n+127)/128)^2 blocks (1-D) of 256 threads; vec = (n % 4 == 0).
extern "C" __global__ void __launch_bounds__(256, 2)
matmul_tiled(const float* __restrict__ a, const float* __restrict__ b, float* __restrict__ c, int n, int vec) {
    __shared__ __align__(16) float as[2][BK][BM + APAD];
    __shared__ __align__(16) float bs[2][BK][BN];
    const int tiles = (n + BM - 1) / BM;
    const int per_group = GROUP * tiles, first = blockIdx.x / per_group * GROUP;
    const int rows = min(tiles - first, GROUP), in_group = blockIdx.x % per_group;
    const int m0 = (first + in_group % rows) * BM, n0 = in_group / rows * BN;
    if (vec && m0 + BM <= n && n0 + BN <= n) matmul_tile<true, true>(a, b, c, n, m0, n0, as, bs);
    else if (vec) matmul_tile<false, true>(a, b, c, n, m0, n0, as, bs);
    else matmul_tile<false, false>(a, b, c, n, m0, n0, as, bs);
}
