"""Run a Python program under the PyTorch profiler, unchanged, and write its Kineto trace: `profile --with torch`.

    python -m roofline.kineto.capture --trace OUT.json[.gz] [--range all|start-stop|NVTX_NAME] [--steps N]
                                      [--modules] -- script.py [ARGS...]

The program runs in this process (runpy, as `python script.py` would run it), so nothing in it changes:
  all          the whole run is profiled
  start-stop   the part between torch.cuda.profiler.start() and stop() (the range `profile --range start-stop`
               gives ncu); the first such range only, as ncu's --profile-from-start off does
  NAME         the first NVTX range pushed under that name (torch.cuda.nvtx.range_push / range)
With --steps N (N > 1) the first N such ranges are recorded (one profiler window, from the first range's start to
the N-th range's end), each inside a ProfilerStep#k annotation: the step marks torch.profiler's schedule writes.
Programs written for ncu wrap their step in torch.autograd.profiler.emit_nvtx(record_shapes=True); that turns on
the legacy profiler in NVTX mode, which cannot run beside the Kineto one, so here it becomes a no-op: under this
capture the shapes come from the Kineto profiler itself (record_shapes=True).

The trace is written atomically only when the range was seen; a program that never entered its range exits 2
naming the range, and the program's own exit status is passed on. What this prints goes to stderr, prefixed
`roofline:`; the program's own output is untouched. Since a program's own status may be 2 or 3 too, `--status FILE`
also writes the outcome as JSON for the caller (`roofline profile --with torch`): "outcome" is "traced",
"no-range", "no-torch", "no-trace" or "running" (left so when the program ended the process itself: os._exit, a
signal), with the program's "status", "cuda", "torch", "program_seconds", "range_seconds" and "trace_bytes", and
"energy": the profiled range's joules from NVML's counter of torch's GPU ({joules, window, gpu, device}, or {why}).

CUDA graphs (torch.compile mode="reduce-overhead"): a graph captured before the range is recorded in a short
profiler session of its own around the capture, and its calls and ops are written into the trace's head; each
replay in the range is annotated with the capture it runs (GraphRecorder), so the import models replayed kernels.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import runpy
import sys
import tempfile
import time
import traceback
import zlib
from pathlib import Path
from typing import Any, Iterator

from roofline.load.jsonio import write_text_atomic

from roofline.kineto.reader import CAPTURES_KEY, GRAPH_PREFIX, Capture, captures_block, params_annotation
from roofline.model.counts import counted
EXIT_NO_RANGE = 2
EXIT_NO_TORCH = 3
EXIT_NO_TRACE = 1


def _say(line: str) -> None:
    sys.stderr.write(f"roofline: {line}\n")
    sys.stderr.flush()


class EnergyMeter:
    """NVML's total-energy counter of the GPU torch runs on (its current device, matched by PCI bus id, else by
    UUID), read where the window starts and stops, after the sync: the profiled range's joules (issue 33). Anything
    missing (nvidia-ml-py in the program's Python, the bus id, a driver without the counter) leaves `why` instead,
    and the capture goes on."""

    def __init__(self, torch: Any) -> None:
        self.why: str | None = None
        self.nvml: Any = None
        self.begin: tuple[float, float] | None = None
        self.result: dict[str, Any] = {}
        try:
            import pynvml
        except ImportError:
            self.why = "nvidia-ml-py is not installed in the program's Python (pip install nvidia-ml-py)"
            return
        try:
            self.device = int(torch.cuda.current_device())
            props = torch.cuda.get_device_properties(self.device)
            pynvml.nvmlInit()
            if getattr(props, "pci_bus_id", None) is not None:
                self.gpu = f"{props.pci_domain_id:08X}:{props.pci_bus_id:02X}:{props.pci_device_id:02X}.0"
                self.handle = pynvml.nvmlDeviceGetHandleByPciBusId(self.gpu)
            else:
                self.gpu = f"GPU-{props.uuid}"
                self.handle = pynvml.nvmlDeviceGetHandleByUUID(self.gpu)
        except Exception as exc:  # noqa: BLE001 - no energy, never a failed capture
            self.why = f"NVML could not find torch's GPU ({type(exc).__name__}: {exc})"
            return
        self.nvml = pynvml

    def _read(self) -> tuple[float, float]:
        return time.perf_counter(), self.nvml.nvmlDeviceGetTotalEnergyConsumption(self.handle) * 1e-3

    def start(self) -> None:
        if self.nvml is not None:
            try:
                self.begin = self._read()
            except Exception as exc:  # noqa: BLE001
                self.why, self.nvml = f"the energy counter could not be read ({exc})", None

    def stop(self) -> None:
        if self.nvml is None or self.begin is None:
            return
        try:
            end = self._read()
        except Exception as exc:  # noqa: BLE001
            self.why = f"the energy counter could not be read ({exc})"
            return
        self.result = {"joules": end[1] - self.begin[1], "window": end[0] - self.begin[0], "gpu": self.gpu,
                       "device": self.device}

    def outcome(self) -> dict[str, Any]:
        return self.result or {"why": self.why or "the profiled range was not reached"}


class Window:
    """The profiler and the range it records: started and stopped by the program's own markers. With `steps` > 1
    it records the first `steps` occurrences of the range, each inside a `ProfilerStep#k` annotation (k from 1), the
    mark torch.profiler's own schedule puts around each step (prof.step()), so `import torch` gives each launch its
    step and `report --baseline` one sample per step; the time between the occurrences is in the trace too."""

    def __init__(self, profiler: Any, sync: Any, meter: EnergyMeter | None = None, steps: int = 1,
                 annotate: Any = None) -> None:
        self.profiler = profiler
        self.sync = sync
        self.meter = meter
        self.state = "waiting"  # waiting -> recording -> done
        self.started_at = 0.0
        self.seconds = 0.0
        self.steps = steps
        self.annotate = annotate  # name -> a context manager (torch.profiler.record_function)
        self.done_steps = 0
        self.open_step: Any = None

    def enter_range(self) -> None:
        """The program entered its range: the recording starts at the first; with several steps each opens one."""
        if self.state == "waiting":
            self.start()
        if self.state == "recording" and self.steps > 1 and self.annotate is not None and self.open_step is None:
            self.open_step = self.annotate(f"ProfilerStep#{self.done_steps + 1}")
            self.open_step.__enter__()

    def leave_range(self) -> None:
        """The program left its range: the step closes; the recording stops after the last step."""
        if self.state != "recording":
            return
        if self.open_step is not None:
            self.open_step.__exit__(None, None, None)
            self.open_step = None
        self.done_steps += 1
        if self.done_steps >= self.steps:
            self.stop()

    def start(self) -> None:
        """The energy window opens after the profiler has started: its first start sets up CUPTI, seconds at idle
        power on an H200 (3.6 s in the acceptance run of 2026-12-04) that are not the program's."""
        if self.state == "waiting":
            self.sync()
            self.profiler.start()
            if self.meter is not None:
                self.sync()
                self.meter.start()
            self.state = "recording"
            self.started_at = time.perf_counter()

    def stop(self) -> None:
        if self.state == "recording":
            self.sync()  # the range's kernels finish inside it, as under ncu
            if self.meter is not None:
                self.meter.stop()
            self.profiler.stop()
            self.seconds = time.perf_counter() - self.started_at
            self.state = "done"


@contextlib.contextmanager
def _no_nvtx_profiler(*_args: Any, **_kwargs: Any) -> Iterator[None]:
    yield


def _hook_start_stop(torch: Any, window: Window) -> None:
    prof = torch.cuda.profiler
    original_start, original_stop = prof.start, prof.stop

    def start() -> None:
        original_start()
        window.enter_range()

    def stop() -> None:
        window.leave_range()
        original_stop()

    prof.start, prof.stop = start, stop


def _hook_nvtx(torch: Any, window: Window, name: str) -> None:
    nvtx = torch.cuda.nvtx
    original_push, original_pop = nvtx.range_push, nvtx.range_pop
    depth = {"now": 0, "open": None}

    def range_push(msg: str) -> Any:
        result = original_push(msg)
        depth["now"] += 1
        if msg == name and depth["open"] is None and window.state in ("waiting", "recording"):
            depth["open"] = depth["now"]
            window.enter_range()
        return result

    def range_pop() -> Any:
        if depth["open"] is not None and depth["now"] == depth["open"]:
            window.leave_range()
            depth["open"] = None
        depth["now"] = max(0, depth["now"] - 1)
        return original_pop()

    nvtx.range_push, nvtx.range_pop = range_push, range_pop


MAX_ANNOTATION = 1 << 20  # characters: a step of more parameters is not annotated


def _hook_optimizers(torch: Any, window: Window) -> None:
    """PyTorch writes a tensor list's shapes into the trace only when it holds fewer than 30 tensors, so a real
    model's fused optimizer step (_fused_adamw_ over every parameter) and GradScaler's unscale arrive without them.
    Before each optimizer step inside the window, the step's parameters (those with a gradient: the ones the fused
    kernels touch) are written into the trace as a user annotation that `import torch` reads (params_annotation:
    no quotes, which Kineto's exporter would not escape)."""
    try:
        import torch.optim.optimizer as optimizer_module  # lazy (torch, start-up): the global step hooks (PyTorch 2+)
    except ImportError:
        return
    register = getattr(optimizer_module, "register_optimizer_step_pre_hook", None)
    if register is None:
        return

    def hook(optimizer: Any, _args: Any, _kwargs: Any) -> None:
        if window.state != "recording":
            return
        params = [p for group in optimizer.param_groups for p in group["params"] if p.grad is not None]
        text = params_annotation(type(optimizer).__name__, [tuple(p.shape) for p in params],
                                 [str(p.dtype).removeprefix("torch.") for p in params])
        if len(text) <= MAX_ANNOTATION:
            with torch.profiler.record_function(text):
                pass

    register(hook)


MAX_HEAD_BYTES = 32 << 20  # the captures' record at the trace's head (the reader looks 64 MiB in for traceEvents)
MAX_SIDE_SESSIONS = 64  # captures recorded outside the range (cudagraph trees capture one graph per shape)


class GraphRecorder:
    """CUDA graphs (torch.compile mode="reduce-overhead", torch.cuda.graph) replay kernels whose ops the trace of the
    replay does not hold (roofline.kineto.graphs). A graph captured inside the profiled range is in the trace
    itself; one captured before it (the usual case: the warm-up steps capture, the measured steps replay) is
    recorded here in a profiler session of its own, started just before CUDAGraph.capture_begin and stopped just
    after capture_end (nothing runs on the GPU during a capture, and nothing of that session's is in the user's
    range), and kept as the calls of the capture with their ops: written into the trace's head (CAPTURES_KEY).
    Each replay inside the range is annotated `roofline.graph KEY` (GRAPH_PREFIX), naming its capture."""

    def __init__(self, torch: Any, window: Window, make_profiler: Any) -> None:
        self.torch, self.window, self.make_profiler = torch, window, make_profiler
        self.captures: list[Capture] = []
        self.count = 0
        self.skipped: list[str] = []
        self._open: dict[int, Any] = {}  # id(graph) -> its side session

    def install(self) -> bool:
        graph_class = getattr(getattr(self.torch, "cuda", None), "CUDAGraph", None)
        if graph_class is None or not all(hasattr(graph_class, m) for m in ("capture_begin", "capture_end",
                                                                              "replay")):
            return False
        begin, end, replay = graph_class.capture_begin, graph_class.capture_end, graph_class.replay
        recorder = self

        def capture_begin(graph: Any, *args: Any, **kwargs: Any) -> Any:
            recorder.begin(graph)
            return begin(graph, *args, **kwargs)

        def capture_end(graph: Any, *args: Any, **kwargs: Any) -> Any:
            try:
                return end(graph, *args, **kwargs)
            finally:
                recorder.end(graph)

        def replay_annotated(graph: Any, *args: Any, **kwargs: Any) -> Any:
            key = getattr(graph, "_roofline_graph", None)
            if key is None or recorder.window.state != "recording":
                return replay(graph, *args, **kwargs)
            with recorder.torch.profiler.record_function(f"{GRAPH_PREFIX}{key}"):
                return replay(graph, *args, **kwargs)

        graph_class.capture_begin, graph_class.capture_end, graph_class.replay = (capture_begin, capture_end,
                                                                                   replay_annotated)
        return True

    def begin(self, graph: Any) -> None:
        self.count += 1
        key = str(self.count)
        try:
            graph._roofline_graph = key
        except AttributeError:  # a graph object without a __dict__: its replays go unannotated
            return
        if self.window.state == "recording":
            return  # the capture is in the trace itself
        if self.window.state == "done":
            return  # nothing after the range is replayed in it
        if len(self._open) or len(self.captures) + len(self.skipped) >= MAX_SIDE_SESSIONS:
            self.skipped.append(key)
            return
        try:
            session = self.make_profiler()
            session.start()
        except Exception as exc:  # noqa: BLE001 - no record of this capture, never a failed program
            self.skipped.append(key)
            _say(f"warning: could not record CUDA graph capture {key} ({type(exc).__name__}: {exc})")
            return
        self._open[id(graph)] = (key, session)

    def end(self, graph: Any) -> None:
        opened = self._open.pop(id(graph), None)
        if opened is None:
            return
        key, session = opened
        try:
            session.stop()
            self.captures.append(self._read(key, session))
        except Exception as exc:  # noqa: BLE001 - the trace or its reading: say so, go on
            self.skipped.append(key)
            _say(f"warning: could not record CUDA graph capture {key} ({type(exc).__name__}: {exc})")

    @staticmethod
    def _read(key: str, session: Any) -> Capture:
        """The capture's calls and ops from its session's own trace, read as an import reads one: those between
        cudaStreamBeginCapture and cudaStreamEndCapture (the session also holds what capture_begin ran before the
        stream capture began: CUDA generators' seed and offset fills, no nodes of the graph; captures_in). A graph
        captured with no node (cudagraph trees capture an empty one when they start) is kept, empty."""
        from roofline.kineto.graphs import captures_in
        from roofline.kineto.reader import read_trace

        fd, raw = tempfile.mkstemp(prefix=".roofline-capture-", suffix=".json")
        os.close(fd)
        try:
            session.export_chrome_trace(raw)
            found = captures_in(read_trace(Path(raw)), whole=True)
        finally:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(raw)
        if not found:
            raise ValueError("its session recorded no cudaStreamBeginCapture and no captured call")
        launches = tuple(launch for c in found for launch in c.launches)
        return Capture(key, launches, None, None, "profile")

    def head(self) -> dict[str, Any] | None:
        """The trace's extra top-level block, None when no capture was recorded outside the range. It is written
        before traceEvents, and the reader looks for that array within its first MAX_BATCH (64 MiB): captures past
        MAX_HEAD_BYTES of text (64 graphs of thousands of calls each) are left out and counted as not recorded,
        rather than written into a trace that `import torch` would refuse."""
        kept: list[Capture] = []
        size = 0
        for c in self.captures:
            size += len(json.dumps(captures_block([c])["captures"][0])) + 2
            if size > MAX_HEAD_BYTES:
                break
            kept.append(c)
        if len(kept) < len(self.captures):
            left = self.captures[len(kept):]
            self.skipped.extend(c.key for c in left)
            self.captures = kept
            _say(f"warning: {counted(len(left), 'CUDA graph capture')} not recorded: the record would pass "
                 f"{MAX_HEAD_BYTES >> 20} MiB at the trace's head")
        return captures_block(self.captures) if self.captures else None


def _chunks(path: str, gz: bool, head: dict[str, Any] | None = None) -> Iterator[bytes]:
    """The exported trace read in 4 MiB pieces, gzip-compressed on the way when asked; `head` added as top-level
    keys of its JSON object (after its opening brace, so the events stay where they are)."""
    packer = zlib.compressobj(6, zlib.DEFLATED, 31) if gz else None  # wbits 31: the gzip format
    extra = b"".join(json.dumps(k).encode() + b": " + json.dumps(v).encode() + b", "
                     for k, v in (head or {}).items())
    with open(path, "rb") as src:
        first = True
        while chunk := src.read(1 << 22):
            if first and extra:
                brace = chunk.find(b"{")
                if brace < 0 or chunk[:brace].strip():
                    raise ValueError("the exported trace does not begin with a JSON object")
                chunk = chunk[:brace + 1] + extra + chunk[brace + 1:]
            first = False
            yield packer.compress(chunk) if packer else chunk
    if packer:
        yield packer.flush()


def _write_trace(profiler: Any, out: Path, head: dict[str, Any] | None = None) -> int:
    """Export the trace beside `out`, then write it (gzipped when asked, with `head`'s keys added) through
    roofline's one atomic writer: never a half-written file."""
    out.parent.mkdir(parents=True, exist_ok=True)
    fd, raw = tempfile.mkstemp(prefix=".roofline-trace-", suffix=".json", dir=out.parent)
    os.close(fd)
    try:
        profiler.export_chrome_trace(raw)
        write_text_atomic(out, _chunks(raw, out.name.endswith(".gz"), head))
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(raw)
    return out.stat().st_size


def _write_status(path: Path | None, **fields: Any) -> None:
    """The outcome for the caller, written atomically (a half-written status must not read as an outcome)."""
    if path is None:
        return

    write_text_atomic(path, json.dumps(fields, sort_keys=True) + "\n")


def _run_program(argv: list[str]) -> int:
    """runpy the script as __main__ with its own argv; its exit status, 1 for an uncaught exception."""
    script = argv[0]
    saved_argv, saved_path0 = sys.argv[:], sys.path[0]
    sys.argv = list(argv)
    sys.path[0] = str(Path(script).resolve().parent)
    try:
        runpy.run_path(script, run_name="__main__")
        return 0
    except SystemExit as exc:
        code = exc.code
        if code is None:
            return 0
        if isinstance(code, int):
            return int(code)  # SystemExit(True) is 1
        sys.stderr.write(f"{code}\n")
        return 1
    except BaseException:  # the program's own error: shown as Python would show it, then its status
        traceback.print_exc()
        return 1
    finally:
        sys.argv, sys.path[0] = saved_argv, saved_path0


def main(args: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m roofline.kineto.capture", description=__doc__.split("\n")[0])
    parser.add_argument("--trace", required=True, type=Path, help="where the Kineto trace goes (.json or .json.gz)")
    parser.add_argument("--range", dest="range_", default="all", metavar="all|start-stop|NVTX_NAME")
    parser.add_argument("--steps", type=int, default=1, metavar="N",
                        help="record the first N occurrences of the range, each marked ProfilerStep#k")
    parser.add_argument("--modules", action="store_true",
                        help="record the nn.Module ranges (with_stack; slower) for --group-by module")
    parser.add_argument("--status", type=Path, default=None, metavar="FILE",
                        help="also write the outcome here as JSON (the program's own status may be 2 or 3 too)")
    parser.add_argument("program", nargs=argparse.REMAINDER)
    ns = parser.parse_args(args)
    program = ns.program[1:] if ns.program[:1] == ["--"] else ns.program
    if not program:
        parser.error("give the Python program to run: -- script.py [ARGS...]")
    if not Path(program[0]).is_file():
        parser.error(f"{program[0]}: no such Python script (the program must be a .py file run as 'python "
                     "script.py')")
    try:
        import torch  # lazy: torch is a start-up cost only this path pays
        from torch.profiler import ProfilerActivity, profile  # lazy: torch is a start-up cost only this path pays
    except ImportError as exc:
        _say(f"cannot import torch ({exc}); --with torch needs PyTorch in the program's Python")
        _write_status(ns.status, outcome="no-torch", status=EXIT_NO_TORCH, why=str(exc))
        return EXIT_NO_TORCH
    activities = [ProfilerActivity.CPU]
    if torch.cuda.is_available():
        activities.append(ProfilerActivity.CUDA)
    else:
        _say("warning: torch sees no CUDA device; the trace will hold CPU ops only")
    profiler = profile(activities=activities, record_shapes=True, with_stack=ns.modules, with_modules=ns.modules)
    graphs = None
    sync = torch.cuda.synchronize if torch.cuda.is_available() else (lambda: None)
    meter = EnergyMeter(torch) if torch.cuda.is_available() else None
    if ns.steps < 1 or (ns.steps > 1 and ns.range_ == "all"):
        parser.error("--steps N needs N >= 1, and N > 1 a range (start-stop or an NVTX name) that repeats")
    window = Window(profiler, sync, meter, ns.steps, getattr(torch.profiler, "record_function", None))
    torch.autograd.profiler.emit_nvtx = _no_nvtx_profiler
    if hasattr(torch.autograd, "emit_nvtx"):
        torch.autograd.emit_nvtx = _no_nvtx_profiler
    if ns.range_ == "start-stop":
        _hook_start_stop(torch, window)
    elif ns.range_ != "all":
        _hook_nvtx(torch, window, ns.range_)
    _hook_optimizers(torch, window)
    if torch.cuda.is_available():
        graphs = GraphRecorder(torch, window, lambda: profile(activities=activities, record_shapes=True))
        if not graphs.install():
            graphs = None
    _write_status(ns.status, outcome="running")  # left as it is if the program ends the process itself
    t0 = time.perf_counter()
    if ns.range_ == "all":
        window.start()
    status = _run_program(program)
    if window.state == "recording" and ns.steps > 1:
        _say(f"warning: the range ran {counted(window.done_steps, 'time')} in the window, not {ns.steps}: the trace holds "
             f"{counted(window.done_steps, 'whole step')}")
    if window.open_step is not None:  # the program ended inside a step: close it
        window.open_step.__exit__(None, None, None)
        window.open_step = None
    window.stop()
    wall = time.perf_counter() - t0
    done = {"status": status, "cuda": bool(torch.cuda.is_available()), "torch": str(getattr(torch, "__version__", "")),
            "program_seconds": wall}
    if window.state == "waiting":
        what = ("torch.cuda.profiler.start()" if ns.range_ == "start-stop" else f"an NVTX range named {ns.range_!r}")
        _say(f"the program never reached {what}; nothing was recorded and no trace was written")
        _write_status(ns.status, outcome="no-range", **done)
        return status or EXIT_NO_RANGE
    try:
        size = _write_trace(profiler, ns.trace, {CAPTURES_KEY: graphs.head()}
                            if graphs is not None and graphs.head() else None)
    except Exception as exc:  # export or disk trouble: say so, never as the program's own failure
        _say(f"the trace could not be written to {ns.trace}: {type(exc).__name__}: {exc}")
        _write_status(ns.status, outcome="no-trace", why=f"{type(exc).__name__}: {exc}", **done)
        return status or EXIT_NO_TRACE
    _write_status(ns.status, outcome="traced", range_seconds=window.seconds, trace_bytes=size,
                  energy=meter.outcome() if meter is not None else None, **done)
    _say(f"trace {ns.trace} ({size} bytes): program {wall:.2f} s, profiled range {window.seconds:.3f} s, "
         f"exit {status}")
    if graphs is not None and (graphs.captures or graphs.skipped):
        calls = ", ".join(f"{c.key}: {len(c.launches)}" for c in graphs.captures[:8])
        _say(f"CUDA graphs: {counted(len(graphs.captures), 'capture')} before the range recorded for their replays' ops"
             + (f" (calls by capture: {calls}{', ...' if len(graphs.captures) > 8 else ''})" if calls else "")
             + (f"; {len(graphs.skipped)} not recorded" if graphs.skipped else ""))
    return status


if __name__ == "__main__":
    sys.exit(main())
