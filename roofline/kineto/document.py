"""Kineto traces -> the results document `import ncu` and `profile` write (roofline/results/v1), so `report`,
`plot` and everything downstream read it unchanged.

Each GPU kernel is one entry (status IMPORTED, verified null: roofline did not run it). Its time is the trace's
duration; its FLOPs and bytes are its op's modelled work (roofline.model.ops.aten, from the op's input shapes,
dtypes, strides and concrete arguments) split across the op's kernels in proportion to their GPU time, which the
entry's `model.note` says; the FLOPs of a matrix op (a tensor-core roof) go to its matrix kernels alone (by name:
GEMM, convolution, attention), not to the helpers beside them (cuDNN's channel padding, split-K reductions,
attention's dO.O pre-pass), which the split by time would make look compute-heavy. A memory-bound kernel whose
modelled bytes moved faster than DRAM allows warns l2-reuse. A copy or fill moves the bytes Kineto recorded. Work
no model covers (an op without a model, a CUDA-graph replay, a kernel launched outside any op) cannot be placed on
a roofline: it is listed in the document's `unmodelled` (with its time and why) instead of `kernels`, and the
program line says what share of the GPU time it holds. Several traces (one per rank) go into one document: each
entry has its `rank`, `ranks` holds each rank's groups and time, and `straggler` names the rank whose GPU time is an
outlier, with the spread.
"""

from __future__ import annotations

import bisect
import contextlib
import dataclasses
import datetime as _dt
import functools
import gc
import re
import statistics
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterator, Mapping, Sequence

from roofline.version import __version__
from roofline.model.analysis import machine_summary, timed_elsewhere
from roofline.records.caveats import warning
from roofline.errors import InputError
from roofline.model.ops.args import OpInput
from roofline.kineto.select import LaunchScope, select
from roofline.kineto.consistency import refuse_same_trace, stream_overlaps
from roofline.kineto.sources import KernelSources
from roofline.model.ops.triton import is_triton, model_triton
from roofline.measurement.progress import SILENT, Progress
from roofline.model.types import MachineSpec
from roofline.ncu.halfprec import spelled
from roofline.ncu.importer import short_name as _short_name
from roofline.ncu.placement import DTYPE, roof_for
from roofline.records.document import Status
from roofline.records.fields import MAX_FRACTION
from roofline.records.groups import group_figures, program_totals
from roofline.records.schema import RESULTS_SCHEMA
from roofline.load.selection import spec_for_device
from roofline.load.specs import SpecCatalog
from roofline.kineto.attribution import GRAPH_OP, NO_MODULE, NO_OP, Attributed, attribute
from roofline.kineto.graphs import match_replays
from roofline.kineto import reader, timeline
from roofline.model.ops import aten as opmodels
from roofline.model.ops.aten import model_from_grid
from roofline.model.ops.multitensor import GRID_MODEL, blocks_of, parse_kernel
from roofline.model.units import format_time
from roofline.kineto.reader import MAX_GPU_EVENTS, Op, Params, Trace, too_many_gpu_events, unusable_text
from roofline.model.counts import counted

GROUP_BY = ("op", "kernel", "module", "none")
STRAGGLER = 1.05  # a rank this much slower than the median rank is the straggler
SPLIT_NOTE = "the op's modelled work split across its {n} in proportion to their GPU time"
BLOCKS_NOTE = ("the op's modelled work split across its {n} in proportion to their blocks "
               "(one chunk of elements each)")
MATRIX_NOTE = "its FLOPs on its {n} alone"
_TF32 = re.compile(r"(?<![a-z])tf32", re.IGNORECASE)
# a matrix (tensor-core) kernel by its name; "conv" but not "convert" (cuDNN's convert_dq_to_16bits is a cast)
_TENSOR = re.compile(r"gemm|xmma|tensorop|mma|nvjet|cutlass|flash|fmha|wgrad|dgrad|fprop|conv(?!ert)", re.IGNORECASE)
_HOST = re.compile(r"HtoD|DtoH|PtoP|HtoH", re.IGNORECASE)

Model = Callable[..., Any]  # model_op(name, inputs, kernel_names) -> OpWork | None
# a long trace launches the same few hundred kernels thousands of times: each name is read once
short_name = functools.lru_cache(maxsize=1 << 14)(_short_name)


@functools.lru_cache(maxsize=1 << 14)
def _is_matrix(kernel: str) -> bool:
    return bool(_TENSOR.search(kernel))


def _default_model() -> tuple[Model, Callable[..., Any]]:
    return opmodels.model_op, opmodels.OpInput


def _shape(value: Any) -> Any:
    """An 'Input Dims' or 'Input Strides' entry as a tuple (a tensor list as a tuple of tuples); None when absent."""
    if isinstance(value, list):
        return tuple(_shape(v) if isinstance(v, list) else v for v in value)
    return None


def op_inputs(op: Op, make_input: Callable[..., Any]) -> list[Any]:
    """The op's arguments as the models take them (OpInput), one per recorded input."""
    n = max(len(op.dims), len(op.types), len(op.concrete))
    out = []
    for i in range(n):
        dims = _shape(op.dims[i]) if i < len(op.dims) else None
        dtype = op.types[i] if i < len(op.types) and isinstance(op.types[i], str) else None
        strides = _shape(op.strides[i]) if i < len(op.strides) else None
        value = op.concrete[i] if i < len(op.concrete) else ""
        out.append(make_input(dims=dims, dtype=dtype, strides=strides, value=value))
    return out


