// Appended to kernels/norm.cu by benchmarks/variant_families.py (it uses norm.cu's block reductions and ld_row/st_row).
// Tried on the H200 on 2026-11-30 (fourth session) and slower than the shipped one-row-per-block kernels at 8192 x 8192:
// 3.79-3.82 TB/s (softmax) and 3.80-3.86 (layer norm) at their best against 4.06 and 4.09; kept as a measured variant.
// Persistent row kernels with the next row in flight (issue 13): a grid of a few blocks per SM, each block walking
// rows r, r + gridDim.x, ...; the next row's loads are issued before the current row's reductions, so DRAM is never
// idle while a block waits at its barriers. Rows in registers as in the _reg kernels (T threads x V float4, cols a
// multiple of 4, at most T * V * 4 floats). Layer norm keeps the thread's gamma and beta in registers for all its rows.
template <int T, int V>
__device__ __forceinline__ void row_load(const float4* __restrict__ xr, int n4, float4 (&v)[V]) {
#pragma unroll
    for (int u = 0; u < V; ++u) {
        const int i = threadIdx.x + u * T;
        if (i < n4) v[u] = ld_row(xr + i);
    }
}

template <int T, int V>
__device__ __forceinline__ void softmax_pipe_body(const float* __restrict__ x, float* __restrict__ y, int rows,
                                                  int cols) {
    __shared__ float red[WARP];
    const int n4 = cols / 4;
    const float4* x4 = reinterpret_cast<const float4*>(x);
    float4* y4 = reinterpret_cast<float4*>(y);
    float4 v[V], nx[V];
    int r = blockIdx.x;
    if (r >= rows) return;
    row_load<T, V>(x4 + (long long)r * n4, n4, v);
    for (; r < rows; r += gridDim.x) {
        const int rn = r + gridDim.x;
        if (rn < rows) row_load<T, V>(x4 + (long long)rn * n4, n4, nx);
        float m = NEG_INF;
#pragma unroll
        for (int u = 0; u < V; ++u) if (threadIdx.x + u * T < n4) m = fmaxf(m, max4(v[u]));
        m = block_max(m, red);
        float s = 0.0f;
#pragma unroll
        for (int u = 0; u < V; ++u) {
            if (threadIdx.x + u * T < n4) {
                v[u].x = __expf(v[u].x - m); v[u].y = __expf(v[u].y - m);
                v[u].z = __expf(v[u].z - m); v[u].w = __expf(v[u].w - m);
                s += sum4(v[u]);
            }
        }
        const float inv = 1.0f / block_sum(s, red);
        float4* yr = y4 + (long long)r * n4;
#pragma unroll
        for (int u = 0; u < V; ++u) {
            const int i = threadIdx.x + u * T;
            if (i < n4) {
                v[u].x *= inv; v[u].y *= inv; v[u].z *= inv; v[u].w *= inv;
                st_row(yr + i, v[u]);
            }
        }
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
    float4* y4 = reinterpret_cast<float4*>(y);
    float4 v[V], nx[V], g[V], b[V];
    int r = blockIdx.x;
    if (r >= rows) return;
    row_load<T, V>(x4 + (long long)r * n4, n4, v);
    row_load<T, V>(reinterpret_cast<const float4*>(gamma), n4, g);
    row_load<T, V>(reinterpret_cast<const float4*>(beta), n4, b);
    for (; r < rows; r += gridDim.x) {
        const int rn = r + gridDim.x;
        if (rn < rows) row_load<T, V>(x4 + (long long)rn * n4, n4, nx);
        float s = 0.0f;
#pragma unroll
        for (int u = 0; u < V; ++u) if (threadIdx.x + u * T < n4) s += sum4(v[u]);
        const float m = block_sum(s, red) / cols;
        float q = 0.0f;
#pragma unroll
        for (int u = 0; u < V; ++u) {
            if (threadIdx.x + u * T < n4) {
                v[u].x -= m; v[u].y -= m; v[u].z -= m; v[u].w -= m;
                q += (v[u].x * v[u].x + v[u].y * v[u].y) + (v[u].z * v[u].z + v[u].w * v[u].w);
            }
        }
        const float rs = rsqrtf(block_sum(q, red) / cols + eps);
        float4* yr = y4 + (long long)r * n4;
#pragma unroll
        for (int u = 0; u < V; ++u) {
            const int i = threadIdx.x + u * T;
            if (i < n4) {
                float4 o;
                o.x = v[u].x * rs * g[u].x + b[u].x; o.y = v[u].y * rs * g[u].y + b[u].y;
                o.z = v[u].z * rs * g[u].z + b[u].z; o.w = v[u].w * rs * g[u].w + b[u].w;
                st_row(yr + i, o);
            }
        }
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
