"""A trace's timeline: the step, not only its kernels. Pure: parsed trace events in, typed figures out (seconds).

Definitions (HTA's, Holistic Trace Analysis 0.5, `get_temporal_breakdown`, so the two agree on the same trace):
  window   from the first GPU event's start to the last one's end (kernels, memcpys and memsets, every stream)
  busy     the union of those events' intervals; idle = window - busy
per device, and per rank over all its devices (HTA's figure: one union per rank). Events of negative duration (a
broken trace) are left out; an event of zero duration still marks where the window begins or ends. Every event the
import covers is in: HTA by default leaves out the last profiler step of a trace of several, and rounds each event
of a nanosecond trace inward to whole microseconds; with include_last_profiler_step=True and
HTA_DISABLE_NS_ROUNDING=1 it gives the same idle share (benchmarks/timeline_vs_hta.py).

An idle gap is a stretch of the window where nothing runs on the device. Its cause is read from the host, on the
thread that launched the event ending the gap (found through the correlation id), in this order:
  synchronisation  that thread was inside a synchronising call (cudaDeviceSynchronize, cudaStreamSynchronize,
                   cudaEventSynchronize, a blocking cudaMemcpy) when the gap began: the host waited for the GPU
                   to drain before it could give it more work
  host-bound       the launch call began after the gap began: the GPU waited for the host to enqueue work
                   (HTA's "host wait"); the op the thread was running when the gap began is named
  launch-bound     the launch call began before the gap did, yet the work started only when it ended: launch and
                   queueing latency (a dependency on another stream looks the same from the trace)
  other            the event ending the gap has no launch in the trace, so the host's part cannot be told
Launch delay is an event's start minus the end of the call that launched it (HTA's definition; negative when the
GPU started it before the call returned), for the first event of each launch. A CUDA graph launch is measured
apart (graph_launch_delay), from the start of its cudaGraphLaunch to its first event: the call enqueues every node
of the graph and returns long after the GPU began the first (-62 µs from the call's end on the committed H200
trace, where the call took 111 µs), so the end would make the delay negative and say nothing; the graph's
later kernels are not launches of their own. Where its stream was still running earlier work when the call began,
the delay runs from that work's end instead: the wait in the queue is not the launch's. Overlap sorts events into
compute (kernels), copies (memcpy, memset) and collectives (NCCL and other collective kernels, by name) and
measures the time two or more of those run at once.
"""

from __future__ import annotations

import bisect
import math
import re
import statistics
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Mapping, Sequence

from roofline.kineto.attribution import GRAPH_LAUNCHES, _innermost
from roofline.kineto.reader import GpuEvent, Launch, Trace
from roofline.records.timeline import CAUSES, SCHEMA

DEFINITION = ("HTA's: busy = the union of the device's kernel, memcpy and memset intervals; window = first event "
              "start to last event end; idle = window - busy")
TOP_GAPS = 5
SYNC_SLACK = 5.0  # µs: how far a sync call may seem to end before the GPU does (CPU and GPU clocks are aligned
# by CUPTI to about this)
STRAGGLER = 1.05  # a rank this much above the median rank's busy time is the straggler (as document.STRAGGLER)
_SYNC = re.compile(r"^cu(da)?(Device|Ctx|Stream|Event)Synchronize|^cudaMemcpy(?!.*Async)|^cuMemcpy(?!.*Async)")
_COLLECTIVE = re.compile(r"^(nccl|rccl)|all_?reduce|all_?gather|reduce_?scatter|all_?to_?all|nvshmem", re.IGNORECASE)
MATRIX_CLASSES = ("gemm", "conv", "attention")  # the ops whose FLOPs are model FLOPs (MFU)
FLOP_CONVENTION = ("model FLOPs (MFU): the modelled FLOPs of matrix-class ops (GEMM 2·m·n·k, convolution, attention "
                   "matmuls), recomputation not told apart; hardware FLOPs (HFU): every modelled FLOP")


_KERNEL_CATEGORY: dict[str, str] = {}  # a kernel name's category, found once (a trace repeats its names)


