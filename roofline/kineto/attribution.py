"""Each GPU event -> the launch with its correlation id -> the innermost ATen op around that launch. Pure.

The op is found by time on the launching thread: of the ops whose [ts, ts + dur] holds the launch's start, the
innermost (the one that started last; of ops starting together, the shortest). One sweep per thread over ops and
launches in time order keeps a stack of the open ops, so a trace of N events costs O(N log N). Work a
cudaGraphLaunch put on the GPU is the graph's, not any op's: its op is GRAPH_OP and `graph` says so, until
roofline.kineto.graphs finds the op that launched it when the graph was captured (`match`). Work whose launch is
not in the trace, or whose launch no op encloses, has NO_OP.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from roofline.kineto.reader import GpuEvent, Launch, Op, Span, Trace

NO_OP = "(no op)"
GRAPH_OP = "cuda graph replay"
NO_MODULE = "(no module)"
GRAPH_LAUNCHES = ("cudaGraphLaunch", "cuGraphLaunch")


@dataclass(frozen=True, slots=True)
class GraphMatch:
    """Where a replayed event's op came from."""
    how: str  # "capture" or "kernel"
    op: Op
    note: str
    source: int | None = None  # how == "kernel": the position (in the attributed items) of the matched launch's event


@dataclass(frozen=True, slots=True)
class Attributed:
    event: GpuEvent
    launch: Launch | None
    op: Op | None  # the innermost op around the launch (for a graph replay: around the cudaGraphLaunch)
    graph: bool  # launched by a CUDA graph replay
    module: str | None  # the innermost nn.Module range around the launch
    match: GraphMatch | None = None  # a replayed event: the op that launched it at capture (roofline.kineto.graphs)
    unmatched: str | None = None  # a replayed event without a match: why

    @property
    def model_op(self) -> Op | None:
        """The op whose work the event does: the launch's, or for a graph replay the matched one's."""
        if self.graph:
            return self.match.op if self.match is not None else None
        return self.op

    @property
    def op_name(self) -> str:
        if self.graph:
            return self.match.op.name if self.match is not None else GRAPH_OP
        return self.op.name if self.op is not None else NO_OP


def _innermost(spans: Sequence[Op | Span], points: Sequence[tuple[float, int]]) -> dict[int, Op | Span]:
    """For each (time, key) the innermost span holding that time, by key (keys without one are left out). Spans
    and points are of one thread."""
    order = sorted(spans, key=lambda s: (s.ts, -s.dur))
    found: dict[int, Op | Span] = {}
    stack: list[Op | Span] = []
    i = 0
    for t, key in sorted(points):
        while i < len(order) and order[i].ts <= t:
            span = order[i]
            while stack and stack[-1].ts + stack[-1].dur < span.ts:
                stack.pop()
            stack.append(span)
            i += 1
        while stack and stack[-1].ts + stack[-1].dur < t:
            stack.pop()
        for span in reversed(stack):  # the top, unless ops overlap without nesting
            if span.ts <= t <= span.ts + span.dur:
                found[key] = span
                break
    return found


def _by_thread(items: Sequence[Op | Span | Launch]) -> dict[str, list]:
    out: dict[str, list] = {}
    for item in items:
        out.setdefault(item.tid, []).append(item)
    return out


def attribute(trace: Trace) -> list[Attributed]:
    """Every GPU event of the trace with its launch, op and module, in the trace's GPU order (by start time)."""
    events = sorted(trace.gpu, key=lambda e: e.ts)
    launch_of = [trace.launches.get(e.correlation) if e.correlation is not None else None for e in events]
    points: dict[str, list[tuple[float, int]]] = {}
    for i, launch in enumerate(launch_of):
        if launch is not None:
            points.setdefault(launch.tid, []).append((launch.ts, i))
    ops, modules = _by_thread(trace.ops), _by_thread(trace.modules)
    op_at: dict[int, Op] = {}
    module_at: dict[int, Span] = {}
    for tid, pts in points.items():
        op_at.update(_innermost(ops.get(tid, []), pts))  # type: ignore[arg-type]
        if tid in modules:
            module_at.update(_innermost(modules[tid], pts))  # type: ignore[arg-type]
    out = []
    for i, (event, launch) in enumerate(zip(events, launch_of)):
        graph = launch is not None and launch.name in GRAPH_LAUNCHES
        module = module_at.get(i)
        out.append(Attributed(event, launch, op_at.get(i), graph, module.name if module is not None else None))
    return out