def roof_from_name(kernel: str, roofs: Mapping[str, float]) -> tuple[str, str]:
    """(roof, what said so) when the model names none: TF32, BF16 or FP16 spelled in the kernel's name (on the
    tensor roof for a GEMM, convolution or attention kernel), else FP32."""
    work, why = _named_work(kernel)
    roof, _ = roof_for(work, roofs)
    return roof, why


@functools.lru_cache(maxsize=1 << 14)
def _named_work(kernel: str) -> tuple[str, str]:
    tensor = _is_matrix(kernel)
    bf16, fp16 = spelled(kernel)
    if _TF32.search(kernel):
        work, why = "tf32_tensor", "the kernel name says tf32"
    elif bf16 and not fp16:
        work, why = ("bf16_tensor" if tensor else "bf16"), f"the kernel name says {bf16[0]}"
    elif fp16 and not bf16:
        work, why = ("fp16_tensor" if tensor else "fp16"), f"the kernel name says {fp16[0]}"
    else:
        work, why = "fp32", "no precision in the model or the kernel name: fp32"
    return work, why


def choose_spec(traces: Sequence[Trace], spec_name: str | None, catalog: SpecCatalog) -> tuple[MachineSpec, str]:
    """(spec, the GPU the traces name): --spec when given, else the bundled spec listing the traces' GPU."""
    names: set[str] = set()
    for t in traces:
        used = {e.device for e in t.gpu if e.device is not None}
        names.update(name for dev, name in t.devices.items() if not used or dev in used)
    gpu = ", ".join(sorted(names)) or "unknown GPU"
    return spec_for_device(names, spec_name, catalog, "the traces",
                           f"{traces[0].path}: deviceProperties: names no GPU"), gpu


@dataclass(frozen=True)
class Split:
    """One kernel's part of its op's modelled work."""
    work: Any  # the op's OpWork (None: no model)
    share: float  # of the op's bytes (and FLOPs, unless matrix): its share of the op's kernel time (or blocks)
    flops_share: float
    kernels: int  # the op's kernels
    matrix: int  # of them the matrix kernels that take all the FLOPs (0: FLOPs split like the bytes)
    by: str = "time"  # "time", or "blocks": multi-tensor launches, one chunk of elements a block

    @property
    def note(self) -> str:
        split = (SPLIT_NOTE.format(n=counted(self.kernels, "kernel")) if self.by == "time"
                 else BLOCKS_NOTE.format(n=counted(self.kernels, "multi-tensor launch")))
        return split + (f"; {MATRIX_NOTE.format(n=counted(self.matrix, 'matrix kernel'))}" if self.matrix else "")


def shares(work: Any, events: Sequence[Any]) -> list[Split]:
    """Each of an op's kernels' shares of its work, by GPU time; a matrix op's FLOPs on its matrix kernels only
    (when some, not all, of its kernels are matrix kernels by name). An op whose kernels are all ATen multi-tensor
    launches (fused optimizers, unscale, _foreach_*) shares its work by their blocks: each block handles one chunk
    of CHUNK_SIZE elements (roofline.model.ops.multitensor), whatever a launch's time."""
    blocks = [blocks_of(e.grid) if parse_kernel(e.name) is not None else None for e in events]
    if work is not None and len(events) > 1 and all(blocks):
        total_blocks = sum(b for b in blocks if b)
        return [Split(work, b / total_blocks, b / total_blocks, len(events), 0, "blocks") for b in blocks if b]
    total = sum(e.dur for e in events)
    time = [e.dur / total if total > 0 else 0.0 for e in events]
    matrix = [_is_matrix(e.name) for e in events]
    on_matrix = (work is not None and bool(work.flops) and str(work.roof or "").endswith("_tensor")
                 and 0 < sum(matrix) < len(events))
    if not on_matrix:
        return [Split(work, t, t, len(events), 0) for t in time]
    matrix_time = sum(e.dur for e, m in zip(events, matrix) if m)
    return [Split(work, t, (e.dur / matrix_time if m and matrix_time > 0 else 0.0), len(events), sum(matrix))
            for e, t, m in zip(events, time, matrix)]