def category(event: GpuEvent) -> str:
    """'copy' for memcpy and memset, 'collective' for a collective kernel, else 'compute'."""
    if event.kind != "kernel":
        return "copy"
    found = _KERNEL_CATEGORY.get(event.name)
    if found is None:
        if len(_KERNEL_CATEGORY) > 100_000:
            _KERNEL_CATEGORY.clear()
        found = _KERNEL_CATEGORY[event.name] = "collective" if _COLLECTIVE.search(event.name) else "compute"
    return found


@dataclass(frozen=True)
class Gap:
    """One idle stretch of a device's window."""
    start: float  # s after the window began
    duration: float  # s
    cause: str  # one of CAUSES
    host_op: str | None  # the op on the launching thread when the gap began (None: between ops, or unknown)
    next_event: str  # the GPU event that ended it
    launch: str | None  # the call that launched that event
    launch_lead: float | None  # s: the launch call's start minus the gap's start (> 0: the host was late)
    launch_op: str | None = None  # the op the launch call ran in: what the host reached when the gap ended

    def to_json(self) -> dict[str, Any]:
        return {"start": self.start, "duration": self.duration, "cause": self.cause, "host_op": self.host_op,
                "next": self.next_event, "launch": self.launch, "launch_lead": self.launch_lead,
                "launch_op": self.launch_op}


@dataclass(frozen=True)
class LaunchDelay:
    """Event start minus its launch call's end, over the launches with both in the trace (s)."""
    count: int
    mean: float
    p50: float
    p95: float
    max: float

    def to_json(self) -> dict[str, Any]:
        return {"count": self.count, "mean": self.mean, "p50": self.p50, "p95": self.p95, "max": self.max}


@dataclass(frozen=True)
class Overlap:
    """How long each category ran (each its own union) and how long two or more ran at once (s)."""
    compute: float
    copy: float
    collective: float
    concurrent: float
    busy: float
    compute_collective: float  # collective time with compute running beside it
    work: float = 0.0  # time compute or copies ran: busy time outside collectives

    @property
    def concurrent_share(self) -> float:
        return self.concurrent / self.busy if self.busy > 0 else 0.0

    @property
    def collective_hidden(self) -> float | None:
        """The share of the collectives' time that compute ran beside (HTA's communication overlap)."""
        return self.compute_collective / self.collective if self.collective > 0 else None

    def to_json(self) -> dict[str, Any]:
        return {"compute": self.compute, "copy": self.copy, "collective": self.collective,
                "concurrent": self.concurrent, "concurrent_share": self.concurrent_share,
                "compute_collective": self.compute_collective, "collective_hidden": self.collective_hidden}


class _Idle:
    """idle and idle_share from a window and the busy time in it (HTA's definition), for a device and a rank."""

    window: float
    busy: float

    @property
    def idle(self) -> float:
        return max(self.window - self.busy, 0.0)

    @property
    def idle_share(self) -> float:
        return self.idle / self.window if self.window > 0 else 0.0


@dataclass(frozen=True)
class DeviceTimeline(_Idle):
    rank: int
    device: int | None
    events: int
    streams: tuple[int, ...]
    window: float  # s
    busy: float  # s
    idle_by_cause: Mapping[str, float]  # s, every gap (their sum is the idle time)
    gaps: tuple[Gap, ...]  # the largest, largest first
    launch_delay: LaunchDelay | None
    overlap: Overlap
    graph_launch_delay: LaunchDelay | None = None  # CUDA graph launches: the call's start to the first event

    def to_json(self) -> dict[str, Any]:
        return {"rank": self.rank, "device": self.device, "events": self.events, "streams": list(self.streams),
                "window": self.window, "busy": self.busy, "idle": self.idle, "idle_share": self.idle_share,
                "idle_by_cause": dict(self.idle_by_cause), "gaps": [g.to_json() for g in self.gaps],
                "launch_delay": self.launch_delay.to_json() if self.launch_delay else None,
                "graph_launch_delay": self.graph_launch_delay.to_json() if self.graph_launch_delay else None,
                "overlap": self.overlap.to_json()}


