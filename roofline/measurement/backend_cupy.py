"""The CuPy backend: the only module that imports cupy. CUDA events for timing; short kernels are captured in a
CUDA graph and the replay is timed, so the Python launch path (~8 µs per call) does not pose as kernel time."""

from __future__ import annotations

import contextlib
import math
import time
from pathlib import Path
from typing import Any, Iterator, Mapping, Sequence

import numpy as np

from roofline.errors import BackendUnavailable, first_line, install_extra
from roofline.measurement.context import KernelContext
from roofline.records.caveats import warning
from roofline.measurement.gpustate import open_monitor
from roofline.measurement.harness import Run, Timing
from roofline.measurement.implementation import Implementation
from roofline.measurement.policy import MeasurePolicy, done as _done
from roofline.measurement.verify import check_outputs, poison_value
from roofline.model.types import KernelDescriptor
from roofline.load.inputs import read_input_text
from roofline.measurement.cuda_includes import expand_includes

# CuPy's own wheels first (published: they install anywhere), then our extra from the checkout (gpu-roofline is
# not on PyPI: roofline.errors.install_extra).
CUPY_INSTALL = ("install CuPy for your CUDA version: pip install cupy-cuda12x (CUDA 12) or cupy-cuda13x (CUDA 13); "
                f"with nvidia-ml-py as well: {install_extra('cuda12')}")
INSTALL_HINT = CUPY_INSTALL + ", or run the NumPy references on the host CPU with --backend numpy"

# cudaDeviceAttr values (stable across CUDA versions); read one by one because CUDA 13 dropped some
# cudaDeviceProp fields (clockRate, memoryClockRate) that the attributes still report.
_ATTR = {
    "sm_clock": 13, "sm_count": 16, "memory_clock": 36, "memory_bus_width": 37, "l2_size": 38,
    "max_threads_per_sm": 39, "cc_major": 75, "cc_minor": 76,
}
_EVENT_CHUNK = 64
# A one-thread kernel that spins on the SM clock. Enqueued before each batch of timed launches, it keeps the GPU
# busy while the host enqueues the batch, so a host-side stall (another thread holding the GIL, say) cannot open
# a gap between a start event and its kernel (nvbench's "blocking kernel" idea).
_SPIN_SOURCE = r"""
extern "C" __global__ void roofline_spin(long long cycles) {
    long long start = clock64();
    while (clock64() - start < cycles) { }
}
"""
_SPIN_SECONDS = 2e-3
MAX_SOURCE_BYTES = 4 << 20  # a kernel's .cu file is source text, not data


def import_cupy() -> Any:
    try:
        import cupy  # lazy: cupy is a start-up cost only this path pays
    except ImportError as exc:
        raise BackendUnavailable(f"CuPy is not installed ({exc})", fix=INSTALL_HINT) from None
    try:
        count = cupy.cuda.runtime.getDeviceCount()
    except Exception as exc:  # CUDARuntimeError when the driver is missing
        raise BackendUnavailable(f"no usable CUDA device ({first_line(exc)})", fix=INSTALL_HINT) from None
    if count == 0:
        raise BackendUnavailable("no CUDA device found", fix=INSTALL_HINT)
    return cupy