class _Builder:
    """The entries of one document, numbered across its traces."""

    def __init__(self, machine: MachineSpec, model: Model, make_input: Callable[..., Any],
                 sources: KernelSources | None = None):
        self.machine, self.model, self.make_input = machine, model, make_input
        self.sources = sources or KernelSources()
        self._memo: dict[tuple[Any, ...], Any] = {}
        self.kernels: list[dict[str, Any]] = []
        self.unmodelled: list[dict[str, Any]] = []
        self.skipped = 0
        self.number = 0
        self.no_model_ops: dict[str, float] = {}
        self.steps: Sequence[reader.Step] = ()  # the trace being added's ProfilerStep ranges, and their starts
        self.step_starts: list[float] = []

    def _model(self, name: str, inputs: list[Any], names: list[str]) -> Any:
        """The model of an op, once per distinct op, arguments and kernels (a training loop repeats each layer's)."""
        key = (name, tuple(inputs), tuple(names))
        try:
            return self._memo[key]
        except KeyError:
            work = self._memo[key] = self.model(name, inputs, names)
            return work
        except TypeError:  # an argument recorded as a list or an object: not kept
            return self.model(name, inputs, names)

    def _work(self, items: Sequence[Attributed], params: Sequence[Params] = (), ops: Sequence[Op] = ()
              ) -> dict[tuple[int, int | None], tuple[Any, list[int]]]:
        """(id(op), replay) -> (its OpWork or None, the positions of its kernels in items). A graph replay's kernels
        matched to their capture are their captured op's kernels in that replay (`replay`: the graph launch's
        correlation id); those matched to a launch outside the graph take that launch's share instead (add). The
        shape model first (recorded shapes, or profile's annotation of the step's parameters); where a multi-tensor
        op's lists came without shapes, the grid model of its launches."""
        kernels_of: dict[tuple[int, int | None], list[int]] = {}
        for i, a in enumerate(items):  # a kernel of no duration is not imported (add): it takes no share
            if a.event.kind != "kernel" or a.event.dur <= 0:
                continue
            if not a.graph and a.op is not None:
                kernels_of.setdefault((id(a.op), None), []).append(i)
            elif a.match is not None and a.match.how == "capture" and a.launch is not None:
                kernels_of.setdefault((id(a.match.op), a.launch.correlation), []).append(i)
        out: dict[tuple[int, int | None], tuple[Any, list[int]]] = {}
        unrecorded: list[tuple[tuple[int, int | None], list[Any]]] = []  # ops whose tensor lists came without shapes
        # where a template's source is looked for: the cache the other kernels' recorded paths are in
        self.sources.remember(items[ms[0]].model_op.kernel_file for ms in kernels_of.values())
        for key, members in kernels_of.items():
            op = items[members[0]].model_op
            assert op is not None
            names = [items[m].event.name for m in members]
            if is_triton(op.backend, op.name):
                source = self.sources.read(op.kernel_file, op.name)
                first = items[members[0]].event
                out[key] = (model_triton(op.name, op_inputs(op, OpInput), source, (first.grid, first.block)),
                            members)
            else:
                inputs = op_inputs(op, self.make_input)
                annotated = _annotated_params(op, inputs, params)
                if annotated is not None:
                    inputs[0] = self.make_input(dims=annotated.shapes, dtype="TensorList", strides=None, value="")
                work = self._model(op.name, inputs, names)
                if annotated is not None and work is not None:
                    work = dataclasses.replace(work, note="; ".join(
                        n for n in (work.note, PARAMS_NOTE.format(n=len(annotated.shapes))) if n))
                elif _lists_unrecorded(op, inputs, work):
                    unrecorded.append((key, inputs))
                out[key] = (work, members)
        if unrecorded:
            self._grid(items, unrecorded, ops, out)
        return out

    def _grid(self, items: Sequence[Attributed], unrecorded: Sequence[tuple[tuple[int, int | None], list[Any]]],
              ops: Sequence[Op], out: dict[tuple[int, int | None], tuple[Any, list[int]]]) -> None:
        """The multi-tensor ops whose lists the trace recorded without shapes, from their launches' grids (the
        grid model, roofline.model.ops.aten.model_from_grid), where the shape model had nothing to work from. A
        fused optimizer's step counters (the _foreach_add_ just before it, the _foreach_sub_ just after it on its
        thread) are one 1-element tensor per parameter: one block each, which also counts the step's tensors."""
        op_of = {key: items[out[key][1][0]].model_op for key, _ in unrecorded}
        threads = _Neighbours(ops, {op.tid for op in op_of.values() if op is not None})
        counters: dict[tuple[int, int | None], int] = {}  # (id(fused op), replay) -> its tensors, from its counter
        roles: dict[tuple[int, int | None], bool] = {}
        for key, _ in unrecorded:
            op = op_of[key]
            assert op is not None
            fused = threads.fused_beside(op)
            roles[key] = fused is not None
            if fused is not None and op.name == "aten::_foreach_add_":
                blocks = [blocks_of(items[m].event.grid) for m in out[key][1]]
                if all(b for b in blocks):
                    counters[(id(fused), key[1])] = sum(b for b in blocks if b)
        for key, inputs in unrecorded:
            members = out[key][1]
            op = op_of[key]
            assert op is not None
            launches = [(items[m].event.name, items[m].event.grid) for m in members]
            grid = model_from_grid(op.name, inputs, launches, tensors=counters.get(key),
                                   tensors_from=COUNTER_TENSORS, step_counter=roles[key])
            if grid is not None:
                out[key] = (grid, members)

    def add(self, trace: Trace, rank: int) -> None:
        items = match_replays(trace, attribute(trace))
        self.steps = trace.steps
        self.step_starts = [st.ts for st in trace.steps]
        work = self._work(items, trace.params, trace.ops)
        split: dict[int, Split] = {}  # position -> the op's work and this kernel's shares of it
        for op_work, members in work.values():
            for m, share in zip(members, shares(op_work, [items[m].event for m in members])):
                split[m] = share
        for i, a in enumerate(items):  # a replayed kernel matched to the same kernel's launch: that launch's share
            if a.match is not None and a.match.source is not None and a.match.source in split:
                split[i] = split[a.match.source]
        for i, a in enumerate(items):
            self.number += 1
            if a.event.dur <= 0:  # an entry all the same: every GPU event of the trace is one, with why
                self.skipped += 1
                self._unmodelled({**self._base(rank, a), "time_median": 0.0},
                                 f"the trace gives it a duration of {a.event.dur:g} µs: no time to put on a roofline")
                continue
            self._one(trace, rank, a, split.get(i))

    def _unmodelled(self, base: dict[str, Any], why: str) -> None:
        self.unmodelled.append({**{k: base[k] for k in ("name", "op", "rank", "params")},
                                **({"step": base["step"]} if "step" in base else {}),
                                "kernel_name": base["kernel_name"], "time": base["time_median"], "why": why,
                                "model": "no model", **({"graph": base["graph"]} if "graph" in base else {})})
        if base["op"] not in (GRAPH_OP, NO_OP) and base["time_median"] > 0:
            self.no_model_ops[base["op"]] = self.no_model_ops.get(base["op"], 0.0) + base["time_median"]

    def _base(self, rank: int, a: Attributed) -> dict[str, Any]:
        e = a.event
        base: dict[str, Any] = {"name": short_name(e.name), "kernel_name": e.name, "params": {"launch": self.number},
                                "rank": rank, "op": a.op_name, "time_median": e.dur * 1e-6}
        op = a.model_op
        if op is not None:
            base["op_inputs"] = {"dims": list(op.dims), "types": list(op.types)}
        if a.module is not None:
            base["module"] = a.module
        if a.graph:  # additive (results/v1 readers ignore it): the replay and how its op was found
            base["graph"] = {"launch": a.launch.name if a.launch else None,
                             "correlation": a.launch.correlation if a.launch else None,
                             "matched": a.match.how if a.match is not None else None,
                             "note": a.match.note if a.match is not None else a.unmatched}
        step = self._step(a)
        if step is not None:
            base["step"] = step
        return base

    def _step(self, a: Attributed) -> int | None:
        """The ProfilerStep#N whose range holds the call that launched the event (its GPU work may run after the
        range ends: the host runs ahead); None in a trace without steps, or for work launched outside them."""
        if not self.steps or a.launch is None:
            return None
        i = bisect.bisect_right(self.step_starts, a.launch.ts) - 1
        if i >= 0 and a.launch.ts <= self.steps[i].end:
            return self.steps[i].number
        return None

    def _one(self, trace: Trace, rank: int, a: Attributed, split: Split | None) -> None:
        e, time = a.event, a.event.dur * 1e-6
        base = self._base(rank, a)
        if a.graph and e.kind == "kernel" and a.match is None:
            return self._unmodelled(base, a.unmatched or "a CUDA graph replay: no op found for it")
        warnings: list[dict[str, Any]] = []
        op_work: Any = None  # a kernel's op model (a copy or fill has none)
        if e.kind != "kernel":
            if not e.bytes:
                return self._unmodelled(base, f"a {e.kind} whose bytes the trace does not record")
            flops, bytes_ = 0.0, e.bytes
            roof, _ = roof_for("fp32", self.machine.roofs)
            dtype, model = "bytes", {"from": f"the bytes Kineto recorded for the {e.kind}"}
            if _HOST.search(e.name):
                warnings.append({"code": "host-link", "text": f"{e.name}: a copy over the host or peer link, "
                                 "which bounds it, not DRAM bandwidth", "fix": "keep data on the GPU"})
        else:
            op = a.model_op
            if op is None:
                why = ("its launch is not in the trace" if a.launch is None
                       else f"its launch ({a.launch.name}) is inside no ATen op")
                return self._unmodelled(base, why)
            op_work = split.work if split is not None else None
            if op_work is None or split is None:
                return self._unmodelled(base, f"no model for {op.name}" + _matched(a))
            share = split.share
            if not op_work.bytes or op_work.bytes <= 0 or share <= 0:
                return self._unmodelled(base, f"the model of {op.name} gives no bytes" + _matched(a)
                                        + (f": {op_work.note}" if op_work.note else ""))
            flops, bytes_ = float(op_work.flops or 0.0) * split.flops_share, float(op_work.bytes) * share
            if op_work.roof and op_work.roof in DTYPE and (split.flops_share > 0 or not op_work.flops):
                roof, note = roof_for(op_work.roof, self.machine.roofs)
                roof_from = f"the {op_work.op_class} model" + (f" ({note})" if note else "")
            else:
                roof, roof_from = roof_from_name(e.name, self.machine.roofs)
            # a copy whose element type no argument records (cat's tensor list): bytes, as a memcpy's
            dtype = op_work.dtype or ("bytes" if not flops else DTYPE.get(roof, "unknown"))
            note = split.note
            model = {"from": "op model", "op_class": op_work.op_class, "share": share,
                     "note": note + (f"; {op_work.note}" if op_work.note else "") + _matched(a, "; "),
                     "roof_from": roof_from}
            if split.matrix:
                model["flops_share"] = split.flops_share
            if op_work.flops is None:
                warnings.append({"code": "flops-unknown", "text": f"the {op_work.op_class} model gives bytes but "
                                 "no FLOPs: counted as 0", "fix": "give the op class a FLOP model"})
        figures = timed_elsewhere(flops, bytes_, time, self.machine.roofs[roof], self.machine)
        grid = op_work is not None and GRID_MODEL in (op_work.note or "")
        if figures["fraction_of_ceiling"] > MAX_FRACTION:
            return self._unmodelled(base, f"its model puts it at {figures['fraction_of_ceiling']:.3g}x its ceiling: "
                                          + ("the grid model's bound (every tensor's last chunk full) is far above "
                                             "its tensors: many hold less than a chunk" if grid else
                                             "the model or the spec is wrong for it"))
        if grid and figures["bound"] == "memory" and figures["fraction_of_ceiling"] > 1:
            warnings.append(warning("grid-upper-bound", f"moved the grid model's bytes at "
                                    f"{figures['fraction_of_ceiling']:.2f}x the DRAM roof: they are an upper bound "
                                    "(blocks x the chunk size), and its tensors' last chunks held less",
                                    "read its bytes and FLOPs as at most; the trace's list shapes (fewer than 30 "
                                    "tensors, or `roofline profile --with torch`) give them exactly"))
        elif e.kind == "kernel" and figures["bound"] == "memory" and figures["fraction_of_ceiling"] > 1:
            warnings.append(warning("l2-reuse", f"moved its modelled bytes at {figures['fraction_of_ceiling']:.2f}x "
                                    "the DRAM roof: some of its inputs came from the L2, where the kernel before "
                                    "left them, which a shape model cannot know",
                                    "read its bytes as the DRAM traffic it would need without that reuse"))
        self.kernels.append({
            **base, "dtype": dtype, "roof": roof, "launches": 1, "stages": [], **figures,
            "verified": None, "status": Status.IMPORTED.value, "error": None, "timing": "kineto kernel duration", "model": model,
            "kineto": {"kind": e.kind, "file": str(trace.path), "correlation": e.correlation, "device": e.device,
                       "stream": e.stream, "grid": list(e.grid) if e.grid else None,
                       "block": list(e.block) if e.block else None},
            "warnings": warnings})