@dataclass(frozen=True)
class RankTimeline(_Idle):
    """HTA's per-rank figure: one union over all the rank's devices and streams."""
    rank: int
    window: float
    busy: float
    busy_outside_collectives: float  # compute and copies: the work a slow rank makes the others wait for

    def to_json(self) -> dict[str, Any]:
        return {"rank": self.rank, "window": self.window, "busy": self.busy, "idle": self.idle,
                "idle_share": self.idle_share, "busy_outside_collectives": self.busy_outside_collectives}


@dataclass(frozen=True)
class Timeline:
    devices: tuple[DeviceTimeline, ...]
    ranks: tuple[RankTimeline, ...] = field(default=())

    def straggler(self) -> dict[str, Any] | None:
        """The rank with the most busy time outside collectives (the others wait for it inside theirs), against the
        median rank; and the rank with the longest window. None for one rank."""
        if len(self.ranks) < 2:
            return None
        work = {r.rank: r.busy_outside_collectives for r in self.ranks}
        median = statistics.median(work.values())
        slow = max(work, key=lambda r: (work[r], -r))
        longest = max(self.ranks, key=lambda r: (r.window, -r.rank))
        vs = work[slow] / median if median > 0 else None
        return {"by": "busy time outside collectives", "rank": slow, "busy": work[slow], "median": median,
                "vs_median": vs, "threshold": STRAGGLER, "outlier": bool(vs and vs > STRAGGLER),
                "longest_window": {"rank": longest.rank, "window": longest.window}}


# ---- the analysis --------------------------------------------------------------------------------------------


def merge(intervals: Iterable[tuple[float, float]]) -> list[tuple[float, float]]:
    """The union of [start, end] intervals as disjoint, sorted intervals (touching ones merged, as HTA does)."""
    out: list[tuple[float, float]] = []
    first, last = None, 0.0
    for start, end in sorted(intervals):
        if first is not None and start <= last:
            if end > last:
                last = end
            continue
        if first is not None:
            out.append((first, last))
        first, last = start, end
    if first is not None:
        out.append((first, last))
    return out


def _length(intervals: Sequence[tuple[float, float]]) -> float:
    return sum(b - a for a, b in intervals)


def quantile(values: Sequence[float], q: float) -> float:
    """The q-quantile with linear interpolation between order statistics (numpy's default)."""
    ordered = sorted(values)
    pos = q * (len(ordered) - 1)
    lo = math.floor(pos)
    hi = min(lo + 1, len(ordered) - 1)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (pos - lo)


def launch_delay(events: Sequence[GpuEvent], launches: Mapping[int, Launch], graphs: bool = False
                 ) -> LaunchDelay | None:
    """Over the launches other than CUDA graph launches: each first event's start minus the call's end (HTA's);
    with `graphs`, over the CUDA graph launches alone: the first event's start minus the call's start, or minus the
    end of the work before it on its stream where that ended later (the graph queued behind it: stream order, not
    the launch, held it; 124 µs -> 4 µs for a replay launched while the previous one ran, H100 trace of
    2026-12-06)."""
    first: dict[int, GpuEvent] = {}
    for e in events:
        launch = launches.get(e.correlation) if e.correlation is not None else None
        if launch is not None and (launch.name in GRAPH_LAUNCHES) == graphs:
            if e.correlation not in first or e.ts < first[e.correlation].ts:
                first[e.correlation] = e
    if graphs:
        busy_until = _stream_busy(events)
        delays = [(e.ts - max(launches[c].ts, busy_until(e))) * 1e-6 for c, e in first.items()]
    else:
        delays = [(e.ts - launches[c].end) * 1e-6 for c, e in first.items()]
    if not delays:
        return None
    return LaunchDelay(len(delays), sum(delays) / len(delays), quantile(delays, 0.5), quantile(delays, 0.95),
                       max(delays))


