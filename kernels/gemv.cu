// Skinny GEMM of LLM decode: y[b, :] = W x[b, :] for b < B, W an N x N float32 matrix (row-major),
// x and y B x N. W is streamed from DRAM once with float4 loads; each W element is used B times.
//
// A block of GW warps takes GW * GR consecutive rows and one slice of the K range (blockIdx.y).
// Per chunk of CH = 128 columns, the block stages x[:, chunk] in shared memory; each lane loads one
// float4 of W for each of its warp's GR rows and multiplies it with the B staged float4s of x, so one
// shared-memory read feeds GR * 4 FMAs. Partial dot products are summed across the warp at the end.
// Splitting K over gridDim.y slices gives enough equal blocks to fill the GPU; with more than one
// slice the partial results go to `part` (slices x B x N) and gemv_reduce adds them into y.
#define GW 4
#define CH 128

template <int B, int GR>
__device__ __forceinline__ void gemv_body(const float* __restrict__ w, const float* __restrict__ x,
                                          float* __restrict__ out, int n, int klen, int vec) {
    __shared__ __align__(16) float xs[B][CH];
    const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    const int row0 = (blockIdx.x * GW + warp) * GR;
    const int kbeg = blockIdx.y * klen, kend = min(n, kbeg + klen);
    float acc[GR][B];
#pragma unroll
    for (int r = 0; r < GR; ++r)
#pragma unroll
        for (int b = 0; b < B; ++b) acc[r][b] = 0.0f;

    for (int k0 = kbeg; k0 < kend; k0 += CH) {
        const int k = k0 + lane * 4;
        float4 wv[GR];
#pragma unroll
        for (int r = 0; r < GR; ++r) {
            const int row = row0 + r;
            const float* p = w + (long long)row * n + k;
            if (row < n && vec && k < kend) wv[r] = *reinterpret_cast<const float4*>(p);
            else {
                const bool ok = row < n;
                wv[r].x = ok && k < kend ? p[0] : 0.0f;
                wv[r].y = ok && k + 1 < kend ? p[1] : 0.0f;
                wv[r].z = ok && k + 2 < kend ? p[2] : 0.0f;
                wv[r].w = ok && k + 3 < kend ? p[3] : 0.0f;
            }
        }
        if (vec) {  // kend is then a multiple of 4, so a float4 is either all inside or all outside
            for (int e = threadIdx.x; e < B * CH / 4; e += blockDim.x) {
                const int b = e / (CH / 4), kk = (e % (CH / 4)) * 4;
                float4 v = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
                if (k0 + kk < kend) v = *reinterpret_cast<const float4*>(x + (long long)b * n + k0 + kk);
                *reinterpret_cast<float4*>(&xs[b][kk]) = v;
            }
        } else {
            for (int e = threadIdx.x; e < B * CH; e += blockDim.x) {
                const int b = e / CH, kk = e % CH;
                xs[b][kk] = k0 + kk < kend ? x[(long long)b * n + k0 + kk] : 0.0f;
            }
        }
        __syncthreads();
#pragma unroll
        for (int b = 0; b < B; ++b) {
            const float4 xv = *reinterpret_cast<const float4*>(&xs[b][lane * 4]);
#pragma unroll
            for (int r = 0; r < GR; ++r)
                acc[r][b] += wv[r].x * xv.x + wv[r].y * xv.y + wv[r].z * xv.z + wv[r].w * xv.w;
        }
        __syncthreads();
    }

    float* o = out + (long long)blockIdx.y * B * n;
#pragma unroll
    for (int r = 0; r < GR; ++r)
#pragma unroll
        for (int b = 0; b < B; ++b) {
            float v = acc[r][b];
            for (int s = 16; s > 0; s >>= 1) v += __shfl_xor_sync(0xffffffffu, v, s);
            if (lane == (r * B + b) % 32 && row0 + r < n) o[(long long)b * n + row0 + r] = v;
        }
}

#define GEMV(NAME, B, R) \
    extern "C" __global__ void __launch_bounds__(GW * 32) NAME( \
        const float* __restrict__ w, const float* __restrict__ x, float* __restrict__ out, int n, int klen, int vec) { \
        gemv_body<B, R>(w, x, out, n, klen, vec); \
    }
GEMV(gemv_b1, 1, 8)
GEMV(gemv_b2, 2, 8)
GEMV(gemv_b4, 4, 8)
GEMV(gemv_b8, 8, 8)
GEMV(gemv_b16, 16, 8)

// y[i] = sum over s of part[s][i], i < count (= B * N)
extern "C" __global__ void gemv_reduce(const float* __restrict__ part, float* __restrict__ y,
                                       long long count, int slices) {
    const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= count) return;
    float s = 0.0f;
    for (int k = 0; k < slices; ++k) s += part[k * count + i];
    y[i] = s;
}

