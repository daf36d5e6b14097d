"""`roofline calibrate` and `roofline sweep` on the GPU: the measurements behind a measured spec and the sweep model.

Bandwidth and compute peaks go through the same harness as `roofline measure` (bundled kernels, verified against
their NumPy references, CUDA-event / graph timing): copy and triad for DRAM bandwidth, fma_peak / fma_peak_fp64 for
the FP32 / FP64 roofs, cuBLAS through cupy.matmul for the tensor roofs. L2 bandwidth, DRAM latency and the launch
overheads use the small kernels in roofline/calibrate_kernels.cu, each checked before its figure is reported.

CuPy is imported only through the backend (roofline.measure.backend_cupy.import_cupy); this module itself imports
on any machine.
"""

from __future__ import annotations

import contextlib
import statistics
import sys
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Callable, ContextManager, Sequence

import numpy as np

from roofline.calibrate import FAILED, OK, Figure, failed, measured, skipped
from roofline.errors import RooflineError
from roofline.measure.policy import MeasurePolicy

KERNELS_FILE = Path(__file__).resolve().parent.parent / "calibrate_kernels.cu"
LINE = 128  # bytes per pointer-chase slot: one cache line per step
TF32_TOLERANCE = {"rtol": 1e-2, "atol": 1e-2}  # TF32 keeps 10 mantissa bits: ~1e-3 relative per product
BF16_TOLERANCE = {"rtol": 2e-2, "atol": 1e-2}  # bfloat16 output keeps 8 significant bits: ~2e-3 relative
_TF32_COMPUTE_TYPE = 7  # cupy._core._routines_linalg.COMPUTE_TYPE_TF32


@dataclass(frozen=True)
class Plan:
    """Sizes and repeat counts of one calibration. QUICK is for tests and smoke runs."""

    stream_n: int = 2**28  # float32 elements for copy and triad (1 GiB per array)
    matmul_n: int = 8192  # square GEMM for the tensor roofs
    chase_passes: int = 10
    chase_steps: int = 100_000  # dependent loads per timed pass
    chase_min_footprint: int = 1 << 30  # bytes; at least 16 × L2 as well
    l2_bytes_per_launch: float = 2e9
    min_time: float = 0.5  # s of timed runs per harness kernel
    blocks_per_sm: int = 16  # fma_peak grid: 16 blocks of 256 threads per SM (the bundled default on an H200)


FULL = Plan()
QUICK = Plan(stream_n=2**26, matmul_n=4096, chase_passes=5, chase_steps=50_000, chase_min_footprint=1 << 29,
             l2_bytes_per_launch=5e8, min_time=0.2)


def _policy(plan: Plan) -> MeasurePolicy:
    return MeasurePolicy(min_time=plan.min_time, min_repeats=10, max_time=2.0)


def load_module(backend: Any) -> Any:
    """The calibration kernels compiled for this GPU (CuPy RawModule, NVRTC)."""
    code = KERNELS_FILE.read_text(encoding="utf-8")
    return backend.cp.RawModule(code=code, options=("--std=c++17",))


def _median(samples: Sequence[float]) -> float:
    return float(statistics.median(samples))


def _pow2(n: int) -> str:
    return f"2^{n.bit_length() - 1}" if n > 0 and n & (n - 1) == 0 else str(n)


def _timing_text(entry: dict[str, Any]) -> str:
    return f"median of {entry.get('repeats')} runs, CUDA {'graph replay' if entry.get('timing') == 'graph' else 'events'}"


# ---- harness jobs (verified kernels from the bundled catalogue) ---------------------------------------


@dataclass
class Job:
    key: str
    kernel: str
    overrides: dict[str, int]
    tolerance: dict[str, float] | None = None  # replaces the implementation's TOLERANCE (TF32, BF16)
    dtype: str | None = None  # replaces the descriptor's dtype (the FP16 GEMM run in bfloat16)
    around: Callable[[], ContextManager[Any]] | None = None  # wraps the GPU part (TF32 compute type)