def _stream_busy(events: Sequence[GpuEvent]) -> Callable[[GpuEvent], float]:
    """event -> the latest end (µs) of the events that started before it on its device and stream (-inf: none)."""
    by_stream: dict[tuple[int | None, int | None], list[tuple[float, float]]] = {}
    for e in events:
        by_stream.setdefault((e.device, e.stream), []).append((e.ts, e.ts + max(e.dur, 0.0)))
    starts: dict[tuple[int | None, int | None], list[float]] = {}
    latest: dict[tuple[int | None, int | None], list[float]] = {}
    for key, spans in by_stream.items():
        spans.sort()
        starts[key] = [a for a, _ in spans]
        running, ends = -math.inf, []
        for _, b in spans:
            running = max(running, b)
            ends.append(running)
        latest[key] = ends

    def busy_until(e: GpuEvent) -> float:
        key = (e.device, e.stream)
        k = bisect.bisect_left(starts[key], e.ts)
        return latest[key][k - 1] if k > 0 else -math.inf

    return busy_until


def overlap(events: Sequence[GpuEvent]) -> Overlap:
    """A sweep over the events' starts and ends counting what runs in each category."""
    index = {"compute": 0, "copy": 1, "collective": 2}
    points: list[tuple[float, int, int]] = []
    for e in events:
        if e.dur > 0:
            cat = index[category(e)]
            points += [(e.ts, 1, cat), (e.ts + e.dur, -1, cat)]
    points.sort(key=lambda p: (p[0], p[1]))  # ends before starts at the same instant
    running = [0, 0, 0]
    spent = [0.0, 0.0, 0.0]
    concurrent = busy = both = work = 0.0
    last = points[0][0] if points else 0.0
    for t, step, cat in points:
        if t > last:
            span = t - last
            compute, copy, collective = running
            active = (compute > 0) + (copy > 0) + (collective > 0)
            if active:
                busy += span
                if compute:
                    spent[0] += span
                if copy:
                    spent[1] += span
                if collective:
                    spent[2] += span
                if active >= 2:
                    concurrent += span
                if compute and collective:
                    both += span
                if compute or copy:
                    work += span
        running[cat] += step
        last = t
    us = 1e-6
    return Overlap(spent[0] * us, spent[1] * us, spent[2] * us, concurrent * us, busy * us, both * us, work * us)


class _Host:
    """The launching threads' ops and synchronising calls, for the gaps' causes."""

    def __init__(self, trace: Trace):
        self.launches = trace.launches
        self.ops: dict[str, list[Any]] = {}
        for op in trace.ops:
            self.ops.setdefault(op.tid, []).append(op)
        self.syncs: dict[str, list[Launch]] = {}
        for call in trace.launches.values():
            if _SYNC.search(call.name):
                self.syncs.setdefault(call.tid, []).append(call)
        for calls in self.syncs.values():
            calls.sort(key=lambda c: c.ts)
        self.sync_starts = {tid: [c.ts for c in calls] for tid, calls in self.syncs.items()}

    def sync_at(self, tid: str, t: float) -> Launch | None:
        """The synchronising call the thread was in at time t (µs), if any."""
        calls = self.syncs.get(tid)
        if not calls:
            return None
        i = bisect.bisect_right(self.sync_starts[tid], t) - 1
        if i >= 0 and calls[i].end >= t - SYNC_SLACK:
            return calls[i]
        return None

    def ops_at(self, points: Mapping[str, list[tuple[float, int]]]) -> dict[int, Any]:
        found: dict[int, Any] = {}
        for tid, pts in points.items():
            found.update(_innermost(self.ops.get(tid, []), pts))
        return found


