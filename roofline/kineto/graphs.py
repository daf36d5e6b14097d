"""The kernels of a CUDA graph replay -> the ops that launched them when the graph was captured. Pure.

A cudaGraphLaunch puts a whole graph on the GPU: Kineto gives each replayed kernel the graph launch's correlation
id, so attribution alone finds no op for it (attribution.GRAPH_OP). The ops are found where the same kernels were
launched one by one, in this order:

  capture order  the graph's capture itself. While a stream is captured the profiler records the ops (with their
                 shapes) and the launch calls (cudaLaunchKernel, cuLaunchKernel, cudaMemsetAsync...) but no GPU
                 activity: a captured call only adds a node. A graph captured on one stream replays its nodes in
                 capture order, so the k-th GPU event of a replay is the k-th call of its capture. A capture is
                 the calls between cudaStreamBeginCapture and cudaStreamEndCapture on one thread (or, under
                 `profile --with torch`, profile's own record of a capture made outside its range, with the
                 replays annotated by which capture they run; a replay without the annotation takes the record
                 its kinds and Triton kernel names line up with, where all that do launched the same ops). The
                 calls CUDAGraph::capture_begin makes before the stream capture begins (CUDA generators' seed and
                 offset fills) are no nodes: profile's record leaves them out, and an older record that kept
                 them lines up by its last calls. It is used only where the kinds line up call for
                 call (kernel for kernel launch, fill for memset, copy for memcpy), the replay ran on one stream
                 (several need the node ids, below), and every Triton kernel's name
                 is its captured op's name (Inductor launches each inside an op named after it); with CUPTI's
                 graph node ids (Kineto since 2026-02, pytorch/kineto#1276: "graph node id" on each kernel), the
                 replay's events are put in node order, the order the capture created them, first.
  same kernel    a launch of the same kernel (name, grid and block) outside any graph in the same trace: Inductor's
                 cudagraph trees run each compiled graph eagerly before capturing it (its warm-up). The k-th
                 replay of a kernel is matched to the k-th of the last as many launches of it before the replay
                 (the warm-up ran the graph's kernels in the same order); a kernel launched outside the graph fewer
                 times than in it is matched only when all those launches ran one op with the same inputs.

Each replayed event then carries a GraphMatch saying which and how; an event neither finds keeps why (`unmatched`).
"""

from __future__ import annotations

import bisect
import dataclasses
import re
from dataclasses import dataclass
from typing import Mapping, Sequence

from roofline.kineto.attribution import GRAPH_LAUNCHES, Attributed, GraphMatch, _innermost
from roofline.kineto.reader import Capture, CaptureLaunch, GpuEvent, Launch, Op, Trace
from roofline.model.counts import counted

BEGIN = re.compile(r"^cu(da)?StreamBeginCapture")
END = re.compile(r"^cu(da)?StreamEndCapture")
_KERNEL_CALL = re.compile(r"^cu(da)?Launch(Cooperative)?Kernel")
_MEMSET_CALL = re.compile(r"^cu(da)?Memset", re.IGNORECASE)
_MEMCPY_CALL = re.compile(r"^cu(da)?Memcpy", re.IGNORECASE)
NO_LAUNCH_HINT = "record the warm-up or the capture too, or use `roofline profile --with torch`"


def call_kind(call: str) -> str | None:
    """The GPU event a call made during a capture becomes in the replay: kernel, memset, memcpy; None for the rest
    (cudaStreamIsCapturing, cudaEventRecord...: no GPU event of their own)."""
    if _KERNEL_CALL.match(call):
        return "kernel"
    if _MEMSET_CALL.match(call):
        return "memset"
    if _MEMCPY_CALL.match(call):
        return "memcpy"
    return None


