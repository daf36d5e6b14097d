// Appended to kernels/norm.cu by benchmarks/variant_families.py (it uses norm.cu's row_load and *_row_store).
// Tried on the H200 on 2026-11-30 (fourth session) and slower than the shipped one-row-per-block kernels at 8192 x 8192:
// at best 3.82 TB/s (softmax) and 3.86 (layer norm) against 3.97-4.06 and 4.03-4.09 for the register-resident kernels
// in the same run (docs/measurements/h200-2026-11-30-kernel-variants-8.txt); kept as a measured variant.
// Persistent row kernels with the next row in flight (issue 13): a grid of a few blocks per SM, each block walking
// rows r, r + gridDim.x, ...; the next row's loads are issued before the current row's reductions, so DRAM is never
// idle while a block waits at its barriers. Rows in registers as in the _reg kernels (T threads x V float4, cols a
// multiple of 4, at most T * V * 4 floats). Layer norm keeps the thread's gamma and beta in registers for all its rows.
template <int T, int V>
__device__ __forceinline__ void softmax_pipe_body(const float* __restrict__ x, float* __restrict__ y, int rows,
                                                  int cols) {
    __shared__ float red[WARP];
    const int n4 = cols / 4;
    const float4* x4 = reinterpret_cast<const float4*>(x);
    float4 v[V], nx[V];
    int r = blockIdx.x;
    if (r >= rows) return;
    row_load<T, V>(x4 + (long long)r * n4, n4, v);
    for (; r < rows; r += gridDim.x) {
        const int rn = r + gridDim.x;
        if (rn < rows) row_load<T, V>(x4 + (long long)rn * n4, n4, nx);  // in flight while this row reduces
        softmax_row_store<T, V>(v, n4, red, reinterpret_cast<float4*>(y) + (long long)r * n4);
#pragma unroll
        for (int u = 0; u < V; ++u) v[u] = nx[u];
    }
}

template <int T, int V>
__device__ __forceinline__ void layernorm_pipe_body(const float* __restrict__ x, const float* __restrict__ gamma,
                                                    const float* __restrict__ beta, float* __restrict__ y, int rows,
                                                    int cols, float eps) {
    __shared__ float red[WARP];
    const int n4 = cols / 4;
    const float4* x4 = reinterpret_cast<const float4*>(x);
    const float4* g4 = reinterpret_cast<const float4*>(gamma);
    const float4* b4 = reinterpret_cast<const float4*>(beta);
    float4 v[V], nx[V], g[V], b[V];
    int r = blockIdx.x;
    if (r >= rows) return;
    row_load<T, V>(x4 + (long long)r * n4, n4, v);
    row_load<T, V>(g4, n4, g);
    row_load<T, V>(b4, n4, b);
    for (; r < rows; r += gridDim.x) {
        const int rn = r + gridDim.x;
        if (rn < rows) row_load<T, V>(x4 + (long long)rn * n4, n4, nx);
        layernorm_row_store<T, V, true>(v, g, b, g4, b4, n4, cols, eps, red,
                                        reinterpret_cast<float4*>(y) + (long long)r * n4);
#pragma unroll
        for (int u = 0; u < V; ++u) v[u] = nx[u];
    }
}

#define ROW_PIPE(T, V) \
    extern "C" __global__ void __launch_bounds__(T) softmax_pipe_##T##_##V( \
        const float* __restrict__ x, float* __restrict__ y, int rows, int cols) { \
        softmax_pipe_body<T, V>(x, y, rows, cols); } \
    extern "C" __global__ void __launch_bounds__(T) layernorm_pipe_##T##_##V( \
        const float* __restrict__ x, const float* __restrict__ gamma, const float* __restrict__ beta, \
        float* __restrict__ y, int rows, int cols, float eps) { \
        layernorm_pipe_body<T, V>(x, gamma, beta, y, rows, cols, eps); }
ROW_PIPE(256, 8)
ROW_PIPE(512, 4)
ROW_PIPE(1024, 2)
