"""The launch floor, the one-element latency, the stream probe and the reduction probe that `roofline sweep` needs
for its models: an empty kernel, a one-element kernel, a small streaming kernel on every SM with and without block
reductions, timed like every kernel (graph replay) on the GPU, or the NumPy backend's empty-call floor.

It exists because `roofline sweep` uses these and nothing else of the calibration, so they stand apart from
calibrate() and its figures. CuPy is reached only through the backend object passed in.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from roofline.measurement.calibrate.plan import load_module, median
from roofline.measurement.policy import MeasurePolicy


def launch_overheads(backend: Any, policy: MeasurePolicy, sets: int = 4096) -> dict[str, Any]:
    """Seconds per launch, timed like every kernel (graph replay): an empty kernel (the launch floor) and a
    one-element kernel that loads one float from a line not in L2 and stores one (launch + one round trip).
    Both are checked: the noop must not have written its flag, every one_element set must hold src + 1."""
    cp, info = backend.cp, backend.info
    module = load_module(backend)
    try:
        flag = cp.zeros(32, dtype=cp.int32)
        noop = module.get_function("noop")

        def run_noop() -> None:
            noop((1,), (32,), (flag, np.int32(0)))

        floor = backend.time_runs(run_noop, [{}], policy)
        if int(cp.count_nonzero(flag).get()) != 0:
            raise RuntimeError("the empty kernel wrote to its flag")

        l2 = int(info.get("l2_size") or (64 << 20))
        stride = max(64 << 10, -(-4 * l2 // sets) // 4096 * 4096 + 4096)  # bytes between sets: ≥ 4 × L2 in all
        stride_el = stride // 4
        src = cp.arange(sets * stride_el, dtype=cp.float32) % 1024
        dst = cp.full(sets * stride_el, np.nan, dtype=cp.float32)
        one = module.get_function("one_element")
        buffers = [{"src": src[i * stride_el:], "dst": dst[i * stride_el:]} for i in range(sets)]

        def run_one(src: Any, dst: Any) -> None:
            one((1,), (32,), (src, dst))

        single = backend.time_runs(run_one, buffers, policy)
        backend.synchronize()
        got = dst[::stride_el][:sets]
        want = src[::stride_el][:sets] + 1
        if not bool(cp.all(got == want).get()):
            raise RuntimeError("the one-element kernel did not write src + 1 in every set")
    finally:
        backend.release()
    t_floor, t_one = median(floor.samples), median(single.samples)
    return {
        "launch_floor": t_floor,
        "one_element": t_one,
        "kernel_latency": max(0.0, t_one - t_floor),
        "launch_floor_timing": floor.mode,
        "one_element_timing": single.mode,
        "one_element_sets": sets,
        "one_element_footprint": sets * stride,
    }


STREAM_PROBE = r"""
extern "C" __global__ void stream_probe(const float4* __restrict__ src, float4* __restrict__ dst)
{
    const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    float4 v = src[i];
    v.x += 1.0f; v.y += 1.0f; v.z += 1.0f; v.w += 1.0f;
    dst[i] = v;
}
"""
PROBE_THREADS = 32  # one warp per SM: every SM engaged, and the probe's own bytes (135 kB on an H200) stay small


def _rotating(backend: Any, policy: MeasurePolicy, code: str, name: str, threads: int, min_sets: int,
              extra: tuple = ()) -> dict[str, Any]:
    """Median seconds per launch of kernel `name` (one block of `threads` per SM, a float4 loaded and stored per
    thread) over rotating sets of two arrays that each span at least 4 × L2, so every launch reads lines not in L2
    and its stores evict dirty ones, as a streaming kernel's do. Checked: every element of dst must be src + 1."""
    cp, info = backend.cp, backend.info
    sms = int(info.get("sm_count") or 0)
    if sms < 1:
        raise RuntimeError("the device reports no SM count")
    l2 = int(info.get("l2_size") or (64 << 20))
    per_set = sms * threads * 4  # floats per set and array
    sets = max(min_sets, -(-4 * l2 // (per_set * 4)))
    try:
        kernel = cp.RawModule(code=code).get_function(name)
        src = (cp.arange(sets * per_set, dtype=cp.int32) % 1024).astype(cp.float32)
        dst = cp.full(sets * per_set, np.nan, dtype=cp.float32)
        buffers = [{"src": src[i * per_set:(i + 1) * per_set], "dst": dst[i * per_set:(i + 1) * per_set]}
                   for i in range(sets)]

        def run(src: Any, dst: Any) -> None:
            kernel((sms,), (threads,), (src, dst) + extra)

        timing = backend.time_runs(run, buffers, policy)
        backend.synchronize()
        if not bool(cp.all(dst == src + 1).get()):
            raise RuntimeError(f"the {name} kernel did not write src + 1 everywhere")
        del src, dst, buffers
    finally:
        backend.release()
    return {"time": median(timing.samples), "bytes": 2 * per_set * 4, "blocks": sms, "sm_count": sms,
            "threads_per_block": threads, "sets": sets, "footprint": 2 * sets * per_set * 4, "timing": timing.mode}


def stream_probe(backend: Any, policy: MeasurePolicy, sets: int = 4096) -> dict[str, Any]:
    """Seconds per launch of a small streaming kernel on every SM (one block of one warp per SM; each thread loads
    one float4 and stores one), timed like every kernel (graph replay). It is what any streaming launch pays before
    its first byte and after its last: blocks dispatched to every SM, a load round trip, the store and its
    completion."""
    found = _rotating(backend, policy, STREAM_PROBE, "stream_probe", PROBE_THREADS, sets)
    found["method"] = (f"{found['blocks']} blocks of {PROBE_THREADS} threads, one float4 load and store each, "
                       f"{found['sets']} rotating sets over {found['footprint'] / 2**20:.0f} MiB")
    return found


REDUCTION_PROBE = r"""
#define R_THREADS 256
__device__ __forceinline__ float warp_max(float v) {
    for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
    return v;
}
__device__ __forceinline__ float warp_sum(float v) {
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}
// The block reductions of the bundled row kernels (kernels/norm.cu): warp shuffles, one slot per warp, two barriers.
__device__ float block_max(float v, float* red) {
    v = warp_max(v);
    __syncthreads();
    if (threadIdx.x % 32 == 0) red[threadIdx.x / 32] = v;
    __syncthreads();
    return warp_max(threadIdx.x % 32 < R_THREADS / 32 ? red[threadIdx.x % 32] : -1e30f);
}
__device__ float block_sum(float v, float* red) {
    v = warp_sum(v);
    __syncthreads();
    if (threadIdx.x % 32 == 0) red[threadIdx.x / 32] = v;
    __syncthreads();
    return warp_sum(threadIdx.x % 32 < R_THREADS / 32 ? red[threadIdx.x % 32] : 0.0f);
}
// One float4 load and store per thread, as the stream probe; `chained` = 1 puts a block max and then a block sum of
// the loaded values (dependent: the sum needs the max) between them, as a row softmax does. dst = src + 1 either way
// (the sum of v - max is <= 0), so the reductions cannot be dropped by the compiler and the output is checked.
extern "C" __global__ void __launch_bounds__(R_THREADS) reduction_probe(const float4* __restrict__ src,
                                                                         float4* __restrict__ dst, int chained)
{
    __shared__ float red[32];
    const long long i = (long long)blockIdx.x * R_THREADS + threadIdx.x;
    float4 v = src[i];
    float bump = 1.0f;
    if (chained) {
        const float m = block_max(fmaxf(fmaxf(v.x, v.y), fmaxf(v.z, v.w)), red);
        const float s = block_sum((v.x - m) + (v.y - m) + (v.z - m) + (v.w - m), red);
        bump = s > 0.0f ? 2.0f : 1.0f;
    }
    v.x += bump; v.y += bump; v.z += bump; v.w += bump;
    dst[i] = v;
}
"""
REDUCTION_THREADS = 256  # a block of the size the row kernels use at 1-4 K columns: 8 warps, both levels of the tree


def reduction_probe(backend: Any, policy: MeasurePolicy) -> dict[str, Any]:
    """R, the time of one block-wide reduction that no load overlaps: one block of 256 threads per SM loads a
    float4 per thread and stores it, with and without two dependent block reductions (max, then sum) in between,
    timed like every kernel over rotating sets as the stream probe is. R = (with − without) ÷ 2."""
    base, chained = (_rotating(backend, policy, REDUCTION_PROBE, "reduction_probe", REDUCTION_THREADS, 2,
                               (np.int32(c),)) for c in (0, 1))
    return {"time": chained["time"], "base_time": base["time"], "reductions": 2, "blocks": base["blocks"],
            "threads_per_block": REDUCTION_THREADS, "sets": base["sets"], "timing": chained["timing"],
            "method": f"{base['blocks']} blocks of {REDUCTION_THREADS} threads, a float4 load and store each, a block "
                      f"max and a block sum between them or not, {base['sets']} rotating sets"}


def host_call_floor(backend: Any, policy: MeasurePolicy) -> float:
    """The NumPy backend's floor: the wall time of calling an empty run function through its timing loop."""
    def run() -> None:
        return None

    return median(backend.time_runs(run, [{}], policy).samples)