_KERNEL_NUMBER = re.compile(r"_\d+$")


def _matched(a: Attributed, sep: str = " (") -> str:
    """How a replayed kernel's op was found, for its note or its reason ('' outside graphs)."""
    if a.match is None:
        return ""
    return sep + f"a CUDA graph replay, {a.match.note}" + (")" if sep == " (" else "")


# ops whose first argument is the step's parameters (or their gradients), as a tensor list
PARAM_LIST_OPS = {"aten::_fused_adamw_", "aten::_fused_adam_", "aten::_fused_sgd_",
                  "aten::_amp_foreach_non_finite_check_and_unscale_"}
PARAMS_NOTE = "the {n} parameter shapes from profile's annotation of the optimizer step (the trace keeps none)"
PARAMS_REACH = 1e6  # µs: an annotation this far from the op is another step's


def _annotated_params(op: Op, inputs: Sequence[Any], params: Sequence[Params]) -> Params | None:
    """The annotated parameters of an optimizer op whose tensor lists the trace recorded empty (PyTorch keeps no
    shapes for a list of 30 or more tensors): the annotation nearest in time on the op's thread (GradScaler
    unscales just before the step's annotation, the fused step runs just after it)."""
    if op.name not in PARAM_LIST_OPS or not inputs or not params:
        return None
    first = inputs[0]
    if getattr(first, "dtype", None) != "TensorList" or getattr(first, "dims", None):
        return None
    mine = [p for p in params if p.tid == op.tid and abs(p.ts - op.ts) <= PARAMS_REACH]
    return min(mine, key=lambda p: abs(p.ts - op.ts)) if mine else None


