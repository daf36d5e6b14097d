"""The links between a host's GPUs, measured: peer-to-peer copies for every ordered pair (one way, and both ways at
once), pinned host<->device copies per GPU, and NCCL all-reduce bus bandwidth over 1 MiB..4 GiB.

Every figure is a copy or collective whose result was checked first (the destination compared with the pattern the
source held; the all-reduce sum compared with n(n+1)/2), then timed with CUDA events. A copy that delivers wrong
data fails the run (exit 1, naming the GPUs): that is a finding about the hardware, not a figure. Bus bandwidth
is as nccl-tests defines it, algorithm bandwidth x 2(n-1)/n, so the figures compare with nccl-tests' reports. A
step that cannot run here (one GPU, CuPy without NCCL) is skipped with the reason; it never fails the run.
"""

from __future__ import annotations

import statistics
from typing import Any, Callable, Sequence
import datetime as _dt

from roofline.errors import GateFailed

from roofline.records.interconnect import SCHEMA
from roofline.measurement.multi.pool import failure_lines, run_workers
from roofline.version import __version__
from roofline.measurement.multi.measure import identity
MiB = 1 << 20
ALLREDUCE_SIZES = tuple(MiB * 4**k for k in range(7))  # 1 MiB, 4 MiB, ... 4 GiB
_H2D, _D2H = 1, 2  # cudaMemcpyKind


def bus_bandwidth(size: float, seconds: float, ranks: int) -> tuple[float, float]:
    """(algorithm bandwidth, bus bandwidth) of one all-reduce of `size` bytes per rank taking `seconds`
    (nccl-tests: algbw = size / time, busbw = algbw x 2(n-1)/n, the traffic each link really carries)."""
    algbw = size / seconds
    return algbw, algbw * 2.0 * (ranks - 1) / ranks


def _cupy() -> Any:
    # lazy: roofline.measurement.backend_cupy imports numpy (start-up)
    from roofline.measurement.backend_cupy import import_cupy

    return import_cupy()


def _timed(cp: Any, stream: Any, enqueue: Callable[[], None], repeats: int) -> float:
    """Median seconds of `repeats` event-timed runs of enqueue() on `stream`, after one untimed run."""
    enqueue()
    stream.synchronize()
    times = []
    for _ in range(repeats):
        start, end = cp.cuda.Event(), cp.cuda.Event()
        start.record(stream)
        enqueue()
        end.record(stream)
        end.synchronize()
        times.append(cp.cuda.get_elapsed_time(start, end) * 1e-3)
    return statistics.median(times)


def _pattern(cp: Any, n: int, salt: int) -> Any:
    return cp.arange(n, dtype=cp.uint32) * cp.uint32(2654435761) + cp.uint32(salt)


def peer_copies(devices: Sequence[int], size: int = 1 << 30, repeats: int = 5) -> dict[str, Any]:
    """Every ordered pair: cudaMemcpyPeerAsync of `size` bytes, one way; and each unordered pair both ways at once
    (the second copy's stream waits on the first's start event, the first's end waits on the second's end)."""
    if len(devices) < 2:
        return {"skipped": f"{len(devices)} GPU: peer copies need two"}
    cp = _cupy()
    rt = cp.cuda.runtime
    n = size // 4
    bufs, streams, access = {}, {}, {}
    for d in devices:
        with cp.cuda.Device(d):
            bufs[d] = (_pattern(cp, n, d), cp.empty(n, dtype=cp.uint32))
            streams[d] = cp.cuda.Stream(non_blocking=True)
    for a in devices:
        for b in devices:
            if a != b:
                access[(a, b)] = bool(rt.deviceCanAccessPeer(a, b))
                if access[(a, b)]:
                    with cp.cuda.Device(a):
                        try:
                            rt.deviceEnablePeerAccess(b)
                        except Exception:  # noqa: BLE001 - already enabled
                            pass

    def copy(a: int, b: int) -> Callable[[], None]:
        return lambda: rt.memcpyPeerAsync(bufs[b][1].data.ptr, b, bufs[a][0].data.ptr, a, size, streams[a].ptr)

    one_way = []
    for a in devices:
        for b in devices:
            if a == b:
                continue
            with cp.cuda.Device(a):
                copy(a, b)()
                streams[a].synchronize()
            with cp.cuda.Device(b):
                if not bool(cp.array_equal(bufs[b][1], _pattern(cp, n, a))):
                    raise GateFailed(f"peer copy GPU {a} -> GPU {b} delivered wrong data: the link or a GPU's "
                                     "memory is faulty")
                bufs[b][1].fill(0)
            with cp.cuda.Device(a):
                t = _timed(cp, streams[a], copy(a, b), repeats)
            one_way.append({"src": a, "dst": b, "bytes": size, "time": t, "bandwidth": size / t,
                            "peer_access": access[(a, b)]})
    both = []
    for i, a in enumerate(devices):
        for b in devices[i + 1:]:
            def enqueue(a: int = a, b: int = b) -> None:
                with cp.cuda.Device(a):
                    start = cp.cuda.Event()
                    start.record(streams[a])
                with cp.cuda.Device(b):  # an event is recorded on a stream of its own device
                    other_done = cp.cuda.Event()
                    streams[b].wait_event(start)
                    copy(b, a)()
                    other_done.record(streams[b])
                with cp.cuda.Device(a):
                    copy(a, b)()
                    streams[a].wait_event(other_done)

            with cp.cuda.Device(a):
                t = _timed(cp, streams[a], enqueue, repeats)
            both.append({"a": a, "b": b, "bytes": 2 * size, "time": t, "bandwidth": 2 * size / t})
    del bufs
    cp.get_default_memory_pool().free_all_blocks()
    return {"one_way": one_way, "both_ways": both, "bytes": size}


