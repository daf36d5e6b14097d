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

// Tiled SGEMM: a 128 x 128 tile of C per block of 256 threads, 8 x 8 outputs per thread held in
// registers, K in steps of 8 through double-buffered shared memory (the next step's tile is loaded
// into registers while the current one is multiplied, so one barrier per step suffices).
// A thread's 8 rows are {ty*4..ty*4+3} and {64+ty*4..}, its columns likewise, so that the
// shared-memory reads are float4 and conflict-free. Edges (n not a multiple of 128, or of 4)
// are zero-filled on load and masked on store; vec = (n % 4 == 0) enables float4 global access.
#define BM 128
#define BK 8
#define APAD 4   // the transposed A tile is padded so its scattered stores do not conflict

__device__ __forceinline__ float4 load4(const float* __restrict__ p, int n, int row, int col, int vec) {
    const long long o = (long long)row * n + col;
    if (row < n && vec && col < n) return *reinterpret_cast<const float4*>(p + o);
    float4 v;
    const bool r = row < n;
    v.x = r && col < n ? p[o] : 0.0f;
    v.y = r && col + 1 < n ? p[o + 1] : 0.0f;
    v.z = r && col + 2 < n ? p[o + 2] : 0.0f;
    v.w = r && col + 3 < n ? p[o + 3] : 0.0f;
    return v;
}

extern "C" __global__ void __launch_bounds__(256, 2)
matmul_tiled(const float* __restrict__ a, const float* __restrict__ b, float* __restrict__ c, int n, int vec) {
    __shared__ __align__(16) float as[2][BK][BM + APAD];
    __shared__ __align__(16) float bs[2][BK][BM];
    const int tid = threadIdx.x, tx = tid % 16, ty = tid / 16;
    const int m0 = blockIdx.y * BM, n0 = blockIdx.x * BM;
    const int ar = tid / 2, ac = (tid % 2) * 4;   // this thread's float4 of the A tile (128 x 8)
    const int br = tid / 32, bc = (tid % 32) * 4; // and of the B tile (8 x 128)

    float acc[8][8];
#pragma unroll
    for (int i = 0; i < 8; ++i)
#pragma unroll
        for (int j = 0; j < 8; ++j) acc[i][j] = 0.0f;

    float4 ra = load4(a, n, m0 + ar, ac, vec), rb = load4(b, n, br, n0 + bc, vec);
    as[0][ac][ar] = ra.x; as[0][ac + 1][ar] = ra.y; as[0][ac + 2][ar] = ra.z; as[0][ac + 3][ar] = ra.w;
    *reinterpret_cast<float4*>(&bs[0][br][bc]) = rb;
    __syncthreads();

    int cur = 0;
    for (int k0 = 0; k0 < n; k0 += BK) {
        const bool more = k0 + BK < n;
        if (more) {
            ra = load4(a, n, m0 + ar, k0 + BK + ac, vec);
            rb = load4(b, n, k0 + BK + br, n0 + bc, vec);
        }
#pragma unroll
        for (int kk = 0; kk < BK; ++kk) {
            float av[8], bv[8];
            *reinterpret_cast<float4*>(av) = *reinterpret_cast<const float4*>(&as[cur][kk][ty * 4]);
            *reinterpret_cast<float4*>(av + 4) = *reinterpret_cast<const float4*>(&as[cur][kk][64 + ty * 4]);
            *reinterpret_cast<float4*>(bv) = *reinterpret_cast<const float4*>(&bs[cur][kk][tx * 4]);
            *reinterpret_cast<float4*>(bv + 4) = *reinterpret_cast<const float4*>(&bs[cur][kk][64 + tx * 4]);
#pragma unroll
            for (int i = 0; i < 8; ++i)
#pragma unroll
                for (int j = 0; j < 8; ++j) acc[i][j] = fmaf(av[i], bv[j], acc[i][j]);
        }
        if (more) {
            const int nx = cur ^ 1;
            as[nx][ac][ar] = ra.x; as[nx][ac + 1][ar] = ra.y; as[nx][ac + 2][ar] = ra.z; as[nx][ac + 3][ar] = ra.w;
            *reinterpret_cast<float4*>(&bs[nx][br][bc]) = rb;
        }
        __syncthreads();
        cur ^= 1;
    }

#pragma unroll
    for (int i = 0; i < 8; ++i) {
        const int row = m0 + (i < 4 ? ty * 4 + i : 64 + ty * 4 + i - 4);
        if (row >= n) continue;
#pragma unroll
        for (int h = 0; h < 2; ++h) {
            const int col = n0 + h * 64 + tx * 4;
            float* p = c + (long long)row * n + col;
            if (vec && col < n) {
                *reinterpret_cast<float4*>(p) = make_float4(acc[i][h * 4], acc[i][h * 4 + 1], acc[i][h * 4 + 2], acc[i][h * 4 + 3]);
            } else {
#pragma unroll
                for (int j = 0; j < 4; ++j) if (col + j < n) p[j] = acc[i][h * 4 + j];
            }
        }
    }
}