COUNTER_TENSORS = "one block per 1-element step counter of the _foreach_add_ before it"
# fused optimizers that keep a step count per parameter (torch/optim/adam.py and adagrad.py, _fused_adam(w) and
# _fused_adagrad: _foreach_add_(state_steps, 1) before the op, _foreach_sub_(state_steps, found_inf) after it)
STEP_COUNTED = {"aten::_fused_adamw_", "aten::_fused_adam_", "aten::_fused_adagrad_"}
COUNTER_OPS = {"aten::_foreach_add_": "next", "aten::_foreach_sub_": "previous"}
NEIGHBOUR_LOOK = 64  # ops looked back over for the one just before a _foreach_sub_ (the fused op's children)


def _lists_unrecorded(op: Op, inputs: Sequence[Any], work: Any) -> bool:
    """A multi-tensor op (fused optimizer, unscale, _foreach_*) whose model found no bytes because its first
    tensor list was recorded without shapes (PyTorch keeps none for 30 or more tensors)."""
    name = op.name.partition("::")[2] if op.name.startswith("aten::") else ""
    if not (name.split(".")[0] in opmodels.MULTI_TENSOR_OPS or name.startswith("_foreach_")):
        return False
    if work is not None and work.bytes is not None:
        return False
    first = inputs[0] if inputs else None
    return getattr(first, "dtype", None) == "TensorList" and not getattr(first, "dims", None)


class _Neighbours:
    """The ops of some threads in start order, to find the op just after or just before another."""

    def __init__(self, ops: Sequence[Op], tids: set[str]):
        self.by_tid: dict[str, list[Op]] = {}
        for op in ops:
            if op.tid in tids:
                self.by_tid.setdefault(op.tid, []).append(op)
        for mine in self.by_tid.values():
            mine.sort(key=lambda o: (o.ts, -o.dur))
        self.starts = {tid: [o.ts for o in mine] for tid, mine in self.by_tid.items()}

    def fused_beside(self, op: Op) -> Op | None:
        """The fused optimizer op `op` is the step counter of: for a _foreach_add_, the first op on its thread to
        start after it ends; for a _foreach_sub_, the op that ended last before it began. None otherwise."""
        side = COUNTER_OPS.get(op.name)
        mine, starts = self.by_tid.get(op.tid, []), self.starts.get(op.tid, [])
        found: Op | None = None
        if side == "next":
            i = bisect.bisect_left(starts, op.end)
            found = mine[i] if i < len(mine) else None
        elif side == "previous":
            i = bisect.bisect_left(starts, op.ts)
            before = [o for o in mine[max(0, i - NEIGHBOUR_LOOK):i] if o.end <= op.ts and o is not op]
            found = max(before, key=lambda o: o.end) if before else None
        return found if found is not None and found.name in STEP_COUNTED else None


def group_name(entry: Mapping[str, Any], by: str) -> str:
    if by == "op":
        if (entry.get("model") or {}).get("op_class") == "triton":  # one group per fused pattern: Inductor numbers
            return _KERNEL_NUMBER.sub("", str(entry["op"]))  # each kernel it writes (..._rsqrt_5, ..._rsqrt_7)
        return str(entry["op"])
    if by == "module":
        return str(entry.get("module") or NO_MODULE)
    return short_name(entry.get("kernel_name") or entry["name"])


