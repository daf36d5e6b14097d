// 5-point stencil and single-channel 3x3 convolution on an N x N float32 grid (row-major), zero
// padding outside the grid, so every output element is written.
//   stencil5: y = C0 * x[i,j] + C1 * (x[i-1,j] + x[i+1,j] + x[i,j-1] + x[i,j+1])
//   conv3x3:  y = sum over a,b in 0..2 of w[a,b] * x[i+a-1, j+b-1]
// naive kernels: one thread per output, every neighbour loaded from global memory.
// reuse kernels (the *_stream kernels below): each thread walks down a column keeping the rows above and below in
// registers, neighbours across columns come from the adjacent lanes by warp shuffles, so each input element comes
// from DRAM once. On an H200 (2026-11-30) they replaced a 32 x 32 shared-memory tile design that reached 2.3-2.7
// TB/s: the four-column version reaches 3.8 TB/s (docs/measurements/h200.md).

#define C0 0.5f
#define C1 0.125f

__device__ __forceinline__ float at(const float* x, int n, int i, int j) {
    return (i >= 0 && i < n && j >= 0 && j < n) ? x[(long long)i * n + j] : 0.0f;
}

extern "C" __global__ void stencil5_naive(const float* __restrict__ x, float* __restrict__ y, int n) {
    const int j = blockIdx.x * blockDim.x + threadIdx.x, i = blockIdx.y * blockDim.y + threadIdx.y;
    if (i >= n || j >= n) return;
    y[(long long)i * n + j] = C0 * at(x, n, i, j)
        + C1 * ((at(x, n, i - 1, j) + at(x, n, i + 1, j)) + (at(x, n, i, j - 1) + at(x, n, i, j + 1)));
}

extern "C" __global__ void conv3x3_naive(const float* __restrict__ x, const float* __restrict__ w,
                                         float* __restrict__ y, int n) {
    const int j = blockIdx.x * blockDim.x + threadIdx.x, i = blockIdx.y * blockDim.y + threadIdx.y;
    if (i >= n || j >= n) return;
    float s = 0.0f;
#pragma unroll
    for (int a = 0; a < 3; ++a)
#pragma unroll
        for (int b = 0; b < 3; ++b) s += w[a * 3 + b] * at(x, n, i + a - 1, j + b - 1);
    y[(long long)i * n + j] = s;
}

// Streaming kernels: a block of 128 threads owns 128 consecutive columns (one per thread) and marches down `rows`
// rows of them, keeping the rows above and below in registers; the left and right neighbours come from the
// adjacent lanes through warp shuffles, and lanes 0 and 31 load the one column beyond their warp (a line the
// neighbouring warp reads anyway, so it comes from L1/L2). Each input element is read from DRAM once, plus two
// rows per block of `rows`. The next UNROLL rows are loaded before any is used, so each thread keeps UNROLL loads
// in flight. No thread returns early: every lane takes part in the shuffles, and only in-grid outputs are written.
#define UNROLL 4
#define FULL_MASK 0xffffffffu
// The four-column kernels use 43-46 registers (11 blocks of 128 threads per SM). Forcing 12 or 16 blocks per SM
// through __launch_bounds__ was slower on the H200: 3.69 and 2.70 TB/s against 3.82 (docs/measurements/h200.md).

__device__ __forceinline__ float ldg_at(const float* __restrict__ x, int n, int i, int j) {
    return (i >= 0 && i < n && j >= 0 && j < n) ? __ldg(x + (long long)i * n + j) : 0.0f;
}

// This lane's element of one row and its two horizontal neighbours; `edge` is the element beyond the warp that
// lane 0 (left) or lane 31 (right) loaded.
__device__ __forceinline__ void neighbours(float c, float edge, int lane, float& l, float& r) {
    l = __shfl_up_sync(FULL_MASK, c, 1);
    r = __shfl_down_sync(FULL_MASK, c, 1);
    if (lane == 0) l = edge;
    if (lane == 31) r = edge;
}

// Four consecutive columns j..j+3 of row i (zeros outside the grid); needs n % 4 == 0 and j % 4 == 0.
__device__ __forceinline__ float4 ldg4_at(const float* __restrict__ x, int n, int i, int j) {
    return (i >= 0 && i < n && j < n) ? __ldg(reinterpret_cast<const float4*>(x + (long long)i * n + j))
                                      : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
}

