"""The NCCL engine of `roofline fleet links`: CuPy's binding of NCCL (cupy.cuda.nccl), one communicator per group
of ranks, its unique id made by the group's rank 0 and broadcast over the control channel (MPI, or nothing for a
single rank: NCCL runs with one rank too, so one GPU exercises this whole path).

Buffers are float32 CuPy arrays on this rank's GPU; every collective runs on one non-blocking stream, timed with
CUDA event pairs (warm-up first, the ranks lined up by a barrier before the timed samples; a short collective is
queued several times per pair, so the host's launch gap is not its time). CuPy is imported here only (and through
roofline.measurement.backend_cupy), when --backend cupy asks for it.
"""

from __future__ import annotations

import math
from typing import Any

from roofline.errors import BackendUnavailable
from roofline.fleet import collectives as cv
from roofline.measurement.multi.measure import identity as device_identity

NCCL_FIX = ("install NCCL where CuPy finds it (pip install nvidia-nccl-cu12, or -cu13 for CUDA 13, in the same "
            "environment as cupy-cuda12x/13x), or measure the host transport with --backend numpy")


def nccl_module() -> Any:
    """cupy.cuda.nccl, or BackendUnavailable (exit 3) saying why CuPy cannot reach NCCL and how to fix it."""
    # lazy: roofline.measurement.backend_cupy imports numpy (start-up)
    from roofline.measurement.backend_cupy import import_cupy

    import_cupy()  # no CuPy or no GPU: its own message and fix
    try:
        from cupy.cuda import nccl  # lazy: cupy is a start-up cost only this path pays
    except Exception as exc:  # noqa: BLE001 - ImportError, or the library failing to load
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        raise BackendUnavailable(f"CuPy cannot load NCCL ({first})", fix=NCCL_FIX) from None
    if not getattr(nccl, "available", True):
        raise BackendUnavailable("CuPy found no NCCL library (cupy.cuda.nccl.available is False)", fix=NCCL_FIX)
    return nccl


def nccl_version(nccl: Any) -> str | None:
    """'2.21.5' from NCCL's version code (2.9+: major*10000 + minor*100 + patch; older: major*1000 + minor*100)."""
    try:
        v = int(nccl.get_version())
    except Exception:  # noqa: BLE001 - a build without ncclGetVersion
        return None
    if v <= 0:
        return None
    return f"{v // 10000}.{v // 100 % 100}.{v % 100}" if v >= 10000 else f"{v // 1000}.{v // 100 % 10}.{v % 100}"


SAMPLE_S = 100e-6  # a timed sample lasts at least this long: the host's gap before its first run is then small
MAX_BATCH = 64


def batch_size(seconds_per_run: float, sample: float = SAMPLE_S, cap: int = MAX_BATCH) -> int:
    """Runs per event pair: enough that a sample lasts `sample` seconds, 1 for a run that long, at most `cap`."""
    if not seconds_per_run > 0:
        return cap
    return max(1, min(cap, math.ceil(sample / seconds_per_run - 1e-9)))  # 100 us / 2 us is 50, not 51


def pointer(array: Any) -> int:
    """A CuPy array's device address, which NCCL's calls take."""
    return int(array.data.ptr)


