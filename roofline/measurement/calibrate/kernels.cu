// Microbenchmarks for `roofline calibrate` and `roofline sweep` (package data: compiled at run time by CuPy's
// RawModule with NVRTC). Every kernel leaves a result the host checks, so no figure comes from an unchecked run.
//
//   l2_read        L2 bandwidth over a working set of nslices slices of 512 KiB: block b reads slice b mod nslices
//                  with ld.global.cg (cached in L2, not L1), summing the 32-bit words; each thread stores its sum.
//                  The host checks that the sums add up to repeats x sum(buffer) mod 2^32, so every load was really
//                  performed. The slice must be a multiple of 8 x 1024 vectors (128 KiB).
//   pointer_chase  DRAM latency: one thread follows `steps` dependent 8-byte loads; each slot is its own 128-byte
//                  line holding the address of the next slot (a random cycle built by the host). It stores the
//                  final pointer (checked against the host's walk) and the elapsed %globaltimer ns and clock64
//                  cycles between the first load and the arrival of the last one.
//   l1_read        L1 bandwidth: every block of 256 threads reads the same 32 KiB (L1_VECS 16-byte vectors, stored
//                  twice in a row) `repeats` times with 16-byte ld.global.ca loads (cached in L1), so each SM serves
//                  it from its own L1 after the first pass; per-thread sums stored, as l2_read (the host checks
//                  blocks x repeats x sum(32 KiB) mod 2^32).
//   smem_read      shared-memory bandwidth: each block copies the same 32 KiB into shared memory once, then reads
//                  it `repeats` times with 16-byte ld.shared loads (a warp reads 512 consecutive bytes: no bank
//                  conflict); the same per-thread sums and the same check.
//   noop           the launch floor: an empty kernel (the flag is never set; it keeps the parameter alive).
//   one_element    launch plus one dependent memory round trip: thread 0 reads one float and writes one float.

typedef long long i64;
typedef unsigned long long u64;

// volatile: the compiler may neither merge nor drop these loads (the same addresses are read on every repeat).
__device__ __forceinline__ uint4 load_cg_v4(const uint4* p)
{
    uint4 v;
    asm volatile("ld.global.cg.v4.u32 {%0, %1, %2, %3}, [%4];"
                 : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "l"(p));
    return v;
}

__device__ __forceinline__ uint4 load_ca_v4(const uint4* p)
{
    uint4 v;
    asm volatile("ld.global.ca.v4.u32 {%0, %1, %2, %3}, [%4];"
                 : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "l"(p));
    return v;
}

__device__ __forceinline__ uint4 load_shared_v4(unsigned addr)
{
    uint4 v;
    asm volatile("ld.shared.v4.u32 {%0, %1, %2, %3}, [%4];"
                 : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "r"(addr));
    return v;
}

__device__ __forceinline__ u64 load_cg_u64(u64 p)
{
    u64 v;
    asm volatile("ld.global.cg.u64 %0, [%1];" : "=l"(v) : "l"(p));
    return v;
}

__device__ __forceinline__ u64 global_ns()
{
    u64 t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}

__device__ __forceinline__ unsigned word_sum(uint4 v) { return v.x + v.y + v.z + v.w; }

#define L2_THREADS 1024
#define L2_LOADS 8

extern "C" __global__ void __launch_bounds__(L2_THREADS)
l2_read(const uint4* __restrict__ buf, int nslices, int slice_vecs, unsigned* __restrict__ out)
{
    // Block b reads slice b mod nslices (slice_vecs contiguous 16-byte vectors, 512 KiB) once, 1024 threads with
    // eight independent loads each in flight; a launch of repeats x nslices blocks reads every slice `repeats`
    // times. The layout of RRZE-HPC gpu-benches' gpu-l2-cache (a block per slice), with L2-only loads: on the H200
    // it reads 12.8 TB/s at 1.5 MiB and 10.7 at 4 MiB where a grid-stride walk over the whole buffer read 8.9 and
    // 8.5 (benchmarks/l2_variants.py, 2026-12-01).
    const uint4* s = buf + (long long)(blockIdx.x % nslices) * slice_vecs;
    unsigned acc[L2_LOADS] = {0, 0, 0, 0, 0, 0, 0, 0};
    for (int i = threadIdx.x; i < slice_vecs; i += L2_LOADS * L2_THREADS) {
        uint4 x[L2_LOADS];
#pragma unroll
        for (int k = 0; k < L2_LOADS; ++k) x[k] = load_cg_v4(s + i + k * L2_THREADS);
#pragma unroll
        for (int k = 0; k < L2_LOADS; ++k) acc[k] += word_sum(x[k]);
    }
    unsigned sum = 0;
#pragma unroll
    for (int k = 0; k < L2_LOADS; ++k) sum += acc[k];
    out[(long long)blockIdx.x * L2_THREADS + threadIdx.x] = sum;
}

