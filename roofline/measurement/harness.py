"""One kernel through the honest-measurement protocol: inputs → reference → poisoned outputs → checked run →
warm-up → timed runs → figures. The backend (CuPy on a GPU, NumPy on the host) supplies arrays and clocks."""

from __future__ import annotations

import contextlib
import time
import traceback
from dataclasses import dataclass, field, replace
from typing import Any, Callable, ContextManager, Mapping, Protocol, Sequence

import numpy as np

from roofline.model.analysis import KernelAnalysis, traffic_fields
from roofline.errors import InputError, RooflineError
from roofline.records.caveats import warning
from roofline.records.clockstate import power_measured, power_over_limit, throttle_warning
from roofline.measurement.energy import input_kind
from roofline.records.energy import CONSTANT_INPUTS, beyond_ceiling, measured_energy
from roofline.measurement.implementation import Implementation, numpy_dtype
from roofline.measurement.policy import MeasurePolicy, buffer_sets
from roofline.measurement.stats import SPREAD_WARNING, median_interval, summarize
from roofline.model.types import KernelDescriptor, Workload
from roofline.records.document import KernelResult, Status, model_error_warning
from roofline.model.units import format_bytes
from roofline.model.counts import counted

Run = Callable[..., None]


class Backend(Protocol):
    name: str
    cache_bytes: int

    def context(self, d: KernelDescriptor) -> Any: ...
    def build(self, impl: Implementation, params: Mapping[str, Any], ctx: Any, outputs: tuple[str, ...]) -> Run: ...
    def upload(self, host: np.ndarray) -> Any: ...
    def poisoned(self, shape: tuple[int, ...], dtype: np.dtype) -> Any: ...
    def check(self, outputs: Mapping[str, Any], reference: Mapping[str, Any], tolerance: Mapping[str, float]) -> str | None: ...
    def free_bytes(self) -> int | None: ...
    def synchronize(self) -> None: ...
    def time_runs(self, run: Run, sets: list[dict[str, Any]], policy: MeasurePolicy) -> "Timing": ...


@dataclass
class Timing:
    samples: list[float]  # seconds per kernel execution, one per sample
    repeats: int  # kernel executions timed in all
    mode: str  # "events", "graph" or "wall"
    notes: list[dict[str, Any]] = field(default_factory=list)  # warning records (roofline.records.caveats)
    gpu_state: dict[str, Any] | None = None  # clocks and power over the timed window (gpustate.window_state)
    window_runs: int | None = None  # runs executed between the window's two readings (repeats, plus a graph's upload)
    inputs: str | None = None  # what data the kernel ran on (roofline.measurement.energy.input_kind)


def _outputs(impl: Implementation, params: Mapping[str, Any], dtype: np.dtype) -> dict[str, tuple[tuple[int, ...], np.dtype]]:
    raw = impl.module.outputs(params, dtype)
    if not isinstance(raw, dict) or not raw:
        raise InputError(f"{impl.path}: outputs: must return a dict name -> (shape, dtype)")
    out = {}
    for name, spec in raw.items():
        try:
            shape, odtype = spec
            shape = (int(shape),) if np.isscalar(shape) else tuple(int(s) for s in shape)
            out[name] = (shape, np.dtype(odtype))
        except (TypeError, ValueError):
            raise InputError(f"{impl.path}: outputs: '{name}' must be (shape, dtype), got {spec!r}") from None
    return out


def _nbytes(shape: tuple[int, ...], dtype: np.dtype) -> int:
    return int(np.prod(shape, dtype=np.int64)) * dtype.itemsize


def measure_kernel(
    d: KernelDescriptor,
    work: Workload,
    analysis: KernelAnalysis | None,
    impl: Implementation,
    backend: Backend,
    policy: MeasurePolicy,
    host: "HostData | Callable[[], HostData] | None" = None,
) -> dict[str, Any]:
    """Result entry for one kernel. A kernel that fails its check gets status FAILED and no time.

    `host` is the kernel's prepared HostData, or a callable that returns it (a future's result, say)."""
    base = analysis.to_dict() if analysis is not None else analysis_free(work)
    phases: dict[str, float] = {}
    try:
        prepared = host() if callable(host) else host
        with current(backend):
            timing, sets_used = _verified_timing(d, work, impl, backend, policy, phases, prepared)
    except KernelFailure as failure:
        return KernelResult.failure(base, str(failure), timing=None, buffer_sets=1, gpu_state=None,
                                    phases=phases).to_json()
    return timed_result(base, work, analysis.sol_time if analysis is not None else None, timing, sets_used,
                        phases).to_json()