class NcclEngine:
    """Collectives through NCCL among the GPUs of a group, one GPU per rank. Built in two steps so that every rank
    can agree between them: the constructor loads CuPy and NCCL and selects the GPU (a rank without NCCL fails here, before
    anyone waits in NCCL's initialisation); connect() makes the communicator, which blocks until every rank of the
    group has joined."""

    name = "cupy"

    def __init__(self, device: int, modules: tuple[Any, Any, Any] | None = None):
        """`modules`: (cupy, cupy.cuda.nccl, a CupyBackend) to use instead of loading them (tests)."""
        if modules is None:
            # lazy: roofline.measurement.backend_cupy imports numpy (start-up)
            from roofline.measurement.backend_cupy import CupyBackend, import_cupy

            nccl = nccl_module()
            if import_cupy().cuda.runtime.getDeviceCount() == 1:
                device = 0  # each rank sees its own GPU (srun --gpus-per-task=1, CUDA_VISIBLE_DEVICES per rank)
            backend = CupyBackend(device)  # selects the device; its identity names the GPU
            modules = (backend.cp, nccl, backend)
        self.cp, self.nccl, self.backend = modules
        self.xp = self.cp
        self.device = device
        self.stream = self.cp.cuda.Stream(non_blocking=True)
        self.comm: Any = None
        self._op: Any = None

    def identity(self) -> dict[str, Any]:
        """The GPU's index, name, UUID and PCI bus id (roofline.measurement.multi.measure.identity)."""
        return device_identity(self.backend)

    def transport(self) -> str:
        version = nccl_version(self.nccl)
        return f"NCCL {version}" if version else "NCCL"

    def connect(self, control: Any) -> None:
        """The group's NCCL communicator: rank 0 makes the unique id, the control broadcasts it, every rank joins."""
        uid = control.bcast(self.nccl.get_unique_id() if control.rank == 0 else None)
        self.control = control
        with self.cp.cuda.Device(self.device):
            self.comm = self.nccl.NcclCommunicator(control.size, uid, control.rank)

    def prepare(self, s: cv.Shape, rank: int) -> None:
        cp, nccl = self.cp, self.nccl
        with cp.cuda.Device(self.device):
            self.send = cv.send_buffer(cp, s, rank)
            self.recv = cp.full(s.recv_count, cp.nan, dtype=cp.float32)  # poisoned: unwritten never matches
            cp.cuda.Device(self.device).synchronize()  # the fills are on the default stream; the collective is not
        comm, stream, f32, total = self.comm, self.stream.ptr, nccl.NCCL_FLOAT32, nccl.NCCL_SUM
        send, recv = pointer(self.send), pointer(self.recv)
        if s.collective == cv.ALL_REDUCE:
            self._op = lambda: comm.allReduce(send, recv, s.send_count, f32, total, stream)
        elif s.collective == cv.ALL_GATHER:
            self._op = lambda: comm.allGather(send, recv, s.send_count, f32, stream)
        elif s.collective == cv.REDUCE_SCATTER:
            self._op = lambda: comm.reduceScatter(send, recv, s.recv_count, f32, total, stream)
        else:
            to, source = cv.ring_peers(rank, s.ranks)

            def ring() -> None:  # a send and a receive in one group, so neither waits for the other
                nccl.groupStart()
                comm.send(send, s.send_count, f32, to, stream)
                comm.recv(recv, s.recv_count, f32, source, stream)
                nccl.groupEnd()

            self._op = ring

    def launch(self) -> None:
        with self.cp.cuda.Device(self.device):
            self._op()

    def sync(self) -> None:
        self.stream.synchronize()
        try:
            self.comm.check_async_error()
        except RuntimeError as exc:
            if "not available" not in str(exc):  # an NCCL older than 2.4 cannot tell
                raise

    def output(self) -> Any:
        return self.recv

    def timed(self, iters: int, warmup: int) -> list[float]:
        """Seconds per collective, `iters` samples. The warm-up (at least one run) is timed as a whole to estimate
        one run; each sample is then a CUDA event pair around `batch` runs queued back to back (batch_size), so a
        short collective is not charged the host's launch gap. The ranks line up at a barrier before the samples."""
        cp = self.cp
        with cp.cuda.Device(self.device):
            first, last = cp.cuda.Event(), cp.cuda.Event()
            first.record(self.stream)
            for _ in range(max(warmup, 1)):
                self._op()
            last.record(self.stream)
            self.sync()
            batch = batch_size(cp.cuda.get_elapsed_time(first, last) * 1e-3 / max(warmup, 1))
            self.control.barrier()
            events = [(cp.cuda.Event(), cp.cuda.Event()) for _ in range(iters)]
            for start, end in events:
                start.record(self.stream)
                for _ in range(batch):
                    self._op()
                end.record(self.stream)
            self.sync()
            return [cp.cuda.get_elapsed_time(start, end) * 1e-3 / batch for start, end in events]

    def release(self) -> None:
        self.send = self.recv = self._op = None
        self.cp.get_default_memory_pool().free_all_blocks()

    def close(self) -> None:
        if self.comm is not None:
            self.comm.destroy()
            self.comm = None