def group_entries(entries: Sequence[Mapping[str, Any]], by: str, unmodelled_time: float = 0.0
                  ) -> list[dict[str, Any]]:
    """The groups of the entries, ranked by recoverable time (largest first); none for 'none'. Each share is of all
    the GPU time: the entries' and `unmodelled_time`, the work no model covers (issue 38)."""
    if by == "none":
        return []
    members: dict[str, list[Mapping[str, Any]]] = {}
    for e in entries:
        members.setdefault(group_name(e, by), []).append(e)
    total = sum(e["time_median"] for e in entries) + unmodelled_time
    groups = [{"name": name, "by": by, **group_figures(items, total),
               "kernels": [e["params"]["launch"] for e in items]} for name, items in members.items()]
    groups.sort(key=lambda g: (-g["recoverable_time"], g["name"]))
    return groups


def _program(groups: Sequence[Mapping[str, Any]], unmodelled_time: float) -> dict[str, Any]:
    """The groups' totals, and the GPU time of every event, modelled or not (gpu_time), which the shares are of."""
    program = program_totals(groups)
    everything = program["time"] + unmodelled_time
    program.update(gpu_time=everything, unmodelled_time=unmodelled_time,
                   unmodelled_share=unmodelled_time / everything if everything else 0.0)
    return program


def straggler(ranks: Sequence[Mapping[str, Any]]) -> dict[str, Any] | None:
    """The rank whose GPU time is furthest above the median rank's, with the spread; and the groups whose time on
    one rank is furthest above their median. None for one rank."""
    if len(ranks) < 2:
        return None
    times = {r["rank"]: r["gpu_time"] for r in ranks}
    median = statistics.median(times.values())
    slow = max(times, key=lambda r: (times[r], -r))
    fast = min(times.values())
    out: dict[str, Any] = {
        "by": "GPU time", "rank": slow, "time": times[slow], "median": median,
        "vs_median": times[slow] / median if median else None, "max_over_min": times[slow] / fast if fast else None,
        "threshold": STRAGGLER}
    out["outlier"] = bool(out["vs_median"] and out["vs_median"] > STRAGGLER)
    per_group: dict[str, dict[int, float]] = {}
    for r in ranks:
        for g in r["groups"]:
            per_group.setdefault(g["name"], {})[r["rank"]] = g["time"]
    flagged = []
    for name, by_rank in per_group.items():
        values = [by_rank.get(r["rank"], 0.0) for r in ranks]
        med = statistics.median(values)
        top = max(by_rank, key=lambda r: by_rank[r])
        if med > 0 and by_rank[top] / med > STRAGGLER:
            flagged.append({"name": name, "rank": top, "time": by_rank[top], "median": med,
                            "vs_median": by_rank[top] / med, "excess": by_rank[top] - med})
    flagged.sort(key=lambda g: -g["excess"])
    out["groups"] = flagged[:5]
    return out


def straggler_line(s: Mapping[str, Any] | None) -> str | None:
    if s is None:
        return None
    spread = f"max/min {s['max_over_min']:.2f}x" if s.get("max_over_min") else "max/min n/a"
    if not s["outlier"]:
        line = (f"no straggler: the slowest rank ({s['rank']}, {format_time(s['time'])} of GPU time) is within "
                f"{s['threshold'] - 1:.0%} of the median ({format_time(s['median'])}; {spread})")
    else:
        line = (f"straggler: rank {s['rank']}, {format_time(s['time'])} of GPU time, {s['vs_median']:.2f}x the "
                f"median rank's {format_time(s['median'])} ({spread})")
    if s["groups"]:
        line += "; groups slowest on one rank: " + ", ".join(
            f"{g['name']} on rank {g['rank']} {g['vs_median']:.2f}x its median" for g in s["groups"][:3])
    return line


def _ranks(traces: Sequence[Trace], path_order: Sequence[Path]) -> list[int]:
    ranks = [t.rank if t.rank is not None else i for i, t in enumerate(traces)]
    seen: dict[int, Path] = {}
    for rank, t in zip(ranks, traces):
        if rank in seen:
            raise InputError(f"{t.path}: distributedInfo.rank: is {rank}, as in {seen[rank]}: give one trace per rank")
        seen[rank] = t.path
    return ranks


