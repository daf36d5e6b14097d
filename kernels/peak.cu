// Compute-roof kernels: each thread runs C independent FMA chains x <- x * a + b entirely in registers, so
// consecutive FMAs of one chain are C instructions apart and the FMA latency is hidden. The iteration loop is
// unrolled so that loop overhead is a small fraction of the issued instructions. Every chain feeds the one value
// each thread stores, so no FMA is dead code; a and b are kernel arguments, so nothing folds at compile time.
// Seeds are exact in float: (tid % 1024) / 1024 + (k + 1) / 4, so the host can rebuild them.

typedef long long i64;

template <class T, int C>
__device__ __forceinline__ void fma_chains(T* __restrict__ out, int iters, T a, T b)
{
    const i64 tid = (i64)blockIdx.x * blockDim.x + threadIdx.x;
    const T base = (T)(int)(tid & 1023) * (T)(1.0 / 1024.0);
    T x[C];
#pragma unroll
    for (int k = 0; k < C; ++k) x[k] = base + (T)(k + 1) * (T)0.25;
#pragma unroll 16
    for (int i = 0; i < iters; ++i) {
#pragma unroll
        for (int k = 0; k < C; ++k) x[k] = fma(x[k], a, b);
    }
    T s = (T)0;
#pragma unroll
    for (int k = 0; k < C; ++k) s += x[k];
    out[tid] = s;
}

extern "C" __global__ void fma_peak_f32_c4(float* out, int iters, float a, float b)  { fma_chains<float, 4>(out, iters, a, b); }
extern "C" __global__ void fma_peak_f32_c8(float* out, int iters, float a, float b)  { fma_chains<float, 8>(out, iters, a, b); }
extern "C" __global__ void fma_peak_f32_c16(float* out, int iters, float a, float b) { fma_chains<float, 16>(out, iters, a, b); }
extern "C" __global__ void fma_peak_f64_c4(double* out, int iters, double a, double b)  { fma_chains<double, 4>(out, iters, a, b); }
extern "C" __global__ void fma_peak_f64_c8(double* out, int iters, double a, double b)  { fma_chains<double, 8>(out, iters, a, b); }
extern "C" __global__ void fma_peak_f64_c16(double* out, int iters, double a, double b) { fma_chains<double, 16>(out, iters, a, b); }
