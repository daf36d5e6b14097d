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