class CupyBackend:
    name = "cupy"

    def __init__(self, device_id: int = 0):
        cp = import_cupy()
        self.cp = cp
        if not 0 <= device_id < cp.cuda.runtime.getDeviceCount():
            raise BackendUnavailable(f"--device {device_id}: there are {cp.cuda.runtime.getDeviceCount()} CUDA devices")
        self.device = cp.cuda.Device(device_id)
        self.device.use()
        self.device_id = device_id
        self.stream = cp.cuda.Stream(non_blocking=True)
        self.stream.use()
        self.info = self._device_info()
        self.cache_bytes = int(self.info.get("l2_size") or 0)
        self._spin = cp.RawKernel(_SPIN_SOURCE, "roofline_spin")
        self._spin_cycles = np.int64(_SPIN_SECONDS * (self.info.get("sm_clock") or 2e9))
        self.monitor, self.info["clock_monitor"] = open_monitor(self._pci_bus_id())

    def _pci_bus_id(self) -> str | None:
        try:
            return str(self.cp.cuda.runtime.deviceGetPCIBusId(self.device_id))
        except Exception:  # noqa: BLE001 - a runtime without it: no clock readings, said in the results
            return None

    def _device_info(self) -> dict[str, Any]:
        cp, rt = self.cp, self.cp.cuda.runtime
        props = rt.getDeviceProperties(self.device_id)
        attrs: dict[str, int | None] = {}
        for key, code in _ATTR.items():
            try:
                attrs[key] = int(rt.deviceGetAttribute(code, self.device_id))
            except Exception:  # noqa: BLE001 - an attribute this driver lacks
                attrs[key] = None
        name = props.get("name", b"")
        name = name.decode() if isinstance(name, bytes) else str(name)
        major = attrs["cc_major"] or props.get("major")
        minor = attrs["cc_minor"] if attrs["cc_minor"] is not None else props.get("minor")
        khz = lambda key, prop: (attrs[key] or props.get(prop) or 0) * 1e3 or None  # noqa: E731
        return {
            "name": name,
            "kind": "gpu",
            "device_id": self.device_id,
            "compute_capability": f"{major}.{minor}",
            "sm_count": attrs["sm_count"] or props.get("multiProcessorCount"),
            "max_threads_per_sm": attrs["max_threads_per_sm"] or props.get("maxThreadsPerMultiProcessor"),
            "l2_size": attrs["l2_size"] or props.get("l2CacheSize"),
            "total_memory": props.get("totalGlobalMem"),
            "memory_clock": khz("memory_clock", "memoryClockRate"),
            "memory_bus_width": attrs["memory_bus_width"] or props.get("memoryBusWidth"),
            "sm_clock": khz("sm_clock", "clockRate"),
            "driver": _cuda_version(rt.driverGetVersion()),
            "cuda_runtime": _cuda_version(rt.runtimeGetVersion()),
            "cupy_version": cp.__version__,
        }

    def device_info(self) -> dict[str, Any]:
        return dict(self.info)

    # ---- arrays and code -----------------------------------------------------------------------

    def context(self, d: KernelDescriptor) -> KernelContext:
        folder = d.path.parent if d.path else Path(".")
        return KernelContext(folder, self.info, self.cp, self._compile)

    def _compile(self, file: Path, options: Sequence[str]) -> Any:
        def read(path: Path) -> str:  # a regular file under the size limit: a FIFO would block
            return read_input_text(path, MAX_SOURCE_BYTES, "CUDA source")

        code = expand_includes(read(file), file.parent, read)
        return self.cp.RawModule(code=code, options=("--std=c++17", f"-I{file.parent}", *options))

    def build(self, impl: Implementation, params: Mapping[str, Any], ctx: KernelContext, outputs: tuple[str, ...]) -> Run:
        builder = impl.fn("cupy")
        if builder is None:
            raise BackendUnavailable(f"{impl.path}: has no cupy(p, ctx) function, so it cannot run on the GPU")
        return builder(params, ctx)

    def upload(self, host: np.ndarray) -> Any:
        return self.cp.asarray(host)

    def poisoned(self, shape: tuple[int, ...], dtype: np.dtype) -> Any:
        return self.cp.full(shape, poison_value(dtype), dtype=dtype)

    def check(self, outputs: Mapping[str, Any], reference: Mapping[str, Any], tolerance: Mapping[str, float]) -> str | None:
        """Compare on the GPU against the uploaded NumPy reference: far faster than downloading 1 GiB outputs
        and comparing on the host, and the same element-by-element rule."""
        problem = check_outputs(outputs, reference, tolerance, xp=self.cp)
        self.stream.synchronize()
        return problem

    def free_bytes(self) -> int | None:
        pool = self.cp.get_default_memory_pool()
        return int(self.cp.cuda.runtime.memGetInfo()[0] + pool.free_bytes())

    def synchronize(self) -> None:
        self.stream.synchronize()

    @contextlib.contextmanager
    def current(self) -> Iterator[None]:
        """This backend's device and stream current for the duration. Why: a kernel launches on the current stream,
        and every CupyBackend makes its own stream current when it is created, so with two in one process (an API
        user's and a benchmark's) the launches of one would run outside the other's events and synchronisation."""
        previous = self.cp.cuda.get_current_stream()
        try:
            with self.device, self.stream:
                yield
        finally:
            # Leaving `with stream` makes CuPy's null stream current, not the stream that was current before (seen
            # on the H200 with CuPy 14.2: the backend's own stream, made current by use(), was lost after the first
            # harness run, and calibrate's L2 probe then launched outside its events: 11 PB/s). Put it back.
            previous.use()

    def release(self) -> None:
        self.stream.synchronize()
        self.cp.get_default_memory_pool().free_all_blocks()

    # ---- timing ----------------------------------------------------------------------------------

    def _events(self, launch: Any, count: int) -> list[float]:
        """Enqueue `count` launches, each between two events; seconds per launch once they finished."""
        cp = self.cp
        self._spin((1,), (1,), (self._spin_cycles,))
        pairs = []
        for i in range(count):
            start, end = cp.cuda.Event(), cp.cuda.Event()
            start.record(self.stream)
            launch(i)
            end.record(self.stream)
            pairs.append((start, end))
        self.stream.synchronize()
        return [cp.cuda.get_elapsed_time(s, e) * 1e-3 for s, e in pairs]

    def time_runs(self, run: Run, sets: list[dict[str, Any]], policy: MeasurePolicy) -> Timing:
        """Warm-up, then timed runs, with this backend's stream current throughout: the events are recorded on
        self.stream, so a launch on any other stream would fall outside them and time nothing (how a probe once
        reported an L2 bandwidth of 11 PB/s)."""
        with self.current():
            return self._time_runs(run, sets, policy)

    def _time_runs(self, run: Run, sets: list[dict[str, Any]], policy: MeasurePolicy) -> Timing:
        n_sets = len(sets)
        deadline = time.perf_counter() + policy.warmup_time
        warm = 0
        while warm < 3 or time.perf_counter() < deadline:
            run(**sets[warm % n_sets])
            self.stream.synchronize()  # one at a time: a slow kernel must not queue up seconds of warm-up
            warm += 1
        estimate = min(self._events(lambda i: run(**sets[i % n_sets]), 3))  # the least disturbed of three
        if self.monitor is None:
            return self._timed(run, sets, policy, estimate)
        before = self.monitor.read()
        timing = self._timed(run, sets, policy, estimate)
        timing.gpu_state = self.monitor.window(before, self.monitor.read())
        return timing

    def _timed(self, run: Run, sets: list[dict[str, Any]], policy: MeasurePolicy, estimate: float) -> Timing:
        n_sets = len(sets)
        notes: list[str] = []
        if estimate < policy.graph_below:
            try:
                return self._time_graph(run, sets, policy, estimate)
            except Exception as exc:  # noqa: BLE001 - capture is optional; fall back to plain events
                notes.append(warning("graph-capture-failed", f"CUDA graph capture failed ({first_line(exc)}); "
                                     "timed launches directly",
                                     "launches include Python's launch path; keep allocations out of the callable "
                                     "(use out= arguments) so it can be captured"))
                self._end_capture_quietly()
        # Without a graph, a short kernel is timed in batches: one event pair around several back-to-back
        # launches, so the GPU stays busy and the gaps of the Python launch path are amortised.
        batch = 1 if estimate >= policy.graph_below else max(1, math.ceil(policy.graph_batch_time / estimate))
        samples: list[float] = []
        total = 0.0
        chunk = max(1, min(_EVENT_CHUNK, math.ceil(0.05 / max(estimate * batch, 1e-9))))
        while not _done(len(samples) * batch, total, policy):
            offset = len(samples) * batch

            def launch(i: int) -> None:
                for j in range(batch):
                    run(**sets[(offset + i * batch + j) % n_sets])

            got = self._events(launch, chunk)
            samples += [t / batch for t in got]
            total += sum(got)
        mode = "events" if batch == 1 else f"events, batches of {batch}"
        return Timing(samples=samples, repeats=len(samples) * batch, mode=mode, notes=notes)

    def _time_graph(self, run: Run, sets: list[dict[str, Any]], policy: MeasurePolicy, estimate: float) -> Timing:
        n_sets = len(sets)
        per_graph = max(n_sets, math.ceil(policy.graph_batch_time / max(estimate, 1e-7)))
        per_graph = min(math.ceil(per_graph / n_sets) * n_sets, max(n_sets, 20_000))
        self.stream.begin_capture()
        try:
            for i in range(per_graph):
                run(**sets[i % n_sets])
        finally:
            graph = self.stream.end_capture()
        graph.launch(self.stream)  # upload and warm the graph
        self.stream.synchronize()
        samples: list[float] = []
        total = 0.0
        while not _done(len(samples) * per_graph, total, policy):
            got = self._events(lambda i: graph.launch(self.stream), _EVENT_CHUNK)
            samples += [t / per_graph for t in got]
            total += sum(got)
        # The upload launch above ran inside the energy window too (time_runs reads NVML around this call).
        return Timing(samples=samples, repeats=len(samples) * per_graph, mode="graph",
                      window_runs=(len(samples) + 1) * per_graph)

    def _end_capture_quietly(self) -> None:
        try:
            if self.stream.is_capturing():
                self.stream.end_capture()
        except Exception:  # noqa: BLE001
            pass


def _cuda_version(v: int) -> str:
    return f"{v // 1000}.{(v % 1000) // 10}"
