// Sum of n floats in two launches, deterministic for a given grid:
//   sum_partial: a grid-stride loop (grid sized by the launcher from the SM count) accumulates float4 loads in
//                float registers, UNROLL independent loads in flight per thread; the per-thread totals are combined
//                in double (warp shuffles, then one value per warp) and each block writes one double partial.
//   sum_finish:  one block adds the partials in double and writes the float result.
// Each thread accumulates only about n / (4 * threads in the grid) values per float lane, so float is accurate
// enough there; the long combination tree runs in double.

typedef long long i64;

#ifndef THREADS
#define THREADS 256
#endif
#ifndef UNROLL
#define UNROLL 4
#endif

__device__ __forceinline__ double block_sum(double v)
{
    __shared__ double warp_sums[THREADS / 32];
    for (int off = 16; off > 0; off >>= 1) v += __shfl_down_sync(0xffffffffu, v, off);
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    if (lane == 0) warp_sums[warp] = v;
    __syncthreads();
    v = 0.0;
    if (warp == 0) {
        if (lane < THREADS / 32) v = warp_sums[lane];
        for (int off = 16; off > 0; off >>= 1) v += __shfl_down_sync(0xffffffffu, v, off);
    }
    return v;   // valid in thread 0
}

// This block's share of the grid-stride sum, valid in thread 0.
__device__ __forceinline__ double block_partial(const float* __restrict__ x, i64 n)
{
    const i64 tid = (i64)blockIdx.x * THREADS + threadIdx.x;
    const i64 stride = (i64)gridDim.x * THREADS;
    float4 acc[UNROLL];
#pragma unroll
    for (int u = 0; u < UNROLL; ++u) acc[u] = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    float tail = 0.0f;

    if (((unsigned long long)x & 15) == 0) {
        const float4* __restrict__ x4 = reinterpret_cast<const float4*>(x);
        const i64 nv = n >> 2;
        i64 i = tid;
        for (; i + (UNROLL - 1) * stride < nv; i += UNROLL * stride) {
            float4 v[UNROLL];
#pragma unroll
            for (int u = 0; u < UNROLL; ++u) v[u] = x4[i + u * stride];
#pragma unroll
            for (int u = 0; u < UNROLL; ++u) {
                acc[u].x += v[u].x; acc[u].y += v[u].y; acc[u].z += v[u].z; acc[u].w += v[u].w;
            }
        }
        // The rest (fewer than UNROLL strides) as one guarded pass, its loads issued together. A plain loop here
        // waited a round trip per load; at 2^20 floats (fewer float4 than UNROLL x the grid) that loop was the whole
        // kernel, two dependent loads per thread where the descriptor's bytes_per_thread (64) says one round trip.
        {
            float4 v[UNROLL];
#pragma unroll
            for (int u = 0; u < UNROLL; ++u)
                v[u] = i + u * stride < nv ? x4[i + u * stride] : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
#pragma unroll
            for (int u = 0; u < UNROLL; ++u) {
                acc[u].x += v[u].x; acc[u].y += v[u].y; acc[u].z += v[u].z; acc[u].w += v[u].w;
            }
        }
        if (tid < (n & 3)) tail = x[4 * nv + tid];
    } else {
        for (i64 i = tid; i < n; i += stride) tail += x[i];
    }

    double s = tail;
#pragma unroll
    for (int u = 0; u < UNROLL; ++u) s += ((double)acc[u].x + acc[u].y) + ((double)acc[u].z + acc[u].w);
    return block_sum(s);
}

// 6 blocks of 256 per SM (sum.py: BLOCKS_PER_SM) must stay resident: at most 42 registers.
extern "C" __global__ void __launch_bounds__(THREADS, 6)
sum_partial(const float* __restrict__ x, double* __restrict__ partial, i64 n)
{
    const double s = block_partial(x, n);
    if (threadIdx.x == 0) partial[blockIdx.x] = s;
}

extern "C" __global__ void __launch_bounds__(THREADS)
sum_finish(const double* __restrict__ partial, int m, float* __restrict__ out)
{
    double s = 0.0;
    for (int i = threadIdx.x; i < m; i += THREADS) s += partial[i];
    s = block_sum(s);
    if (threadIdx.x == 0) out[0] = (float)s;
}