def build_document(traces: Sequence[Trace], machine: MachineSpec, gpu: str, group_by: str = "op",
                   model: Model | None = None, make_input: Callable[..., Any] | None = None,
                   sources: KernelSources | None = None, with_timeline: bool = True
                   ) -> tuple[dict[str, Any], list[str]]:
    """(results document, notes). InputError when no GPU work in the traces can be put on the roofline. The
    `timeline` block (roofline.kineto.timeline) needs every event of the traces: leave it out for a selection."""
    if group_by not in GROUP_BY:
        raise InputError(f"--group-by: '{group_by:.40}' is not one of {', '.join(GROUP_BY)}")
    if model is None or make_input is None:
        default_model, default_input = _default_model()
        model, make_input = model or default_model, make_input or default_input
    builder = _Builder(machine, model, make_input, sources)
    ranks = _ranks(traces, [t.path for t in traces])
    for trace, rank in zip(traces, ranks):
        builder.add(trace, rank)
    notes = _notes(traces, builder, group_by)
    total_events = builder.number
    if not builder.kernels:
        why = "none of them is a kernel of an op with a model or a copy with recorded bytes"
        if not any(op.dims for t in traces for op in t.ops):
            why += " (the traces hold no input shapes: profile with torch.profiler.profile(record_shapes=True))"
        if not total_events:  # CPU ops and launches only: "0 GPU events, but none of them..." read as a contradiction
            raise InputError(f"{', '.join(str(t.path) for t in traces)}: no GPU events (kernels, copies, fills); "
                             "nothing to put on the roofline", fix="profile with activities=[ProfilerActivity.CPU, "
                             "ProfilerActivity.CUDA]")
        raise InputError(f"{', '.join(str(t.path) for t in traces)}: {counted(total_events, 'GPU event')}, but {why}; "
                         "nothing to put on the roofline")
    unmodelled_time = sum(u["time"] for u in builder.unmodelled)
    summary = machine_summary(machine)
    summary["caches"] = {level: {"size": c.size, "bandwidth": c.bandwidth, "latency": c.latency}
                         for level, c in machine.caches.items()}
    doc: dict[str, Any] = {
        "schema": RESULTS_SCHEMA,
        "created": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "tool_version": __version__, "backend": "torch",
        "device": {"name": gpu, "spec_id": machine.id, "spec_derived": bool(machine.derived), "kind": "gpu"},
        "machine": summary,
        "source": {"tool": "kineto", "files": [str(t.path) for t in traces], "launches": total_events,
                   "not_timed": builder.skipped, "unmodelled": len(builder.unmodelled),
                   "unmodelled_time": unmodelled_time},
        "kernels": builder.kernels,
        "unmodelled": builder.unmodelled,
    }
    unusable: dict[str, int] = {}
    for t in traces:
        for why, n in t.unusable.items():
            unusable[why] = unusable.get(why, 0) + n
    if unusable:  # additive (results/v1 readers ignore it): the events left out, and why
        doc["source"]["unusable"] = {"events": sum(unusable.values()),
                                     "gpu_events": sum(t.unusable_gpu for t in traces),
                                     "why": dict(sorted(unusable.items(), key=lambda kv: (-kv[1], kv[0])))}
    by = group_by
    groups = group_entries(builder.kernels, by, unmodelled_time)
    if groups:
        doc["groups"] = groups
        doc["program"] = _program(groups, unmodelled_time)
    if len(traces) > 1:
        doc["ranks"] = []
        for trace, rank in zip(traces, ranks):
            mine = [k for k in builder.kernels if k["rank"] == rank]
            lost = sum(u["time"] for u in builder.unmodelled if u["rank"] == rank)
            rank_groups = group_entries(mine, by if by != "none" else "op", lost)
            doc["ranks"].append({"rank": rank, "file": str(trace.path), "launches": len(mine),
                                 "gpu_time": sum(k["time_median"] for k in mine) + lost, "unmodelled_time": lost,
                                 "groups": rank_groups, "program": _program(rank_groups, lost)})
        doc["straggler"] = straggler(doc["ranks"])
    if with_timeline:
        doc["timeline"] = _timeline(traces, ranks, builder, machine)
    return doc, notes


def _timeline(traces: Sequence[Trace], ranks: Sequence[int], builder: _Builder, machine: MachineSpec
              ) -> dict[str, Any]:
    """The timeline block: each device's window, busy, idle, gaps, launch delay and overlap, and the step's
    figures (of the whole document and of each rank) over the devices' wall time."""
    line = timeline.analyze(traces, ranks)

    def step_of(rank: int | None) -> dict[str, Any]:
        devices = [d for d in line.devices if rank is None or d.rank == rank]
        kernels = [k for k in builder.kernels if rank is None or k["rank"] == rank]
        lost = sum(u["time"] for u in builder.unmodelled if rank is None or u["rank"] == rank)
        return timeline.step(kernels, lost, sum(d.window for d in devices), sum(d.busy for d in devices),
                             machine.roofs, len(devices))

    rank_steps = {rank: step_of(rank) for rank in ranks} if len(ranks) > 1 else None
    return timeline.block(line, step_of(None), rank_steps)


def _notes(traces: Sequence[Trace], builder: _Builder, group_by: str) -> list[str]:
    notes = []
    if builder.skipped:
        notes.append(f"note: {counted(builder.skipped, 'GPU event')} with a duration of 0 or less: listed in 'unmodelled' "
                     "with no time (a negative one is a broken trace)")
    if builder.no_model_ops:
        top = sorted(builder.no_model_ops.items(), key=lambda kv: -kv[1])[:5]
        notes.append("note: ops without a model (their time is in 'unmodelled'): "
                     + ", ".join(f"{name} ({format_time(t)})" for name, t in top)
                     + (f" and {len(builder.no_model_ops) - 5} more" if len(builder.no_model_ops) > 5 else ""))
    unreadable = list(builder.sources.unreadable.values())
    if unreadable:  # named, never waited on: the kernels are modelled from their launches instead
        notes.append(f"warning: {counted(len(unreadable), 'Triton kernel source file')} the traces name could not be read "
                     "(those kernels are modelled from their launches): " + "; ".join(unreadable[:3])
                     + (f" and {len(unreadable) - 3} more" if len(unreadable) > 3 else ""))
    graphs = sum(1 for u in builder.unmodelled if u["op"] == GRAPH_OP)
    matched = sum(1 for k in builder.kernels if (k.get("graph") or {}).get("matched"))
    if matched:
        notes.append(f"note: {counted(matched, 'GPU event')} of CUDA graph replays modelled through the op that launched the "
                     "same kernel outside the graph or at the graph's capture (each entry's model note says which)")
    if graphs:
        notes.append(f"note: {counted(graphs, 'GPU event')} ran in CUDA graph replays with no op found: attributed to "
                     f"'{GRAPH_OP}', no model (record the warm-up or the capture too, or use `roofline profile "
                     "--with torch`)")
    if group_by == "module" and not any(t.modules for t in traces):
        notes.append(f"note: the traces have no nn.Module ranges (profile with with_stack=True or "
                     f"with_modules=True): every launch is in '{NO_MODULE}'")
    if any(t.ops for t in traces) and not any(op.dims for t in traces for op in t.ops):
        notes.append("note: the traces hold no input shapes (profile with record_shapes=True): no op can be modelled")
    return notes