def captures_in(trace: Trace, whole: bool = False) -> list[Capture]:
    """The graph captures seen in the trace: on each thread, the calls with a GPU event kind between each
    cudaStreamBeginCapture and the cudaStreamEndCapture after it, each with the innermost op around it; then
    `profile`'s record of those made outside its range (trace.captures).

    `whole`: the trace is one capture's own session (profile's, around CUDAGraph.capture_begin/capture_end), and
    every capture in it is returned, empty ones too. That session also holds calls made before the stream capture
    began: CUDAGraph::capture_begin first resets each CUDA generator's seed and offset (two fill_ kernels on the
    GPU, CUDAGeneratorState::capture_prologue in ATen's CUDAGeneratorImpl.cpp: seen in the H100 trace of
    2026-12-06), which are not nodes of the graph. So the markers bound the capture here too (a thread without
    them adds nothing: the capture may run on another thread, autograd's for a backward graph); a session with no
    markers at all keeps the calls that put nothing on the GPU in it (a captured call only adds a node)."""
    by_thread: dict[str, list[Launch]] = {}
    for launch in trace.launches.values():
        by_thread.setdefault(launch.tid, []).append(launch)
    ops_by_thread: dict[str, list[Op]] = {}
    for op in trace.ops:
        ops_by_thread.setdefault(op.tid, []).append(op)
    ran = {event.correlation for event in trace.gpu if event.correlation is not None}
    marked = any(BEGIN.match(launch.name) for launch in trace.launches.values())
    out: list[Capture] = []
    for tid, launches in by_thread.items():
        launches.sort(key=lambda launch: launch.ts)
        spans: list[tuple[float, list[Launch]]] = []
        inside: list[Launch] | None = None
        if whole and not marked:
            kept = [launch for launch in launches if call_kind(launch.name) is not None and launch.correlation
                    not in ran]
            if kept:
                spans.append((launches[0].ts, kept))
            launches = []
        for launch in launches:
            if BEGIN.match(launch.name):
                inside = []
                spans.append((launch.ts, inside))
            elif END.match(launch.name):
                inside = None
            elif inside is not None and call_kind(launch.name) is not None:
                inside.append(launch)
        calls = [launch for _, members in spans for launch in members]
        op_at = _innermost(ops_by_thread.get(tid, []), [(launch.ts, i) for i, launch in enumerate(calls)])
        i = 0
        for ts, members in spans:
            found = []
            for launch in members:
                op = op_at.get(i)
                found.append(CaptureLaunch(launch.name, op if isinstance(op, Op) else None, launch.ts))
                i += 1
            if found or whole:
                out.append(Capture(f"{tid}@{ts:.3f}", tuple(found), ts, tid, "trace"))
    out.sort(key=lambda c: c.ts or 0.0)
    return out if whole else out + list(trace.captures)


@dataclass
class _Replay:
    launch: Launch
    members: list[int]  # positions in the attributed items, in replay order
    mark: str | None  # profile's annotation: the capture it runs


def _replays(trace: Trace, items: Sequence[Attributed]) -> list[_Replay]:
    groups: dict[int, list[int]] = {}
    for i, a in enumerate(items):
        if a.graph and a.launch is not None:
            groups.setdefault(a.launch.correlation, []).append(i)
    marks: dict[str, list[tuple[float, float, str]]] = {}  # by thread: (start, end, key), by start
    for mark in trace.graph_marks:
        marks.setdefault(mark.tid, []).append((mark.ts, mark.ts + mark.dur, mark.key))
    for spans in marks.values():
        spans.sort()
    out = []
    for members in groups.values():
        events = [items[m].event for m in members]
        if all(e.graph_node is not None for e in events):  # the order the capture created the nodes in
            members = [m for _, m in sorted(zip(events, members), key=lambda p: (p[0].graph_node, p[0].ts))]
        else:
            members = sorted(members, key=lambda m: items[m].event.ts)
        launch = items[members[0]].launch
        assert launch is not None
        spans = marks.get(launch.tid, [])
        at = bisect.bisect_right(spans, (launch.ts, float("inf"), "")) - 1  # the last mark starting by the launch
        mark = spans[at][2] if at >= 0 and spans[at][1] >= launch.ts else None
        out.append(_Replay(launch, members, mark))
    return out


def _triton_name(op: Op | None) -> bool:
    return op is not None and (op.backend == "triton" or op.name.startswith("triton_"))


def _lines_up(calls: Sequence[CaptureLaunch], events: Sequence[GpuEvent]) -> bool:
    """Call for call: the kinds agree and each Triton kernel is launched inside an op of its name."""
    for call, event in zip(calls, events):
        if call_kind(call.call) != event.kind:
            return False
        if event.kind == "kernel" and (_triton_name(call.op) or event.name.startswith("triton_")) and (
                call.op is None or call.op.name != event.name):
            return False  # Inductor launches each Triton kernel inside an op named after it
    return True


