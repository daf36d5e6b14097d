"""The size model's machine figures, measured by `roofline calibrate` and written to the measured spec's `model:`
block (roofline.sizes.predict reads them, so `sweep --predict --calibrated FILE` needs no GPU):

- launch floor L, streaming round trip λk, block reduction R: the probes every `roofline sweep` runs at its start
  (roofline.measurement.sweep.launch_costs: an empty kernel, the stream probe, the reduction probe), reduced the way
  the model reduces them (λk = stream probe − L − its bytes at the DRAM bandwidth; R = the reduction probe's
  difference ÷ its reductions);
- block dispatch interval: how often one SM starts a new block, from a launch of blocks that do nothing but write
  their index, at 64 and at 1024 blocks per SM (the difference ÷ the extra blocks per SM); a kernel with one small
  block per row over a million rows is held by it, not by its bytes;
- per-SM bandwidth: k blocks of 1024 threads, one per SM, each copying its own slice of a large random buffer (4 float4
  loads in flight per thread), for k = 1, 2, 4, … and all SMs. Each k is timed at two slice sizes and the bandwidth is
  the slope (the extra bytes over the extra time), so the launch and the round trip cancel; every launch's slices
  rotate over buffers of at least 4 × L2, so no launch finds its data in L2. The copy is checked against its source
  before any time is kept.

Why: one SM can pull only so much by itself, so a launch of fewer blocks than SMs (a row kernel over a few long rows)
streams at what that many SMs reach, which no datasheet gives. The pure parts (the reductions, the curve from the
times, the bounds) are tested on any machine; CuPy is reached only through the backend object passed in.
"""

from __future__ import annotations

from typing import Any, Callable, Mapping, Sequence

from roofline.errors import first_line
from roofline.measurement.calibrate.figures import Figure, failed, measured
from roofline.measurement.calibrate.plan import Plan, median
from roofline.measurement.policy import MeasurePolicy
from roofline.measurement.progress import SILENT, Progress
from roofline.load.specs import MODEL_RANGES
from roofline.measurement.sweep import launch_costs

THREADS = 1024  # SM_COPY_THREADS: one block of 1024 threads fills an SM's thread slots by half on Hopper
UNROLL = 8  # float4 loads each thread has in flight (SM_COPY_UNROLL)
PER_SM = r"""
#define SM_COPY_THREADS 1024
#define SM_COPY_UNROLL 8
// Block b copies per_block float4 from its own slice, starting at offset + b * per_block (the host keeps every
// slice inside the buffer, so no index wraps and no 64-bit division costs the loop anything): blocks <= SMs puts one
// block on each SM. Each thread issues SM_COPY_UNROLL loads before its stores.
extern "C" __global__ void __launch_bounds__(SM_COPY_THREADS)
sm_copy(const float4* __restrict__ src, float4* __restrict__ dst, long long per_block, long long offset) {
    long long base = offset + (long long)blockIdx.x * per_block;
    for (long long i = threadIdx.x; i < per_block; i += SM_COPY_UNROLL * SM_COPY_THREADS) {
        float4 v[SM_COPY_UNROLL];
#pragma unroll
        for (int u = 0; u < SM_COPY_UNROLL; ++u) {
            long long k = i + (long long)u * SM_COPY_THREADS;
            if (k < per_block) v[u] = src[base + k];
        }
#pragma unroll
        for (int u = 0; u < SM_COPY_UNROLL; ++u) {
            long long k = i + (long long)u * SM_COPY_THREADS;
            if (k < per_block) dst[base + k] = v[u];
        }
    }
}
"""
BLOCK_THREADS = 64  # the block probe's blocks: a row kernel's smallest block
BLOCKS_PROBE = r"""
// Thread 0 of every block writes its block index: the only work, so a launch's time is its blocks being started.
extern "C" __global__ void block_probe(int* __restrict__ out) {
    if (threadIdx.x == 0) out[blockIdx.x] = blockIdx.x;
}
"""
BLOCK_METHOD = (f"block_probe kernel (roofline/measurement/calibrate/sizemodel.py): blocks of {BLOCK_THREADS} threads "
                "whose thread 0 writes its block index, timed at 64 and 1024 blocks per SM; interval = the extra time "
                "÷ the extra blocks per SM; every index checked before timing")