// ---------------------------------------------------------------------------------------------
// Batch 16 on the tensor cores, FP32-accurate: Y^T (16 x N) = X (16 x K) . W^T, one warp-level
// mma.sync.m16n8k8 TF32 per 16 vectors x 8 rows x 8 k, each operand split into a TF32 high part and a
// TF32 remainder, and hi.hi + hi.lo + lo.hi accumulated in FP32 ("3xTF32": the dropped lo.lo term is
// about 2^-22 of each product, FP32-level). The 16 x 8 accumulator tile is spread over the warp (4
// floats a thread), so a warp holds NT row tiles in 4 NT registers, where the CUDA-core kernel above
// needs 128: no shared memory, no barriers, high occupancy.
// Per step of 16 k, lane (g = lane / 4, q = lane % 4) loads one float4 of W row (8 t + g) at k + 4q for
// each of its NT tiles (the 4 lanes of a row read 64 contiguous bytes) and the float4s of x rows g and
// g + 8 at the same k. The sum over k is order-free, so the MMA's logical k index q (and q + 4) is mapped
// to the physical k + 4q + 2j (and + 1) of the j-th MMA (j = 0, 1): one float4 holds both MMAs' operands.
// U steps are loaded before any is multiplied, so U x NT 16-byte W loads per thread are in flight.
// The MMAs of one group of U steps accumulate into a zeroed tile that is then added to the running sum in
// registers: the tensor core's FP32 accumulation truncates, and over a whole K slice (thousands of MMAs
// into one tile) that bias grew to 2e-3 of |y| at N = 16384 (seen on an H200); a short chain keeps it at
// FP32 level, and the adds outside round to nearest.
// K is split over gridDim.y slices as above; partial sums go to out[slice].
__device__ __forceinline__ unsigned to_tf32(float v) {
    unsigned r;
    asm("cvt.rna.tf32.f32 %0, %1;" : "=r"(r) : "f"(v));
    return r;
}
__device__ __forceinline__ void split_tf32(float v, unsigned& hi, unsigned& lo) {
    hi = to_tf32(v);
    lo = to_tf32(v - __uint_as_float(hi));
}
__device__ __forceinline__ void mma_tf32(float (&d)[4], unsigned a0, unsigned a1, unsigned a2, unsigned a3,
                                         unsigned b0, unsigned b1) {
    asm("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
        "{%0,%1,%2,%3};\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
}
// 4 floats of row p from k on, zero where k + i >= kend or the row does not exist; one 16-byte load when vec.
template <bool STREAM>
__device__ __forceinline__ float4 load_k4(const float* __restrict__ p, int k, int kend, bool ok, int vec) {
    if (ok && vec && k < kend) {
        if (STREAM) return __ldcs(reinterpret_cast<const float4*>(p + k));
        return __ldg(reinterpret_cast<const float4*>(p + k));
    }
    float4 v;
    v.x = ok && k < kend ? p[k] : 0.0f;
    v.y = ok && k + 1 < kend ? p[k + 1] : 0.0f;
    v.z = ok && k + 2 < kend ? p[k + 2] : 0.0f;
    v.w = ok && k + 3 < kend ? p[k + 3] : 0.0f;
    return v;
}

// The MMA accumulators of a warp's NT tiles: a group's partial tile added in registers (each group of U steps is
// summed into a zeroed tile first; one long MMA accumulation truncates past the tolerance), and the final store of
// this K slice's 16 x (8 NT) outputs: c0, c1 are vector g, rows 8t + 2q and + 1; c2, c3 vector g + 8, the same rows.
template <int NT>
__device__ __forceinline__ void add_tiles(float (&acc)[NT][4], const float (&part)[NT][4]) {
#pragma unroll
    for (int t = 0; t < NT; ++t) {
        acc[t][0] += part[t][0]; acc[t][1] += part[t][1]; acc[t][2] += part[t][2]; acc[t][3] += part[t][3];
    }
}

template <int NT>
__device__ __forceinline__ void store_tiles(const float (&acc)[NT][4], float* __restrict__ out, int row0, int g,
                                            int q, int n) {
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

template <int NT, int U>
__device__ __forceinline__ void gemv16_tc_body(const float* __restrict__ w, const float* __restrict__ x,
                                               float* __restrict__ out, int n, int klen, int vec) {
    const int lane = threadIdx.x % 32, warp = threadIdx.x / 32, g = lane / 4, q = lane % 4;
    const int row0 = (blockIdx.x * (blockDim.x / 32) + warp) * 8 * NT;
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
    const float* xa = x + (long long)g * n;
    const float* xb = x + (long long)(g + 8) * n;

    for (int k0 = kbeg; k0 < kend; k0 += 16 * U) {
        float4 wv[U][NT], xv[U][2];
        float part[NT][4];
#pragma unroll
        for (int t = 0; t < NT; ++t) part[t][0] = part[t][1] = part[t][2] = part[t][3] = 0.0f;
#pragma unroll
        for (int u = 0; u < U; ++u) {
            const int k = k0 + 16 * u + 4 * q;
#pragma unroll
            for (int t = 0; t < NT; ++t) wv[u][t] = load_k4<true>(wr[t], k, kend, rok[t], vec);
            xv[u][0] = load_k4<false>(xa, k, kend, true, vec);
            xv[u][1] = load_k4<false>(xb, k, kend, true, vec);
        }
#pragma unroll
        for (int u = 0; u < U; ++u) {
#pragma unroll
            for (int j = 0; j < 2; ++j) {
                unsigned ah[4], al[4];  // a0 = x[g][k0], a1 = x[g+8][k0], a2 = x[g][k1], a3 = x[g+8][k1]
                split_tf32(j ? xv[u][0].z : xv[u][0].x, ah[0], al[0]);
                split_tf32(j ? xv[u][1].z : xv[u][1].x, ah[1], al[1]);
                split_tf32(j ? xv[u][0].w : xv[u][0].y, ah[2], al[2]);
                split_tf32(j ? xv[u][1].w : xv[u][1].y, ah[3], al[3]);
#pragma unroll
                for (int t = 0; t < NT; ++t) {
                    unsigned bh0, bl0, bh1, bl1;  // b0 = W[row][k0], b1 = W[row][k1]
                    split_tf32(j ? wv[u][t].z : wv[u][t].x, bh0, bl0);
                    split_tf32(j ? wv[u][t].w : wv[u][t].y, bh1, bl1);
                    mma_tf32(part[t], al[0], al[1], al[2], al[3], bh0, bh1);
                    mma_tf32(part[t], ah[0], ah[1], ah[2], ah[3], bl0, bl1);
                    mma_tf32(part[t], ah[0], ah[1], ah[2], ah[3], bh0, bh1);
                }
            }
        }
        add_tiles<NT>(acc, part);
    }

    store_tiles<NT>(acc, out, row0, g, q, n);
}

#define GEMV16_TC(NT, U) \
    extern "C" __global__ void __launch_bounds__(128) gemv_b16_tc_##NT##_##U( \
        const float* __restrict__ w, const float* __restrict__ x, float* __restrict__ out, int n, int klen, int vec) { \
        gemv16_tc_body<NT, U>(w, x, out, n, klen, vec); \
    }
GEMV16_TC(1, 4)
GEMV16_TC(2, 2)
GEMV16_TC(2, 4)
GEMV16_TC(4, 1)
GEMV16_TC(4, 2)
GEMV16_TC(4, 4)
GEMV16_TC(8, 1)

// ---------------------------------------------------------------------------------------------
// Batch 16, shipped (issue 13): the same 3xTF32 MMAs and k mapping as gemv16_tc_body above, with x staged in shared
// memory. gemv16_tc_body issued about 1,300 instructions per warp and group of 4 steps for 96 MMAs (sm_90 SASS):
// each warp reloaded x and split it with cvt.rna (several instructions), and each W load sat behind its own
// boundary branch; at 166 registers (3 blocks an SM) that stream set the pace (ncu: 53 % of DRAM peak). Here:
//  - the 16 vectors of the next group of U steps are loaded one group ahead into registers, split into TF32 hi and
//    lo once per block and stored in shared memory in A-fragment order (xs[buf][step][part][lane], part = hi j0,
//    hi j1, lo j0, lo j1, one uint4 a lane: four conflict-free 16-byte reads a step); two buffers, one barrier a group;
//  - W is split by masking (split_mask), two or three instructions an element;
//  - the W loads of a group are issued before the barrier; blocks wholly inside the matrix (EDGE false) use plain
//    streaming float4 loads with no branches, edge blocks guard every load and load W one step at a time.
// About 400 instructions per group; 128 registers at NT = 4, U = 4, so 4 blocks an SM. H200: 282.8 us, 3.80 TB/s at
// n = 16384, 1.31x gemv_b16_tc_4_4 and 2.13x cuBLAS (docs/measurements/h200-2026-11-30-gemv16-variants.txt).
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
__device__ __forceinline__ void gemv16_xs_body(const float* __restrict__ w, const float* __restrict__ x,
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
        add_tiles<NT>(acc, part);
    }

    store_tiles<NT>(acc, out, row0, g, q, n);
}

extern "C" __global__ void __launch_bounds__(128, 4) gemv_b16_xs_4_4(
    const float* __restrict__ w, const float* __restrict__ x, float* __restrict__ out, int n, int klen, int vec) {
    __shared__ __align__(16) uint4 xs[2][4][4][32];
    const int kbeg = blockIdx.y * klen, kend = min(n, kbeg + klen);
    if (vec && (blockIdx.x + 1) * 32 * 4 <= n && (kend - kbeg) % (16 * 4) == 0)
        gemv16_xs_body<4, 4, true, false>(w, x, out, n, klen, vec, xs);
    else
        gemv16_xs_body<4, 4, true, true>(w, x, out, n, klen, vec, xs);
}