// The next UNROLL rows of this thread's columns (a float, or a float4 of four columns) and of its edge column, all
// issued before any is used so that they are in flight together.
template <typename T>
__device__ __forceinline__ T load_cols(const float* __restrict__ x, int n, int i, int j);
template <>
__device__ __forceinline__ float load_cols<float>(const float* __restrict__ x, int n, int i, int j) {
    return ldg_at(x, n, i, j);
}
template <>
__device__ __forceinline__ float4 load_cols<float4>(const float* __restrict__ x, int n, int i, int j) {
    return ldg4_at(x, n, i, j);
}
template <typename T>
__device__ __forceinline__ void load_ahead(const float* __restrict__ x, int n, int i, int j, int ej, bool edge,
                                           T (&c)[UNROLL], float (&e)[UNROLL]) {
#pragma unroll
    for (int u = 0; u < UNROLL; ++u) {
        c[u] = load_cols<T>(x, n, i + u + 1, j);
        e[u] = edge ? ldg_at(x, n, i + u + 1, ej) : 0.0f;
    }
}

extern "C" __global__ void __launch_bounds__(128) stencil5_stream(const float* __restrict__ x,
                                                                  float* __restrict__ y, int n, int rows) {
    const int lane = threadIdx.x & 31, j = blockIdx.x * blockDim.x + threadIdx.x, i0 = blockIdx.y * rows;
    const bool edge = lane == 0 || lane == 31;
    const int ej = lane == 0 ? j - 1 : j + 1;
    float l, r;
    float up = ldg_at(x, n, i0 - 1, j), mid = ldg_at(x, n, i0, j);
    neighbours(mid, edge ? ldg_at(x, n, i0, ej) : 0.0f, lane, l, r);
    float mid_lr = l + r;
    const int stop = min(n, i0 + rows);
    for (int i = i0; i < stop; i += UNROLL) {
        float c[UNROLL], e[UNROLL];
        load_ahead<float>(x, n, i, j, ej, edge, c, e);
#pragma unroll
        for (int u = 0; u < UNROLL; ++u) {
            neighbours(c[u], e[u], lane, l, r);
            if (i + u < stop && j < n) y[(long long)(i + u) * n + j] = C0 * mid + C1 * ((up + c[u]) + mid_lr);
            up = mid;
            mid = c[u];
            mid_lr = l + r;
        }
    }
}

// conv3x3: when input row q arrives, it completes output q-1 (weights row 2), continues output q (row 1) and
// starts output q+1 (row 0); the nine products are added in the reference's order (a, then b).
extern "C" __global__ void __launch_bounds__(128) conv3x3_stream(const float* __restrict__ x,
                                                                 const float* __restrict__ w,
                                                                 float* __restrict__ y, int n, int rows) {
    float wr[9];
#pragma unroll
    for (int k = 0; k < 9; ++k) wr[k] = __ldg(w + k);
    const int lane = threadIdx.x & 31, j = blockIdx.x * blockDim.x + threadIdx.x, i0 = blockIdx.y * rows;
    const bool edge = lane == 0 || lane == 31;
    const int ej = lane == 0 ? j - 1 : j + 1;
    float l, c, r;
    // row i0 - 1 starts output i0; row i0 continues it and starts output i0 + 1
    c = ldg_at(x, n, i0 - 1, j);
    neighbours(c, edge ? ldg_at(x, n, i0 - 1, ej) : 0.0f, lane, l, r);
    float cur = wr[0] * l + wr[1] * c + wr[2] * r;  // output i0
    c = ldg_at(x, n, i0, j);
    neighbours(c, edge ? ldg_at(x, n, i0, ej) : 0.0f, lane, l, r);
    cur = cur + wr[3] * l + wr[4] * c + wr[5] * r;
    float next = wr[0] * l + wr[1] * c + wr[2] * r;  // output i0 + 1
    const int stop = min(n, i0 + rows);
    for (int i = i0; i < stop; i += UNROLL) {
        float cv[UNROLL], e[UNROLL];
        load_ahead<float>(x, n, i, j, ej, edge, cv, e);
#pragma unroll
        for (int u = 0; u < UNROLL; ++u) {
            neighbours(cv[u], e[u], lane, l, r);
            const float out = cur + wr[6] * l + wr[7] * cv[u] + wr[8] * r;
            if (i + u < stop && j < n) y[(long long)(i + u) * n + j] = out;
            cur = next + wr[3] * l + wr[4] * cv[u] + wr[5] * r;
            next = wr[0] * l + wr[1] * cv[u] + wr[2] * r;
        }
    }
}

// The streaming kernels with four columns per thread (16-byte loads; needs n % 4 == 0 so every row starts on a
// 16-byte boundary): a warp covers 128 columns, the neighbours of a thread's first and last column come from the
// adjacent lanes' last and first, and lanes 0 and 31 load the column beyond the warp.
// Left neighbour of v.x and right neighbour of v.w.
__device__ __forceinline__ void neighbours4(const float4& v, float edge, int lane, float& l, float& r) {
    l = __shfl_up_sync(FULL_MASK, v.w, 1);
    r = __shfl_down_sync(FULL_MASK, v.x, 1);
    if (lane == 0) l = edge;
    if (lane == 31) r = edge;
}