def run_jobs(backend: Any, jobs: Sequence[Job], policy: MeasurePolicy,
             progress: Callable[[str], None] = lambda s: None) -> dict[str, dict[str, Any]]:
    """Each job through the harness (prepare_host → measure_kernel); the next job's host inputs and reference are
    made on another thread while the GPU times the current one. Returns key → result entry (status OK or FAILED)."""
    from roofline.expr import compile_expr
    from roofline.kernels import KernelCatalog
    from roofline.measure.harness import measure_kernel, prepare_host
    from roofline.measure.implementation import load_implementation
    from roofline.workload import evaluate

    catalog = {d.name: d for d in KernelCatalog.load().descriptors}
    prepared: list[tuple[Job, Any, Any, Any] | tuple[Job, str]] = []
    for job in jobs:
        d = catalog.get(job.kernel)
        if d is None:
            prepared.append((job, f"the bundled kernel '{job.kernel}' is missing"))
            continue
        if job.dtype is not None:
            d = replace(d, name=f"{d.name}[{job.dtype}]", dtype=job.dtype)
        try:
            work = evaluate(d, {k: compile_expr(str(v)) for k, v in job.overrides.items() if k in d.params})
            impl = load_implementation(d)
            if job.tolerance is not None:
                impl = replace(impl, tolerance=dict(job.tolerance))
            prepared.append((job, d, work, impl))
        except RooflineError as exc:
            prepared.append((job, exc.message))

    results: dict[str, dict[str, Any]] = {}

    def submit(pool: ThreadPoolExecutor, i: int) -> Any:
        item = prepared[i]
        if len(item) == 2:
            return None
        _, d, work, impl = item  # type: ignore[misc]
        return pool.submit(prepare_host, d, work, impl, policy)

    old_interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-4)  # the host thread hands the GIL back quickly to the timing thread
    try:
        with ThreadPoolExecutor(max_workers=1) as pool:
            pending = submit(pool, 0) if prepared else None
            for i, item in enumerate(prepared):
                job = item[0]
                progress(job.key)
                current, pending = pending, (submit(pool, i + 1) if i + 1 < len(prepared) else None)
                if len(item) == 2:
                    results[job.key] = {"status": FAILED, "error": item[1]}  # type: ignore[misc]
                    continue
                _, d, work, impl = item  # type: ignore[misc]
                try:
                    with (job.around() if job.around else contextlib.nullcontext()):
                        entry = measure_kernel(d, work, None, impl, backend, policy, host=current.result)
                except RooflineError as exc:
                    entry = {"status": FAILED, "error": exc.message}
                except Exception as exc:  # noqa: BLE001 - a failed figure is reported, never a crash
                    entry = {"status": FAILED, "error": f"{type(exc).__name__}: {exc}"}
                finally:
                    current = None
                    backend.release()
                entry["params"] = dict(work.params)
                entry.setdefault("bytes", work.bytes)
                entry.setdefault("flops", work.flops)
                results[job.key] = entry
    finally:
        sys.setswitchinterval(old_interval)
    return results


def _ok(entry: dict[str, Any] | None) -> bool:
    return bool(entry) and entry.get("status") == OK and bool(entry.get("time_median"))


def _why(entry: dict[str, Any] | None) -> str:
    if not entry:
        return "not run"
    return str(entry.get("error") or f"status {entry.get('status')}")


def _brief(entry: dict[str, Any]) -> dict[str, Any]:
    keys = ("status", "error", "params", "bytes", "flops", "time_median", "time_min", "time_max", "repeats",
            "achieved_bandwidth", "achieved_flops", "timing", "buffer_sets", "warnings", "gpu_state")
    return {k: entry.get(k) for k in keys if k in entry}


def dram_bandwidth(results: dict[str, dict[str, Any]], plan: Plan) -> Figure:
    field = "memory.bandwidth"
    details = {k: _brief(results[k]) for k in ("copy", "triad") if k in results}
    good = {k: results[k] for k in ("copy", "triad") if _ok(results.get(k))}
    if not good:
        return Figure(field, FAILED, None, "copy and triad", "; ".join(
            f"{k} FAILED: {_why(results.get(k))}" for k in ("copy", "triad")), details)
    best_key = max(good, key=lambda k: good[k]["achieved_bandwidth"])
    best = good[best_key]
    parts = [f"{k} {good[k]['achieved_bandwidth'] / 1e12:.3f} TB/s" for k in ("copy", "triad") if k in good]
    method = (f"{best_key} kernel, {_pow2(plan.stream_n)} float32 elements, bytes read plus written "
              f"({'2' if best_key == 'copy' else '3'} × n × 4 B per run); best of copy and triad ({', '.join(parts)}); "
              f"{_timing_text(best)}")
    note = None
    missing = [k for k in ("copy", "triad") if k not in good]
    if missing:
        note = "; ".join(f"{k} FAILED: {_why(results.get(k))}" for k in missing)
    return measured(field, float(best["achieved_bandwidth"]), method, note, details, best.get("gpu_state"))


