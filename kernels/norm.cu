// Row softmax and layer norm over a rows x cols float32 matrix (row-major), one block per row.
// A row is accessed as float4 when cols % 4 == 0 (every row is then 16-byte aligned), else as floats.

#define WARP 32
#define NEG_INF __int_as_float(0xff800000)  // -infinity; NVRTC has no INFINITY macro

__device__ __forceinline__ float warp_max(float v) {
    for (int o = WARP / 2; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
    return v;
}
__device__ __forceinline__ float warp_sum(float v) {
    for (int o = WARP / 2; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}

// Block-wide reductions; every thread gets the result. `red` holds one slot per warp (32 floats).
__device__ float block_max(float v, float* red) {
    int lane = threadIdx.x % WARP, wid = threadIdx.x / WARP, nw = (blockDim.x + WARP - 1) / WARP;
    v = warp_max(v);
    __syncthreads();                      // red may still be read by a previous reduction
    if (lane == 0) red[wid] = v;
    __syncthreads();
    v = lane < nw ? red[lane] : NEG_INF;  // warps that do not exist count as -inf, never 0
    return warp_max(v);
}
__device__ float block_sum(float v, float* red) {
    int lane = threadIdx.x % WARP, wid = threadIdx.x / WARP, nw = (blockDim.x + WARP - 1) / WARP;
    v = warp_sum(v);
    __syncthreads();
    if (lane == 0) red[wid] = v;
    __syncthreads();
    v = lane < nw ? red[lane] : 0.0f;
    return warp_sum(v);
}

__device__ __forceinline__ float4 ld4(const float* p, long long i) {
    return reinterpret_cast<const float4*>(p)[i];
}
__device__ __forceinline__ void st4(float* p, long long i, float4 v) {
    reinterpret_cast<float4*>(p)[i] = v;
}
__device__ __forceinline__ float max4(float4 v) { return fmaxf(fmaxf(v.x, v.y), fmaxf(v.z, v.w)); }
__device__ __forceinline__ float sum4(float4 v) { return (v.x + v.y) + (v.z + v.w); }

// ---------------------------------------------------------------------------------------------
// Fused softmax: the row is read once from DRAM into shared memory (dynamic, cols floats), then
// max, exp-and-sum and scale all work on the on-chip copy. Threads that hold no element start the
// max at -inf. `cached` = 0 is the fallback for rows larger than shared memory: the row is re-read
// (from L2 when it fits) instead of cached.
extern "C" __global__ void softmax_fused(const float* __restrict__ x, float* __restrict__ y,
                                         int cols, int vec, int cached) {
    extern __shared__ float4 srow4[];
    float* srow = reinterpret_cast<float*>(srow4);
    __shared__ float red[WARP];
    const long long base = (long long)blockIdx.x * cols;
    const float* xr = x + base;
    float* yr = y + base;
    float m = NEG_INF;
    if (vec) {
        const int n4 = cols / 4;
#pragma unroll 4
        for (int i = threadIdx.x; i < n4; i += blockDim.x) {
            float4 v = ld4(xr, i);
            if (cached) srow4[i] = v;
            m = fmaxf(m, max4(v));
        }
        m = block_max(m, red);
        float s = 0.0f;
#pragma unroll 4
        for (int i = threadIdx.x; i < n4; i += blockDim.x) {
            float4 v = cached ? srow4[i] : ld4(xr, i);
            v.x = __expf(v.x - m); v.y = __expf(v.y - m); v.z = __expf(v.z - m); v.w = __expf(v.w - m);
            if (cached) srow4[i] = v;
            s += sum4(v);
        }
        const float inv = 1.0f / block_sum(s, red);
#pragma unroll 4
        for (int i = threadIdx.x; i < n4; i += blockDim.x) {
            float4 v;
            if (cached) v = srow4[i];
            else { v = ld4(xr, i); v.x = __expf(v.x - m); v.y = __expf(v.y - m); v.z = __expf(v.z - m); v.w = __expf(v.w - m); }
            v.x *= inv; v.y *= inv; v.z *= inv; v.w *= inv;
            st4(yr, i, v);
        }
    } else {
        for (int i = threadIdx.x; i < cols; i += blockDim.x) {
            float v = xr[i];
            if (cached) srow[i] = v;
            m = fmaxf(m, v);
        }
        m = block_max(m, red);
        float s = 0.0f;
        for (int i = threadIdx.x; i < cols; i += blockDim.x) {
            float v = __expf((cached ? srow[i] : xr[i]) - m);
            if (cached) srow[i] = v;
            s += v;
        }
        const float inv = 1.0f / block_sum(s, red);
        for (int i = threadIdx.x; i < cols; i += blockDim.x)
            yr[i] = (cached ? srow[i] : __expf(xr[i] - m)) * inv;
    }
}

// ---------------------------------------------------------------------------------------------
// Pipeline stages (softmax_5pass, layernorm_3pass, layernorm_2pass). One block per row.

// op 0: out[r] = max of row r; op 1: out[r] = sum of row r;
// op 2: out[r] = mean of row r; op 3: out[r] = 1/sqrt(mean((x - aux[r])^2) + eps), aux = the row means.
extern "C" __global__ void row_reduce(const float* __restrict__ x, const float* __restrict__ aux,
                                      float* __restrict__ out, int cols, int vec, int op, float eps) {
    __shared__ float red[WARP];
    const long long r = blockIdx.x;
    const float* xr = x + r * cols;
    const float c = op == 3 ? aux[r] : 0.0f;
    float a = op == 0 ? NEG_INF : 0.0f;
    if (vec) {
        const int n4 = cols / 4;
#pragma unroll 4
        for (int i = threadIdx.x; i < n4; i += blockDim.x) {
            float4 v = ld4(xr, i);
            if (op == 0) a = fmaxf(a, max4(v));
            else if (op == 3) {
                v.x -= c; v.y -= c; v.z -= c; v.w -= c;
                a += (v.x * v.x + v.y * v.y) + (v.z * v.z + v.w * v.w);
            } else a += sum4(v);
        }
    } else {
        for (int i = threadIdx.x; i < cols; i += blockDim.x) {
            float v = xr[i];
            if (op == 0) a = fmaxf(a, v);
            else if (op == 3) a += (v - c) * (v - c);
            else a += v;
        }
    }
    a = op == 0 ? block_max(a, red) : block_sum(a, red);
    if (threadIdx.x == 0) {
        if (op == 2) a /= cols;
        if (op == 3) a = rsqrtf(a / cols + eps);
        out[r] = a;
    }
}

// op 0: y = x - v[r]; op 1: y = exp(x); op 2: y = x / v[r]. y may alias x.
__device__ __forceinline__ float rmap(float x, float v, int op) {
    return op == 0 ? x - v : (op == 1 ? __expf(x) : x * v);
}
extern "C" __global__ void row_map(const float* x, const float* __restrict__ vr, float* y,
                                   int cols, int vec, int op) {
    const long long base = (long long)blockIdx.x * cols;
    float v = op == 1 ? 0.0f : vr[blockIdx.x];
    if (op == 2) v = 1.0f / v;
    if (vec) {
        const int n4 = cols / 4;
#pragma unroll 4
        for (int i = threadIdx.x; i < n4; i += blockDim.x) {
            float4 a = ld4(x + base, i);
            a.x = rmap(a.x, v, op); a.y = rmap(a.y, v, op); a.z = rmap(a.z, v, op); a.w = rmap(a.w, v, op);
            st4(y + base, i, a);
        }
    } else {
        for (int i = threadIdx.x; i < cols; i += blockDim.x) y[base + i] = rmap(x[base + i], v, op);
    }
}

// Welford over one row: each thread keeps (count, mean, M2) of its elements, then the partial
// results are merged (Chan et al.) across the warp and across warps. Writes mean and 1/std.
__device__ __forceinline__ void welford_merge(float& n, float& m, float& m2, float nb, float mb, float m2b) {
    float nn = n + nb;
    if (nn == 0.0f) return;
    float d = mb - m, fb = nb / nn;
    m += d * fb;
    m2 += m2b + d * d * n * fb;
    n = nn;
}
__device__ __forceinline__ void welford_add(float& n, float& m, float& m2, float v) {
    n += 1.0f;
    float d = v - m;
    m += d / n;
    m2 += d * (v - m);
}
extern "C" __global__ void layernorm_welford(const float* __restrict__ x, float* __restrict__ mean,
                                             float* __restrict__ rstd, int cols, int vec, float eps) {
    __shared__ float sn[WARP], sm[WARP], sm2[WARP];
    const long long r = blockIdx.x;
    const float* xr = x + r * cols;
    float n = 0.0f, m = 0.0f, m2 = 0.0f;
    if (vec) {
        const int n4 = cols / 4;
#pragma unroll 4
        for (int i = threadIdx.x; i < n4; i += blockDim.x) {
            float4 v = ld4(xr, i);
            welford_add(n, m, m2, v.x); welford_add(n, m, m2, v.y);
            welford_add(n, m, m2, v.z); welford_add(n, m, m2, v.w);
        }
    } else {
        for (int i = threadIdx.x; i < cols; i += blockDim.x) welford_add(n, m, m2, xr[i]);
    }
    for (int o = WARP / 2; o > 0; o >>= 1) {
        float nb = __shfl_xor_sync(0xffffffffu, n, o), mb = __shfl_xor_sync(0xffffffffu, m, o);
        float m2b = __shfl_xor_sync(0xffffffffu, m2, o);
        welford_merge(n, m, m2, nb, mb, m2b);
    }
    const int lane = threadIdx.x % WARP, wid = threadIdx.x / WARP, nw = (blockDim.x + WARP - 1) / WARP;
    if (lane == 0) { sn[wid] = n; sm[wid] = m; sm2[wid] = m2; }
    __syncthreads();
    if (wid == 0) {
        n = lane < nw ? sn[lane] : 0.0f; m = lane < nw ? sm[lane] : 0.0f; m2 = lane < nw ? sm2[lane] : 0.0f;
        for (int o = WARP / 2; o > 0; o >>= 1) {
            float nb = __shfl_xor_sync(0xffffffffu, n, o), mb = __shfl_xor_sync(0xffffffffu, m, o);
            float m2b = __shfl_xor_sync(0xffffffffu, m2, o);
            welford_merge(n, m, m2, nb, mb, m2b);
        }
        if (lane == 0) { mean[r] = m; rstd[r] = rsqrtf(m2 / cols + eps); }
    }
}

// y = (x - mean[r]) * rstd[r] * gamma + beta
extern "C" __global__ void layernorm_apply(const float* __restrict__ x, const float* __restrict__ mean,
                                           const float* __restrict__ rstd, const float* __restrict__ gamma,
                                           const float* __restrict__ beta, float* __restrict__ y,
                                           int cols, int vec) {
    const long long base = (long long)blockIdx.x * cols;
    const float m = mean[blockIdx.x], s = rstd[blockIdx.x];
    if (vec) {
        const int n4 = cols / 4;
#pragma unroll 4
        for (int i = threadIdx.x; i < n4; i += blockDim.x) {
            float4 v = ld4(x + base, i), g = ld4(gamma, i), b = ld4(beta, i);
            v.x = (v.x - m) * s * g.x + b.x; v.y = (v.y - m) * s * g.y + b.y;
            v.z = (v.z - m) * s * g.z + b.z; v.w = (v.w - m) * s * g.w + b.w;
            st4(y + base, i, v);
        }
    } else {
        for (int i = threadIdx.x; i < cols; i += blockDim.x)
            y[base + i] = (x[base + i] - m) * s * gamma[i] + beta[i];
    }
}

// Fused layer norm: the row is cached in shared memory (or re-read when `cached` = 0), the mean and
// the variance are exact two-pass sums over the on-chip copy, then one normalise-and-write pass.
extern "C" __global__ void layernorm_fused(const float* __restrict__ x, const float* __restrict__ gamma,
                                           const float* __restrict__ beta, float* __restrict__ y,
                                           int cols, int vec, int cached, float eps) {
    extern __shared__ float4 srow4[];
    float* srow = reinterpret_cast<float*>(srow4);
    __shared__ float red[WARP];
    const long long base = (long long)blockIdx.x * cols;
    const float* xr = x + base;
    float* yr = y + base;
    float s = 0.0f;
    if (vec) {
        const int n4 = cols / 4;
#pragma unroll 4
        for (int i = threadIdx.x; i < n4; i += blockDim.x) {
            float4 v = ld4(xr, i);
            if (cached) srow4[i] = v;
            s += sum4(v);
        }
        const float m = block_sum(s, red) / cols;
        float q = 0.0f;
#pragma unroll 4
        for (int i = threadIdx.x; i < n4; i += blockDim.x) {
            float4 v = cached ? srow4[i] : ld4(xr, i);
            v.x -= m; v.y -= m; v.z -= m; v.w -= m;
            q += (v.x * v.x + v.y * v.y) + (v.z * v.z + v.w * v.w);
        }
        const float rs = rsqrtf(block_sum(q, red) / cols + eps);
#pragma unroll 4
        for (int i = threadIdx.x; i < n4; i += blockDim.x) {
            float4 v = cached ? srow4[i] : ld4(xr, i), g = ld4(gamma, i), b = ld4(beta, i);
            v.x = (v.x - m) * rs * g.x + b.x; v.y = (v.y - m) * rs * g.y + b.y;
            v.z = (v.z - m) * rs * g.z + b.z; v.w = (v.w - m) * rs * g.w + b.w;
            st4(yr, i, v);
        }
    } else {
        for (int i = threadIdx.x; i < cols; i += blockDim.x) {
            float v = xr[i];
            if (cached) srow[i] = v;
            s += v;
        }
        const float m = block_sum(s, red) / cols;
        float q = 0.0f;
        for (int i = threadIdx.x; i < cols; i += blockDim.x) {
            float v = (cached ? srow[i] : xr[i]) - m;
            q += v * v;
        }
        const float rs = rsqrtf(block_sum(q, red) / cols + eps);
        for (int i = threadIdx.x; i < cols; i += blockDim.x)
            yr[i] = ((cached ? srow[i] : xr[i]) - m) * rs * gamma[i] + beta[i];
    }
}

// ---------------------------------------------------------------------------------------------
// Register-resident row kernels (softmax_fused and layernorm_fused when cols % 4 == 0 and the row fits in
// T threads x V float4). Each thread loads its V float4 of the row at once (V independent 16-byte loads in
// flight), keeps them in registers through the reductions, and writes the result: one pass over DRAM, no
// shared-memory copy of the row, no second read. ROW_HINTS = 1 reads x with ld.global.cs and writes y with
// st.global.cs (streaming, evict-first); 0, the default, uses plain loads and stores, which were 2-4 % faster on
// an H200 at 8192 x 8192 (benchmarks/kernel_variants.py, docs/measurements/h200-2026-11-30-kernel-variants-6.txt).
#ifndef ROW_HINTS
#define ROW_HINTS 0
#endif
// LN_PREFETCH = 1 (the default) loads a thread's gamma and beta together with its part of the row where registers
// allow (layernorm_reg_body), so the row's only DRAM round trip is the first; 0 loads them after the two reductions
// (a second round trip), as before (benchmarks/variant_families.py times both).
#ifndef LN_PREFETCH
#define LN_PREFETCH 1
#endif

__device__ __forceinline__ float4 ld_row(const float4* p) {
#if ROW_HINTS
    return __ldcs(p);
#else
    return *p;
#endif
}
__device__ __forceinline__ void st_row(float4* p, float4 v) {
#if ROW_HINTS
    __stcs(p, v);
#else
    *p = v;
#endif
}

template <int T, int V>
__device__ __forceinline__ void row_load(const float4* __restrict__ xr, int n4, float4 (&v)[V]) {
#pragma unroll
    for (int u = 0; u < V; ++u) {
        const int i = threadIdx.x + u * T;
        if (i < n4) v[u] = ld_row(xr + i);
    }
}

// A row held in registers (thread t has float4 t, t + T, ...): block max, exp and block sum, scale, store to yr.
template <int T, int V>
__device__ __forceinline__ void softmax_row_store(float4 (&v)[V], int n4, float* red, float4* __restrict__ yr) {
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
#pragma unroll
    for (int u = 0; u < V; ++u) {
        const int i = threadIdx.x + u * T;
        if (i < n4) {
            v[u].x *= inv; v[u].y *= inv; v[u].z *= inv; v[u].w *= inv;
            st_row(yr + i, v[u]);
        }
    }
}

// A row held in registers: mean, then the exact second pass of the variance over the registers, then normalise,
// scale by gamma, add beta and store to yr. With PRE, gamma and beta are already in g and b; else loaded here.
template <int T, int V, bool PRE>
__device__ __forceinline__ void layernorm_row_store(float4 (&v)[V], const float4 (&g)[V], const float4 (&b)[V],
                                                    const float4* __restrict__ g4, const float4* __restrict__ b4,
                                                    int n4, int cols, float eps, float* red,
                                                    float4* __restrict__ yr) {
    float s = 0.0f;
#pragma unroll
    for (int u = 0; u < V; ++u) if (threadIdx.x + u * T < n4) s += sum4(v[u]);
    const float m = block_sum(s, red) / cols;
    float q = 0.0f;  // sum of squared deviations
#pragma unroll
    for (int u = 0; u < V; ++u) {
        if (threadIdx.x + u * T < n4) {
            v[u].x -= m; v[u].y -= m; v[u].z -= m; v[u].w -= m;
            q += (v[u].x * v[u].x + v[u].y * v[u].y) + (v[u].z * v[u].z + v[u].w * v[u].w);
        }
    }
    const float rs = rsqrtf(block_sum(q, red) / cols + eps);
#pragma unroll
    for (int u = 0; u < V; ++u) {
        const int i = threadIdx.x + u * T;
        if (i < n4) {
            const float4 gu = PRE ? g[u] : __ldg(g4 + i), bu = PRE ? b[u] : __ldg(b4 + i);
            float4 o;
            o.x = v[u].x * rs * gu.x + bu.x; o.y = v[u].y * rs * gu.y + bu.y;
            o.z = v[u].z * rs * gu.z + bu.z; o.w = v[u].w * rs * gu.w + bu.w;
            st_row(yr + i, o);
        }
    }
}

template <int T, int V>
__device__ __forceinline__ void softmax_reg_body(const float* __restrict__ x, float* __restrict__ y, int cols) {
    __shared__ float red[WARP];
    const int n4 = cols / 4;
    const long long base = (long long)blockIdx.x * n4;
    float4 v[V];
    row_load<T, V>(reinterpret_cast<const float4*>(x) + base, n4, v);
    softmax_row_store<T, V>(v, n4, red, reinterpret_cast<float4*>(y) + base);
}

template <int T, int V>
__device__ __forceinline__ void layernorm_reg_body(const float* __restrict__ x, const float* __restrict__ gamma,
                                                   const float* __restrict__ beta, float* __restrict__ y,
                                                   int cols, float eps) {
    __shared__ float red[WARP];
    const int n4 = cols / 4;
    const long long base = (long long)blockIdx.x * n4;
    const float4* g4 = reinterpret_cast<const float4*>(gamma);
    const float4* b4 = reinterpret_cast<const float4*>(beta);
    // gamma and beta loaded with the row, not after the reductions: one DRAM round trip per row, not two. Only where
    // the 8 V extra registers leave at least 1024 threads per SM (T <= 512, V <= 4); beyond, the occupancy lost costs
    // more (T = 1024, V = 2 fell from 3.99 to 2.65 TB/s at 8192 x 8192 on the H200) and V = 8 would spill.
    constexpr bool pre = LN_PREFETCH && T <= 512 && V <= 4;
    float4 v[V], g[V], b[V];
    row_load<T, V>(reinterpret_cast<const float4*>(x) + base, n4, v);
    if (pre) { row_load<T, V>(g4, n4, g); row_load<T, V>(b4, n4, b); }
    layernorm_row_store<T, V, pre>(v, g, b, g4, b4, n4, cols, eps, red, reinterpret_cast<float4*>(y) + base);
}

#define ROW_REG(T, V) \
    extern "C" __global__ void __launch_bounds__(T) softmax_reg_##T##_##V( \
        const float* __restrict__ x, float* __restrict__ y, int cols) { softmax_reg_body<T, V>(x, y, cols); } \
    extern "C" __global__ void __launch_bounds__(T) layernorm_reg_##T##_##V( \
        const float* __restrict__ x, const float* __restrict__ gamma, const float* __restrict__ beta, \
        float* __restrict__ y, int cols, float eps) { layernorm_reg_body<T, V>(x, gamma, beta, y, cols, eps); }
ROW_REG(64, 1)
ROW_REG(128, 1)
ROW_REG(128, 2)
ROW_REG(128, 4)
ROW_REG(256, 2)
ROW_REG(256, 4)
ROW_REG(256, 8)
ROW_REG(512, 4)
ROW_REG(512, 8)
ROW_REG(1024, 2)
ROW_REG(1024, 4)
ROW_REG(1024, 8)
