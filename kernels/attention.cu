// Attention O = softmax(Q K^T / sqrt(d)) V, one head per blockIdx.y; Q, K, V, O are [heads][S][d] row-major.
//   attn_fwd_f32   fused, FP32 on the CUDA cores (FlashAttention manner: K/V tiles through shared memory,
//                  online softmax, S and P never leave the chip)
//   attn_fwd_bf16  fused, BF16 operands on the tensor cores (mma.sync m16n8k16, FP32 accumulation)
//   attn_row_softmax  the softmax stage of the materialised pipeline (the GEMMs are cuBLAS)
// Compile-time knobs (-D): HEAD_DIM (64 or 128); F32_MIN_BLOCKS; BF_WARPS and BF_MT (query rows per block
// = 16 * BF_MT * BF_WARPS). Softmax runs in base 2: scores are scaled by log2(e) / sqrt(d) and exp is ex2.approx.

#ifndef HEAD_DIM
#define HEAD_DIM 64
#endif
#ifndef F32_MIN_BLOCKS
#define F32_MIN_BLOCKS 2
#endif
#ifndef BF_WARPS
#define BF_WARPS 4
#endif
#ifndef BF_MT
#define BF_MT 2
#endif

#define D HEAD_DIM
#define BC 64  // keys per tile, both fused kernels
#define NEG_INF __int_as_float(0xff800000)

__device__ __forceinline__ float ex2(float x) {
    float y;
    asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
    return y;
}

__device__ __forceinline__ unsigned smem_addr(const void* p) {
    unsigned a;
    asm("{ .reg .u64 t; cvta.to.shared.u64 t, %1; cvt.u32.u64 %0, t; }" : "=r"(a) : "l"(p));
    return a;
}

