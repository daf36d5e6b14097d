"""A PyTorch profiler (Kineto) Chrome trace -> the events an import needs, each in SI units.

The trace is read as any input is (roofline.load.inputs: a regular file, at most MAX_TRACE_BYTES), a .json.gz is
inflated to at most MAX_TRACE_TEXT bytes (a small file may inflate to gigabytes), and parsed once with the C JSON
parser; every event is reduced at once to the few fields kept here, so nothing else of the trace stays in memory.
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
"""

from __future__ import annotations

import json
import math
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from roofline.errors import InputError, at
from roofline.load.inputs import read_input_bytes
from roofline.model.units import MAX_DIGITS
from roofline.records.fields import kind_of

MAX_TRACE_BYTES = 1 << 30  # the largest trace file read (compressed or not)
MAX_TRACE_TEXT = 2 << 30  # the most a .json.gz may inflate to
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


@dataclass(frozen=True, slots=True)
class Launch:
    """A runtime or driver call that put work on the GPU (cudaLaunchKernel, cudaGraphLaunch, cudaMemcpyAsync...)."""
    name: str
    ts: float
    tid: str
    correlation: int


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


@dataclass(frozen=True, slots=True)
class Span:
    """A named CPU range (an nn.Module's forward)."""
    name: str
    ts: float
    dur: float
    tid: str


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


def _inflate(path: Path, data: bytes) -> bytes:
    """A gzip file's content, at most MAX_TRACE_TEXT bytes (one InputError naming the file otherwise)."""
    inflater = zlib.decompressobj(wbits=47)  # gzip or zlib header
    try:
        out = inflater.decompress(data, MAX_TRACE_TEXT + 1)
    except zlib.error as exc:
        raise at(path, None, f"is not a valid gzip file ({exc}); expected {KIND}") from None
    if len(out) > MAX_TRACE_TEXT or inflater.unconsumed_tail:
        raise at(path, None, f"inflates to more than {MAX_TRACE_TEXT} bytes, the most {KIND} may be")
    if not inflater.eof:  # the stream stops before its end marker: a copy or download cut short
        raise at(path, None, f"is a truncated gzip file (it ends before the compressed data does); expected {KIND}")
    return out


def _constant(_text: str) -> None:
    return None  # NaN or Infinity (not JSON): the field is taken as missing


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
    try:
        import orjson  # a dependency; read only when a trace is
    except ImportError:
        orjson = None
    if orjson is not None:
        try:
            return orjson.loads(data)
        except orjson.JSONDecodeError:
            pass
    return json.loads(data, parse_constant=_constant, parse_int=_whole)


def load_json(path: Path) -> dict[str, Any]:
    """The parsed top-level object of a trace file."""
    data = read_input_bytes(path, MAX_TRACE_BYTES, KIND)
    if data[:2] == b"\x1f\x8b":
        data = _inflate(path, data)
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


def _dim3(value: Any) -> tuple[int, ...] | None:
    if isinstance(value, list) and value and all(isinstance(v, int) and not isinstance(v, bool) for v in value):
        return tuple(value)
    return None


def _listed(args: dict[str, Any], key: str) -> tuple[Any, ...]:
    value = args.get(key)
    return tuple(value) if isinstance(value, list) else ()


def _devices(doc: dict[str, Any]) -> dict[int, str]:
    out: dict[int, str] = {}
    props = doc.get("deviceProperties")
    for i, dev in enumerate(props if isinstance(props, list) else []):
        if isinstance(dev, dict) and isinstance(dev.get("name"), str):
            ident = _int(dev.get("id"))
            out[i if ident is None else ident] = dev["name"]
    return out


def read_trace(path: Path) -> Trace:
    """The events of one trace file; InputError naming the file when it is not a Kineto trace."""
    path = Path(path)
    doc = load_json(path)
    ops: list[Op] = []
    launches: dict[int, Launch] = {}
    gpu: list[GpuEvent] = []
    modules: list[Span] = []
    for event in doc["traceEvents"]:
        if not isinstance(event, dict) or event.get("ph") != "X":
            continue
        cat = event.get("cat")
        if not isinstance(cat, str):
            continue
        cat = cat.lower()
        ts, dur, name = _number(event.get("ts")), _number(event.get("dur")), event.get("name")
        if ts is None or dur is None or not isinstance(name, str):
            continue
        args = event.get("args") if isinstance(event.get("args"), dict) else {}
        if cat in _GPU_CATS:
            gpu.append(GpuEvent(_GPU_CATS[cat], name, ts, dur, _int(args.get("correlation")),
                                _int(args.get("device")), _int(args.get("stream")), _dim3(args.get("grid")),
                                _dim3(args.get("block")), _number(args.get("bytes"))))
        elif cat in _OP_CATS:
            ops.append(Op(name, ts, dur, str(event.get("tid")), _listed(args, "Input Dims"),
                          _listed(args, "Input type"), _listed(args, "Input Strides"),
                          _listed(args, "Concrete Inputs"), _int(args.get("External id")),
                          _text(args.get("kernel_backend")), _text(args.get("kernel_file"))))
        elif cat in _LAUNCH_CATS:
            corr = _int(args.get("correlation"))
            if corr is not None:
                launches[corr] = Launch(name, ts, str(event.get("tid")), corr)
        elif cat == "python_function" and name.startswith(MODULE_PREFIX):
            modules.append(Span(name[len(MODULE_PREFIX):], ts, dur, str(event.get("tid"))))
    dist = doc.get("distributedInfo") if isinstance(doc.get("distributedInfo"), dict) else {}
    if not gpu and not ops and not launches:
        raise InputError(f"{path}: holds no CPU ops, launches or GPU kernels; expected {KIND} recorded with "
                         "activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]")
    return Trace(path, _devices(doc), _int(dist.get("rank")), _int(dist.get("world_size")), ops, launches, gpu,
                 modules)