def _fits(capture: Capture, events: Sequence[GpuEvent]) -> int | None:
    """Where the capture's calls line up with the replay's events, kind for kind, its Triton ops naming the
    kernels: 0 for all of them; for profile's record, k when only its last len(events) calls do (a record written
    before 2026-12-06 kept the whole session, the k calls of CUDA's generator set-up before the stream capture
    began too: captures_in); None when they do not."""
    calls = [c for c in capture.launches if call_kind(c.call) is not None]
    if len(calls) == len(events):
        return 0 if _lines_up(calls, events) else None
    if capture.origin == "profile" and len(calls) > len(events) and events:
        skip = len(calls) - len(events)
        return skip if _lines_up(calls[skip:], events) else None
    return None


def _ops_of(capture: Capture, skip: int) -> tuple[object, ...]:
    calls = [c for c in capture.launches if call_kind(c.call) is not None][skip:]
    return tuple(None if c.op is None else _signature(c.op) for c in calls)


def _by_capture(replay: _Replay, items: Sequence[Attributed], captures: Sequence[Capture],
                fits: dict[tuple[object, ...], list[tuple[Capture, int]]]) -> tuple[dict[int, GraphMatch], str | None]:
    """The replay's events matched to a capture's calls by order; ({}, why not) when no capture fits. `fits`
    keeps the captures that fit each replay's shape (a long trace replays the same graph many times). Without
    profile's annotation naming the capture (a trace not written by `profile`, a replay made through another call),
    the replay's sequence of event kinds and Triton kernel names picks the capture: the last one in the trace
    before the replay, else profile's records, used only where those that fit launched the same ops."""
    events = [items[m].event for m in replay.members]
    streams = {e.stream for e in events}
    if len(streams) > 1 and not all(e.graph_node is not None for e in events):
        return {}, (f"its events ran on {len(streams)} streams and the trace has no graph node ids: the order they "
                    "ran in need not be the order they were captured in")
    marked = [c for c in captures if c.key == replay.mark]  # profile's record; a capture in its range has none
    # a replay profile annotated without a record of its capture (made in the range, or not recorded) is none of
    # the recorded ones: another graph's record may line up kind for kind with other shapes
    pool = marked or [c for c in captures if replay.mark is None or c.origin != "profile"]
    shape = (replay.mark if marked else None, *((e.kind, e.name) for e in events))
    if shape not in fits:
        found = [(c, _fits(c, events)) for c in pool]
        fits[shape] = [(c, skip) for c, skip in found if skip is not None]
    fitting = fits[shape]
    if not fitting:
        if pool:
            why = (f"the capture profile recorded for it ({replay.mark}) does not line up with its "
                   f"{counted(len(events), 'GPU event')}" if marked else
                   f"none of the {counted(len(pool), 'capture')} in the trace lines up with its {counted(len(events), 'GPU event')}")
            return {}, why
        return {}, None
    before = [(c, skip) for c, skip in fitting if c.ts is not None and c.ts <= replay.launch.ts]
    recorded = [(c, skip) for c, skip in fitting if c.ts is None]
    if before:
        capture, skip = before[-1]
    elif recorded:
        if len({_ops_of(c, skip) for c, skip in recorded}) > 1:
            return {}, (f"{len(recorded)} captures profile recorded line up with its {counted(len(events), 'GPU event')} but "
                        "launched different ops, and no `roofline.graph` annotation says which one it replays")
        capture, skip = recorded[-1]
    else:
        capture, skip = fitting[-1]
    calls = [c for c in capture.launches if call_kind(c.call) is not None]
    out: dict[int, GraphMatch] = {}
    where = f"at ts {capture.ts:.3f} µs" if capture.ts is not None else "recorded by profile outside its range"
    if capture.ts is None and not marked:
        where += ", found by its kernel sequence (no annotation named it)"
    prologue = (f" (the record's first {counted(skip, 'call')} ran before the stream capture began: no nodes of the graph)"
                if skip else "")
    for k, (m, call) in enumerate(zip(replay.members, calls[skip:])):
        if call.op is not None:
            out[m] = GraphMatch("capture", call.op, f"matched by capture order: node {k + 1} of {len(calls) - skip} "
                                                    f"of the graph's capture {where}, launched by {call.op.name}"
                                                    f"{prologue}")
    return out, None