// The L1 and shared-memory probes: 256 threads, a 32 KiB (2048-vector) working set per SM, 8 independent 16-byte
// loads per thread per repeat at compile-time offsets, so the inner loop is loads and adds. Repeat r starts its 8
// loads at vector (r * rot) & 2047 (rot, a multiple of 256, is a kernel argument): thread t then reads vectors
// t + 256 m for every m, in a rotated order, so its sum is the same every repeat, while ptxas cannot hoist the loads
// out of the loop as loop-invariant (it did when every repeat used the same addresses: the first build timed adds,
// not loads). l1_read reads a buffer of 4096 vectors whose halves are equal (no wrap arithmetic on the addresses);
// smem_read wraps its shared-memory byte offset with one AND. At most 64 registers (4 blocks of 256 per SM).
#define L1_THREADS 256
#define L1_VECS 2048
#define L1_LOADS (L1_VECS / L1_THREADS)

__device__ __forceinline__ void store_sum(const unsigned (&acc)[L1_LOADS], unsigned* out)
{
    unsigned sum = 0;
#pragma unroll
    for (int k = 0; k < L1_LOADS; ++k) sum += acc[k];
    out[(i64)blockIdx.x * L1_THREADS + threadIdx.x] = sum;
}

extern "C" __global__ void __launch_bounds__(L1_THREADS, 4)
l1_read(const uint4* __restrict__ buf, int repeats, int rot, unsigned* __restrict__ out)
{
    unsigned acc[L1_LOADS] = {0, 0, 0, 0, 0, 0, 0, 0};
    const uint4* p = buf + threadIdx.x;
    for (int r = 0; r < repeats; ++r) {
        const uint4* q = p + ((r * rot) & (L1_VECS - 1));
        uint4 v[L1_LOADS];
#pragma unroll
        for (int k = 0; k < L1_LOADS; ++k) v[k] = load_ca_v4(q + k * L1_THREADS);
#pragma unroll
        for (int k = 0; k < L1_LOADS; ++k) acc[k] += word_sum(v[k]);
    }
    store_sum(acc, out);
}

extern "C" __global__ void __launch_bounds__(L1_THREADS, 4)
smem_read(const uint4* __restrict__ buf, int repeats, int rot, unsigned* __restrict__ out)
{
    __shared__ uint4 tile[L1_VECS];
    for (int i = threadIdx.x; i < L1_VECS; i += L1_THREADS) tile[i] = buf[i];
    __syncthreads();
    unsigned acc[L1_LOADS] = {0, 0, 0, 0, 0, 0, 0, 0};
    const unsigned base = (unsigned)__cvta_generic_to_shared(tile);
    const unsigned t16 = threadIdx.x * 16u;
    for (int r = 0; r < repeats; ++r) {
        const unsigned o = (unsigned)(r * rot) * 16u + t16;
        uint4 v[L1_LOADS];
#pragma unroll
        for (int k = 0; k < L1_LOADS; ++k) v[k] = load_shared_v4(base + ((o + k * L1_THREADS * 16u) & (L1_VECS * 16u - 1u)));
#pragma unroll
        for (int k = 0; k < L1_LOADS; ++k) acc[k] += word_sum(v[k]);
    }
    store_sum(acc, out);
}

extern "C" __global__ void pointer_chase(u64 start, i64 steps, u64* __restrict__ out)
{
    if (blockIdx.x != 0 || threadIdx.x != 0) return;
    u64 p = start;
    const u64 t0 = global_ns();
    const i64 c0 = clock64();
    for (i64 i = 0; i < steps; ++i) p = load_cg_u64(p);
    asm volatile("" : : "l"(p) : "memory");  // the last load must have arrived before the clocks are read
    const i64 c1 = clock64();
    const u64 t1 = global_ns();
    out[0] = p;
    out[1] = t1 - t0;
    out[2] = (u64)(c1 - c0);
}

extern "C" __global__ void noop(int* p, int flag)
{
    if (flag) p[threadIdx.x] = 0;
}

extern "C" __global__ void one_element(const float* __restrict__ src, float* __restrict__ dst)
{
    if (blockIdx.x == 0 && threadIdx.x == 0) dst[0] = src[0] + 1.0f;
}