// 16 bytes global -> shared without registers; valid == false writes 16 zero bytes (rows past S).
__device__ __forceinline__ void cp_async16(void* dst, const void* src, bool valid) {
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(smem_addr(dst)), "l"(src),
                 "r"(valid ? 16 : 0) : "memory");
}
__device__ __forceinline__ void cp_commit() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }
template <int N>
__device__ __forceinline__ void cp_wait() { asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory"); }

// ROWS rows of a [S][D] matrix of ELEM-byte elements, starting at row0, into shared memory with a row stride of
// STRIDE elements; rows at or past S are zero-filled, so masked keys multiply zeros, never stale NaNs.
template <int ROWS, int STRIDE, int ELEM, int THREADS>
__device__ __forceinline__ void load_rows(char* sm, const char* g, int row0, int S, int tid) {
    constexpr int CH = D * ELEM / 16;  // 16-byte chunks per row
    static_assert((ROWS * CH) % THREADS == 0, "tile chunks must divide evenly among the threads");
#pragma unroll
    for (int c = tid; c < ROWS * CH; c += THREADS) {
        const int r = c / CH, ch = c % CH, row = row0 + r;
        const bool ok = row < S;
        cp_async16(sm + (r * STRIDE) * ELEM + ch * 16, g + ((size_t)(ok ? row : 0) * D) * ELEM + ch * 16, ok);
    }
}

// ---------------------------------------------------------------------------------------------------------
// FP32 fused. 256 threads, 128 query rows x 64 keys per tile. Thread (ty, tx) = (tid / 16, tid % 16) owns query
// rows ty + 16m (m < 8); in Q K^T it computes keys tx + 16n (n < 4), in P V the output columns 4tx..4tx+3 of each
// 64-column chunk. Q, K and P tiles are padded by 4 floats a row so the float4 reads of 8 rows hit 32 banks.
// K(t+1) is copied (cp.async) while P V(t) runs, V(t+1) while Q K(t+1)^T runs.
#define F_BR 128
#define F_NT 256
#define F_QS (D + 4)
#define F_PS (BC + 4)
#define F_OC (D / 16)  // output floats per row per thread

extern "C" __global__ void __launch_bounds__(F_NT, F32_MIN_BLOCKS)
attn_fwd_f32(const float* __restrict__ q, const float* __restrict__ k, const float* __restrict__ v,
             float* __restrict__ o, int S, float scale_log2, int causal) {
    extern __shared__ __align__(16) float smem[];
    float* Qs = smem;              // F_BR x F_QS
    float* Ks = Qs + F_BR * F_QS;  // BC x F_QS
    float* Vs = Ks + BC * F_QS;    // BC x D
    float* Ps = Vs + BC * D;       // F_BR x F_PS
    const int tid = threadIdx.x, tx = tid & 15, ty = tid >> 4;
    const int qtile = causal ? gridDim.x - 1 - blockIdx.x : blockIdx.x;  // causal: longest rows first
    const int q0 = qtile * F_BR;
    const size_t head = (size_t)blockIdx.y * S * D;
    q += head; k += head; v += head; o += head;
    const int kv_end = causal ? min(S, q0 + F_BR) : S;
    const int n_tiles = (kv_end + BC - 1) / BC;

    load_rows<F_BR, F_QS, 4, F_NT>((char*)Qs, (const char*)q, q0, S, tid);
    load_rows<BC, F_QS, 4, F_NT>((char*)Ks, (const char*)k, 0, S, tid);
    cp_commit();
    load_rows<BC, D, 4, F_NT>((char*)Vs, (const char*)v, 0, S, tid);
    cp_commit();

    float acc[8][F_OC];
    float mrow[8], lrow[8];
#pragma unroll
    for (int m = 0; m < 8; ++m) {
        mrow[m] = NEG_INF;
        lrow[m] = 0.f;
#pragma unroll
        for (int c = 0; c < F_OC; ++c) acc[m][c] = 0.f;
    }

    for (int t = 0; t < n_tiles; ++t) {
        const int j0 = t * BC;
        cp_wait<1>();  // Q and K(t) have landed; V(t) may still be in flight
        __syncthreads();

        float s[8][4];
#pragma unroll
        for (int m = 0; m < 8; ++m)
#pragma unroll
            for (int n = 0; n < 4; ++n) s[m][n] = 0.f;
#pragma unroll
        for (int k4 = 0; k4 < D / 4; ++k4) {
            float4 kf[4];
#pragma unroll
            for (int n = 0; n < 4; ++n) kf[n] = *reinterpret_cast<const float4*>(Ks + (tx + 16 * n) * F_QS + 4 * k4);
#pragma unroll
            for (int m = 0; m < 8; ++m) {
                const float4 qf = *reinterpret_cast<const float4*>(Qs + (ty + 16 * m) * F_QS + 4 * k4);
#pragma unroll
                for (int n = 0; n < 4; ++n) {
                    s[m][n] = fmaf(qf.x, kf[n].x, s[m][n]);
                    s[m][n] = fmaf(qf.y, kf[n].y, s[m][n]);
                    s[m][n] = fmaf(qf.z, kf[n].z, s[m][n]);
                    s[m][n] = fmaf(qf.w, kf[n].w, s[m][n]);
                }
            }
        }

        // online softmax: masked scores are -inf (keys past S; keys after the query when causal)
        const bool masked = (j0 + BC > S) || (causal && j0 + BC - 1 > q0);
#pragma unroll
        for (int m = 0; m < 8; ++m) {
            const int i = q0 + ty + 16 * m;
            float mx = NEG_INF;
#pragma unroll
            for (int n = 0; n < 4; ++n) {
                const int j = j0 + tx + 16 * n;
                if (masked && (j >= S || (causal && j > i))) s[m][n] = NEG_INF;
                mx = fmaxf(mx, s[m][n]);
            }
#pragma unroll
            for (int w = 1; w < 16; w <<= 1) mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, w));
            const float mnew = fmaxf(mrow[m], mx * scale_log2);  // finite: key 0 is in tile 0 for every row
            const float alpha = ex2(mrow[m] - mnew);
            mrow[m] = mnew;
            float sum = 0.f;
#pragma unroll
            for (int n = 0; n < 4; ++n) {
                const float p = ex2(fmaf(s[m][n], scale_log2, -mnew));
                sum += p;
                Ps[(ty + 16 * m) * F_PS + tx + 16 * n] = p;
            }
            lrow[m] = fmaf(lrow[m], alpha, sum);
#pragma unroll
            for (int c = 0; c < F_OC; ++c) acc[m][c] *= alpha;
        }
        cp_wait<0>();  // V(t) has landed
        __syncthreads();  // P visible; every thread is done with K(t)
        if (t + 1 < n_tiles) load_rows<BC, F_QS, 4, F_NT>((char*)Ks, (const char*)k, j0 + BC, S, tid);
        cp_commit();

#pragma unroll 4
        for (int j4 = 0; j4 < BC / 4; ++j4) {
            float4 vf[4][F_OC / 4];
#pragma unroll
            for (int r = 0; r < 4; ++r)
#pragma unroll
                for (int c = 0; c < F_OC / 4; ++c)
                    vf[r][c] = *reinterpret_cast<const float4*>(Vs + (4 * j4 + r) * D + 64 * c + 4 * tx);
#pragma unroll
            for (int m = 0; m < 8; ++m) {
                const float4 pf = *reinterpret_cast<const float4*>(Ps + (ty + 16 * m) * F_PS + 4 * j4);
#pragma unroll
                for (int c = 0; c < F_OC / 4; ++c) {
                    float* a = &acc[m][4 * c];
                    a[0] = fmaf(pf.x, vf[0][c].x, a[0]); a[1] = fmaf(pf.x, vf[0][c].y, a[1]);
                    a[2] = fmaf(pf.x, vf[0][c].z, a[2]); a[3] = fmaf(pf.x, vf[0][c].w, a[3]);
                    a[0] = fmaf(pf.y, vf[1][c].x, a[0]); a[1] = fmaf(pf.y, vf[1][c].y, a[1]);
                    a[2] = fmaf(pf.y, vf[1][c].z, a[2]); a[3] = fmaf(pf.y, vf[1][c].w, a[3]);
                    a[0] = fmaf(pf.z, vf[2][c].x, a[0]); a[1] = fmaf(pf.z, vf[2][c].y, a[1]);
                    a[2] = fmaf(pf.z, vf[2][c].z, a[2]); a[3] = fmaf(pf.z, vf[2][c].w, a[3]);
                    a[0] = fmaf(pf.w, vf[3][c].x, a[0]); a[1] = fmaf(pf.w, vf[3][c].y, a[1]);
                    a[2] = fmaf(pf.w, vf[3][c].z, a[2]); a[3] = fmaf(pf.w, vf[3][c].w, a[3]);
                }
            }
        }
        __syncthreads();  // every thread is done with V(t) and P
        if (t + 1 < n_tiles) load_rows<BC, D, 4, F_NT>((char*)Vs, (const char*)v, j0 + BC, S, tid);
        cp_commit();
    }

