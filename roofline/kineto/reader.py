"""A PyTorch profiler (Kineto) Chrome trace -> the events an import needs, each in SI units.

The trace is read as any input is (roofline.load.inputs.input_chunks: a regular file, at most MAX_TRACE_BYTES, no
read waited on for long), a .json.gz inflated as it is read, to at most MAX_TRACE_TEXT bytes of text (a 1 MB file
may inflate to gigabytes), and parsed with the C JSON parser a few megabytes at a time (roofline.kineto.chunks);
every event is reduced at once to the few fields kept here, so neither the text nor the parsed trace is ever held
whole. Memory: an import fits MEMORY_BUDGET (2 GiB of address space, what benchmarks/adversarial_inputs.py runs
it under): at most about MAX_BATCH (64 MiB) of text is held at a time, a text the batches cannot cut is parsed
whole only up to MAX_WHOLE_TEXT (64 MiB; its objects take ~10x that), and what is kept is bounded by the GPU-event
limit below. A document naming "traceEvents" twice is refused (a parser keeps one array and loses the other), and
a device, stream or rank id outside [-2^31, 2^31) is refused naming the field.
What is not a Kineto trace (no traceEvents list) is refused naming the file. Kept:

  cpu_op           ATen ops with their recorded inputs (record_shapes=True): Input Dims/type/Strides, Concrete Inputs;
                   an Inductor Triton launch's op also its kernel_backend and kernel_file
  cuda_runtime     launches (cudaLaunchKernel, cudaGraphLaunch, cudaMemcpyAsync, ...) and their correlation ids
  cuda_driver      the same for driver launches (cuLaunchKernel: Triton)
  kernel           GPU kernels: name, ts, dur, correlation, device, stream, grid, block
  gpu_memcpy/set   copies and fills, with their bytes when recorded
  python_function  only the nn.Module ranges (with_stack or with_modules), for --group-by module
Times in the trace are microseconds; here they stay microseconds for ordering (ts) and durations become seconds
only in the document.

Nothing is dropped silently. An event of those kinds whose ts or dur is not a finite number (NaN, infinite, text,
null, missing), whose name is not text, or that lies outside the trace window is unusable: counted by reason in
Trace.unusable (the summary line and the results' source.unusable say how many and why), and a trace where more
than UNUSABLE_LIMIT of the events, or of the GPU events, are unusable is refused. The window is Kineto's own (its
'Trace' span, or the 'Iteration Start' to 'Record Window End' instants, with WINDOW_SLACK of its length either
side); a trace without one (made by hand) has the span of its events' start times (those within FALLBACK_REACH, an
hour, of their median), which an event may run past by at most that span or FALLBACK_RUN µs (1 s), whichever is
longer. So a duration of 1e308 µs is unusable, not printed.

The limits come first: a trace holding more than MAX_GPU_EVENTS GPU events is refused as soon as the batches read
so far hold more, not after minutes of work on a results file report and plot could not read.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import re
import zlib
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Callable, Iterator

from roofline.errors import InputError, at
from roofline.kineto.chunks import DuplicateEvents, EventStream, names_events_twice
from roofline.load.inputs import input_chunks
from roofline.load.jsonio import fast_json
from roofline.model.units import MAX_DIGITS
from roofline.records.files import MAX_RESULTS_BYTES
from roofline.records.fields import kind_of

STREAM_FROM = 8 << 20  # a trace text longer than this is parsed in batches
MAX_TRACE_BYTES = 1 << 30  # the largest trace file read (compressed or not)
MEMORY_BUDGET = 2 << 30  # what one import of a trace may take (address space): the caps below are set to fit it
MAX_TRACE_TEXT = 1 << 30  # the most a trace's text may be (a .json.gz inflated): read in pieces, never held whole
MAX_WHOLE_TEXT = 64 << 20  # the longest text parsed whole (a layout the batches cannot cut: ~10x this in objects)
INFLATE_PIECE = 4 << 20  # bytes of text inflated at a time
ID_LIMIT = 1 << 31  # a device, stream or rank id is a whole number in [-ID_LIMIT, ID_LIMIT)
MAX_KEPT_EVENTS = 1 << 20  # ops, launches, GPU events and module ranges kept (~400 B each: 0.4 GiB of the budget)
ENTRY_BYTES = 2 << 10  # about what one GPU event takes in a results file (1.4-2.4 KiB measured on real traces)
MAX_GPU_EVENTS = MAX_RESULTS_BYTES // ENTRY_BYTES  # 131,072: more would not fit the 256 MiB report and plot read
UNUSABLE_LIMIT = 0.10  # a trace with a larger share of unusable events (or GPU events) is refused
WINDOW_SLACK = 0.01  # of the window's length, either side of Kineto's window
FALLBACK_RUN = 1e6  # µs: how far past the last start an event may run in a trace without Kineto's window
FALLBACK_REACH = 3.6e9  # µs: without it, the starts more than an hour from their median are outside
KIND = "a PyTorch profiler trace (Kineto JSON)"
MODULE_PREFIX = "nn.Module: "
_OP_CATS = {"cpu_op", "operator"}  # 'Operator' in traces of PyTorch before 1.11
_LAUNCH_CATS = {"cuda_runtime", "cuda_driver", "runtime", "driver"}
_GPU_CATS = {"kernel": "kernel", "gpu_memcpy": "memcpy", "memcpy": "memcpy", "gpu_memset": "memset",
             "memset": "memset"}


@dataclass(frozen=True, slots=True)
class Op:
    """One ATen op on a CPU thread; its inputs as Kineto records them (empty tuples when shapes were off)."""
    name: str
    ts: float  # µs
    dur: float  # µs
    tid: str
    dims: tuple[Any, ...]
    types: tuple[Any, ...]
    strides: tuple[Any, ...]
    concrete: tuple[Any, ...]
    external_id: int | None
    backend: str | None = None  # "triton": a kernel torch.compile generated, the op named after it
    kernel_file: str | None = None  # where its generated source was written (Inductor's cache)

    @property
    def end(self) -> float:
        return self.ts + self.dur


PARAMS_PREFIX = "roofline.params "  # a user annotation `profile --with torch` writes: one optimizer step's parameters


@dataclass(frozen=True, slots=True)
class Params:
    """The parameters of one optimizer step, as `profile --with torch` annotates them (PyTorch's trace keeps no
    shapes for a tensor list of 30 or more tensors)."""
    ts: float
    tid: str
    shapes: tuple[tuple[int, ...], ...]
    dtypes: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Launch:
    """A runtime or driver call that put work on the GPU (cudaLaunchKernel, cudaGraphLaunch, cudaMemcpyAsync...)."""
    name: str
    ts: float
    tid: str
    correlation: int
    dur: float = 0.0  # µs: the call's own time (the timeline's launch delay runs from its end)

    @property
    def end(self) -> float:
        return self.ts + self.dur


@dataclass(frozen=True, slots=True)
class GpuEvent:
    """A kernel, copy or fill on the GPU."""
    kind: str  # "kernel", "memcpy" or "memset"
    name: str
    ts: float  # µs
    dur: float  # µs
    correlation: int | None
    device: int | None
    stream: int | None
    grid: tuple[int, ...] | None
    block: tuple[int, ...] | None
    bytes: float | None  # memcpy/memset: what Kineto recorded
    graph_id: int | None = None  # CUPTI's graphId: the CUDA graph a replayed event belongs to (Kineto, 2026+)
    graph_node: int | None = None  # CUPTI's graphNodeId: its node in that graph (None outside graphs)


@dataclass(frozen=True, slots=True)
class Span:
    """A named CPU range (an nn.Module's forward)."""
    name: str
    ts: float
    dur: float
    tid: str


GRAPH_PREFIX = "roofline.graph "  # a user annotation `profile --with torch` writes around each CUDA graph replay
CAPTURES_KEY = "roofline_graph_captures"  # the top-level block it adds: the graphs it captured outside its range
CAPTURES_VERSION = 1


@dataclass(frozen=True, slots=True)
class GraphMark:
    """`profile`'s annotation around one CUDAGraph.replay(): which capture (`key`) the replay runs."""
    key: str
    ts: float
    dur: float
    tid: str


@dataclass(frozen=True, slots=True)
class CaptureLaunch:
    """One call made while a CUDA graph was captured (a kernel launch, a memset, a copy): the graph's node, in
    capture order, with the innermost op around the call."""
    call: str  # cudaLaunchKernel, cuLaunchKernel, cudaMemsetAsync, ...
    op: Op | None
    ts: float | None = None  # µs, when seen in this trace


@dataclass(frozen=True, slots=True)
class Capture:
    """A CUDA graph capture: its calls in order. `key` names it for `profile`'s replay annotations; `ts` is where it
    began in this trace (None: recorded by `profile` in a session of its own, outside the profiled range)."""
    key: str
    launches: tuple[CaptureLaunch, ...]
    ts: float | None
    tid: str | None
    origin: str  # "trace" (seen in this trace) or "profile" (profile's own record of it)


@dataclass(frozen=True, slots=True)
class Step:
    """One `ProfilerStep#N` range: torch.profiler's schedule marks each step (prof.step()) with it, as a
    user_annotation (a cpu_op in older traces); the kernels launched inside it are that step's
    (torch/profiler/profiler.py, `ProfilerStep#` + step_num)."""
    number: int
    ts: float  # µs
    dur: float  # µs

    @property
    def end(self) -> float:
        return self.ts + self.dur


STEP_NAME = re.compile(r"ProfilerStep#(\d{1,9})")


@dataclass(frozen=True)
class Trace:
    path: Path
    devices: dict[int, str]  # deviceProperties: id -> name
    rank: int | None  # distributedInfo.rank
    world_size: int | None
    ops: list[Op]
    launches: dict[int, Launch]  # by correlation id
    gpu: list[GpuEvent]
    modules: list[Span]
    unusable: dict[str, int] = field(default_factory=dict)  # why ('dur is NaN', 'outside the trace window') -> count
    unusable_gpu: int = 0  # of those, GPU events (kernels, copies, fills)
    window: tuple[float, float] | None = None  # µs: the events that count lie in it
    params: list["Params"] = field(default_factory=list)  # the optimizer steps' parameters `profile` wrote in
    graph_marks: list[GraphMark] = field(default_factory=list)  # `profile`'s annotations of graph replays
    captures: list[Capture] = field(default_factory=list)  # `profile`'s record of captures outside its range
    steps: list["Step"] = field(default_factory=list)  # the profiler's ProfilerStep#N ranges, in time order
    digest: str = ""  # of the trace's text (SHA-256): the same trace given twice is told from two ranks

    @property
    def unusable_count(self) -> int:
        return sum(self.unusable.values())


class _TraceText:
    """The text of a trace file in pieces, each piece read through the one bounded input reader and, for a
    .json.gz, inflated as it comes (at most MAX_TRACE_TEXT bytes in all, one InputError naming the file and the cap
    otherwise); as the pieces pass, the text is hashed, so two files with one content are told apart from two
    ranks (`digest`)."""

    def __init__(self, path: Path):
        self.path = path
        self.read = 0  # bytes of the file read so far (for a progress report)
        self.size = _file_size(path)
        self.text = 0  # bytes of text so far
        self._hash = hashlib.sha256()  # the fastest at hand (SHA extensions): 0.8 s a GB here

    @property
    def digest(self) -> str:
        return self._hash.hexdigest()

    @property
    def fraction(self) -> float:
        return min(1.0, self.read / self.size) if self.size else 0.0

    def __iter__(self) -> Iterator[bytes]:
        raw = input_chunks(self.path, MAX_TRACE_BYTES, KIND)
        first = next(raw, b"")
        self.read += len(first)
        if first[:2] != b"\x1f\x8b":
            yield self._seen(first)
            for chunk in raw:
                self.read += len(chunk)
                yield self._seen(chunk)
            return
        inflater = zlib.decompressobj(wbits=47)  # gzip or zlib header
        chunk: bytes | None = first
        while chunk is not None:
            data = chunk
            while data and not inflater.eof:
                try:
                    out = inflater.decompress(data, INFLATE_PIECE)
                except zlib.error as exc:
                    raise at(self.path, None, f"is not a valid gzip file ({exc}); expected {KIND}") from None
                data = inflater.unconsumed_tail
                if out:
                    yield self._seen(out)
            chunk = next(raw, None)
            if chunk is not None:
                self.read += len(chunk)
        if not inflater.eof:  # the stream stops before its end marker: a copy or download cut short
            raise at(self.path, None, f"is a truncated gzip file (it ends before the compressed data does); "
                                      f"expected {KIND}")

    def _seen(self, piece: bytes) -> bytes:
        self.text += len(piece)
        if self.text > MAX_TRACE_TEXT:
            raise at(self.path, None, f"inflates to more than {MAX_TRACE_TEXT >> 20} MiB of text, the most {KIND} may "
                                      f"be (an import is held to {MEMORY_BUDGET >> 30} GiB of memory); nothing was "
                                      "imported")
        self._hash.update(piece)
        return piece


def _file_size(path: Path) -> int:
    try:
        return os.stat(path).st_size
    except (OSError, ValueError):
        return 0  # input_chunks says what is wrong with it


def _constant(text: str) -> float:
    return float(text)  # NaN or Infinity (not JSON): kept, so an unusable time is counted by what it is


class _TooManyDigits(ValueError):
    pass


def _whole(text: str) -> int:
    """A JSON whole number; one of more than MAX_DIGITS digits is refused (Python will not convert it)."""
    if len(text.lstrip("-")) > MAX_DIGITS:
        raise _TooManyDigits(text)
    return int(text)


def _parse(data: bytes) -> Any:
    """orjson where it parses the text (a long trace in seconds, not a minute); what it refuses (NaN, a number beyond
    a double, text that is not UTF-8 or not JSON) goes to the standard parser, whose hooks and errors say why."""
    orjson = fast_json()
    if orjson is not None:
        try:
            return orjson.loads(data)
        except orjson.JSONDecodeError:
            pass
    return json.loads(data, parse_constant=_constant, parse_int=_whole)


_GPU_PATTERNS = tuple(b'"' + cat.encode() + b'"' for cat in _GPU_CATS)


def gpu_events_in(data: bytes) -> int:
    """How many GPU events (kernels, copies, fills) the raw text of a trace holds, counted without parsing it: each
    names its category as a JSON string ("kernel", "gpu_memcpy", ...). Cheap (a byte count, under a second a GiB)."""
    return sum(data.count(pattern) for pattern in _GPU_PATTERNS)


def too_many_gpu_events(path: Path, count: int, limit: int = MAX_GPU_EVENTS, at_least: bool = False) -> InputError:
    return InputError(f"{path}: holds {'at least ' if at_least else ''}{count:,} GPU events (kernels, copies, "
                      f"fills), more than the {limit:,} one import takes (about {ENTRY_BYTES >> 10} KiB of results "
                      f"each, and report and plot read at most {MAX_RESULTS_BYTES >> 20} MiB); nothing was imported",
                      fix="profile fewer steps (torch.profiler.schedule(active=1)), or keep fewer launches: "
                          "'roofline profile --launch-count N' (or --kernel-name, --launch-skip)")


def _whole_doc(path: Path, data: bytes) -> dict[str, Any]:
    """The parsed top-level object of a trace's text, all of it at once, with a message naming what is wrong."""
    try:
        doc = _parse(data)
    except _TooManyDigits as exc:
        text = str(exc)
        raise at(path, None, f"holds a whole number of more than {MAX_DIGITS} digits ({text[:20]}…); "
                             f"expected {KIND}") from None
    except UnicodeDecodeError:
        raise at(path, None, f"is not UTF-8 text; expected {KIND}") from None
    except json.JSONDecodeError as exc:
        raise at(path, None, f"is not valid JSON: line {exc.lineno}, column {exc.colno}: {exc.msg}; expected "
                             f"{KIND}") from None
    except RecursionError:
        raise at(path, None, f"is nested too deeply to be {KIND}") from None
    if names_events_twice(data):
        raise _twice(path)
    if not isinstance(doc, dict) or not isinstance(doc.get("traceEvents"), list):
        got = "an object without a traceEvents list" if isinstance(doc, dict) else kind_of(doc)
        raise at(path, "traceEvents", f"is missing: expected a JSON object with a traceEvents list at the top, "
                                      f"got {got}; not {KIND} (export one with "
                                      "torch.profiler.profile(...).export_chrome_trace(PATH))")
    return doc


def _number(value: Any) -> float | None:
    """A finite number, else None (missing): 1e400 parses as inf, as NaN/Infinity would, and is no time."""
    if not isinstance(value, (int, float)) or isinstance(value, bool):
        return None
    number = float(value)
    return number if math.isfinite(number) else None


def _text(value: Any, limit: int = 4096) -> str | None:
    return value if isinstance(value, str) and 0 < len(value) <= limit else None


def _int(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, str) and value.strip().lstrip("-").isdigit():
        try:
            return int(value)
        except ValueError:  # '²' is a digit to isdigit() but not to int(); 5000 digits are past int()'s limit
            return None
    return None


# CUDA's launch limits (CUDA C++ Programming Guide, "Compute Capabilities", Table 21: grid x < 2^31, y and z
# < 65536; a block at most 1024 threads, x and y at most 1024, z at most 64); no launch runs outside them
_GRID_MAX = (2**31 - 1, 65535, 65535)
_BLOCK_MAX = (1024, 1024, 64)


def _dim3(value: Any, field: str, where: str) -> tuple[int, ...] | None:
    """A kernel's grid or block as CUPTI records it ([x, y, z]); None when it is not a list of whole numbers (not
    recorded). One outside CUDA's launch limits (0, negative, 2^62, four entries) is refused: the models that read
    it (multi-tensor chunks, reduction trees) would price a launch that cannot run."""
    if not (isinstance(value, list) and value and all(isinstance(v, int) and not isinstance(v, bool) for v in value)):
        return None
    limits = _GRID_MAX if field == "args.grid" else _BLOCK_MAX
    if len(value) > 3 or any(not 1 <= v <= top for v, top in zip(value, limits)) or (
            field == "args.block" and math.prod(value) > _BLOCK_MAX[0]):
        raise _OutOfRange(field, value, where, f"a launch's {field[5:]} is 1 to 3 whole numbers within CUDA's "
                          f"limits (x, y, z at most {', '.join(map(str, limits))}"
                          + (", 1024 threads in all" if field == "args.block" else "") + ")")
    return tuple(value)


def _listed(args: dict[str, Any], key: str) -> tuple[Any, ...]:
    value = args.get(key)
    return tuple(value) if isinstance(value, list) else ()


def _devices(doc: dict[str, Any]) -> dict[int, str]:
    out: dict[int, str] = {}
    props = doc.get("deviceProperties")
    for i, dev in enumerate(props if isinstance(props, list) else []):
        if isinstance(dev, dict) and isinstance(dev.get("name"), str):
            ident = _ident(dev.get("id"), f"deviceProperties[{i}].id", "deviceProperties")
            out[i if ident is None else ident] = dev["name"]
    return out


def _what(event: dict[str, Any], key: str) -> str:
    """'dur is NaN', 'ts is text': why a time is unusable, in the user's words."""
    if key not in event:
        return f"{key} is missing"
    value = event[key]
    if value is None:
        kind = "null"
    elif isinstance(value, float) and math.isnan(value):
        kind = "NaN"
    elif isinstance(value, (int, float)) and not isinstance(value, bool):
        kind = "infinite"
    elif isinstance(value, str):
        kind = "text"
    else:
        kind = kind_of(value)
    return f"{key} is {kind}"


class _Marks:
    """Kineto's own window in µs: its 'Trace' span, else 'Iteration Start' .. 'Record Window End'; seen batch by
    batch."""

    def __init__(self) -> None:
        self.spans: list[tuple[float, float]] = []
        self.marks: dict[str, float | None] = {}

    def see(self, event: dict[str, Any], cat: str | None) -> None:
        if event.get("ph") == "X" and cat == "trace":
            ts, dur = _number(event.get("ts")), _number(event.get("dur"))
            if ts is not None and dur is not None and dur > 0:
                self.spans.append((ts, ts + dur))
        elif event.get("ph") in ("i", "I") and event.get("name") in _MARKS:
            self.marks[event["name"]] = _number(event.get("ts"))

    def window(self) -> tuple[float, float] | None:
        if self.spans:
            return min(s for s, _ in self.spans), max(e for _, e in self.spans)
        start, end = self.marks.get(_MARKS[0]), self.marks.get(_MARKS[1])
        if start is not None and end is not None and end > start:
            return start, end
        return None


_MARKS = ("Iteration Start: PyTorch Profiler", "Record Window End")


def _window(kineto: tuple[float, float] | None, starts: list[float]) -> tuple[float, float] | None:
    """The window events must lie in (µs), with its slack: Kineto's, else the span of the usable starts."""
    if kineto is not None:
        slack = WINDOW_SLACK * (kineto[1] - kineto[0]) + 1.0
        return kineto[0] - slack, kineto[1] + slack
    if not starts:
        return None
    middle = sorted(starts)[len(starts) // 2]
    near = [s for s in starts if abs(s - middle) <= FALLBACK_REACH]  # one start at 1e300 does not widen it
    lo, hi = min(near), max(near)
    return lo, hi + max(hi - lo, FALLBACK_RUN)


class _Reduced:
    """The events an import uses, reduced as they are read (a batch at a time: the parsed batch is then dropped);
    the window is applied once all are seen."""

    def __init__(self) -> None:
        self.kept: list[tuple[str, float, float, Any]] = []  # category, ts, dur, the reduced event
        self.unusable: dict[str, int] = {}
        self.unusable_gpu = 0
        self.marks = _Marks()
        self.params: list[Params] = []
        self.graph_marks: list[GraphMark] = []
        self.steps: list[Step] = []
        self.gpu_seen = 0  # GPU events met so far, usable or not
        self.max_gpu: int | None = None  # more are refused as they are met (read_trace's max_gpu_events)

    def add(self, events: list[Any]) -> None:
        for event in events:
            if not isinstance(event, dict):
                continue
            cat = event.get("cat")
            cat = cat.lower() if isinstance(cat, str) else None
            if event.get("ph") != "X" or cat is None:
                self.marks.see(event, cat)
                continue
            if cat == "trace":
                self.marks.see(event, cat)
            if cat in ("user_annotation", "cpu_op") and isinstance(event.get("name"), str):
                step = STEP_NAME.fullmatch(event["name"])
                ts, dur = _number(event.get("ts")), _number(event.get("dur"))
                if step is not None and ts is not None and dur is not None and dur >= 0:
                    self.steps.append(Step(int(step.group(1)), ts, dur))
                    continue
            if cat == "user_annotation" and str(event.get("name", "")).startswith(PARAMS_PREFIX):
                found = _params(event)
                if found is not None:
                    self.params.append(found)
                continue
            if cat == "user_annotation" and str(event.get("name", "")).startswith(GRAPH_PREFIX):
                mark = _graph_mark(event)
                if mark is not None:
                    self.graph_marks.append(mark)
                continue
            if not (cat in _GPU_CATS or cat in _OP_CATS or cat in _LAUNCH_CATS
                    or (cat == "python_function" and str(event.get("name", "")).startswith(MODULE_PREFIX))):
                continue  # not an event an import uses: not judged
            if cat in _GPU_CATS:
                self.gpu_seen += 1
                if self.max_gpu is not None and self.gpu_seen > self.max_gpu:
                    raise _TooManyGpu()
            ts, dur, name = _number(event.get("ts")), _number(event.get("dur")), event.get("name")
            why = (_what(event, "ts") if ts is None else _what(event, "dur") if dur is None
                   else "name is not text" if not isinstance(name, str) else None)
            if why is not None:
                self.unusable[why] = self.unusable.get(why, 0) + 1
                self.unusable_gpu += cat in _GPU_CATS
                continue
            assert ts is not None and dur is not None and isinstance(name, str)
            reduced = _reduce(event, cat, ts, dur, name)
            if reduced is not None:
                self.kept.append((cat, ts, dur, reduced))
                if len(self.kept) > MAX_KEPT_EVENTS:
                    raise _TooManyKept()

    def trace(self, path: Path, head: dict[str, Any]) -> Trace:
        ops: list[Op] = []
        launches: dict[int, Launch] = {}
        gpu: list[GpuEvent] = []
        modules: list[Span] = []
        unusable = self.unusable
        unusable_gpu = self.unusable_gpu
        window = _window(self.marks.window(), [k[1] for k in self.kept])
        for cat, ts, dur, item in self.kept:
            if window is not None and not (window[0] <= ts and ts + dur <= window[1]):
                unusable["outside the trace window"] = unusable.get("outside the trace window", 0) + 1
                unusable_gpu += cat in _GPU_CATS
                continue
            if isinstance(item, GpuEvent):
                gpu.append(item)
            elif isinstance(item, Op):
                ops.append(item)
            elif isinstance(item, Launch):
                launches[item.correlation] = item
            else:
                modules.append(item)
        dist = head.get("distributedInfo") if isinstance(head.get("distributedInfo"), dict) else {}
        _refuse_unusable(path, unusable, len(self.kept) + sum(self.unusable.values()), unusable_gpu,
                         self.unusable_gpu + sum(1 for cat, *_ in self.kept if cat in _GPU_CATS))
        if not gpu and not ops and not launches:
            raise InputError(f"{path}: holds no CPU ops, launches or GPU kernels; expected {KIND} recorded with "
                             "activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]")
        return Trace(path, _devices(head), _ident(dist.get("rank"), "distributedInfo.rank", "distributedInfo"),
                     _ident(dist.get("world_size"), "distributedInfo.world_size", "distributedInfo"), ops, launches,
                     gpu, modules, unusable, unusable_gpu, window, self.params, self.graph_marks,
                     _captures(path, head), _steps(self.steps, unusable))


OVERLAPPING_STEP = "ProfilerStep inside or across the step before it (not used to number launches)"
STEP_SLACK = 1.0  # µs: Kineto rounds ts and dur each to the ns, so one step may end a hair after the next begins


def _steps(steps: list[Step], unusable: dict[str, int]) -> list[Step]:
    """The ProfilerStep ranges in time order, each ending before the next begins, as torch.profiler writes them
    (prof.step() closes one and opens the next). A range that starts inside the one before it (a nested or
    overlapping range, the same range twice) would give a launch the wrong step, or none where it lies inside the
    outer one (steps are looked up by start): it is left out and counted among the unusable events."""
    kept: list[Step] = []
    for st in sorted(steps, key=lambda st: (st.ts, -st.dur, st.number)):
        if kept and st.ts < kept[-1].end - STEP_SLACK:
            unusable[OVERLAPPING_STEP] = unusable.get(OVERLAPPING_STEP, 0) + 1
            continue
        kept.append(st)
    return kept


MAX_PARAMS = 1 << 20  # tensors in one annotated optimizer step


def params_annotation(optimizer: str, shapes: list[tuple[int, ...]], dtypes: list[str]) -> str:
    """'roofline.params AdamW 50257x768:float32,768:float32,-:float32': one optimizer step's parameters as the
    name of a user annotation (a 0-dim parameter is '-'). Words, digits, 'x', ':' and ',' only: Kineto writes event
    names into its JSON without escaping them."""
    def one(shape: tuple[int, ...], dtype: str) -> str:
        return ("x".join(str(int(d)) for d in shape) or "-") + ":" + re.sub(r"[^A-Za-z0-9_]", "", dtype)

    return PARAMS_PREFIX + re.sub(r"[^A-Za-z0-9_]", "", optimizer) + " " + ",".join(
        one(s, d) for s, d in zip(shapes, dtypes))


_PARAM = re.compile(r"(-|\d+(?:x\d+)*):(\w+)")


def _params(event: dict[str, Any]) -> Params | None:
    """An optimizer step's parameters from `profile`'s annotation (params_annotation); None when it is not one
    (read as any input is: nothing in it is trusted)."""
    ts = _number(event.get("ts"))
    parts = str(event["name"])[len(PARAMS_PREFIX):].split(" ")
    if ts is None or len(parts) != 2:
        return None
    items = parts[1].split(",") if parts[1] else []
    if len(items) > MAX_PARAMS:
        return None
    shapes, dtypes = [], []
    for item in items:
        m = _PARAM.fullmatch(item)
        if m is None:
            return None
        shapes.append(() if m.group(1) == "-" else tuple(int(d) for d in m.group(1).split("x")))
        dtypes.append(m.group(2))
    return Params(ts, str(event.get("tid")), tuple(shapes), tuple(dtypes))


def _graph_mark(event: dict[str, Any]) -> GraphMark | None:
    ts, dur = _number(event.get("ts")), _number(event.get("dur"))
    key = str(event["name"])[len(GRAPH_PREFIX):].strip()
    if ts is None or dur is None or not key or len(key) > 64:
        return None
    return GraphMark(key, ts, dur, str(event.get("tid")))


def _graph_field(value: Any) -> int | None:
    """CUPTI writes 0 for a kernel launched outside any graph."""
    number = _int(value)
    return number if number else None


def _op_of(args: dict[str, Any], name: str, ts: float, dur: float, tid: str) -> Op:
    return Op(name, ts, dur, tid, _listed(args, "Input Dims"), _listed(args, "Input type"),
              _listed(args, "Input Strides"), _listed(args, "Concrete Inputs"), _int(args.get("External id")),
              _text(args.get("kernel_backend")), _text(args.get("kernel_file")))


MAX_CAPTURES = 10_000  # graphs in `profile`'s record (cudagraph trees capture one per shape and generation)
MAX_CAPTURE_LAUNCHES = 1 << 20  # calls in all of them


def _captures(path: Path, head: dict[str, Any]) -> list[Capture]:
    """`profile`'s record of the CUDA graphs captured outside its profiled range (CAPTURES_KEY, written by
    roofline.kineto.capture); a block it did not write as it writes one is refused naming the field."""
    block = head.get(CAPTURES_KEY)
    if block is None:
        return []
    where = CAPTURES_KEY
    if not isinstance(block, dict) or block.get("version") != CAPTURES_VERSION:
        got = block.get("version") if isinstance(block, dict) else block
        raise at(path, f"{where}.version", f"expected {CAPTURES_VERSION} (the block roofline profile --with torch "
                                           f"writes), got {kind_of(got)} {got!r:.20}")
    items = block.get("captures")
    if not isinstance(items, list) or len(items) > MAX_CAPTURES:
        raise at(path, f"{where}.captures", f"expected a list of at most {MAX_CAPTURES} captures")
    out: list[Capture] = []
    total = 0
    for i, item in enumerate(items):
        here = f"{where}.captures[{i}]"
        if not isinstance(item, dict) or not isinstance(item.get("key"), str) or not item["key"]:
            raise at(path, f"{here}.key", "expected the capture's name (text)")
        launches = item.get("launches")
        if not isinstance(launches, list):
            raise at(path, f"{here}.launches", "expected a list of the calls made during the capture")
        total += len(launches)
        if total > MAX_CAPTURE_LAUNCHES:
            raise at(path, f"{here}.launches", f"more than {MAX_CAPTURE_LAUNCHES} calls in all the captures")
        calls = []
        for j, launch in enumerate(launches):
            if not isinstance(launch, dict) or _text(launch.get("call"), 128) is None:
                raise at(path, f"{here}.launches[{j}].call", "expected the name of the CUDA call (text)")
            op = launch.get("op")
            if op is not None and (not isinstance(op, dict) or _text(op.get("name")) is None):
                raise at(path, f"{here}.launches[{j}].op.name", "expected the op's name (text) or a null op")
            calls.append(CaptureLaunch(launch["call"], None if op is None else _op_of(
                {"Input Dims": op.get("dims"), "Input type": op.get("types"), "Input Strides": op.get("strides"),
                 "Concrete Inputs": op.get("concrete"), "kernel_backend": op.get("backend"),
                 "kernel_file": op.get("kernel_file")}, op["name"], 0.0, 0.0, "capture")))
        out.append(Capture(item["key"][:64], tuple(calls), None, None, "profile"))
    return out


def captures_block(captures: list[Capture]) -> dict[str, Any]:
    """The CAPTURES_KEY block for `captures` (what _captures reads back)."""
    def op(o: Op | None) -> dict[str, Any] | None:
        if o is None:
            return None
        return {"name": o.name, "dims": list(o.dims), "types": list(o.types), "strides": list(o.strides),
                "concrete": list(o.concrete), "backend": o.backend, "kernel_file": o.kernel_file}

    return {"version": CAPTURES_VERSION,
            "captures": [{"key": c.key, "launches": [{"call": l.call, "op": op(l.op)} for l in c.launches]}
                         for c in captures]}


def _reduce(event: dict[str, Any], cat: str, ts: float, dur: float, name: str) -> Any:
    args = event.get("args") if isinstance(event.get("args"), dict) else {}
    if cat in _GPU_CATS:
        where = f"the {cat} event '{name[:60]}' at ts {ts:g}"
        return GpuEvent(_GPU_CATS[cat], name, ts, dur, _int(args.get("correlation")),
                        _ident(args.get("device"), "args.device", where),
                        _ident(args.get("stream"), "args.stream", where),
                        _dim3(args.get("grid"), "args.grid", where), _dim3(args.get("block"), "args.block", where),
                        _number(args.get("bytes")), _graph_field(args.get("graph id")),
                        _graph_field(args.get("graph node id")))
    if cat in _OP_CATS:
        return _op_of(args, name, ts, dur, str(event.get("tid")))
    if cat in _LAUNCH_CATS:
        corr = _int(args.get("correlation"))
        return None if corr is None else Launch(name, ts, str(event.get("tid")), corr, dur)
    return Span(name[len(MODULE_PREFIX):], ts, dur, str(event.get("tid")))


def read_trace(path: Path, max_gpu_events: int | None = None,
               on_batch: Callable[[float], None] | None = None) -> Trace:
    """The events of one trace file; InputError naming the file when it is not a Kineto trace, when more than
    UNUSABLE_LIMIT of its events are unusable, or (with `max_gpu_events`) when it holds more GPU events. A long
    trace is read, inflated and parsed in batches (roofline.kineto.chunks), each reduced to the few fields kept and
    dropped; a text the batches cannot take is parsed whole (up to MAX_WHOLE_TEXT), with the whole parse's
    messages."""
    path = Path(path)
    try:
        return _read(path, max_gpu_events, on_batch)
    except _OutOfRange as exc:
        rule = exc.rule or f"an id must be a whole number from {-ID_LIMIT} to {ID_LIMIT - 1}"
        raise at(path, exc.field, f"is {exc.shown} (in {exc.where}): {rule}; not {KIND} as PyTorch writes it") from None
    except _TooManyGpu:
        raise too_many_gpu_events(path, max_gpu_events + 1 if max_gpu_events is not None else 0,
                                  max_gpu_events or 0, at_least=True) from None
    except _TooManyKept:
        raise InputError(f"{path}: holds more than {MAX_KEPT_EVENTS:,} ops, launches, GPU events and module ranges, "
                         f"the most one import keeps (it is held to {MEMORY_BUDGET >> 30} GiB of memory); nothing was "
                         "imported", fix="profile fewer steps (torch.profiler.schedule(active=1))") from None


def _read(path: Path, max_gpu_events: int | None, on_batch: Callable[[float], None] | None) -> Trace:
    text = _TraceText(path)
    pieces = iter(text)
    first = _take(pieces, STREAM_FROM + 1)
    reduced = _reduced(max_gpu_events)
    head: dict[str, Any] | None = None
    digest = ""
    if len(first) > STREAM_FROM:
        try:  # the constructor raises too: "traceEvents" more than MAX_BATCH in (a large block written before it)
            stream = EventStream(_chain([first], pieces), _batch_loads)
            first = b""  # the stream holds it now, and drops it once parsed
            for batch in stream:
                reduced.add(batch)
                del batch  # not held while the next one is parsed
                if on_batch is not None:
                    on_batch(text.fraction)  # the share of the file read, for a progress report
            head = stream.head
        except DuplicateEvents:
            raise _twice(path) from None
        except ValueError:  # not laid out in batches: parsed whole below, if it is short enough
            reduced, head, first = _reduced(max_gpu_events), None, _whole_text(path)
            digest = hashlib.sha256(first).hexdigest()
    if head is None:
        doc = _whole_doc(path, first)
        del first
        reduced.add(doc["traceEvents"])
        doc["traceEvents"] = []
        head = doc
    return replace(reduced.trace(path, head), digest=digest or text.digest)


def _reduced(max_gpu_events: int | None) -> _Reduced:
    reduced = _Reduced()
    reduced.max_gpu = max_gpu_events
    return reduced


def _take(pieces: Iterator[bytes], size: int) -> bytes:
    """The first pieces of the text, at least `size` bytes of it (or all of it, when shorter)."""
    got: list[bytes] = []
    total = 0
    for piece in pieces:
        got.append(piece)
        total += len(piece)
        if total >= size:
            break
    return b"".join(got)


def _chain(first: list[bytes], rest: Iterator[bytes]) -> Iterator[bytes]:
    yield first.pop()  # not kept in this frame once handed on
    yield from rest


def _whole_text(path: Path) -> bytes:
    """The whole text again, for a trace the batches could not cut: at most MAX_WHOLE_TEXT (parsing more at once
    would take more than the memory budget)."""
    text = _TraceText(path)
    got: list[bytes] = []
    for piece in text:
        got.append(piece)
        if text.text > MAX_WHOLE_TEXT:
            raise at(path, "traceEvents", f"is not valid JSON or not laid out as PyTorch writes it (one event "
                                          f"object after another), and a text longer than {MAX_WHOLE_TEXT >> 20} MiB "
                                          f"is not parsed whole (an import is held to {MEMORY_BUDGET >> 30} GiB of "
                                          f"memory); expected {KIND}")
    return b"".join(got)


def _batch_loads(text: bytes) -> Any:
    """A batch of events: orjson; the standard parser only for what orjson refuses but a trace may hold (NaN,
    Infinity: counted as unusable times), so a cut inside a string fails fast and the next cut is tried."""
    orjson = fast_json()
    if orjson is None:
        return _parse(text)
    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError:
        if b"NaN" not in text and b"Infinity" not in text:
            raise
    return _parse(text)


def _twice(path: Path) -> InputError:
    return at(path, "traceEvents", "is given twice: a JSON parser keeps one array and silently loses the other; "
                                   f"not {KIND} as PyTorch writes it (export the trace again)")


class _TooManyGpu(Exception):
    """More GPU events met than read_trace's max_gpu_events (not a ValueError: see _OutOfRange)."""


class _TooManyKept(Exception):
    """More events kept than MAX_KEPT_EVENTS (not a ValueError: see _OutOfRange)."""


class _OutOfRange(Exception):
    """An id past ID_LIMIT: not a ValueError, so the batch reader does not take it for a bad cut."""

    def __init__(self, field: str, value: object, where: str, rule: str | None = None):
        super().__init__(field)
        text = str(value)
        self.field, self.where, self.rule = field, where, rule
        if isinstance(value, int):
            self.shown = text if len(text) <= 24 else f"{text[:12]}… ({len(text.lstrip('-'))} digits)"
        else:
            self.shown = text if len(text) <= 48 else f"{text[:40]}… ({len(text)} characters)"


def _ident(value: Any, field: str, where: str) -> int | None:
    """A device, stream or rank id (_int), held to [-ID_LIMIT, ID_LIMIT): 10^40 would be written into the results
    and refused by their reader, or altered on the way."""
    number = _int(value)
    if number is not None and not -ID_LIMIT <= number < ID_LIMIT:
        raise _OutOfRange(field, number, where)
    return number


def unusable_text(unusable: dict[str, int]) -> str:
    """'3 dur is NaN, 1 outside the trace window': the reasons, most frequent first."""
    return ", ".join(f"{n} {why}" for why, n in sorted(unusable.items(), key=lambda kv: (-kv[1], kv[0])))


def _refuse_unusable(path: Path, unusable: dict[str, int], events: int, bad_gpu: int, gpu_events: int) -> None:
    bad = sum(unusable.values())
    for part, whole, what in ((bad, events, "events"), (bad_gpu, gpu_events, "GPU events")):
        if whole and part / whole > UNUSABLE_LIMIT:
            raise InputError(f"{path}: {part} of {whole} {what} are unusable ({unusable_text(unusable)}), more than "
                             f"the {UNUSABLE_LIMIT:.0%} an import leaves out; this is a broken trace: nothing was "
                             "imported", fix="export the trace again (export_chrome_trace), or fix those events")
