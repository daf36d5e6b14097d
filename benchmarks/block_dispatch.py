"""How fast an H200 starts blocks (issue 32): is calibrate's block interval (empty 64-thread blocks whose thread 0
writes its index, 64 vs 1024 blocks per SM) the rate real kernels' blocks start at?

    python3 benchmarks/block_dispatch.py          # on the GPU machine, about 30 s

For block sizes 64..1024 threads, three kernels at 64 and 1024 blocks per SM: `index` (calibrate's probe: thread 0
writes the block index), `none` (thread 0 writes only when a runtime flag is set, never here: no store at all),
`copy` (each thread copies one float: a real map kernel's block). Interval = extra time / extra blocks per SM.
Every output is checked before its time counts. Times: cupyx.profiler.benchmark, median of 200 GPU-timed runs.
"""
import cupy as cp
import numpy as np
from cupyx.profiler import benchmark

SRC = r'''
extern "C" __global__ void index_probe(int* out) { if (threadIdx.x == 0) out[blockIdx.x] = blockIdx.x; }
extern "C" __global__ void none_probe(int* out, int flag) { if (flag && threadIdx.x == 0) out[blockIdx.x] = 1; }
extern "C" __global__ void copy_probe(const float* a, float* b) {
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; b[i] = a[i]; }
'''
mod = cp.RawModule(code=SRC)
k_index, k_none, k_copy = (mod.get_function(n) for n in ("index_probe", "none_probe", "copy_probe"))
sms = cp.cuda.runtime.getDeviceProperties(0)["multiProcessorCount"]


def t(f) -> float:
    return float(np.median(benchmark(f, n_repeat=200, n_warmup=20).gpu_times[0]))


print(f"{sms} SMs; interval = (t(1024/SM) - t(64/SM)) / 960, ns per block per SM; GPU-wide G blocks/s = SMs / interval")
print(f"{'threads':>7} {'kernel':>6} {'t64 us':>8} {'t1024 us':>9} {'ns/blk/SM':>10} {'Gblk/s':>7}  check")
for threads in (64, 128, 256, 512, 1024):
    for name in ("index", "none", "copy"):
        times, ok = [], True
        for per in (64, 1024):
            grid = per * sms
            if name == "copy":
                a = cp.random.standard_normal(grid * threads, dtype=cp.float32)
                b = cp.zeros_like(a)
                fn = lambda: k_copy((grid,), (threads,), (a, b))
                fn(); cp.cuda.Device().synchronize()
                ok &= bool(cp.array_equal(a, b))
            else:
                out = cp.full(grid, -1, dtype=cp.int32)
                if name == "index":
                    fn = lambda: k_index((grid,), (threads,), (out,))
                    fn(); cp.cuda.Device().synchronize()
                    ok &= bool(cp.array_equal(out, cp.arange(grid, dtype=cp.int32)))
                else:
                    fn = lambda: k_none((grid,), (threads,), (out, np.int32(0)))
                    fn(); cp.cuda.Device().synchronize()
                    ok &= bool(cp.all(out == -1))
            times.append(t(fn))
        interval = (times[1] - times[0]) / 960
        print(f"{threads:>7} {name:>6} {times[0] * 1e6:8.2f} {times[1] * 1e6:9.2f} {interval * 1e9:10.1f} "
              f"{sms / interval / 1e9:7.2f}  {'ok' if ok else 'WRONG'}")
