// Map and fusion kernels (float32).
//
// Vector path: each thread moves VPT float4s (16-byte accesses), spaced blockDim.x apart so that a warp's accesses
// stay contiguous; VPT independent loads per input are in flight per thread. The launcher sizes the grid as
// ceil(n / (4 * VPT * threads)) and must use the same VPT.
// A pointer that is not 16-byte aligned (a view at an odd offset) sends every thread down a scalar path over the
// same elements; the test is uniform across the grid, so it costs no divergence. The n % 4 elements after the last
// whole float4 are done by the first threads of block 0.

typedef long long i64;

#ifndef VPT
#define VPT 2
#endif
// MAP_HINTS = 1: float4 loads ld.global.cs and stores st.global.cs (streaming, evict-first); 0: plain.
// benchmarks/kernel_variants.py compiles both (and other VPT) to compare them.
#ifndef MAP_HINTS
#define MAP_HINTS 0
#endif
#if MAP_HINTS
#define MAP_LD(p) __ldcs(&(p))
#define MAP_ST(p, v) __stcs(&(p), (v))
#else
#define MAP_LD(p) (p)
#define MAP_ST(p, v) ((p) = (v))
#endif

__device__ __forceinline__ bool aligned16(const void* p) { return ((unsigned long long)p & 15) == 0; }

// An operation takes up to three inputs; NIN says how many are real, the others are ignored.
struct Copy  { static const int NIN = 1; __device__ float operator()(float a, float, float) const { return a; } };
struct Relu  { static const int NIN = 1; __device__ float operator()(float a, float, float) const { return fmaxf(a, 0.0f); } };
struct Scale { static const int NIN = 1; float s; __device__ float operator()(float a, float, float) const { return s * a; } };
struct Add   { static const int NIN = 2; __device__ float operator()(float a, float b, float) const { return a + b; } };
struct Mul   { static const int NIN = 2; __device__ float operator()(float a, float b, float) const { return a * b; } };
struct Triad { static const int NIN = 2; float s; __device__ float operator()(float b, float c, float) const { return fmaf(s, c, b); } };
struct FmaRelu { static const int NIN = 3;
    __device__ float operator()(float a, float b, float c) const { return fmaxf(fmaf(a, b, c), 0.0f); } };
struct GeluErf { static const int NIN = 1;
    __device__ float operator()(float x, float, float) const { return 0.5f * x * (1.0f + erff(x * 0.70710678118654752f)); } };
// tanhf saturates to +-1 for large |x|; the exp(2u) formulation would overflow to inf/inf = NaN there.
struct GeluTanh { static const int NIN = 1;
    __device__ float operator()(float x, float, float) const {
        const float u = 0.79788456080286536f * fmaf(0.044715f * x, x * x, x);
        return 0.5f * x * (1.0f + tanhf(u));
    } };

template <class Op>
__device__ __forceinline__ void map_f4(const float* __restrict__ x, const float* __restrict__ y,
                                       const float* __restrict__ z, float* __restrict__ out, i64 n, Op op)
{
    const i64 nv = n >> 2;
    const i64 base = (i64)blockIdx.x * (blockDim.x * VPT) + threadIdx.x;
    const bool vec = aligned16(out) && aligned16(x) && (Op::NIN < 2 || aligned16(y)) && (Op::NIN < 3 || aligned16(z));
    if (vec) {
        const float4* __restrict__ x4 = reinterpret_cast<const float4*>(x);
        const float4* __restrict__ y4 = reinterpret_cast<const float4*>(y);
        const float4* __restrict__ z4 = reinterpret_cast<const float4*>(z);
        float4* __restrict__ o4 = reinterpret_cast<float4*>(out);
        float4 a[VPT], b[VPT], c[VPT];
#pragma unroll
        for (int u = 0; u < VPT; ++u) {
            const i64 v = base + (i64)u * blockDim.x;
            if (v < nv) {
                a[u] = MAP_LD(x4[v]);
                if (Op::NIN > 1) b[u] = MAP_LD(y4[v]);
                if (Op::NIN > 2) c[u] = MAP_LD(z4[v]);
            }
        }
#pragma unroll
        for (int u = 0; u < VPT; ++u) {
            const i64 v = base + (i64)u * blockDim.x;
            if (v < nv) {
                float4 r;
                r.x = op(a[u].x, b[u].x, c[u].x);
                r.y = op(a[u].y, b[u].y, c[u].y);
                r.z = op(a[u].z, b[u].z, c[u].z);
                r.w = op(a[u].w, b[u].w, c[u].w);
                MAP_ST(o4[v], r);
            }
        }
    } else {
#pragma unroll
        for (int u = 0; u < VPT; ++u) {
            const i64 v = base + (i64)u * blockDim.x;
            if (v < nv) {
                for (int k = 0; k < 4; ++k) {
                    const i64 i = 4 * v + k;
                    out[i] = op(x[i], Op::NIN > 1 ? y[i] : 0.0f, Op::NIN > 2 ? z[i] : 0.0f);
                }
            }
        }
    }
    if (blockIdx.x == 0 && threadIdx.x < (n & 3)) {
        const i64 i = 4 * nv + threadIdx.x;
        out[i] = op(x[i], Op::NIN > 1 ? y[i] : 0.0f, Op::NIN > 2 ? z[i] : 0.0f);
    }
}

