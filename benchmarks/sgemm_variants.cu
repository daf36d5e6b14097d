// FP32 SGEMM designs for issue 13's matmul_tiled row, side by side (benchmarks/sgemm_variants.py builds, checks and
// times them against cuBLAS in one run). C = A B for square N x N row-major float32 matrices, FFMA on the CUDA cores
// only (no TF32), any N: edges are zero-filled on load and masked on store, as in kernels/matmul.cu.
//
// Every variant is one instantiation of sgemm<BK, STAGES, WM, GROUP>: a 128 x 128 tile of C per block of 256
// threads, 8 x 8 outputs per thread (2 x 2 sub-tiles of 4 x 4, so each fragment read is one LDS.128), and
//   BK      the K-depth of one shared-memory stage (8, 16 or 32);
//   STAGES  how many stages are in flight: tile kt+STAGES-1 is copied by cp.async (no registers held, no
//           thread waits for it) while tile kt is multiplied, one barrier per tile;
//   WM      the thread layout: 0 = the shipped kernel's (thread (tx, ty) of 16 x 16 owns rows ty*4 and 64+ty*4,
//           columns tx*4 and 64+tx*4: a warp spans all 128 columns); 64 or 32 = warp tiling, each warp owning a
//           WM x (2048/WM) sub-tile (64 x 32 or 32 x 64), so a warp reads fewer distinct shared-memory words;
//   GROUP   0 = blocks in row-major tile order (the shipped order); G > 0 = G block rows at a time walk the block
//           columns, so the blocks resident together share A and B panels in L2 (Triton's grouped order).
// A is stored transposed in shared memory (as[k][m], rows padded by 4 floats) so a thread's 4 consecutive rows at
// one k are one LDS.128; it is copied with 4-byte cp.async (a warp covers 8 k x 4 rows: 4 full 32-byte sectors
// from global memory, 32 distinct banks in shared memory). B is copied with 16-byte cp.async when N % 4 == 0.

#define BM 128
#define BN 128
#define NT 256
#define APAD 4

#include "cp_async.cuh"  // kernels/cp_async.cuh, expanded by sgemm_variants.py

// Block (bm, bn) of the grid: row-major tile order (GROUP 0) or GROUP block rows at a time down the block columns.
template <int GROUP>
__device__ __forceinline__ void block_tile(int n, int& m0, int& n0) {
    const int tiles = (n + BM - 1) / BM;
    if constexpr (GROUP == 0) {
        m0 = blockIdx.x / tiles * BM;
        n0 = blockIdx.x % tiles * BN;
    } else {
        const int per_group = GROUP * tiles, first = (blockIdx.x / per_group) * GROUP;
        const int rows = min(tiles - first, GROUP), in_group = blockIdx.x % per_group;
        m0 = (first + in_group % rows) * BM;
        n0 = in_group / rows * BN;
    }
}