#pragma unroll
    for (int m = 0; m < 8; ++m) {
        float l = lrow[m];
#pragma unroll
        for (int w = 1; w < 16; w <<= 1) l += __shfl_xor_sync(0xffffffffu, l, w);
        const float inv = 1.f / l;
        const int i = q0 + ty + 16 * m;
        if (i < S) {
#pragma unroll
            for (int c = 0; c < F_OC / 4; ++c) {
                const float* a = &acc[m][4 * c];
                *reinterpret_cast<float4*>(o + (size_t)i * D + 64 * c + 4 * tx) =
                    make_float4(a[0] * inv, a[1] * inv, a[2] * inv, a[3] * inv);
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------------------
// BF16 fused on the tensor cores. BF_WARPS warps, each owning 16 * BF_MT query rows; 64 keys per tile. Per warp:
// Q stays in registers as mma A fragments; S = Q K^T with K fragments from ldmatrix; the online softmax on the
// accumulators; P is re-packed in registers as the A fragments of P V (the C layout of m16n8 matches the A layout
// of m16n8k16); V fragments from ldmatrix.trans. K and V tiles are double-buffered (cp.async, dynamic shared
// memory), rows padded by 8 elements so the 8 row addresses of each ldmatrix fall in distinct banks.
#define B_NT (32 * BF_WARPS)
#define B_BR (16 * BF_MT * BF_WARPS)
#define B_KS (D + 8)  // bf16 elements per shared row
typedef unsigned short bf16_t;

__device__ __forceinline__ unsigned pack_bf16(float lo, float hi) {
    unsigned r;
    asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(hi), "f"(lo));
    return r;
}

__device__ __forceinline__ void mma_bf16(float* c, const unsigned* a, unsigned b0, unsigned b1) {
    asm(
        "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
        "{%0,%1,%2,%3};\n"
        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

__device__ __forceinline__ void ldsm_x4(unsigned* r, const void* p) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(smem_addr(p)));
}
__device__ __forceinline__ void ldsm_x4_t(unsigned* r, const void* p) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(smem_addr(p)));
}