extern "C" __global__ void copy_f32(const float* __restrict__ a, float* __restrict__ b, i64 n)
{ map_f4(a, a, a, b, n, Copy()); }

extern "C" __global__ void scale_f32(const float* __restrict__ a, float* __restrict__ b, float s, i64 n)
{ Scale op; op.s = s; map_f4(a, a, a, b, n, op); }

extern "C" __global__ void add_f32(const float* __restrict__ a, const float* __restrict__ b, float* __restrict__ c, i64 n)
{ map_f4(a, b, b, c, n, Add()); }

extern "C" __global__ void mul_f32(const float* __restrict__ a, const float* __restrict__ b, float* __restrict__ c, i64 n)
{ map_f4(a, b, b, c, n, Mul()); }

// a = b + s * c
extern "C" __global__ void triad_f32(const float* __restrict__ b, const float* __restrict__ c, float* __restrict__ a,
                                     float s, i64 n)
{ Triad op; op.s = s; map_f4(b, c, c, a, n, op); }

extern "C" __global__ void relu_f32(const float* __restrict__ a, float* __restrict__ b, i64 n)
{ map_f4(a, a, a, b, n, Relu()); }

extern "C" __global__ void gelu_erf_f32(const float* __restrict__ a, float* __restrict__ b, i64 n)
{ map_f4(a, a, a, b, n, GeluErf()); }

extern "C" __global__ void gelu_tanh_f32(const float* __restrict__ a, float* __restrict__ b, i64 n)
{ map_f4(a, a, a, b, n, GeluTanh()); }

extern "C" __global__ void fma_relu_f32(const float* __restrict__ a, const float* __restrict__ b,
                                        const float* __restrict__ c, float* __restrict__ out, i64 n)
{ map_f4(a, b, c, out, n, FmaRelu()); }

// The deliberately naive variant: one float per thread, 4-byte accesses.
extern "C" __global__ void add_f32_scalar(const float* __restrict__ a, const float* __restrict__ b,
                                          float* __restrict__ c, i64 n)
{
    const i64 i = (i64)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) c[i] = a[i] + b[i];
}

// out[r, j] = x[r, j] + bias[j] (then ReLU when RELU), x row-major rows x cols.
// Grid: x over columns (W consecutive columns per thread), y over groups of RPB rows (grid-stride in y, as gridDim.y
// is capped at 65535). Each thread loads its bias once and reuses it for all its rows; the RPB row loads are
// independent, so they are in flight together.
#define RPB 2

template <bool RELU>
__device__ __forceinline__ float4 bias_op(float4 v, float4 b)
{
    v.x += b.x; v.y += b.y; v.z += b.z; v.w += b.w;
    if (RELU) { v.x = fmaxf(v.x, 0.0f); v.y = fmaxf(v.y, 0.0f); v.z = fmaxf(v.z, 0.0f); v.w = fmaxf(v.w, 0.0f); }
    return v;
}

template <bool RELU>
__device__ __forceinline__ float bias_op(float v, float b)
{
    v += b;
    return RELU ? fmaxf(v, 0.0f) : v;
}

// T = float4 needs cols % 4 == 0 and 16-byte aligned pointers (the launcher checks); T = float works always.
template <class T, bool RELU>
__device__ __forceinline__ void bias_rows(const float* __restrict__ x, const float* __restrict__ bias,
                                          float* __restrict__ out, i64 rows, i64 cols)
{
    const i64 w = cols / (sizeof(T) / sizeof(float));   // row length in units of T
    const i64 j = (i64)blockIdx.x * blockDim.x + threadIdx.x;
    if (j >= w) return;
    const T* __restrict__ xt = reinterpret_cast<const T*>(x);
    T* __restrict__ ot = reinterpret_cast<T*>(out);
    const T b = reinterpret_cast<const T*>(bias)[j];
    for (i64 r0 = (i64)blockIdx.y * RPB; r0 < rows; r0 += (i64)gridDim.y * RPB) {
        T v[RPB];
#pragma unroll
        for (int k = 0; k < RPB; ++k)
            if (r0 + k < rows) v[k] = xt[(r0 + k) * w + j];
#pragma unroll
        for (int k = 0; k < RPB; ++k)
            if (r0 + k < rows) ot[(r0 + k) * w + j] = bias_op<RELU>(v[k], b);
    }
}

extern "C" __global__ void bias_add_f4(const float* __restrict__ x, const float* __restrict__ bias,
                                       float* __restrict__ out, i64 rows, i64 cols)
{ bias_rows<float4, false>(x, bias, out, rows, cols); }

extern "C" __global__ void bias_add_f1(const float* __restrict__ x, const float* __restrict__ bias,
                                       float* __restrict__ out, i64 rows, i64 cols)
{ bias_rows<float, false>(x, bias, out, rows, cols); }

extern "C" __global__ void bias_add_relu_f4(const float* __restrict__ x, const float* __restrict__ bias,
                                            float* __restrict__ out, i64 rows, i64 cols)
{ bias_rows<float4, true>(x, bias, out, rows, cols); }

extern "C" __global__ void bias_add_relu_f1(const float* __restrict__ x, const float* __restrict__ bias,
                                            float* __restrict__ out, i64 rows, i64 cols)
{ bias_rows<float, true>(x, bias, out, rows, cols); }