def _signature(op: Op) -> tuple[object, ...]:
    return (op.name, repr(op.dims), repr(op.types), repr(op.concrete))


def _by_kernel(replay: _Replay, items: Sequence[Attributed], outside: Mapping[tuple[object, ...], list[int]],
               stamps: Mapping[tuple[object, ...], list[float]]) -> tuple[dict[int, GraphMatch], dict[int, str]]:
    """The replay's kernels matched to launches of the same kernel (name, grid, block) outside any graph (`outside`:
    their positions in time order; `stamps`: their start times)."""
    matched: dict[int, GraphMatch] = {}
    why: dict[int, str] = {}
    seen: dict[tuple[object, ...], list[int]] = {}
    for m in replay.members:
        e = items[m].event
        if e.kind == "kernel":
            seen.setdefault((e.name, e.grid, e.block), []).append(m)
    for key, members in seen.items():
        found = outside.get(key, [])
        n = len(members)
        if not found:
            for m in members:
                why[m] = ("a CUDA graph replay: no launch of this kernel (name, grid, block) outside the graph in "
                          f"this trace; {NO_LAUNCH_HINT}")
            continue
        before = bisect.bisect_left(stamps[key], replay.launch.ts)
        if before >= n:
            chosen = found[before - n:before]
        elif len(found) >= n:
            chosen = found[:n]
        elif len({_signature(items[f].op) for f in found}) == 1:  # type: ignore[arg-type]
            chosen = [found[0]] * n
        else:
            for m in members:
                why[m] = (f"a CUDA graph replay: this kernel (name, grid, block) runs {counted(n, 'time')} in the graph but "
                          f"{counted(len(found), 'time')} outside it, for different ops: which op each replay ran is not "
                          f"known; {NO_LAUNCH_HINT}")
            continue
        for m, f in zip(members, chosen):
            source = items[f]
            assert source.op is not None
            matched[m] = GraphMatch("kernel", source.op, "matched to the launch of the same kernel (name, grid, "
                                    f"block) outside the graph at ts {source.event.ts:.3f} µs, in {source.op.name}",
                                    f)
    return matched, why


def match_replays(trace: Trace, items: Sequence[Attributed]) -> list[Attributed]:
    """The attributed items with every graph-replayed event's match (or why it has none) filled in."""
    if not any(a.graph for a in items):
        return list(items)
    captures = captures_in(trace)
    outside: dict[tuple[object, ...], list[int]] = {}
    for i, a in enumerate(items):
        if not a.graph and a.op is not None and a.event.kind == "kernel" and a.event.dur > 0:
            outside.setdefault((a.event.name, a.event.grid, a.event.block), []).append(i)
    for members in outside.values():
        members.sort(key=lambda i: items[i].event.ts)
    stamps = {key: [items[i].event.ts for i in members] for key, members in outside.items()}
    out = list(items)
    fits: dict[tuple[object, ...], list[tuple[Capture, int]]] = {}
    for replay in _replays(trace, items):
        matched, capture_why = _by_capture(replay, items, captures, fits)
        via_capture = bool(matched)
        why: dict[int, str] = {}
        if not via_capture:
            matched, why = _by_kernel(replay, items, outside, stamps)
        for m in replay.members:
            if m in matched:
                out[m] = dataclasses.replace(items[m], match=matched[m])
                continue
            if via_capture:
                reason = "a CUDA graph replay: its call during the capture ran inside no ATen op"
            else:
                reason = why.get(m) or (f"a CUDA graph replay of a {items[m].event.kind}: matched only through its "
                                        f"graph's capture; {NO_LAUNCH_HINT}")
                if capture_why is not None:
                    reason += f" ({capture_why})"
            out[m] = dataclasses.replace(items[m], unmatched=reason)
    return out


__all__ = ["GraphMatch", "GRAPH_LAUNCHES", "call_kind", "captures_in", "match_replays"]