// One 64-key tile of attn_fwd_bf16 for one warp: S = Q K^T, the online softmax, O += P V. MASK (keys past S, or after
// the query when causal) is a template parameter so the unmasked tiles carry no compare-and-select per score.
template <bool MASK>
__device__ __forceinline__ void bf16_tile(const bf16_t* Kt, const bf16_t* Vt, const unsigned (&qa)[BF_MT][D / 16][4],
                                          float (&acc)[BF_MT][D / 8][4], float (&mrow)[BF_MT][2],
                                          float (&lrow)[BF_MT][2], int j0, int wrow, int S, int causal,
                                          float scale_log2, int g, int tg, int k_off, int v_off) {
    float s[BF_MT][BC / 8][4];
#pragma unroll
    for (int mt = 0; mt < BF_MT; ++mt)
#pragma unroll
        for (int nt = 0; nt < BC / 8; ++nt)
#pragma unroll
            for (int e = 0; e < 4; ++e) s[mt][nt][e] = 0.f;
#pragma unroll
    for (int kk = 0; kk < D / 16; ++kk) {
#pragma unroll
        for (int np = 0; np < BC / 16; ++np) {
            unsigned b[4];
            ldsm_x4(b, Kt + 16 * np * B_KS + 16 * kk + k_off);
#pragma unroll
            for (int mt = 0; mt < BF_MT; ++mt) {
                mma_bf16(s[mt][2 * np], qa[mt][kk], b[0], b[1]);
                mma_bf16(s[mt][2 * np + 1], qa[mt][kk], b[2], b[3]);
            }
        }
    }

    unsigned pa[BF_MT][BC / 16][4];
#pragma unroll
    for (int mt = 0; mt < BF_MT; ++mt) {
#pragma unroll
        for (int h = 0; h < 2; ++h) {  // h = 0: row g (elements 0, 1); h = 1: row g + 8 (elements 2, 3)
            const int i = wrow + 16 * mt + g + 8 * h;
            float mx = NEG_INF;
#pragma unroll
            for (int nt = 0; nt < BC / 8; ++nt)
#pragma unroll
                for (int e = 0; e < 2; ++e) {
                    const int j = j0 + 8 * nt + 2 * tg + e;
                    if (MASK && (j >= S || (causal && j > i))) s[mt][nt][2 * h + e] = NEG_INF;
                    mx = fmaxf(mx, s[mt][nt][2 * h + e]);
                }
            mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 1));
            mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 2));
            const float mnew = fmaxf(mrow[mt][h], mx * scale_log2);
            const float alpha = ex2(mrow[mt][h] - mnew);
            mrow[mt][h] = mnew;
            float sum = 0.f;
#pragma unroll
            for (int nt = 0; nt < BC / 8; ++nt)
#pragma unroll
                for (int e = 0; e < 2; ++e) {
                    const float p = ex2(fmaf(s[mt][nt][2 * h + e], scale_log2, -mnew));
                    s[mt][nt][2 * h + e] = p;
                    sum += p;
                }
            lrow[mt][h] = fmaf(lrow[mt][h], alpha, sum);
#pragma unroll
            for (int nt = 0; nt < D / 8; ++nt) {
                acc[mt][nt][2 * h] *= alpha;
                acc[mt][nt][2 * h + 1] *= alpha;
            }
        }
#pragma unroll
        for (int kk = 0; kk < BC / 16; ++kk) {
            pa[mt][kk][0] = pack_bf16(s[mt][2 * kk][0], s[mt][2 * kk][1]);
            pa[mt][kk][1] = pack_bf16(s[mt][2 * kk][2], s[mt][2 * kk][3]);
            pa[mt][kk][2] = pack_bf16(s[mt][2 * kk + 1][0], s[mt][2 * kk + 1][1]);
            pa[mt][kk][3] = pack_bf16(s[mt][2 * kk + 1][2], s[mt][2 * kk + 1][3]);
        }
    }

#pragma unroll
    for (int kk = 0; kk < BC / 16; ++kk) {
#pragma unroll
        for (int dp = 0; dp < D / 16; ++dp) {
            unsigned b[4];
            ldsm_x4_t(b, Vt + 16 * kk * B_KS + 16 * dp + v_off);
#pragma unroll
            for (int mt = 0; mt < BF_MT; ++mt) {
                mma_bf16(acc[mt][2 * dp], pa[mt][kk], b[0], b[1]);
                mma_bf16(acc[mt][2 * dp + 1], pa[mt][kk], b[2], b[3]);
            }
        }
    }
}