METHOD = (f"sm_copy kernel (roofline/measurement/calibrate/sizemodel.py): k blocks of {THREADS} threads, one per SM, "
          f"each copying its own slice of a random float32 buffer ({UNROLL} float4 loads in flight per thread) over "
          "slices rotating through buffers of at least 4 × L2; bandwidth = the extra bytes (read + written) of a "
          "slice twice as long over the extra time, so the launch and the round trip cancel; copy checked against "
          "its source before timing")


def sm_counts(sms: int) -> list[int]:
    """k = 1, 2, 4, … below the SM count, then the SM count itself."""
    ks, k = [], 1
    while k < sms:
        ks.append(k)
        k *= 2
    return ks + [sms]


def bounds(key: str) -> tuple[str, float, float]:
    """(kind, low, high) of a model figure: the range the spec loader holds it to."""
    return MODEL_RANGES[key]


def _checked(key: str, value: float) -> str | None:
    kind, low, high = bounds(key)
    if not low <= value <= high:
        return f"{value:.4g} {'s' if kind == 'time' else 'B/s'} is outside what a GPU has ({low:g} to {high:g})"
    return None


def overhead_figures(overheads: Mapping[str, Any], dram_bandwidth: float | None) -> list[Figure]:
    """model.launch_floor, model.round_trip, model.reduction from the sweep's probe results (launch_costs), reduced
    as the size model reduces them. A probe that failed, or a figure outside its range, is a FAILED figure."""
    out = []
    floor = overheads.get("launch_floor")
    if overheads.get("launch_floor_error") or not floor:
        out.append(failed("model.launch_floor", f"the empty-kernel probe failed: "
                                                f"{overheads.get('launch_floor_error') or 'no time'}"))
        floor = None
    else:
        why = _checked("launch_floor", floor)
        out.append(failed("model.launch_floor", why) if why else measured(
            "model.launch_floor", floor, f"empty kernel, 1 block, per launch in CUDA {overheads.get('launch_floor_timing', '?')} "
                                         "replay", None, {"time": floor}, None))
    stream = overheads.get("stream") or {}
    if stream.get("error") or not stream.get("time"):
        out.append(failed("model.round_trip", f"the stream probe failed: {stream.get('error') or 'no time'}"))
    elif floor is None or not dram_bandwidth:
        out.append(failed("model.round_trip", "needs the launch floor and the DRAM bandwidth, which were not measured"))
    else:
        lam = stream["time"] - floor - stream["bytes"] / dram_bandwidth
        why = _checked("round_trip", lam) if lam > 0 else f"the stream probe left {lam * 1e9:.0f} ns after L and its bytes"
        out.append(failed("model.round_trip", why) if why else measured(
            "model.round_trip", lam, f"stream probe ({stream.get('method', '?')}) {stream['time'] * 1e9:.0f} ns per "
                                     f"launch, minus the launch floor and its {stream['bytes']:.4g} B at the DRAM bandwidth",
            None, dict(stream), None))
    probe = overheads.get("reduction") or {}
    if probe.get("error") or not probe.get("time") or not probe.get("base_time") or not probe.get("reductions"):
        out.append(failed("model.reduction", f"the reduction probe failed: {probe.get('error') or 'no time'}"))
    else:
        r = (probe["time"] - probe["base_time"]) / probe["reductions"]
        why = _checked("reduction", r) if r > 0 else f"the reduction probe measured {r * 1e9:.0f} ns per reduction"
        out.append(failed("model.reduction", why) if why else measured(
            "model.reduction", r, f"reduction probe ({probe.get('method', '?')}): {probe['time'] * 1e9:.0f} ns with "
                                  f"{probe['reductions']} block reductions, {probe['base_time'] * 1e9:.0f} ns without, "
                                  "the difference per reduction", None, dict(probe), None))
    return out