def current(backend: Backend) -> ContextManager[Any]:
    """The backend's device and stream made current for a kernel's build, checked run and timing, where it has
    them (CupyBackend.current): a kernel launches on whatever stream is current, so another backend made in the
    same process must not leave its own stream there. The calibration probes enter it too; a no-op for a backend
    without one (NumPy, the emulated device of the tests)."""
    enter = getattr(backend, "current", None)
    return enter() if enter is not None else contextlib.nullcontext()


def timed_result(base: Mapping[str, Any], work: Workload, sol_time: float | None, timing: Timing, sets_used: int,
                 phases: Mapping[str, float], verified: bool = True,
                 extra_warnings: Sequence[Mapping[str, Any]] = ()) -> KernelResult:
    """A verified (or, from the API without a check, unverified) kernel's result from its timed runs: the figures,
    and the warnings a reader needs to trust them (noise, throttling, a model the kernel beats)."""
    stats = summarize(timing.samples)
    fraction = sol_time / stats.median if sol_time is not None else None
    warnings = [*extra_warnings, *timing.notes]
    throttled = throttle_warning(timing.gpu_state)
    over = power_over_limit(timing.gpu_state)
    if over:
        warnings.append(warning("power-over-limit", over, "nothing to fix: the mean is over the timed window only "
                                                          "(gpu_state.window in the results)"))
    if throttled:
        warnings.append(warning("throttled", throttled, "the figure holds at the recorded clock only (gpu_state in "
                                                        "the results); roofline calibrate shows the datasheet there"))
    if stats.noisy:
        warnings.append(warning("noisy", f"noisy: max/min = {stats.spread:.2f} (> {SPREAD_WARNING})",
                                "close other work on the device or raise --min-time"))
    energy = measured_energy(timing.gpu_state, timing.window_runs or timing.repeats, work.flops, work.bytes,
                             (base.get("energy") or {}).get("min_energy"), timing.inputs)
    if (beyond := beyond_ceiling(energy)) is not None:
        warnings.append(warning("energy-beyond-ceiling", beyond, "roofline calibrate --energy -o FILE on this GPU "
                                                                 "(not --quick), then measure --spec FILE"))
    at_cap = power_measured(timing.gpu_state, base.get("power_roof"), stats.median)
    if energy is not None and energy["inputs"] == "constant":
        warnings.append(warning("energy-constant-inputs", CONSTANT_INPUTS,
                                "draw the inputs from the rng that inputs() is given (random data)"))
    result = KernelResult.from_fields({
        **base, "time_median": stats.median, "time_min": stats.minimum, "time_max": stats.maximum,
        "repeats": timing.repeats, "time_ci": list(median_interval(timing.samples)),
        "achieved_bandwidth": work.bytes / stats.median,
        "achieved_flops": work.flops / stats.median, "fraction_of_ceiling": fraction, "verified": verified,
        "status": Status.OK, "error": None, "warnings": warnings,
    }, {"timing": timing.mode, "buffer_sets": sets_used, "gpu_state": timing.gpu_state, "phases": dict(phases),
        **({"energy_measured": energy} if energy is not None else {}),
        **({"power_measured": at_cap} if at_cap is not None else {})})
    if result.model_error:
        result = replace(result, warnings=(*result.warnings, model_error_warning(result.fraction_of_ceiling,
                                                                                         result.bound)))
    return result


class KernelFailure(Exception):
    """The kernel ran but produced wrong output, or raised: reported as FAILED, never timed."""


class _Phase:
    """Wall-clock seconds of one step of the protocol, kept in the result so a slow `measure` can be explained."""

    def __init__(self, phases: dict[str, float], name: str):
        self.phases, self.name = phases, name

    def __enter__(self) -> None:
        self.start = time.perf_counter()

    def __exit__(self, *exc: object) -> None:
        self.phases[self.name] = self.phases.get(self.name, 0.0) + time.perf_counter() - self.start


@dataclass
class HostData:
    """What the host prepares for one kernel: inputs, output shapes, the NumPy reference. It needs no device, so
    the next kernel's HostData can be made while the GPU times the current one."""

    params: dict[str, Any]
    inputs: dict[str, np.ndarray]
    out_specs: dict[str, tuple[tuple[int, ...], np.dtype]]
    reference: Mapping[str, Any]
    phases: dict[str, float]

    @property
    def working_set(self) -> int:
        return sum(np.asarray(a).nbytes for a in self.inputs.values()) + sum(
            _nbytes(s, t) for s, t in self.out_specs.values()
        )