def _gaps(merged: Sequence[tuple[float, float]], starts: Mapping[float, GpuEvent], host: _Host, origin: float,
          top: int) -> tuple[dict[str, float], list[Gap]]:
    """The idle time by cause over every gap between the merged busy intervals, and the `top` largest gaps."""
    by_cause = {c: 0.0 for c in CAUSES}
    raw = []
    points: dict[str, list[tuple[float, int]]] = {}
    launches = host.launches
    for (_, a), (b, _) in zip(merged, merged[1:]):
        nxt = starts[b]
        launch = launches.get(nxt.correlation) if nxt.correlation is not None else None
        if launch is None:
            cause = "other"
        elif host.sync_at(launch.tid, a) is not None:
            cause = "synchronisation"
        elif launch.ts > a:
            cause = "host-bound"
        else:
            cause = "launch-bound"
        by_cause[cause] += (b - a) * 1e-6
        raw.append((a, b, nxt, launch, cause))
    largest = sorted(raw, key=lambda g: (g[0] - g[1], g[0]))[:top]
    for i, (a, _, _, launch, _) in enumerate(largest):
        if launch is not None:  # key 2i: the op when the gap began; 2i + 1: the op the launch ran in
            points.setdefault(launch.tid, []).extend(((a, 2 * i), (launch.ts, 2 * i + 1)))
    op_at = host.ops_at(points)
    out = []
    for i, (a, b, nxt, launch, cause) in enumerate(largest):
        op, launch_op = op_at.get(2 * i), op_at.get(2 * i + 1)
        host_op = op.name if op is not None else None
        if cause == "synchronisation":
            assert launch is not None
            host_op = host.sync_at(launch.tid, a).name  # type: ignore[union-attr]
        out.append(Gap((a - origin) * 1e-6, (b - a) * 1e-6, cause, host_op, nxt.name,
                       launch.name if launch else None, (launch.ts - a) * 1e-6 if launch else None,
                       launch_op.name if launch_op is not None else None))
    return by_cause, out


def device_timeline(trace: Trace, rank: int, device: int | None, events: Sequence[GpuEvent], host: _Host,
                    top: int = TOP_GAPS) -> DeviceTimeline:
    usable = [e for e in events if e.dur >= 0]
    merged = merge((e.ts, e.ts + e.dur) for e in usable)
    starts: dict[float, GpuEvent] = {}
    for e in sorted(usable, key=lambda e: (e.ts, -e.dur)):
        starts.setdefault(e.ts, e)
    window = (merged[-1][1] - merged[0][0]) * 1e-6 if merged else 0.0
    by_cause, largest = _gaps(merged, starts, host, merged[0][0], top) if merged else ({c: 0.0 for c in CAUSES}, [])
    streams = tuple(sorted({e.stream for e in usable if e.stream is not None}))
    return DeviceTimeline(rank, device, len(usable), streams, window, _length(merged) * 1e-6, by_cause, tuple(largest),
                          launch_delay(usable, trace.launches), overlap(usable),
                          launch_delay(usable, trace.launches, graphs=True))


def _rank(rank: int, events: Sequence[GpuEvent]) -> RankTimeline:
    usable = [e for e in events if e.dur >= 0]
    merged = merge((e.ts, e.ts + e.dur) for e in usable)
    window = (merged[-1][1] - merged[0][0]) * 1e-6 if merged else 0.0
    work = merge((e.ts, e.ts + e.dur) for e in usable if category(e) != "collective")
    return RankTimeline(rank, window, _length(merged) * 1e-6, _length(work) * 1e-6)


def analyze(traces: Sequence[Trace], ranks: Sequence[int], top: int = TOP_GAPS) -> Timeline:
    """The timeline of each device of each trace (one trace per rank) and of each rank."""
    devices: list[DeviceTimeline] = []
    per_rank: list[RankTimeline] = []
    for trace, rank in zip(traces, ranks):
        host = _Host(trace)
        by_device: dict[int | None, list[GpuEvent]] = {}
        for e in trace.gpu:
            by_device.setdefault(e.device, []).append(e)
        mine = [device_timeline(trace, rank, device, by_device[device], host, top)
                for device in sorted(by_device, key=lambda d: (d is None, d or 0))]
        devices += mine
        if len(mine) == 1:  # the rank's union is its one device's
            d = mine[0]
            per_rank.append(RankTimeline(rank, d.window, d.busy, d.overlap.work))
        else:
            per_rank.append(_rank(rank, trace.gpu))
    return Timeline(tuple(devices), tuple(per_rank))