def curve_from_times(points: Sequence[Mapping[str, Any]], dram_bandwidth: float | None) -> Figure:
    """model.sm_bandwidth (one SM alone) with the whole curve in details['curve'], from the timed points
    {sms, bytes_short, time_short, bytes_long, time_long}: bandwidth = Δbytes / Δtime. A point whose long slice was
    not slower, or whose bandwidth is beyond what a DRAM stream reaches (1.5 × the DRAM bandwidth), fails the figure."""
    curve = []
    for p in points:
        dt = p["time_long"] - p["time_short"]
        if dt <= 0:
            return failed("model.sm_bandwidth", f"{p['sms']} SMs: the longer slice was not slower "
                                                f"({p['time_short'] * 1e6:.2f} µs, then {p['time_long'] * 1e6:.2f} µs)",
                          METHOD)
        bw = (p["bytes_long"] - p["bytes_short"]) / dt
        if dram_bandwidth and bw > 1.5 * dram_bandwidth:
            return failed("model.sm_bandwidth", f"{p['sms']} SMs: {bw / 1e12:.2f} TB/s is over 1.5 × the DRAM "
                                                f"bandwidth; not a DRAM stream", METHOD)
        curve.append({"sms": int(p["sms"]), "bandwidth": bw})
    if not curve:
        return failed("model.sm_bandwidth", "no point was measured", METHOD)
    one = curve[0]["bandwidth"] / curve[0]["sms"]
    why = _checked("sm_bandwidth", one)
    if why is None and dram_bandwidth and one > dram_bandwidth:
        why = "one SM faster than the whole GPU's DRAM bandwidth"
    if why:
        return failed("model.sm_bandwidth", why, METHOD)
    return measured("model.sm_bandwidth", one, METHOD, None, {"curve": curve, "points": [dict(p) for p in points]},
                    None)


def interval_from_times(sms: int, few: int, many: int, time_few: float, time_many: float) -> Figure:
    """model.block_interval from the block probe at `few` and `many` blocks per SM: the extra time per extra block
    per SM (the launch and the round trip cancel)."""
    extra = time_many - time_few
    if extra <= 0:
        return failed("model.block_interval", f"{many} blocks per SM were not slower than {few} "
                                              f"({time_few * 1e6:.2f} µs, then {time_many * 1e6:.2f} µs)", BLOCK_METHOD)
    value = extra / (many - few)
    why = _checked("block_interval", value)
    if why:
        return failed("model.block_interval", why, BLOCK_METHOD)
    return measured("model.block_interval", value, BLOCK_METHOD, None,
                    {"sms": sms, "few": few, "many": many, "time_few": time_few, "time_many": time_many}, None)


def block_interval(backend: Any, policy: MeasurePolicy, few: int = 64, many: int = 1024) -> Figure:
    """The block probe on the GPU (see interval_from_times); a wrong index fails the figure."""
    cp = backend.cp
    sms = int(backend.info.get("sm_count") or 0)
    if not sms:
        return failed("model.block_interval", "the device reports no SM count", BLOCK_METHOD)
    kernel = cp.RawKernel(BLOCKS_PROBE, "block_probe")
    times = {}
    for per_sm in (few, many):
        grid = per_sm * sms
        out = cp.full(grid, -1, dtype=cp.int32)
        kernel((grid,), (BLOCK_THREADS,), (out,))
        backend.synchronize()
        if not bool(cp.array_equal(out, cp.arange(grid, dtype=cp.int32))):
            return failed("model.block_interval", f"{grid} blocks: some block did not write its index", BLOCK_METHOD)
        timing = backend.time_runs(lambda out=out, grid=grid: kernel((grid,), (BLOCK_THREADS,), (out,)), [{}],
                                   policy)
        times[per_sm] = median(timing.samples)
    return interval_from_times(sms, few, many, times[few], times[many])