def flops_figure(field: str, entry: dict[str, Any] | None, method: str) -> Figure:
    details = _brief(entry) if entry else {}
    if not _ok(entry):
        return Figure(field, FAILED, None, method, _why(entry), details)
    assert entry is not None
    return measured(field, float(entry["achieved_flops"]), f"{method}; {_timing_text(entry)}", None, details,
                    entry.get("gpu_state"))


@contextlib.contextmanager
def tf32_compute_type(cp: Any) -> Any:
    """cuBLAS FP32 GEMMs in TF32 (CuPy's COMPUTE_TYPE_TF32) for the duration, then the previous setting.

    CuPy reads CUPY_TF32 only the first time it needs the float32 compute type, so setting the environment variable
    after import does not apply reliably; the compute type is set directly instead."""
    from cupy._core import _routines_linalg as linalg  # noqa: PLC0415 - a CuPy internal, stable since CuPy 8

    tf32 = getattr(linalg, "COMPUTE_TYPE_TF32", _TF32_COMPUTE_TYPE)
    previous = linalg.get_compute_type(np.float32)
    linalg.set_compute_type(np.float32, tf32)
    try:
        yield
    finally:
        linalg.set_compute_type(np.float32, previous)


def bf16_probe(cp: Any) -> str | None:
    """None when cupy.matmul runs a bfloat16 GEMM on this machine (CuPy 14+ with ml_dtypes), else why it cannot."""
    try:
        import ml_dtypes  # noqa: PLC0415 - optional: CuPy's bfloat16 comes from it
    except ImportError:
        return ("not reachable from CuPy: bfloat16 arrays need the ml_dtypes package (and CuPy 14 or later), "
                "which is not installed")
    try:
        bf16 = np.dtype(ml_dtypes.bfloat16)
        a = cp.asarray(np.full((64, 64), 0.5, dtype=bf16))
        got = cp.asnumpy(cp.matmul(a, a)).astype(np.float32)
        if not np.all(got == 16.0):
            return f"not reachable from CuPy {getattr(cp, '__version__', '?')}: a bfloat16 probe GEMM gave wrong values"
    except Exception as exc:  # noqa: BLE001 - any failure means "not reachable", reported with the reason
        return (f"not reachable from CuPy {getattr(cp, '__version__', '?')}: a bfloat16 matmul raised "
                f"{type(exc).__name__}: {_first_line(exc)}")
    return None


def tf32_figure(entry: dict[str, Any] | None, fp32_peak: float | None, method: str) -> Figure:
    """TF32 counts only when the GEMM ran clearly faster than the FP32 CUDA cores can (else TF32 did not apply)."""
    field = "compute.tf32_tensor"
    fig = flops_figure(field, entry, method)
    if not fig.ok or fp32_peak is None:
        return fig
    assert fig.value is not None
    if fig.value <= 1.2 * fp32_peak:
        return Figure(field, "SKIPPED", None, method,
                      f"TF32 did not apply: the float32 GEMM ran at {fig.value / 1e12:.1f} TFLOP/s, no faster than "
                      f"the FP32 CUDA cores ({fp32_peak / 1e12:.1f}); left out", fig.details)
    return fig


# ---- L2 bandwidth -------------------------------------------------------------------------------------