def prepare_host(d: KernelDescriptor, work: Workload, impl: Implementation, policy: MeasurePolicy) -> HostData:
    """Inputs and reference on the host. A user's function that raises becomes a FAILED kernel, not a crash."""
    params = dict(work.params)
    dtype = numpy_dtype(d)
    rng = np.random.default_rng(policy.seed)
    phases: dict[str, float] = {}
    try:
        with _Phase(phases, "inputs"):
            host_inputs = impl.module.inputs(params, dtype, rng)
        if not isinstance(host_inputs, dict):
            raise InputError(f"{impl.path}: inputs: must return a dict name -> numpy array")
        out_specs = _outputs(impl, params, dtype)
        with _Phase(phases, "reference"):
            reference = impl.module.reference(params, **host_inputs)
    except RooflineError:
        raise
    except MemoryError:
        raise InputError(f"{d.name}: the host ran out of memory making inputs and reference; choose smaller -p") from None
    except Exception as exc:
        raise KernelFailure(f"the implementation's inputs/outputs/reference raised {_short_error(exc)}") from None
    if not isinstance(reference, Mapping):
        raise InputError(f"{impl.path}: reference: must return a dict name -> numpy array")
    return HostData(params, host_inputs, out_specs, reference, phases)


def _verified_timing(
    d: KernelDescriptor, work: Workload, impl: Implementation, backend: Backend, policy: MeasurePolicy,
    phases: dict[str, float], host: HostData | None = None,
) -> tuple[Timing, int]:
    if host is None:
        host = prepare_host(d, work, impl, policy)
    phases.update(host.phases)
    params, out_specs = host.params, host.out_specs
    working_set = host.working_set
    sets = buffer_sets(working_set, backend.cache_bytes, policy)
    free = backend.free_bytes()
    if free is not None and sets * working_set > free:
        raise InputError(
            f"{d.name}: needs {format_bytes(sets * working_set)} of device memory for inputs and outputs "
            f"({counted(sets, 'buffer set')} of {format_bytes(working_set)}) but only {format_bytes(free)} is free; "
            "choose smaller parameters with -p"
        )
    ctx = backend.context(d)
    try:
        with _Phase(phases, "build"):
            run = backend.build(impl, params, ctx, tuple(out_specs))
        with _Phase(phases, "upload"):
            buffers = []
            for _ in range(sets):
                bufs = {k: backend.upload(np.asarray(v)) for k, v in host.inputs.items()}
                bufs.update({k: backend.poisoned(s, t) for k, (s, t) in out_specs.items()})
                buffers.append(bufs)
        with _Phase(phases, "checked_run"):
            run(**buffers[0])  # the checked run: first launch (module load included), outputs poisoned
            backend.synchronize()
    except RooflineError:
        raise
    except Exception as exc:  # the user's kernel raised (compile error, bad launch): FAILED, with the reason
        raise KernelFailure(_short_error(exc)) from None
    with _Phase(phases, "check"):
        problem = backend.check({k: buffers[0][k] for k in out_specs}, host.reference, impl.tolerance)
    inputs = input_kind(host.inputs)
    del host  # the caller may hold the next kernel's host data while this one is timed; free this one's
    if problem is not None:
        raise KernelFailure(f"wrong result: {problem}")
    try:
        with _Phase(phases, "timing"):
            timing = backend.time_runs(run, buffers, policy)
    except RooflineError:
        raise
    except Exception as exc:
        raise KernelFailure(f"failed while timing: {_short_error(exc)}") from None
    timing.inputs = inputs
    return timing, sets


def _short_error(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    first = text[0] if text else ""
    frame = traceback.extract_tb(exc.__traceback__)[-1] if exc.__traceback__ else None
    where = f" ({frame.filename.rsplit('/', 1)[-1]}:{frame.lineno})" if frame else ""
    return f"{type(exc).__name__}: {first}{where}"[:500]


_MACHINE_FIELDS = (
    "peak_flops", "bandwidth", "ridge", "bound", "attainable_flops", "memory_time", "compute_time", "sol_time",
    "threads_needed", "latency_bound",
)


def analysis_free(work: Workload) -> dict[str, Any]:
    """The analysis fields that need no machine; the rest are null (no spec: the ceiling is unknown)."""
    return {
        "name": work.name, "params": dict(work.params), "dtype": work.dtype, "roof": work.roof,
        "launches": work.launches,
        "stages": [{"name": s.name, "flops": s.flops, "bytes": s.bytes, "sol_time": None} for s in work.stages],
        "flops": work.flops, "bytes": work.bytes, "intensity": work.flops / work.bytes,
        "access_bytes": work.access_bytes, **{k: None for k in _MACHINE_FIELDS},
        "traffic": traffic_fields(work.flops, work.traffic),
        "links": {link: {"bytes": b, "bandwidth": None, "time": None, "intensity": work.flops / b if b else None}
                  for link, b in work.interconnect.items()},
    }