# ---- the step: the program's figures over its wall time -------------------------------------------------------


def peak_roof(kernels: Sequence[Mapping[str, Any]], roofs: Mapping[str, float]) -> tuple[str, float] | None:
    """The tensor roof MFU is a share of: the one most model FLOPs ran under, else the spec's BF16 (or FP16, or
    highest) tensor roof. None when the spec has no tensor roof."""
    by: dict[str, float] = {}
    for k in kernels:
        if _matrix(k) and str(k.get("roof", "")).endswith("_tensor") and k["roof"] in roofs:
            by[k["roof"]] = by.get(k["roof"], 0.0) + k["flops"]
    if by and max(by.values()) > 0:
        roof = max(by, key=lambda r: by[r])
        return roof, roofs[roof]
    for roof in ("bf16_tensor", "fp16_tensor"):
        if roof in roofs:
            return roof, roofs[roof]
    tensor = {r: v for r, v in roofs.items() if r.endswith("_tensor")}
    if not tensor:
        return None
    roof = max(tensor, key=lambda r: tensor[r])
    return roof, tensor[roof]


def _matrix(kernel: Mapping[str, Any]) -> bool:
    """Matrix work: a GEMM, convolution or attention op, or a Triton template the model placed on a tensor roof
    (Inductor's mm/addmm/bmm and flex_attention templates: roofline.model.ops.triton)."""
    model = kernel.get("model")
    if not isinstance(model, dict):
        return False
    return model.get("op_class") in MATRIX_CLASSES or (
        model.get("op_class") == "triton" and str(kernel.get("roof", "")).endswith("_tensor"))


def step(kernels: Sequence[Mapping[str, Any]], unmodelled_time: float, wall: float, busy: float,
         roofs: Mapping[str, float], devices: int = 1) -> dict[str, Any]:
    """The program line's step figures: its GPU time (all of it), the fraction of ceiling over the modelled kernels'
    time and over the wall time (the sum of the devices' windows), MFU and HFU against the tensor peak."""
    time = sum(k["time_median"] for k in kernels)
    sol = sum(k["sol_time"] for k in kernels)
    gpu_time = time + unmodelled_time
    model_flops = sum(k["flops"] for k in kernels if _matrix(k))
    hardware_flops = sum(k["flops"] for k in kernels)
    peak = peak_roof(kernels, roofs)
    per_second = wall * peak[1] if peak is not None and wall > 0 else 0.0
    return {"gpu_time": gpu_time, "unmodelled_time": unmodelled_time,
            "unmodelled_share": unmodelled_time / gpu_time if gpu_time > 0 else 0.0,
            "modelled_time": time, "sol_time": sol, "wall_time": wall, "devices": devices, "busy": busy,
            "idle_share": max(wall - busy, 0.0) / wall if wall > 0 else 0.0,
            "fraction_of_ceiling_kernels": sol / time if time > 0 else None,
            "fraction_of_ceiling_wall": sol / wall if wall > 0 else None,
            "model_flops": model_flops, "hardware_flops": hardware_flops,
            "peak": {"roof": peak[0], "flops": peak[1]} if peak is not None else None,
            "mfu": model_flops / per_second if per_second > 0 else None,
            "hfu": hardware_flops / per_second if per_second > 0 else None,
            "flop_convention": FLOP_CONVENTION}


def block(timeline: Timeline, steps: Mapping[str, Any], rank_steps: Mapping[int, Mapping[str, Any]] | None = None
          ) -> dict[str, Any]:
    """The results document's `timeline` block (roofline/timeline/v1)."""
    ranks = []
    for r in timeline.ranks:
        entry = r.to_json()
        if rank_steps and r.rank in rank_steps:
            entry["step"] = dict(rank_steps[r.rank])
        ranks.append(entry)
    return {"schema": SCHEMA, "definition": DEFINITION, "causes": list(CAUSES),
            "devices": [d.to_json() for d in timeline.devices], "ranks": ranks,
            "straggler": timeline.straggler(), "step": dict(steps)}
