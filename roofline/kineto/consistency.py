"""Checks across what the reader kept, that no single event can fail: a trace given twice, and GPU work that
overlaps on one stream.

A CUDA stream runs its work in issue order: a kernel, copy or fill starts only when the one before it on the
stream has finished (CUDA C++ Programming Guide, "Streams": commands in one stream execute in order). So two events
of one (device, stream) that overlap by more than the trace's timestamp granularity are times that did not happen,
and every figure built on them (GPU time, idle, the timeline) counts some time twice. Kernels of a CUDA-graph
replay are left out: a graph's branches may run side by side while Kineto files them under the stream the graph
was launched on.
"""

from __future__ import annotations

from pathlib import Path
from typing import Sequence

from roofline.errors import InputError
from roofline.kineto.reader import GpuEvent, Trace
from roofline.model.counts import counted

OVERLAP_SLACK = 1.0  # µs: overlaps up to this are clock alignment between CPU and GPU timestamps, not broken times
SHOWN = 3  # overlapping pairs named in the warning


def refuse_same_trace(traces: Sequence[Trace]) -> None:
    """Two files with one content (the same trace given twice, under any two names, compressed or not) would be
    two ranks with identical times: refused, naming both."""
    seen: dict[str, Path] = {}
    for trace in traces:
        if not trace.digest:
            continue
        if trace.digest in seen:
            raise InputError(f"{trace.path}: is the same trace as {seen[trace.digest]} (identical content); each "
                             "trace is one rank's, so give each once")
        seen[trace.digest] = trace.path


def _graph_launched(trace: Trace, event: GpuEvent) -> bool:
    launch = trace.launches.get(event.correlation) if event.correlation is not None else None
    return launch is not None and "graphlaunch" in launch.name.lower()


def stream_overlaps(trace: Trace) -> str | None:
    """A warning naming the file and the first overlapping events, or None when every stream's work is in order."""
    streams: dict[tuple[int, int], list[GpuEvent]] = {}
    for event in trace.gpu:
        if event.device is None or event.stream is None or event.dur <= 0 or _graph_launched(trace, event):
            continue
        streams.setdefault((event.device, event.stream), []).append(event)
    count = 0
    excess = 0.0  # µs counted twice
    shown: list[str] = []
    for (device, stream), events in sorted(streams.items()):
        events.sort(key=lambda e: e.ts)
        last = events[0]
        for event in events[1:]:
            over = min(last.ts + last.dur, event.ts + event.dur) - event.ts
            if over > OVERLAP_SLACK:
                count += 1
                excess += over
                if len(shown) < SHOWN:
                    shown.append(f"device {device} stream {stream}: '{event.name[:50]}' at ts {event.ts:.3f} µs "
                                 f"overlaps '{last.name[:50]}' (ts {last.ts:.3f} µs, {last.dur:.3f} µs long) by "
                                 f"{over:.3f} µs")
            if event.ts + event.dur > last.ts + last.dur:
                last = event
    if not count:
        return None
    return (f"warning: {trace.path}: {counted(count, 'GPU event')} overlap earlier work on the same CUDA stream, which runs "
            f"its work in order ({'; '.join(shown)}{'; …' if count > len(shown) else ''}): these times did not "
            f"happen as recorded, so the GPU time and the timeline count up to {excess / 1e3:.3g} ms twice")