extern "C" __global__ void __launch_bounds__(128) stencil5_stream4(const float* __restrict__ x,
                                                                   float* __restrict__ y, int n, int rows) {
    const int lane = threadIdx.x & 31, j = 4 * (blockIdx.x * blockDim.x + threadIdx.x), i0 = blockIdx.y * rows;
    const bool edge = lane == 0 || lane == 31;
    const int ej = lane == 0 ? j - 1 : j + 4;
    float l, r;
    float4 up = ldg4_at(x, n, i0 - 1, j), mid = ldg4_at(x, n, i0, j);
    neighbours4(mid, edge ? ldg_at(x, n, i0, ej) : 0.0f, lane, l, r);
    float mid_l = l, mid_r = r;
    const int stop = min(n, i0 + rows);
    for (int i = i0; i < stop; i += UNROLL) {
        float4 c[UNROLL];
        float e[UNROLL];
        load_ahead<float4>(x, n, i, j, ej, edge, c, e);
#pragma unroll
        for (int u = 0; u < UNROLL; ++u) {
            neighbours4(c[u], e[u], lane, l, r);
            const float4 d = c[u];
            if (i + u < stop && j < n) {
                float4 o;
                o.x = C0 * mid.x + C1 * ((up.x + d.x) + (mid_l + mid.y));
                o.y = C0 * mid.y + C1 * ((up.y + d.y) + (mid.x + mid.z));
                o.z = C0 * mid.z + C1 * ((up.z + d.z) + (mid.y + mid.w));
                o.w = C0 * mid.w + C1 * ((up.w + d.w) + (mid.z + mid_r));
                *reinterpret_cast<float4*>(y + (long long)(i + u) * n + j) = o;
            }
            up = mid;
            mid = d;
            mid_l = l;
            mid_r = r;
        }
    }
}

// One input row's contribution to an output row through weights row k: w[3k] * left + w[3k+1] * centre +
// w[3k+2] * right, for the four columns, added to acc in the reference's order.
__device__ __forceinline__ float4 conv_row(float4 acc, const float* wr, int k, float l, const float4& v, float r) {
    acc.x = acc.x + wr[3 * k] * l + wr[3 * k + 1] * v.x + wr[3 * k + 2] * v.y;
    acc.y = acc.y + wr[3 * k] * v.x + wr[3 * k + 1] * v.y + wr[3 * k + 2] * v.z;
    acc.z = acc.z + wr[3 * k] * v.y + wr[3 * k + 1] * v.z + wr[3 * k + 2] * v.w;
    acc.w = acc.w + wr[3 * k] * v.z + wr[3 * k + 1] * v.w + wr[3 * k + 2] * r;
    return acc;
}

extern "C" __global__ void __launch_bounds__(128) conv3x3_stream4(const float* __restrict__ x,
                                                                  const float* __restrict__ w,
                                                                  float* __restrict__ y, int n, int rows) {
    float wr[9];
#pragma unroll
    for (int k = 0; k < 9; ++k) wr[k] = __ldg(w + k);
    const int lane = threadIdx.x & 31, j = 4 * (blockIdx.x * blockDim.x + threadIdx.x), i0 = blockIdx.y * rows;
    const bool edge = lane == 0 || lane == 31;
    const int ej = lane == 0 ? j - 1 : j + 4;
    const float4 zero = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    float l, r;
    float4 v = ldg4_at(x, n, i0 - 1, j);
    neighbours4(v, edge ? ldg_at(x, n, i0 - 1, ej) : 0.0f, lane, l, r);
    float4 cur = conv_row(zero, wr, 0, l, v, r);  // output i0
    v = ldg4_at(x, n, i0, j);
    neighbours4(v, edge ? ldg_at(x, n, i0, ej) : 0.0f, lane, l, r);
    cur = conv_row(cur, wr, 1, l, v, r);
    float4 next = conv_row(zero, wr, 0, l, v, r);  // output i0 + 1
    const int stop = min(n, i0 + rows);
    for (int i = i0; i < stop; i += UNROLL) {
        float4 c[UNROLL];
        float e[UNROLL];
        load_ahead<float4>(x, n, i, j, ej, edge, c, e);
#pragma unroll
        for (int u = 0; u < UNROLL; ++u) {
            neighbours4(c[u], e[u], lane, l, r);
            const float4 out = conv_row(cur, wr, 2, l, c[u], r);
            if (i + u < stop && j < n) *reinterpret_cast<float4*>(y + (long long)(i + u) * n + j) = out;
            cur = conv_row(next, wr, 1, l, c[u], r);
            next = conv_row(zero, wr, 0, l, c[u], r);
        }
    }
}