def l2_bandwidth(backend: Any, module: Any, plan: Plan, policy: MeasurePolicy, seed: int = 20261130) -> Figure:
    field = "caches.l2.bandwidth"
    cp, info = backend.cp, backend.info
    l2 = int(info.get("l2_size") or 0)
    sms = int(info.get("sm_count") or 0)
    if l2 <= 0 or sms <= 0:
        return skipped(field, "the device reports no L2 size or SM count")
    size = max(16 << 10, 1 << ((l2 // 4).bit_length() - 1))  # the largest power of two ≤ L2/4
    n_vec = size // 16
    repeats = max(1, int(round(plan.l2_bytes_per_launch / size)))
    total = repeats * n_vec
    threads = 256
    blocks = sms * max(1, int(info.get("max_threads_per_sm") or 2048) // threads)
    method = (f"l2_read kernel (roofline/calibrate_kernels.cu): {blocks} blocks × {threads} threads read a "
              f"{size / 2**20:.3g} MiB buffer (≤ L2/4) {repeats} times with 16-byte ld.global.cg loads; bytes = buffer "
              "× repeats; result checked (sum of the words)")
    try:
        words = np.random.default_rng(seed).integers(0, 2**32, size // 4, dtype=np.uint32)
        expected = l2_expected_sum(words, repeats)
        buf = cp.asarray(words)
        out = cp.full(blocks * threads, 0xFFFFFFFF, dtype=cp.uint32)
        kernel = module.get_function("l2_read")
        args = (buf, np.int64(n_vec - 1), np.int64(total), out)

        def run() -> None:
            kernel((blocks,), (threads,), args)

        def check() -> str | None:
            got = int(out.sum(dtype=cp.uint64).get()) % 2**32
            return None if got == expected else f"wrong sum: got {got}, expected {expected}"

        run()
        backend.synchronize()
        problem = check()
        if problem:
            return failed(field, f"l2_read: {problem}", method)
        timing = backend.time_runs(run, [{}], policy)
        problem = check()
        if problem:
            return failed(field, f"l2_read after timing: {problem}", method)
    except Exception as exc:  # noqa: BLE001
        return failed(field, f"{type(exc).__name__}: {_first_line(exc)}", method)
    finally:
        backend.release()
    t = _median(timing.samples)
    value = size * repeats / t
    details = {"buffer_bytes": size, "repeats": repeats, "time_median": t, "time_min": min(timing.samples),
               "time_max": max(timing.samples), "runs": timing.repeats, "timing": timing.mode}
    return measured(field, value, f"{method}; median of {timing.repeats} runs, CUDA "
                                  f"{'graph replay' if timing.mode == 'graph' else 'events'}", None, details,
                    timing.gpu_state)


# ---- DRAM latency: single-thread pointer chase --------------------------------------------------------


def chase_order(slots: int, seed: int) -> np.ndarray:
    """A random visiting order of all slots: slot order[i] points to order[i + 1], the last back to order[0]
    (one cycle through every slot, so the walk never repeats before it has seen them all)."""
    return np.random.default_rng(seed).permutation(slots).astype(np.int64)


def fill_chain(xp: Any, chain: Any, order: np.ndarray, base: int) -> None:
    """Write the cycle into `chain` (uint64 words, LINE bytes per slot, at device address `base`): the first word of
    slot order[i] holds the address of slot order[i + 1]. `xp` is cupy (or numpy, in the tests)."""
    order_d = xp.asarray(order)
    targets = xp.roll(order_d, -1).astype(xp.uint64)
    targets *= xp.uint64(LINE)
    targets += xp.uint64(base)
    chain[order_d * (LINE // 8)] = targets


def l2_expected_sum(words: np.ndarray, repeats: int) -> int:
    """What the l2_read kernel's per-thread sums add up to, mod 2^32: every word read `repeats` times."""
    return (repeats * int(words.sum(dtype=np.uint64))) % 2**32


def expected_slot(order: np.ndarray, steps_done: int) -> int:
    """The slot the walk reaches after `steps_done` steps from order[0]."""
    return int(order[steps_done % len(order)])


def dram_latency(backend: Any, module: Any, plan: Plan, seed: int = 20261130) -> Figure:
    field = "memory.latency"
    cp, info = backend.cp, backend.info
    l2 = int(info.get("l2_size") or (64 << 20))
    want = max(16 * l2, plan.chase_min_footprint)
    free = backend.free_bytes() or 0
    footprint = want
    while footprint > max(free, 1) // 2 and footprint > 4 * l2:
        footprint //= 2
    if footprint < 4 * l2 or footprint > max(free, 1) // 2 + 1:
        return failed(field, f"not enough free device memory for a pointer chase over {want / 2**30:.2f} GiB")
    slots = footprint // LINE
    warm = max(1000, plan.chase_steps // 10)
    total_steps = warm + plan.chase_passes * plan.chase_steps
    if total_steps > slots:
        return failed(field, f"{total_steps} steps would revisit the chain of {slots} slots")
    method = (f"pointer_chase kernel (roofline/calibrate_kernels.cu): one thread, dependent 8-byte ld.global.cg "
              f"loads, one {LINE}-byte line per step, a random cycle over {footprint / 2**30:.2f} GiB "
              f"({footprint / l2:.0f}× L2); {plan.chase_passes} timed passes of {plan.chase_steps} steps, each starting "
              "where the previous ended (a new part of the chain every pass), median ns per step by %globaltimer; "
              "final pointer checked against the host's walk")
    try:
        order = chase_order(slots, seed)
        chain = cp.zeros(slots * (LINE // 8), dtype=cp.uint64)
        base = int(chain.data.ptr)
        fill_chain(cp, chain, order, base)
        flush = cp.empty(max(2 * l2, 1 << 20) // 4, dtype=cp.float32)  # evict the chain's last writes from L2
        flush.fill(1.0)
        del flush
        out = cp.zeros(4, dtype=cp.uint64)
        kernel = module.get_function("pointer_chase")
        backend.synchronize()

        address = base + int(order[0]) * LINE
        done = 0
        ns, cycles = [], []
        for p in range(plan.chase_passes + 1):
            steps = warm if p == 0 else plan.chase_steps
            kernel((1,), (1,), (np.uint64(address), np.int64(steps), out))
            backend.synchronize()
            final, elapsed, clk = (int(v) for v in out[:3].get())
            done += steps
            want_address = base + expected_slot(order, done) * LINE
            if final != want_address:
                return failed(field, f"pass {p}: the chase ended at {final:#x}, the host's walk at {want_address:#x}",
                              method)
            if p > 0:  # pass 0 warms the TLB and the code path; it is not timed
                ns.append(elapsed / steps)
                cycles.append(clk / steps)
            address = final
        del chain
    except Exception as exc:  # noqa: BLE001
        return failed(field, f"{type(exc).__name__}: {_first_line(exc)}", method)
    finally:
        backend.release()
    latency = _median(ns) * 1e-9
    details = {"footprint_bytes": footprint, "slots": slots, "passes": plan.chase_passes, "steps": plan.chase_steps,
               "ns_per_step": ns, "cycles_per_step": cycles, "median_cycles": _median(cycles)}
    if not 1e-9 < latency < 1e-5:
        return Figure(field, FAILED, None, method, f"implausible latency {latency * 1e9:.3g} ns (is %globaltimer "
                                                   "running?)", details)
    if cycles and _median(cycles) > 0:
        details["implied_clock_hz"] = _median(cycles) / latency
    return Figure(field, OK, latency, method, None, details)


# ---- launch floor and one-element latency (for `roofline sweep`) --------------------------------------


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
    t_floor, t_one = _median(floor.samples), _median(single.samples)
    return {
        "launch_floor": t_floor,
        "one_element": t_one,
        "kernel_latency": max(0.0, t_one - t_floor),
        "launch_floor_timing": floor.mode,
        "one_element_timing": single.mode,
        "one_element_sets": sets,
        "one_element_footprint": sets * stride,
    }


def host_call_floor(backend: Any, policy: MeasurePolicy) -> float:
    """The NumPy backend's floor: the wall time of calling an empty run function through its timing loop."""
    def run() -> None:
        return None

    return _median(backend.time_runs(run, [{}], policy).samples)


# ---- the whole calibration ---------------------------------------------------------------------------


def calibrate(backend: Any, datasheet: Any, plan: Plan = FULL,
              progress: Callable[[str], None] = lambda s: None) -> list[Figure]:
    """Every figure calibrate reports, in roofline.calibrate.KINDS order. Failures are Figures too (never raised)."""
    info = backend.info
    policy = _policy(plan)
    sms = int(info.get("sm_count") or 0)
    cc = _cc(info.get("compute_capability"))
    n, m = plan.stream_n, plan.matmul_n

    jobs = [Job("copy", "copy", {"n": n}), Job("triad", "triad", {"n": n})]
    fma = {"blocks": plan.blocks_per_sm * sms} if sms else {}
    jobs += [Job("fp32", "fma_peak", dict(fma)), Job("fp64", "fma_peak_fp64", dict(fma))]
    if cc >= 7.0:
        jobs.append(Job("fp16_tensor", "matmul_library_fp16", {"n": m}))
    bf16_why = bf16_probe(backend.cp) if cc >= 8.0 else f"compute capability {cc} has no BF16 tensor cores"
    if bf16_why is None:
        jobs.append(Job("bf16_tensor", "matmul_library_fp16", {"n": m}, tolerance=BF16_TOLERANCE, dtype="bfloat16"))
    if cc >= 8.0:
        jobs.append(Job("tf32_tensor", "matmul_library", {"n": m}, tolerance=TF32_TOLERANCE,
                        around=lambda: tf32_compute_type(backend.cp)))
    results = run_jobs(backend, jobs, policy, progress)

    figures = [dram_bandwidth(results, plan)]
    progress("L2 bandwidth")
    try:
        module = load_module(backend)
    except Exception as exc:  # noqa: BLE001
        module = None
        compile_error = f"compiling {KERNELS_FILE.name} failed: {type(exc).__name__}: {_first_line(exc)}"
    figures.append(l2_bandwidth(backend, module, plan, policy) if module is not None
                   else failed("caches.l2.bandwidth", compile_error))
    progress("DRAM latency")
    figures.append(dram_latency(backend, module, plan) if module is not None
                   else failed("memory.latency", compile_error))

    grid = f"{fma.get('blocks', 'default')} blocks × 256 threads" if fma else "the descriptor's default grid"
    fp32 = flops_figure("compute.fp32", results.get("fp32"),
                        f"fma_peak kernel: 8 independent FP32 FMA chains per thread, {grid}, 2 FLOP per FMA")
    figures.append(fp32)
    figures.append(flops_figure("compute.fp64", results.get("fp64"),
                                f"fma_peak_fp64 kernel: 8 independent FP64 FMA chains per thread, {grid}"))
    if cc >= 7.0:
        figures.append(flops_figure("compute.fp16_tensor", results.get("fp16_tensor"),
                                    f"cuBLAS GEMM through cupy.matmul, float16 {m}×{m}×{m}, FP32 accumulate, "
                                    "2N³ FLOP, result checked against a float64 NumPy reference"))
    else:
        figures.append(skipped("compute.fp16_tensor", f"compute capability {cc} has no FP16 tensor cores"))
    if bf16_why is None:
        figures.append(flops_figure("compute.bf16_tensor", results.get("bf16_tensor"),
                                    f"cuBLAS GEMM through cupy.matmul, bfloat16 (ml_dtypes) {m}×{m}×{m}, FP32 "
                                    "accumulate, 2N³ FLOP, result checked against a float64 NumPy reference"))
    else:
        figures.append(skipped("compute.bf16_tensor", bf16_why))
    if cc >= 8.0:
        fp32_ref = fp32.value if fp32.ok else (datasheet.roofs.get("fp32") if datasheet is not None else None)
        figures.append(tf32_figure(results.get("tf32_tensor"), fp32_ref,
                                   f"cuBLAS GEMM through cupy.matmul, float32 {m}×{m}×{m} with CuPy's compute type "
                                   "set to TF32, 2N³ FLOP, result checked against a float64 NumPy reference "
                                   f"(rtol/atol {TF32_TOLERANCE['rtol']:g})"))
    else:
        figures.append(skipped("compute.tf32_tensor", f"compute capability {cc} has no TF32 tensor cores"))
    figures.append(skipped("compute.fp8_tensor", "not reachable from CuPy: it has no float8 dtypes, so cupy.matmul "
                                                 "cannot call an FP8 GEMM (use the datasheet figure)"))
    return figures


def _cc(value: Any) -> float:
    try:
        return float(str(value))
    except (TypeError, ValueError):
        return 0.0


def _first_line(exc: BaseException) -> str:
    return (str(exc).strip().splitlines() or [type(exc).__name__])[0][:300]