def summary_line(doc: Mapping[str, Any], verb: str = "imported", origin: str | None = None) -> str:
    """'imported 7 GPU events from 1 trace on h200-sxm: 5 on the roofline, 2 without a model (in 'unmodelled':
    12.0% of GPU time, 3 µs)' (`origin` in place of 'from 1 trace': 'with torch.profiler' for `profile --with
    torch`). Every event the trace holds is counted once: on the roofline, imported without a model (kept in the
    file's 'unmodelled' list, not dropped), or unusable and left out, with why."""
    src = doc["source"]
    bad = src.get("unusable") or {}
    done, total, lost = len(doc["kernels"]), src["launches"] + bad.get("gpu_events", 0), src["unmodelled_time"]
    everything = sum(k["time_median"] for k in doc["kernels"]) + lost
    share = lost / everything if everything else 0.0
    origin = origin or f"from {_count(len(src['files']), 'trace')}"
    unmodelled = src["unmodelled"]
    parts = [f"{done:,} on the roofline"]
    if unmodelled:
        parts.append(f"{unmodelled:,} without a model (in 'unmodelled': {share:.1%} of GPU time, "
                     f"{format_time(lost)})")
    if bad:
        parts.append(f"{_count(bad['events'], 'unusable event')} left out ({_why(bad['why'])})")
    return f"{verb} {_count(total, 'GPU event')} {origin} on {doc['machine']['id']}: {', '.join(parts)}"


def _count(n: int, noun: str) -> str:
    """'1 trace', '2 traces', '1,024 GPU events'."""
    return f"{n:,} {noun}{'' if n == 1 else 's'}"


def _why(why: Mapping[str, int]) -> str:
    return unusable_text(dict(why))


def import_traces(paths: Sequence[Path], spec_name: str | None = None, group_by: str = "op",
                  catalog: SpecCatalog | None = None, model: Model | None = None,
                  make_input: Callable[..., Any] | None = None,
                  scope: LaunchScope = LaunchScope(),
                  triton_source: Sequence[Path] = (), progress: Progress = SILENT) -> tuple[dict[str, Any], list[str]]:
    """Read trace files (one per rank) into one results document; (document, notes for the user). `scope` keeps
    only the launches ncu's --kernel-name, --launch-skip and --launch-count would have profiled, in each trace;
    `triton_source` names directories holding torch.compile's generated kernels where the trace's paths are gone;
    `progress` hears the steps of a long import (traces over STREAM_FROM bytes together)."""
    long = sum(_size(p) for p in paths) > reader.STREAM_FROM
    with paused_gc():
        return _import_traces(paths, spec_name, group_by, catalog, model, make_input, scope, triton_source,
                              progress if long else SILENT)


def _size(path: Path) -> int:
    try:
        return Path(path).stat().st_size
    except OSError:
        return 0  # the reader says what is wrong with it


@contextlib.contextmanager
def paused_gc() -> Iterator[None]:
    """The cyclic garbage collector off while a trace is read and modelled: the objects made are not cyclic garbage,
    and each collection would walk the millions of them a long trace parses into (a third of the import's time)."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


def _import_traces(paths: Sequence[Path], spec_name: str | None, group_by: str, catalog: SpecCatalog | None,
                   model: Model | None, make_input: Callable[..., Any] | None, scope: LaunchScope,
                   triton_source: Sequence[Path], progress: Progress) -> tuple[dict[str, Any], list[str]]:
    # the limit first: a trace too big is refused before it is parsed (unless a selection may make it fit)
    read = []
    for p in paths:
        step = f"read {Path(p).name}"
        progress.start(step)
        read.append(reader.read_trace(Path(p), None if scope.given else MAX_GPU_EVENTS,
                                      lambda done, step=step: progress.start(f"{step}: {done:.0%}")))
        progress.finish(step, Status.OK.value)
    refuse_same_trace(read)
    traces = [select(t, scope) for t in read]
    gpu_events = sum(len(t.gpu) for t in traces)
    if gpu_events > MAX_GPU_EVENTS:  # all the traces together, after the selection: before the work on them
        raise too_many_gpu_events(Path(", ".join(str(t.path) for t in traces)), gpu_events)
    notes = [line for line in map(stream_overlaps, read) if line is not None]
    if scope.given:
        kept, kernels = sum(len(t.gpu) for t in traces), sum(e.kind == "kernel" for t in read for e in t.gpu)
        if not kept:
            raise InputError(f"{scope.describe()}: none of the {counted(kernels, 'kernel launch')} in "
                             f"{', '.join(str(t.path) for t in read)} is selected; nothing to put on the roofline")
        notes.append(f"{scope.describe()}: {kept} of {counted(kernels, 'kernel launch')} kept (copies and fills left out, "
                     "as ncu profiles kernels only); the program's totals cover these alone")
    machine, gpu = choose_spec(traces, spec_name, catalog or SpecCatalog.bundled())
    step = f"model {gpu_events:,} GPU events"
    progress.start(step)
    doc, more = build_document(traces, machine, gpu, group_by, model, make_input, KernelSources(triton_source),
                               with_timeline=not scope.given)
    progress.finish(step, Status.OK.value)
    if scope.given:
        more.append("note: no timeline (window, idle, gaps) for a selection of launches: import the whole trace "
                    "for it")
        doc["source"]["scope"] = scope.to_json()
    return doc, notes + more