extern "C" __global__ void __launch_bounds__(B_NT)
attn_fwd_bf16(const bf16_t* __restrict__ q, const bf16_t* __restrict__ k, const bf16_t* __restrict__ v,
              bf16_t* __restrict__ o, int S, float scale_log2, int causal) {
    extern __shared__ __align__(16) bf16_t bsm[];  // K[2], V[2]: 4 * BC * B_KS elements (dynamic: > 48 KB at d = 128)
    constexpr int TILE = BC * B_KS;
    bf16_t* const Ks = bsm;             // buffer b at Ks + b * TILE
    bf16_t* const Vs = bsm + 2 * TILE;
    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
    const int g = lane >> 2, tg = lane & 3;
    const int qtile = causal ? gridDim.x - 1 - blockIdx.x : blockIdx.x;
    const int q0 = qtile * B_BR;
    const int wrow = q0 + warp * 16 * BF_MT;  // this warp's first query row
    const size_t head = (size_t)blockIdx.y * S * D;
    q += head; k += head; v += head; o += head;
    const int kv_end = causal ? min(S, q0 + B_BR) : S;
    const int n_tiles = (kv_end + BC - 1) / BC;

    load_rows<BC, B_KS, 2, B_NT>((char*)Ks, (const char*)k, 0, S, tid);
    load_rows<BC, B_KS, 2, B_NT>((char*)Vs, (const char*)v, 0, S, tid);
    cp_commit();

    // Q as A fragments: a0 (row g, cols 2tg..+1), a1 (row g+8), a2 (row g, cols +8), a3 (row g+8, cols +8)
    unsigned qa[BF_MT][D / 16][4];
#pragma unroll
    for (int mt = 0; mt < BF_MT; ++mt) {
        const int r0 = wrow + 16 * mt + g, r1 = r0 + 8;
#pragma unroll
        for (int kk = 0; kk < D / 16; ++kk) {
            const int c = 16 * kk + 2 * tg;
            qa[mt][kk][0] = r0 < S ? *reinterpret_cast<const unsigned*>(q + (size_t)r0 * D + c) : 0u;
            qa[mt][kk][1] = r1 < S ? *reinterpret_cast<const unsigned*>(q + (size_t)r1 * D + c) : 0u;
            qa[mt][kk][2] = r0 < S ? *reinterpret_cast<const unsigned*>(q + (size_t)r0 * D + c + 8) : 0u;
            qa[mt][kk][3] = r1 < S ? *reinterpret_cast<const unsigned*>(q + (size_t)r1 * D + c + 8) : 0u;
        }
    }

    float acc[BF_MT][D / 8][4];
    float mrow[BF_MT][2], lrow[BF_MT][2];
#pragma unroll
    for (int mt = 0; mt < BF_MT; ++mt) {
#pragma unroll
        for (int h = 0; h < 2; ++h) { mrow[mt][h] = NEG_INF; lrow[mt][h] = 0.f; }
#pragma unroll
        for (int nt = 0; nt < D / 8; ++nt)
#pragma unroll
            for (int e = 0; e < 4; ++e) acc[mt][nt][e] = 0.f;
    }
    // ldmatrix row addresses: lane -> matrix mi = lane / 8, row ri = lane % 8
    const int mi = lane >> 3, ri = lane & 7;
    // K: matrices (keys, d) (keys, d+8) (keys+8, d) (keys+8, d+8); V^T: (keys, d) (keys+8, d) (keys, d+8) (..)
    const int k_off = (ri + 8 * (mi >> 1)) * B_KS + 8 * (mi & 1);
    const int v_off = (ri + 8 * (mi & 1)) * B_KS + 8 * (mi >> 1);

    for (int t = 0; t < n_tiles; ++t) {
        const int j0 = t * BC, buf = t & 1;
        if (t + 1 < n_tiles) {
            load_rows<BC, B_KS, 2, B_NT>((char*)(Ks + (buf ^ 1) * TILE), (const char*)k, j0 + BC, S, tid);
            load_rows<BC, B_KS, 2, B_NT>((char*)(Vs + (buf ^ 1) * TILE), (const char*)v, j0 + BC, S, tid);
        }
        cp_commit();
        cp_wait<1>();  // tile t has landed; tile t+1 may be in flight
        __syncthreads();
        const bf16_t* Kt = Ks + buf * TILE;
        const bf16_t* Vt = Vs + buf * TILE;

        if ((j0 + BC > S) || (causal && j0 + BC - 1 > wrow))
            bf16_tile<true>(Kt, Vt, qa, acc, mrow, lrow, j0, wrow, S, causal, scale_log2, g, tg, k_off, v_off);
        else
            bf16_tile<false>(Kt, Vt, qa, acc, mrow, lrow, j0, wrow, S, causal, scale_log2, g, tg, k_off, v_off);
        __syncthreads();  // every warp is done with buffer `buf` before tile t + 2 is copied into it
    }

#pragma unroll
    for (int mt = 0; mt < BF_MT; ++mt) {
#pragma unroll
        for (int h = 0; h < 2; ++h) {
            float l = lrow[mt][h];
            l += __shfl_xor_sync(0xffffffffu, l, 1);
            l += __shfl_xor_sync(0xffffffffu, l, 2);
            const float inv = 1.f / l;
            const int i = wrow + 16 * mt + g + 8 * h;
            if (i < S) {
#pragma unroll
                for (int nt = 0; nt < D / 8; ++nt)
                    *reinterpret_cast<unsigned*>(o + (size_t)i * D + 8 * nt + 2 * tg) =
                        pack_bf16(acc[mt][nt][2 * h] * inv, acc[mt][nt][2 * h + 1] * inv);
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------------------
// Softmax stage of the materialised pipeline: one block per score row, the row read once from DRAM into shared
// memory (cols floats, dynamic), P = exp2((s - max) * scale_log2) / sum written once. float4 when cols % 4 == 0.
__device__ __forceinline__ float block_reduce(float x, bool is_max) {
    __shared__ float part[32];
    __shared__ float total;
#pragma unroll
    for (int w = 16; w > 0; w >>= 1) {
        const float y = __shfl_xor_sync(0xffffffffu, x, w);
        x = is_max ? fmaxf(x, y) : x + y;
    }
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = (blockDim.x + 31) >> 5;
    if (lane == 0) part[warp] = x;
    __syncthreads();
    if (warp == 0) {
        x = lane < warps ? part[lane] : (is_max ? NEG_INF : 0.f);
#pragma unroll
        for (int w = 16; w > 0; w >>= 1) {
            const float y = __shfl_xor_sync(0xffffffffu, x, w);
            x = is_max ? fmaxf(x, y) : x + y;
        }
        if (lane == 0) total = x;
    }
    __syncthreads();
    return total;
}

extern "C" __global__ void attn_row_softmax(const float* __restrict__ s, float* __restrict__ p, int cols,
                                            float scale_log2) {
    extern __shared__ __align__(16) float row[];
    const size_t base = (size_t)blockIdx.x * cols;
    const bool vec = (cols & 3) == 0;
    const int items = vec ? cols / 4 : cols;
    float mx = NEG_INF;
    for (int c = threadIdx.x; c < items; c += blockDim.x) {
        if (vec) {
            const float4 x = reinterpret_cast<const float4*>(s + base)[c];
            reinterpret_cast<float4*>(row)[c] = x;
            mx = fmaxf(mx, fmaxf(fmaxf(x.x, x.y), fmaxf(x.z, x.w)));
        } else {
            const float x = s[base + c];
            row[c] = x;
            mx = fmaxf(mx, x);
        }
    }
    const float shift = block_reduce(mx, true) * scale_log2;
    float sum = 0.f;
    for (int c = threadIdx.x; c < items; c += blockDim.x) {  // each thread re-reads only what it wrote
        if (vec) {
            float4 x = reinterpret_cast<float4*>(row)[c];
            x.x = ex2(fmaf(x.x, scale_log2, -shift)); x.y = ex2(fmaf(x.y, scale_log2, -shift));
            x.z = ex2(fmaf(x.z, scale_log2, -shift)); x.w = ex2(fmaf(x.w, scale_log2, -shift));
            reinterpret_cast<float4*>(row)[c] = x;
            sum += (x.x + x.y) + (x.z + x.w);
        } else {
            const float e = ex2(fmaf(row[c], scale_log2, -shift));
            row[c] = e;
            sum += e;
        }
    }
    const float inv = 1.f / block_reduce(sum, false);
    for (int c = threadIdx.x; c < items; c += blockDim.x) {
        if (vec) {
            float4 x = reinterpret_cast<float4*>(row)[c];
            x.x *= inv; x.y *= inv; x.z *= inv; x.w *= inv;
            reinterpret_cast<float4*>(p + base)[c] = x;
        } else {
            p[base + c] = row[c] * inv;
        }
    }
}
