"""`roofline doctor` on the GPU: the measurements behind its verdicts (roofline.gates.doctor judges them).

Every figure comes from a verified run: the known-traffic and known-FLOP kernels go through the same harness as
`roofline measure` (bundled kernels, checked against NumPy), the cache and latency figures through calibrate's
probes (each checked by its word sum or the host's walk), and Nsight Compute replays the same verified kernels
through `measure --profile ncu`'s machinery. Nothing is measured twice that one run can answer; the whole
doctor is about 40 s on an H200. CuPy is reached only through the backend passed in.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, replace
from typing import Any, Callable, Mapping

from roofline.gates import doctor as judge
from roofline.model.types import MachineSpec
from roofline.measurement.progress import SILENT, Progress
from roofline.measurement.calibrate.jobs import Job, run_jobs
from roofline.model.invariants import FigureContext, l1_bound
from roofline.measurement.calibrate.plan import QUICK, load_module
from roofline.measurement.gpustate import device_state
from roofline.measurement.policy import MeasurePolicy


@dataclass(frozen=True)
class DoctorPlan:
    stream_n: int = 2**27  # float32 elements for copy, triad and sum: 512 MiB an array, ≫ any L2
    timer_n: int = 2**26  # the copy timed three ways: about 120 µs a launch on an H200
    resident_n: int = 2**21  # 8 MiB in + 8 MiB out: resident in any L2 of 40 MB or more
    gemm_n: int = 4096  # the cuBLAS FP16 GEMM whose tensor FLOPs ncu must count as 2·n³
    min_time: float = 0.2  # s of timed runs per kernel
    ncu_timeout: float = 120.0
    probes: Any = None  # the calibrate Plan of the L2, L1 and latency probes (None: calibrate's QUICK)
    energy_seconds: float = 2.0  # s of steady copy over which the energy counter and the power samples are compared


FULL = DoctorPlan()


def _figure(entry: Mapping[str, Any] | None, key: str) -> tuple[float | None, str | None]:
    """(value, error) of a harness result entry."""
    if entry is None:
        return None, "not run"
    if entry.get("status") != "OK":
        return None, str(entry.get("error") or entry.get("status"))
    v = entry.get(key)
    return (float(v) if v else None), None


Replay = Callable[[Mapping[str, Any], DoctorPlan, Progress, Any], tuple[float | None, str | None, dict[str, Any]]]


def run_doctor(backend: Any, spec: MachineSpec | None, plan: DoctorPlan = FULL, progress: Progress = SILENT,
               replay: Replay | None = None) -> judge.Verdict:
    """Every check of `roofline doctor` on the backend's GPU, against `spec` (its datasheet).

    `replay` re-runs the verified copy and GEMM under Nsight Compute, (results, plan, progress, backend) → (copy
    duration, why not, counters); roofline.ncu.doctor passes it in, since ncu sits above this stage. None: not asked
    (--no-ncu)."""
    # lazy: roofline.measurement.calibrate.l1 imports numpy (start-up)
    from roofline.measurement.calibrate.l1 import l1_bandwidth
    # lazy: roofline.measurement.calibrate.probes imports numpy (start-up)
    from roofline.measurement.calibrate.probes import current, dram_latency, l2_bandwidth
    started = time.perf_counter()
    info = backend.info
    sms = int(info.get("sm_count") or 0)
    state = device_state(getattr(backend, "monitor", None), str(info.get("clock_monitor") or "NVML not opened"))
    policy = MeasurePolicy(min_time=plan.min_time, min_repeats=10, max_time=2.0)
    n, tn, rn = plan.stream_n, plan.timer_n, plan.resident_n
    fma = {"blocks": 16 * sms} if sms else {}
    with current(backend):
        main = run_jobs(backend, [Job("copy", "copy", {"n": n}), Job("triad", "triad", {"n": n}),
                                  Job("sum", "sum", {"n": n}), Job("fma", "fma_peak", dict(fma)),
                                  Job("timer_graph", "copy", {"n": tn}),
                                  Job("gemm", "matmul_library_fp16", {"n": plan.gemm_n}),
                                  Job("rotated", "copy", {"n": rn})], policy, progress)
        # The same copy once more with plain events around single launches (no graph), and the small copy with
        # one buffer set (resident in L2) instead of sets rotated past the L2.
        events = run_jobs(backend, [Job("timer_events", "copy", {"n": tn})], replace(policy, graph_below=0.0),
                          progress)
        resident = run_jobs(backend, [Job("resident", "copy", {"n": rn})], replace(policy, rotate_below=0.0),
                            progress)
        module, compile_error = None, None
        try:
            module = load_module(backend)
        except Exception as exc:  # noqa: BLE001 - reported as the probes' failure, never a crash
            compile_error = f"compiling the probes failed: {type(exc).__name__}: {exc}"
        probe_plan = plan.probes or QUICK
        figures = {}
        for step, fn in (("L2 bandwidth", lambda: l2_bandwidth(backend, module, probe_plan, policy)),
                         ("L1 bandwidth", lambda: l1_bandwidth(backend, module, probe_plan, policy)),
                         ("DRAM latency", lambda: dram_latency(backend, module, probe_plan))):
            progress.start(step)
            figures[step] = fn() if module is not None else None
            progress.finish(step, figures[step].status if figures[step] is not None else "FAILED")

    results = {**main, **events, **resident}
    ncu_time, ncu_why, counted = (None, "--no-ncu", {}) if replay is None else replay(results, plan, progress,
                                                                                         backend)

    datasheet_bw = spec.bandwidth if spec is not None else None
    checks: list[judge.Check] = []
    for key in ("copy", "triad", "sum"):
        v, err = _figure(results.get(key), "achieved_bandwidth")
        checks.append(judge.dram_check(f"{key} (2^{n.bit_length() - 1} float32)", v, datasheet_bw, err))
    v, err = _figure(results.get("fma"), "achieved_flops")
    fma_state = (results.get("fma") or {}).get("gpu_state") or {}
    checks.append(judge.fma_check(v, spec.roofs.get("fp32") if spec else None,
                                  (spec.clocks.get("boost") if spec else None),
                                  fma_state.get("sm_clock_end"), err))

    # the hierarchy: L2 between the DRAM measured here and the L1 bound; L1 below SMs × 128 B × the clock
    dram_best = max((results[k].get("achieved_bandwidth") or 0.0 for k in ("copy", "triad", "sum")
                     if results.get(k, {}).get("status") == "OK"), default=0.0) or None
    l2, l1, lat = figures.get("L2 bandwidth"), figures.get("L1 bandwidth"), figures.get("DRAM latency")
    clock = _probe_clock(l1) or _probe_clock(l2) or info.get("sm_clock")
    bound = l1_bound(FigureContext(datasheet=spec, sm_count=sms or None, sm_clock=clock))
    l1_max, l1_words = bound if bound is not None else (None, "")
    checks.append(judge.between_check(
        "L2 bandwidth", _value(l2), dram_best, l1_max, "bandwidth", _error(l2, compile_error),
        note=_curve_note(l2)))
    checks.append(judge.between_check(
        "L1 / shared bandwidth", _value(l1), _value(l2), l1_max, "bandwidth", _error(l1, compile_error),
        note=f"bound: {l1_words}" if l1_words else ""))
    checks.append(judge.latency_check(_value(lat), _error(lat, compile_error)))

    # the timers
    ev, _ = _figure(results.get("timer_events"), "time_median")
    gr, _ = _figure(results.get("timer_graph"), "time_median")
    graph_mode = (results.get("timer_graph") or {}).get("timing")
    events_mode = (results.get("timer_events") or {}).get("timing")
    if graph_mode != "graph":
        gr = None
    if events_mode != "events":
        ev = None
    checks.append(judge.timers_check(ev, gr, ncu_time, ncu_why, f"copy, 2^{tn.bit_length() - 1} float32"))
    rot, err_r = _figure(results.get("rotated"), "achieved_bandwidth")
    res, err_s = _figure(results.get("resident"), "achieved_bandwidth")
    checks.append(judge.residency_check(res, rot, datasheet_bw, err_r or err_s))

    # the counters
    # The copy's reads, not its writes: ncu counts DRAM traffic until the kernel ends, and up to an L2's worth of
    # written lines is still dirty in the L2 then (seen on the H200: 4.5 % of a 512 MiB copy's bytes). Every
    # source line must come from DRAM (ncu flushes the caches before the kernel).
    copy_reads = 4.0 * tn if results.get("timer_graph", {}).get("status") == "OK" else None
    gemm_model = (results.get("gemm") or {}).get("flops")
    check = judge.counter_check("ncu DRAM bytes read (copy)", counted.get("dram_read"), copy_reads,
                                judge.COUNTER_BYTES, "bytes", ncu_why)
    if counted.get("dram_write") is not None and copy_reads:
        check.note = (f"writes {counted['dram_write'] / 1e9:.4g} GB of {copy_reads / 1e9:.4g} GB reached DRAM "
                      "before the kernel ended (the rest was still in the L2)")
    checks.append(check)
    checks.append(judge.counter_check(f"ncu tensor FLOPs (cuBLAS FP16 GEMM {plan.gemm_n}³)",
                                      counted.get("flops_tensor"), gemm_model, judge.COUNTER_FLOPS, "flops", ncu_why))

    windows = [e.get("gpu_state") for e in results.values() if isinstance(e, dict) and e.get("gpu_state")]
    checks += judge.state_checks(state, windows)
    checks.append(judge.energy_counter_check(*_energy_counter(backend, plan, progress)))
    device = {k: info.get(k) for k in ("name", "device_id", "compute_capability", "sm_count", "l2_size", "driver",
                                       "cuda_runtime", "cupy_version")}
    device["pci_bus_id"] = _bus_id(backend)
    return judge.Verdict(device, spec.id if spec else None, checks, time.perf_counter() - started)


def _energy_counter(backend: Any, plan: DoctorPlan, progress: Progress) -> tuple[dict[str, Any] | None, str | None]:
    """(the energy counter against the power samples over a steady copy, why not measured)."""
    # lazy: roofline.measurement.calibrate.energy imports numpy (start-up)
    from roofline.measurement.calibrate.energy import counter_agreement, doctor_load
    # lazy: roofline.measurement.calibrate.probes imports numpy (start-up)
    from roofline.measurement.calibrate.probes import current

    monitor = getattr(backend, "monitor", None)
    if monitor is None:
        return None, str(backend.info.get("clock_monitor") or "NVML not opened")
    progress.start("energy counter")
    try:
        with current(backend):
            launch, release = doctor_load(backend, plan.stream_n)
            try:
                found = counter_agreement(monitor, launch, backend.synchronize, plan.energy_seconds)
            finally:
                release()
    except Exception as exc:  # noqa: BLE001 - reported as the check's reason, never a crash
        progress.finish("energy counter", "FAILED")
        return None, f"the steady copy failed: {type(exc).__name__}: {exc}"
    progress.finish("energy counter", "OK")
    return found, None


def _value(fig: Any) -> float | None:
    return fig.value if fig is not None and fig.ok else None


def _error(fig: Any, compile_error: str | None) -> str | None:
    if fig is None:
        return compile_error or "not run"
    return None if fig.ok else f"{fig.status}: {fig.note}"


def _probe_clock(fig: Any) -> float | None:
    state = getattr(fig, "gpu_state", None) or {}
    return state.get("sm_clock_end")


def _curve_note(fig: Any) -> str:
    if fig is None or not fig.ok:
        return ""
    curve = fig.details.get("curve") or []
    return "curve " + ", ".join(f"{c['working_set'] / 2**20:.3g} MiB {c['bandwidth'] / 1e12:.2f}" for c in curve) \
        + " TB/s"


def _bus_id(backend: Any) -> str | None:
    try:
        return backend._pci_bus_id()
    except Exception:  # noqa: BLE001
        return None
