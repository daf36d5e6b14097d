"""L2 read-bandwidth variants beside calibrate's shipped l2_read, over working sets, on one GPU (issue 21).

Why: the shipped probe read 8.7 TB/s at 1-4 MiB on the H200 (2026-12-01), while RRZE-HPC gpu-benches'
gpu-l2-cache (each block of 1024 threads reads its own 512 kB slice of `blockRun` slices with 8-byte loads) prints
13.5 TB/s at 1.5 MB and 10.2-10.5 TB/s at 4-8 MB on an H200. Variants:

  l2_read     the shipped probe (kernels.cu): block b reads slice b mod S (512 KiB, contiguous), 1024
              threads, eight 16-byte ld.global.cg loads in flight per thread
  slices_nc   the same with ld.global.nc (the read-only path, as `const __restrict__` compiles to)
  rrze        RRZE's kernel as published: rows of blockRun × 2048 8-byte words, block b reads its 2048-word chunk of
              each of 32 rows, plain (L1-cacheable) loads, 1024 threads

The first run (2026-12-01, H200) also timed the probe it replaced, a grid-stride walk over the whole buffer with
256-thread blocks: 8.88, 8.47, 8.33, 7.68, 7.84 TB/s at 1.5, 4, 8, 16, 32 MiB (ld.global.ca and .nc the same
from 4 MiB, L1 hits at 1.5 MiB), against 12.79, 10.69, 8.86, 8.60, 8.47 for the slice layout now shipped.

Every variant's per-thread sums are checked against the host (every word read the expected number of times) before
it is timed. Prints one table: TB/s per variant and working set. Run: python3 benchmarks/l2_variants.py
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from event_timing import timed  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
SLICE = 512 << 10


def source() -> str:
    base = (ROOT / "roofline" / "kernels.cu").read_text()
    extra = r'''
__device__ __forceinline__ uint4 load_nc_v4(const uint4* p)
{
    uint4 v;
    asm volatile("ld.global.nc.v4.u32 {%0, %1, %2, %3}, [%4];"
                 : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "l"(p));
    return v;
}
'''
    out = base + extra
    slices = r'''
template <int MODE>
__device__ __forceinline__ uint4 ld(const uint4* p) { return MODE == 0 ? load_cg_v4(p) : load_nc_v4(p); }

template <int MODE>
__device__ void slices(const uint4* __restrict__ buf, int nslices, int vecs, unsigned* __restrict__ out)
{
    // block b reads slice b mod nslices (vecs 16-byte vectors, contiguous), 1024 threads, 8 loads in flight
    const uint4* s = buf + (long long)(blockIdx.x % nslices) * vecs;
    unsigned acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    for (int i = threadIdx.x; i < vecs; i += 8 * 1024) {
        uint4 x[8];
#pragma unroll
        for (int k = 0; k < 8; ++k) x[k] = ld<MODE>(s + i + k * 1024);
#pragma unroll
        for (int k = 0; k < 8; ++k) acc[k] += word_sum(x[k]);
    }
    unsigned sum = 0;
#pragma unroll
    for (int k = 0; k < 8; ++k) sum += acc[k];
    out[(long long)blockIdx.x * 1024 + threadIdx.x] = sum;
}
extern "C" __global__ void __launch_bounds__(1024) slices_nc(const uint4* b, int n, int v, unsigned* o) { slices<1>(b, n, v, o); }
'''
    rrze = r'''
extern "C" __global__ void __launch_bounds__(1024) rrze(const uint2* __restrict__ B, int blockRun, unsigned* out)
{
    unsigned acc = 0;
    for (int i = 0; i < 32; i++) {
        int idx = (blockDim.x * blockRun * i + (blockIdx.x % blockRun) * 1024) * 2 + threadIdx.x;
        uint2 a = B[idx], b = B[idx + 1024];
        acc += a.x + a.y + b.x + b.y;
    }
    out[(long long)blockIdx.x * 1024 + threadIdx.x] = acc;
}
'''
    return out + slices + rrze


def main() -> None:
    import cupy as cp

    dev = cp.cuda.runtime.getDeviceProperties(0)
    sms = dev["multiProcessorCount"]
    l2 = dev["l2CacheSize"]
    mod = cp.RawModule(code=source(), options=("--std=c++17",))
    rng = np.random.default_rng(1)
    sets = [3 * SLICE, 8 * SLICE, 16 * SLICE, 32 * SLICE, 64 * SLICE]  # 1.5, 4, 8, 16, 32 MiB
    words = rng.integers(0, 2**32, max(sets) // 4, dtype=np.uint32)
    buf = cp.asarray(words)
    per_launch = 2e9
    rows = []
    print(f"{cp.cuda.runtime.getDeviceProperties(0)['name'].decode()}, {sms} SMs, L2 {l2 / 2**20:.0f} MiB")
    for size in sets:
        row = {"ws": size}
        nslices = size // SLICE
        vecs = SLICE // 16
        for name in ("l2_read", "slices_nc"):
            blocks = max(nslices, round(per_launch / SLICE / nslices) * nslices)
            out = cp.full(blocks * 1024, 0xFFFFFFFF, dtype=cp.uint32)
            k = mod.get_function(name)
            args = (buf, np.int32(nslices), np.int32(vecs), out)
            run = lambda: k((blocks,), (1024,), args)  # noqa: E731
            run()
            cp.cuda.Device().synchronize()
            slice_sums = words[: size // 4].reshape(nslices, -1).sum(axis=1, dtype=np.uint64)
            want = int((blocks // nslices) * slice_sums.sum()) % 2**32
            got = int(out.sum(dtype=cp.uint64).get()) % 2**32
            if got != want:
                row[name] = f"WRONG {got} != {want}"
                continue
            row[name] = blocks * SLICE / timed(cp, run, 0.2)
        blocks = max(nslices, round(per_launch / SLICE / nslices) * nslices)
        out = cp.full(blocks * 1024, 0xFFFFFFFF, dtype=cp.uint32)
        k = mod.get_function("rrze")
        args = (buf, np.int32(nslices), out)
        run = lambda: k((blocks,), (1024,), args)  # noqa: E731
        run()
        cp.cuda.Device().synchronize()
        want = int((blocks // nslices) * int(words[: size // 4].sum(dtype=np.uint64))) % 2**32
        got = int(out.sum(dtype=cp.uint64).get()) % 2**32
        row["rrze"] = blocks * SLICE / timed(cp, run, 0.2) if got == want else f"WRONG {got} != {want}"
        rows.append(row)
    names = ["l2_read", "slices_nc", "rrze"]
    print(f"{'working set':>12} " + " ".join(f"{n:>11}" for n in names) + "   (TB/s, verified)")
    for r in rows:
        cells = [f"{r[n] / 1e12:11.2f}" if isinstance(r[n], float) else f"{r[n]:>11}" for n in names]
        print(f"{r['ws'] / 2**20:9.1f} MiB " + " ".join(cells))


if __name__ == "__main__":
    main()