def host_copies(devices: Sequence[int], size: int = 1 << 30, repeats: int = 5) -> list[dict[str, Any]]:
    """Pinned host memory to each GPU and back (cudaMemcpyAsync, one direction at a time), checked then timed."""
    import numpy as np  # lazy: numpy is a start-up cost only this path pays

    cp = _cupy()
    rt = cp.cuda.runtime
    n = size // 4
    mem = cp.cuda.alloc_pinned_memory(size)
    host = np.frombuffer(mem, dtype=np.uint32, count=n)
    out = []
    for d in devices:
        with cp.cuda.Device(d):
            stream = cp.cuda.Stream(non_blocking=True)
            dev = cp.empty(n, dtype=cp.uint32)
            host[:] = np.arange(n, dtype=np.uint32) * np.uint32(2654435761) + np.uint32(d)
            h2d = lambda: rt.memcpyAsync(dev.data.ptr, host.ctypes.data, size, _H2D, stream.ptr)  # noqa: E731
            d2h = lambda: rt.memcpyAsync(host.ctypes.data, dev.data.ptr, size, _D2H, stream.ptr)  # noqa: E731
            h2d()
            stream.synchronize()
            if not bool(cp.array_equal(dev, _pattern(cp, n, d))):
                raise GateFailed(f"host -> GPU {d} copy delivered wrong data: the link or the GPU's memory is faulty")
            dev += cp.uint32(1)
            d2h()
            stream.synchronize()
            expected = np.arange(n, dtype=np.uint32) * np.uint32(2654435761) + np.uint32(d + 1)
            if not np.array_equal(host, expected):
                raise GateFailed(f"GPU {d} -> host copy delivered wrong data: the link or the GPU's memory is faulty")
            t_in, t_out = _timed(cp, stream, h2d, repeats), _timed(cp, stream, d2h, repeats)
            out.append({"device": d, "bytes": size, "h2d": size / t_in, "d2h": size / t_out,
                        "h2d_time": t_in, "d2h_time": t_out})
            del dev
            cp.get_default_memory_pool().free_all_blocks()
    return out


def nccl_unavailable() -> str | None:
    """Why NCCL cannot be used through CuPy here, or None when it can."""
    try:
        from cupy.cuda import nccl  # lazy: cupy is a start-up cost only this path pays
    except Exception as exc:  # noqa: BLE001 - ImportError, or the library failing to load
        return f"CuPy's NCCL module does not load ({str(exc).splitlines()[0] if str(exc) else type(exc).__name__})"
    if not getattr(nccl, "available", True):
        return "CuPy was built without NCCL (pip install nvidia-nccl-cu12 or -cu13 and reinstall CuPy)"
    return None