def size_model_figures(backend: Any, plan: Plan, dram_bandwidth: float | None,
                       progress: Progress = SILENT) -> list[Figure]:
    """Every figure of the `model:` block, in order: launch floor, round trip, reduction (the sweep's probes), then
    per-SM bandwidth and the block dispatch interval. Failures are Figures (never raised)."""
    policy = plan.policy()
    quick = MeasurePolicy(min_time=min(policy.min_time, 0.1), min_repeats=policy.min_repeats, seed=policy.seed)
    progress.start("launch overheads")
    overheads = launch_costs(backend, policy)
    figures = overhead_figures(overheads, dram_bandwidth)
    progress.finish("launch overheads", "OK" if all(f.ok for f in figures) else "FAILED")
    progress.start("per-SM bandwidth")
    try:
        points = per_sm_points(backend, plan, quick)
        figures.append(curve_from_times(points, dram_bandwidth))
    except Exception as exc:  # noqa: BLE001 - reported as a FAILED figure, like every probe
        figures.append(failed("model.sm_bandwidth", f"{type(exc).__name__}: {first_line(exc, 300)}", METHOD))
    progress.finish("per-SM bandwidth", figures[-1].status)
    progress.start("block dispatch")
    try:
        figures.append(block_interval(backend, quick))
    except Exception as exc:  # noqa: BLE001 - reported as a FAILED figure, like every probe
        figures.append(failed("model.block_interval", f"{type(exc).__name__}: {first_line(exc, 300)}", BLOCK_METHOD))
    progress.finish("block dispatch", figures[-1].status)
    return figures


def per_sm_points(backend: Any, plan: Plan, policy: MeasurePolicy) -> list[dict[str, Any]]:
    """The timed points of the per-SM curve on the GPU (see the module docstring). Raises when a copy is wrong."""
    cp, info = backend.cp, backend.info
    sms = int(info.get("sm_count") or 0)
    if not sms:
        raise RuntimeError("the device reports no SM count")
    l2 = int(info.get("l2_size") or 64 << 20)
    per_block = plan.sm_probe_bytes // 16  # float4 in the short slice; the long one is twice that
    total = max(4 * l2 // 16, 2 * per_block * sms)  # float4 per buffer: every launch's slices cold
    kernel = cp.RawKernel(PER_SM, "sm_copy")
    rng = cp.random.default_rng(1)
    src = rng.random(total * 4, dtype=cp.float32)
    dst = cp.zeros(total * 4, dtype=cp.float32)
    points = []
    for k in sm_counts(sms):
        row: dict[str, Any] = {"sms": k}
        for label, n in (("short", per_block), ("long", 2 * per_block)):
            dst.fill(0)
            kernel((k,), (THREADS,), (src, dst, cp.int64(n), cp.int64(0)))
            backend.synchronize()
            moved = min(k * n, total) * 4
            if not bool(cp.array_equal(src[:moved], dst[:moved])):
                raise RuntimeError(f"sm_copy with {k} blocks of {n} float4: the copy differs from its source")
            step = k * n
            sets = [{"offset": i * step} for i in range(max(1, min(64, total // step)))]  # each inside the buffer
            run: Callable[..., None] = lambda offset, n=n: kernel(  # noqa: E731 - one launch per timed run
                (k,), (THREADS,), (src, dst, cp.int64(n), cp.int64(offset)))
            timing = backend.time_runs(run, sets, policy)
            row[f"bytes_{label}"] = 2 * 16 * k * n  # read + written
            row[f"time_{label}"] = median(timing.samples)
        points.append(row)
    del src, dst
    return points
