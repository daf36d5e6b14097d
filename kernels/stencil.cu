// 5-point stencil and single-channel 3x3 convolution on an N x N float32 grid (row-major), zero
// padding outside the grid, so every output element is written.
//   stencil5: y = C0 * x[i,j] + C1 * (x[i-1,j] + x[i+1,j] + x[i,j-1] + x[i,j+1])
//   conv3x3:  y = sum over a,b in 0..2 of w[a,b] * x[i+a-1, j+b-1]
// naive kernels: one thread per output, every neighbour loaded from global memory.
// reuse kernels: a TILE x TILE output tile per block, its input tile plus a 1-element halo staged
// in shared memory, so each input element comes from DRAM once (halos of neighbouring tiles from L2).

#define C0 0.5f
#define C1 0.125f
#define TILE 32
#define HALO (TILE + 2)

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

// Block = (TILE, ROWS) threads; each thread computes TILE / ROWS outputs of one column. All of a
// thread's tile loads are issued before the shared-memory stores, to keep enough bytes in flight.
#define ROWS 8
#define NT (TILE * ROWS)
#define LOADS ((HALO * HALO + NT - 1) / NT)
__device__ __forceinline__ void load_tile(const float* __restrict__ x, int n, int i0, int j0,
                                          float (*t)[HALO]) {
    const int tid = threadIdx.y * TILE + threadIdx.x;
    float v[LOADS];
#pragma unroll
    for (int q = 0; q < LOADS; ++q) {
        const int k = tid + q * NT, r = k / HALO, c = k % HALO;  // consecutive threads, consecutive columns
        v[q] = k < HALO * HALO ? at(x, n, i0 + r - 1, j0 + c - 1) : 0.0f;
    }
#pragma unroll
    for (int q = 0; q < LOADS; ++q) {
        const int k = tid + q * NT;
        if (k < HALO * HALO) t[k / HALO][k % HALO] = v[q];
    }
    __syncthreads();
}

extern "C" __global__ void stencil5_reuse(const float* __restrict__ x, float* __restrict__ y, int n) {
    __shared__ float t[HALO][HALO];
    const int i0 = blockIdx.y * TILE, j0 = blockIdx.x * TILE;
    load_tile(x, n, i0, j0, t);
    const int c = threadIdx.x + 1, j = j0 + threadIdx.x;
    if (j >= n) return;
    for (int r = threadIdx.y + 1; r <= TILE; r += ROWS) {
        const int i = i0 + r - 1;
        if (i >= n) break;
        y[(long long)i * n + j] = C0 * t[r][c] + C1 * ((t[r - 1][c] + t[r + 1][c]) + (t[r][c - 1] + t[r][c + 1]));
    }
}

extern "C" __global__ void conv3x3_reuse(const float* __restrict__ x, const float* __restrict__ w,
                                         float* __restrict__ y, int n) {
    __shared__ float t[HALO][HALO];
    float wr[9];
#pragma unroll
    for (int k = 0; k < 9; ++k) wr[k] = w[k];
    const int i0 = blockIdx.y * TILE, j0 = blockIdx.x * TILE;
    load_tile(x, n, i0, j0, t);
    const int c = threadIdx.x + 1, j = j0 + threadIdx.x;
    if (j >= n) return;
    for (int r = threadIdx.y + 1; r <= TILE; r += ROWS) {
        const int i = i0 + r - 1;
        if (i >= n) break;
        float s = 0.0f;
#pragma unroll
        for (int a = 0; a < 3; ++a)
#pragma unroll
            for (int b = 0; b < 3; ++b) s += wr[a * 3 + b] * t[r + a - 1][c + b - 1];
        y[(long long)i * n + j] = s;
    }
}
