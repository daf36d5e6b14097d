// Variant kernels that benchmarks/kernel_variants.py times beside the shipped ones; none is bundled.
// Compiled with -I kernels, so they reuse the shipped kernels' helpers.
#include "reduce.cu"

// sum in one launch: each block writes its double partial, and the last block to finish (a counter, reset by
// that block for the next launch) adds all partials in a fixed order, so the result is still deterministic.
extern "C" __global__ void __launch_bounds__(THREADS)
sum_onepass(const float* __restrict__ x, double* __restrict__ partial, unsigned* __restrict__ counter,
            float* __restrict__ out, i64 n)
{
    __shared__ bool last;
    const double s = block_partial(x, n);
    if (threadIdx.x == 0) {
        partial[blockIdx.x] = s;
        __threadfence();
        last = atomicAdd(counter, 1u) == gridDim.x - 1;
    }
    __syncthreads();
    if (!last) return;
    __threadfence();
    double t = 0.0;
    for (int i = threadIdx.x; i < gridDim.x; i += THREADS) t += ((volatile double*)partial)[i];
    t = block_sum(t);
    if (threadIdx.x == 0) { out[0] = (float)t; *counter = 0u; }
}