// INTERIOR: the whole 128 x 128 tile is inside C and N % 4 == 0, so no copy past tile 0 and no store needs a
// check (the fast path, every block at N = 4096). Otherwise every copy is predicated and a masked-off copy is
// given a valid address (the matrix's base) with source size 0; VEC says whether B rows may be copied 16 bytes
// at a time (N % 4 == 0).
template <int BK, int STAGES, int WM, bool INTERIOR, bool VEC>
__device__ __forceinline__ void sgemm(const float* __restrict__ a, const float* __restrict__ b,
                                      float* __restrict__ c, int n, int m0, int n0) {
    extern __shared__ __align__(16) float smem[];
    constexpr int LDA = BM + APAD;       // floats per k-row of the transposed A tile
    constexpr int A_STAGE = BK * LDA, B_STAGE = BK * BN;
    float* as = smem;
    float* bs = smem + STAGES * A_STAGE;
    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;

    int r0, c0;  // this thread's first row and column in the tile; the second ones are r0 + RH, c0 + CH
    constexpr int RH = WM == 0 ? 64 : WM / 2;
    constexpr int CH = WM == 0 ? 64 : 1024 / (WM == 0 ? 1 : WM);
    if constexpr (WM == 0) {
        r0 = (tid / 16) * 4;
        c0 = (tid % 16) * 4;
    } else {
        constexpr int WN = 2048 / WM, WARP_COLS = BN / WN, LANE_COLS = WN / 8;
        r0 = (warp / WARP_COLS) * WM + (lane / LANE_COLS) * 4;
        c0 = (warp % WARP_COLS) * WN + (lane % LANE_COLS) * 4;
    }

    // K is walked "residue first" (as CUTLASS does): tile kt covers k in [kt*BK - kofs, +BK) with kofs =
    // ktiles*BK - n, so only tile 0 can hold k out of range (k < 0, zero-filled) and the main loop checks no k.
    const int ktiles = (n + BK - 1) / BK, kofs = ktiles * BK - n;
    // A copy: instruction (i, h) moves A[m0 + i*32 + arow][k0 + h*8 + ak] to as[h*8 + ak][i*32 + arow].
    const int arow = warp * 4 + lane / 8, ak = lane % 8;
    bool a_ok[4];
#pragma unroll
    for (int i = 0; i < 4; ++i) a_ok[i] = m0 + i * 32 + arow < n;
    const long long a_row_step = 32LL * n;
    const float* a_src = a + (long long)(m0 + arow) * n + ak - kofs;
    const unsigned a_dst = smem_addr(as + ak * LDA + arow);
    // B copy: instruction j moves B[k0 + j*8 + warp][n0 + lane*4 .. +3] to bs[j*8 + warp][lane*4 ..].
    const int bcol = n0 + lane * 4;
    const float* b_src = b + (long long)(warp - kofs) * n + bcol;
    const unsigned b_dst = smem_addr(bs + warp * BN + lane * 4);
    const long long b_tile_step = (long long)BK * n;

    auto load = [&](int stage, int kt, bool first) {
        const int k0 = kt * BK - kofs;
        const float* ap = a_src + kt * BK;
        const float* bp = b_src + kt * b_tile_step;
#pragma unroll
        for (int i = 0; i < 4; ++i)
#pragma unroll
            for (int h = 0; h < BK / 8; ++h) {
                const unsigned dst = a_dst + 4u * (stage * A_STAGE + h * 8 * LDA + i * 32);
                const float* src = ap + i * a_row_step + h * 8;
                const int k = k0 + h * 8 + ak;
                if (INTERIOR && !first) {
                    cp_async4(dst, src);
                } else {
                    const bool ok = (INTERIOR || a_ok[i]) && k >= 0;
                    cp_async4_zfill(dst, ok ? src : a, ok);
                }
            }
#pragma unroll
        for (int j = 0; j < BK / 8; ++j) {
            const unsigned dst = b_dst + 4u * (stage * B_STAGE + j * 8 * BN);
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
    };

    float acc[8][8];
#pragma unroll
    for (int i = 0; i < 8; ++i)
#pragma unroll
        for (int j = 0; j < 8; ++j) acc[i][j] = 0.0f;

#pragma unroll
    for (int s = 0; s < STAGES - 1; ++s) {
        if (s < ktiles) load(s, s, s == 0);
        cp_async_commit();
    }
    int read = 0, write = STAGES - 1;
    for (int kt = 0; kt < ktiles; ++kt) {
        cp_async_wait<STAGES - 2>();
        __syncthreads();  // tile kt is in; every thread is done with the stage that `write` names
        if (kt + STAGES - 1 < ktiles) load(write, kt + STAGES - 1, false);
        cp_async_commit();
        const float* at = as + read * A_STAGE;
        const float* bt = bs + read * B_STAGE;
#pragma unroll
        for (int kk = 0; kk < BK; ++kk) {
            float av[8], bv[8];
            *reinterpret_cast<float4*>(av) = *reinterpret_cast<const float4*>(at + kk * LDA + r0);
            *reinterpret_cast<float4*>(av + 4) = *reinterpret_cast<const float4*>(at + kk * LDA + r0 + RH);
            *reinterpret_cast<float4*>(bv) = *reinterpret_cast<const float4*>(bt + kk * BN + c0);
            *reinterpret_cast<float4*>(bv + 4) = *reinterpret_cast<const float4*>(bt + kk * BN + c0 + CH);
#pragma unroll
            for (int i = 0; i < 8; ++i)
#pragma unroll
                for (int j = 0; j < 8; ++j) acc[i][j] = fmaf(av[i], bv[j], acc[i][j]);
        }
        read = read == STAGES - 1 ? 0 : read + 1;
        write = write == STAGES - 1 ? 0 : write + 1;
    }
    cp_async_wait<0>();

#pragma unroll
    for (int i = 0; i < 8; ++i) {
        const int row = m0 + r0 + (i < 4 ? i : RH + i - 4);
        if (!INTERIOR && row >= n) continue;
#pragma unroll
        for (int h = 0; h < 2; ++h) {
            const int col = n0 + c0 + h * CH;
            float* p = c + (long long)row * n + col;
            if (INTERIOR) {
                *reinterpret_cast<float4*>(p) =
                    make_float4(acc[i][h * 4], acc[i][h * 4 + 1], acc[i][h * 4 + 2], acc[i][h * 4 + 3]);
            } else if (VEC && col < n) {
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

// One extern "C" entry point per variant: sg_bk{BK}_s{STAGES}_w{WM}_g{GROUP}. The launcher (sgemm_variants.py)
// reads BK and STAGES back from the name for the dynamic shared-memory size: STAGES * BK * (2*128 + 4) * 4 bytes.
#define SGEMM_VARIANT(BK, ST, WM, G)                                                                          \
    extern "C" __global__ void __launch_bounds__(NT, 2) sg_bk##BK##_s##ST##_w##WM##_g##G(                     \
        const float* __restrict__ a, const float* __restrict__ b, float* __restrict__ c, int n, int vec) {    \
        int m0, n0;                                                                                           \
        block_tile<G>(n, m0, n0);                                                                             \
        if (vec && m0 + BM <= n && n0 + BN <= n) sgemm<BK, ST, WM, true, true>(a, b, c, n, m0, n0);          \
        else if (vec) sgemm<BK, ST, WM, false, true>(a, b, c, n, m0, n0);                                     \
        else sgemm<BK, ST, WM, false, false>(a, b, c, n, m0, n0);                                                                \
    }

SGEMM_VARIANT(8, 2, 0, 0)    // the shipped design, with cp.async in place of the register prefetch
SGEMM_VARIANT(8, 2, 0, 8)    // ... and grouped block order
SGEMM_VARIANT(8, 3, 64, 8)   // the CUTLASS SIMT shape: 128x128x8, 3 stages, 2x4 warps of 64x32
SGEMM_VARIANT(8, 4, 64, 8)
SGEMM_VARIANT(16, 2, 64, 8)
SGEMM_VARIANT(16, 3, 64, 8)
SGEMM_VARIANT(16, 3, 64, 0)
SGEMM_VARIANT(16, 3, 32, 8)
SGEMM_VARIANT(16, 3, 0, 8)
SGEMM_VARIANT(16, 4, 64, 8)
SGEMM_VARIANT(16, 3, 64, 16)
SGEMM_VARIANT(32, 2, 64, 8)
SGEMM_VARIANT(32, 3, 64, 8)