def allreduce_worker(rank: int, payload: tuple[tuple[int, ...], bytes, tuple[int, ...], int],
                     send: Callable[[str, Any], None]) -> list[dict[str, Any]]:
    """One rank (one process, one GPU) of the all-reduce sweep: sum of float32 buffers, checked, then timed."""
    devices, uid, sizes, repeats = payload
    cp = _cupy()
    from cupy.cuda import nccl  # lazy: cupy is a start-up cost only this path pays

    n, device, rank = len(devices), rank, devices.index(rank)  # run_workers passes the device ordinal
    cp.cuda.Device(device).use()
    comm = nccl.NcclCommunicator(n, uid, rank)
    stream = cp.cuda.Stream(non_blocking=True)
    points = []
    for size in sizes:
        count = size // 4
        src = cp.full(count, rank + 1, dtype=cp.float32)
        dst = cp.empty(count, dtype=cp.float32)

        def once() -> None:
            comm.allReduce(src.data.ptr, dst.data.ptr, count, nccl.NCCL_FLOAT32, nccl.NCCL_SUM, stream.ptr)

        once()
        stream.synchronize()
        expected = n * (n + 1) / 2
        if not bool(cp.all(dst == cp.float32(expected))):
            raise RuntimeError(f"all-reduce of {size} B on rank {rank} did not give {expected:g} everywhere")
        send("progress", f"all-reduce {size // MiB} MiB")
        points.append({"bytes": size, "time": _timed(cp, stream, once, repeats)})
        del src, dst
        cp.get_default_memory_pool().free_all_blocks()
    return points


def allreduce(devices: Sequence[int], sizes: Sequence[int] = ALLREDUCE_SIZES, repeats: int = 10) -> dict[str, Any]:
    """NCCL all-reduce over the devices, one process per GPU; per size the slowest rank's median time (the
    collective ends when the last rank does), algorithm and bus bandwidth."""
    if len(devices) < 2:
        return {"skipped": f"{len(devices)} GPU: an all-reduce needs two"}
    why = nccl_unavailable()
    if why:
        return {"skipped": why}
    from cupy.cuda import nccl  # lazy: cupy is a start-up cost only this path pays

    uid = nccl.get_unique_id()
    outcomes = run_workers(list(devices), allreduce_worker, (tuple(devices), uid, tuple(sizes), repeats))
    failed = failure_lines(outcomes)
    if failed:
        return {"skipped": "the all-reduce failed: " + "; ".join(failed)}
    points = []
    for i, size in enumerate(sizes):
        t = max(o.result[i]["time"] for o in outcomes.values())
        algbw, busbw = bus_bandwidth(size, t, len(devices))
        points.append({"bytes": size, "time": t, "algbw": algbw, "busbw": busbw})
    return {"ranks": len(devices), "dtype": "float32", "op": "sum", "points": points,
            "nccl_version": _nccl_version(nccl)}


def _nccl_version(nccl: Any) -> str | None:
    try:
        v = int(nccl.get_version())
    except Exception:  # noqa: BLE001
        return None
    return f"{v // 10000}.{v // 100 % 100}.{v % 100}" if v >= 10000 else f"{v // 1000}.{v // 100 % 10}.{v % 100}"


def links_document(devices: Sequence[int], spec: Any, size: int = 1 << 30,
                   allreduce_sizes: Sequence[int] = ALLREDUCE_SIZES,
                   on_step: Callable[[str, str | None], None] = lambda name, skipped: None) -> dict[str, Any]:
    """Every step on these devices (peer copies, host copies, all-reduce) as one roofline/interconnect/v1 document,
    with the devices' identities and the spec's link roofs. on_step(name, None) is called before each step and
    on_step(name, why) after a step that was skipped."""
    from roofline.measurement.session import open_backend  # lazy: roofline.measurement.session imports numpy (start-up)

    steps: dict[str, Any] = {}
    for name, run in (("peer", lambda: peer_copies(devices, size)), ("host", lambda: host_copies(devices, size)),
                      ("allreduce", lambda: allreduce(devices, allreduce_sizes))):
        on_step(name, None)
        steps[name] = run()
        skipped = steps[name].get("skipped") if isinstance(steps[name], dict) else None
        if skipped:
            on_step(name, skipped)
    return {"schema": SCHEMA, "created": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
            "tool_version": __version__, "devices": [identity(open_backend("cupy", d)) for d in devices],
            "spec_id": spec.id if spec else None,
            "roofs": {k: {"bandwidth": v.bandwidth, "per_direction": v.per_direction}
                      for k, v in (spec.interconnect.items() if spec else ())},
            **steps}
