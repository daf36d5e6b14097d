"""The work of a Triton kernel that torch.compile (Inductor) generated, from what the profiler records of its launch
and, where it is at hand, from the kernel's generated source. Pure: the caller reads the source file.

For each Inductor launch the trace holds a cpu_op named after the kernel with `kernel_backend: triton` and, in
schema order, every argument of the kernel: its buffers (Input Dims, Input Strides, Input type) and then its
iteration sizes as Scalars (Concrete Inputs: xnumel, then r0_numel for a reduction). The model:

  bytes   each buffer once at its footprint in memory: a stride-0 (broadcast) dimension holds one element, a view
          never more than the memory it spans, and no buffer more than the iteration space can touch (a gather
          from an embedding table touches the rows it reads, not the table). With the source, a buffer the kernel
          both reads and writes (in_out_ptr) counts twice and a workspace not at all; without it every buffer
          counts once, as read or written.
  FLOPs   with the source: the arithmetic of the kernel body (each + - * / and each math call one FLOP, loads,
          stores, casts and selects none) times the points it runs on (inside a reduction loop: every element;
          after it: every row). Without the source: the FLOPs per element of the ATen ops its name says it fused.
  roof    the FP32 (CUDA core) roof for floating-point work: Triton computes float16 and bfloat16 in float32;
          a template GEMM (triton_tem_*mm*) 2*M*N*K on the tensor roof of its dtype.

Kernel name: triton_{poi|red|per|tem|for}_fused_{ops}_{n}: pointwise, reduction (a loop over the reduced axis),
persistent reduction (the row in registers), template (a GEMM or convolution), combo (foreach).
"""

from __future__ import annotations

import ast
import math
import re
from dataclasses import dataclass, field
from typing import Sequence

from roofline.model.ops.args import (FLOATING, OpInput, OpWork, Tensor, matrix_roof, parse_value, tensor,
                                    vector_roof)
from roofline.model.ops.aten import ELEMENTWISE_FLOPS, NORM_FLOPS, REDUCTIONS, SOFTMAX_FLOPS
from roofline.model.units import MAX_DIGITS

BACKEND = "triton"
KINDS = {"poi": "pointwise", "red": "reduction", "per": "persistent reduction", "tem": "template", "for": "combo"}
MAX_SOURCE_CHARS = 1 << 20  # a generated kernel is a few kB; a longer file is not one
_NAME = re.compile(r"^triton_(?P<kind>[a-z]+)_fused_(?P<ops>.*?)(?:_(?P<n>\d+))?$")
# ATen ops with no arithmetic: views, copies, index arithmetic
_NO_FLOPS = {"view", "_unsafe_view", "reshape", "clone", "expand", "slice", "select", "transpose", "permute",
             "unsqueeze", "squeeze", "t", "cat", "stack", "_to_copy", "copy", "to", "arange", "embedding",
             "embedding_dense_backward", "scalar_tensor", "full", "zeros", "ones", "fill", "zero", "index",
             "index_select", "gather", "scatter", "scatter_add", "split", "split_with_sizes", "unbind", "new_zeros",
             "as_strided", "alias", "detach", "lift_fresh", "constant_pad_nd", "slice_backward", "select_backward",
             "iota", "empty", "bmm", "mm", "addmm", "expand_as", "sum", "mean", "amax", "amin", "max", "min"}
_FLOPS_PER_ELEMENT = {**{k: 0 for k in _NO_FLOPS}, **ELEMENTWISE_FLOPS,
                      **{k: v[0] for k, v in REDUCTIONS.items()}, **NORM_FLOPS, **SOFTMAX_FLOPS,
                      "nll_loss_forward": 1, "nll_loss_backward": 1, "native_dropout": 3, "rsqrt": 1,
                      "native_layer_norm": NORM_FLOPS["layer_norm"],
                      "native_layer_norm_backward": NORM_FLOPS["layer_norm_backward_dx"],
                      "prepare_softmax_online": 3, "_log_softmax": SOFTMAX_FLOPS.get("log_softmax", 5),
                      "_softmax": SOFTMAX_FLOPS.get("softmax", 5)}
_OP_WORDS = sorted({k.lstrip("_") for k in _FLOPS_PER_ELEMENT}, key=lambda w: -w.count("_"))
# the body of a generated kernel
_SIGNATURE = re.compile(r"'signature':\s*(\{[^{}]*\})")
_MUTATED = re.compile(r"'mutated_arg_names':\s*(\[[^\]]*\])")
_NUMEL = re.compile(r"^\s+(\w*numel)\s*=\s*([0-9]+)\s*$", re.MULTILINE)  # ASCII digits: int() reads them
_ASSIGN = re.compile(r"^(?P<indent>\s+)tmp\d+\s*=\s*(?P<expr>.+)$")
_LOOP = re.compile(r"^(?P<indent>\s+)for r\d*_offset in ")
_REDUCE = re.compile(r"\btl\.(sum|max|min|reduce|argmax|argmin)\(|triton_helpers\.(max2|min2|welford\w*|"
                     r"online_softmax\w*)\(|\.(sum|max|min)\(")
_CALL = re.compile(r"\b(libdevice|tl_math|tl)\.(\w+)\(|triton_helpers\.(maximum|minimum)\(")
_ARITH = re.compile(r"(?<![eE])[-+*/](?!=)")
_FREE_CALLS = {"load", "store", "full", "where", "broadcast_to", "arange", "full_like", "zeros", "zeros_like",
               "reshape", "program_id", "cast", "to", "sum", "max", "min", "reduce", "argmax", "argmin"}


@dataclass(frozen=True)
class KernelSource:
    """What a generated kernel's source tells beyond the trace."""

    args: tuple[tuple[str, str], ...]  # (name, Triton type) of the runtime arguments, in order: ('in_ptr0', '*bf16')
    mutated: frozenset[str] = frozenset()
    numels: dict[str, int] = field(default_factory=dict)  # xnumel, r0_numel fixed in the body
    flops_per_point: float = 0.0  # arithmetic done on every point of the iteration space
    flops_per_row: float = 0.0  # arithmetic done once per row (after a reduction)
    reduction: bool = False


def read_source(text: str) -> KernelSource | None:
    """The signature, the mutated buffers and the arithmetic of an Inductor kernel; None when the text is not one."""
    if not isinstance(text, str) or len(text) > MAX_SOURCE_CHARS:
        return None
    m = _SIGNATURE.search(text)
    if m is None:
        return None
    try:
        signature = ast.literal_eval(m.group(1))
        mutated = ast.literal_eval(_MUTATED.search(text).group(1)) if _MUTATED.search(text) else []
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return None
    if not isinstance(signature, dict):
        return None
    # the launcher passes every argument but the block sizes (XBLOCK, R0_BLOCK: upper-case meta-parameters), a
    # size fixed at compile time (xnumel: 'constexpr') too
    args = tuple((str(k), str(v)) for k, v in signature.items() if not (str(v) == "constexpr" and str(k).isupper()))
    found = _NUMEL.findall(text)
    if any(len(v) > MAX_DIGITS for _, v in found):  # no kernel iterates 10^40 points; int() refuses 4300 digits
        return None
    numels = {k: int(v) for k, v in found}
    body = text[text.find("@triton.jit"):] if "@triton.jit" in text else text
    per_point = per_row = 0.0
    loop_indent: int | None = None
    reduced = False
    for line in body.splitlines():
        loop = _LOOP.match(line)
        if loop:
            loop_indent = len(loop.group("indent"))
            continue
        a = _ASSIGN.match(line)
        if a is None:
            continue
        inside = loop_indent is not None and len(a.group("indent")) > loop_indent
        if loop_indent is not None and not inside:
            loop_indent = None
            reduced = True  # after a reduction loop: once per row
        expr = a.group("expr")
        if _REDUCE.search(expr):
            per_point += 1  # the reduction's add (or compare) per element
            if loop_indent is None:
                reduced = True
            continue
        n = _flops_of(expr)
        if reduced and not inside:
            per_row += n
        else:
            per_point += n
    return KernelSource(args, frozenset(str(x) for x in mutated if isinstance(x, str)), numels, per_point, per_row,
                        reduction=bool(_LOOP.search(body)) or bool(_REDUCE.search(body)))


def _flops_of(expr: str) -> int:
    """FLOPs of one assignment of the kernel body: arithmetic operators and math calls; loads, casts, constants and
    selects are free."""
    if "tl.load(" in expr or expr.startswith(("tl.full(", "tl.full_like(")):
        return 0
    calls = 0
    for m in _CALL.finditer(expr):
        name = m.group(2) or m.group(3)
        if name not in _FREE_CALLS:
            calls += 1
    stripped = re.sub(r"\.to\([^)]*\)", "", expr)
    stripped = re.sub(r"tl\.full\([^)]*\)", "c", stripped)
    stripped = re.sub(r"\b\d+(\.\d*)?([eE][-+]?\d+)?\b", "c", stripped)  # numbers, exponents included
    return calls + len(_ARITH.findall(stripped))


def fused_ops(kernel_name: str) -> tuple[str | None, list[str]]:
    """(kind, the ATen ops it fused) from an Inductor kernel's name; (None, []) for a name of another form."""
    m = _NAME.match(kernel_name or "")
    if m is None:
        return None, []
    words = [w for w in m.group("ops").split("_") if w]
    ops: list[str] = []
    i = 0
    while i < len(words):
        for op in _OP_WORDS:
            parts = op.split("_")
            if words[i:i + len(parts)] == parts:
                ops.append(op)
                i += len(parts)
                break
        else:
            if ops and ops[-1] not in _OP_WORDS:
                ops[-1] += "_" + words[i]  # an op this model does not know, kept whole
            else:
                ops.append(words[i])
            i += 1
    return KINDS.get(m.group("kind"), m.group("kind")), ops


def is_triton(kernel_backend: object, name: str) -> bool:
    return kernel_backend == BACKEND or (isinstance(name, str) and name.startswith("triton_"))


def _footprint(t: Tensor, strides: Sequence[int] | None) -> int:
    """Elements of memory a view can reach: stride-0 dimensions once, and no more than the span it covers."""
    stored = t.stored
    if strides is None or len(strides) != len(t.shape) or not all(isinstance(s, int) for s in strides):
        return stored
    if any(d == 0 for d in t.shape):
        return 0
    span = 1 + sum((d - 1) * abs(s) for d, s in zip(t.shape, strides))
    return min(stored, span)


def model_triton(name: str, inputs: Sequence[OpInput], source: KernelSource | None = None) -> OpWork:
    """The minimum work of one Inductor Triton launch (see the module's docstring)."""
    kind, ops = fused_ops(name)
    notes: list[str] = []
    buffers = [(i, t, inp) for i, inp in enumerate(inputs) if (t := tensor(inp)) is not None]
    roles: dict[int, str] = {}
    if source is not None and len(source.args) == len(inputs):
        roles = {i: n for i, (n, _) in enumerate(source.args)}
        notes.append("buffer roles and arithmetic from the generated source")
    elif source is not None:
        notes.append("the generated source does not match the recorded arguments: not used")
        source = None
    # the iteration space: the *numel arguments by name (the source), else the sizes fixed in the body; without
    # the source a trailing Scalar cannot be told from a seed offset, so it is not used
    numels = [_whole(inputs[i].value) for i, n in roles.items() if n.endswith("numel")]
    if source is not None and (not numels or None in numels):
        numels = list(source.numels.values())
    points = math.prod(numels) if numels and None not in numels else None
    reach = points
    if source is None:  # the product of the positive Scalars bounds the space (a seed offset only loosens it)
        scalars = [n for inp in inputs if inp.dtype == "Scalar" and (n := _whole(inp.value))]
        reach = math.prod(scalars) if scalars else None
    rows = numels[0] if points is not None and len(numels) > 1 else None  # xnumel of a reduction
    if not buffers:
        return OpWork(None, None, None, None, "triton", note="; ".join(notes + ["no buffer shapes recorded"]))
    if any(t.dtype is None for _, t, _ in buffers):
        bad = sorted({t.raw for _, t, _ in buffers if t.dtype is None})
        return OpWork(None, None, None, None, "triton", note=f"unknown buffer dtype {', '.join(bad)}")
    footprints = [_footprint(t, inp.strides) for _, t, inp in buffers]
    nbytes = 0.0
    bounded = False
    for (i, t, _), elements in zip(buffers, footprints):
        if reach is not None and elements > reach:
            elements, bounded = reach, True
        role = roles.get(i, "")
        if role.startswith("ws_ptr"):
            times = 0  # a workspace: scratch, not the kernel's inputs or outputs
        elif role.startswith("in_out_ptr") or (source is not None and role in source.mutated):
            times = 2  # read and written back
        else:
            times = 1
        nbytes += times * elements * (t.itemsize or 0)
    if bounded:
        notes.append("a buffer larger than the iteration space counted only as far as the kernel can reach")
    if not roles:
        notes.append("each buffer counted once (no generated source: reads and writes not told apart)")
    floats = [t for _, t, _ in buffers if t.dtype in FLOATING]
    dtype = max(floats, key=lambda t: t.stored * (t.itemsize or 0)).dtype if floats else buffers[0][1].dtype
    if kind == "template" and any(op in ("mm", "addmm", "bmm", "baddbmm") for op in ops):
        flops = _template_gemm([t for _, t, _ in buffers])
        if flops is not None:
            notes.append("a Triton GEMM template: 2*M*N*K from the operand shapes")
            return OpWork(flops, nbytes, matrix_roof(dtype, [name], notes), dtype, "triton", note="; ".join(notes))
    flops: float | None
    if source is not None and points is not None:
        flops = source.flops_per_point * points + (source.flops_per_row * rows if rows else 0.0)
    elif source is None:
        # a fused kernel runs over its largest buffer (a pointwise kernel's output, a reduction's input)
        points = max(footprints)
        if reach is not None:
            points = min(points, reach)  # a gathered table is not iterated over
        counts = [_FLOPS_PER_ELEMENT.get(op, _FLOPS_PER_ELEMENT.get("_" + op)) for op in ops]
        per = sum(c or 0 for c in counts)
        unknown = [op for op, c in zip(ops, counts) if c is None]
        flops = float(per * points)
        notes.append(f"{per} FLOPs per element of its largest buffer from the fused ops" + (
            f" ({', '.join(unknown)} not known: counted as 0)" if unknown else ""))
    else:
        flops = None
        notes.append("iteration sizes not recorded: FLOPs not modelled")
    if dtype not in FLOATING:
        flops = 0.0 if flops is not None else None
    roof = vector_roof(dtype) if flops else None
    if ops:
        notes.insert(0, f"{kind or 'Triton'} kernel fusing {', '.join(ops)}")
    return OpWork(flops, nbytes, roof, dtype, "triton", note="; ".join(notes))


def _whole(value: object) -> int | None:
    """A concrete input that is a whole number of at least 0 ("4096"), else None."""
    n = parse_value(value)
    return n if isinstance(n, int) and not isinstance(n, bool) and n >= 0 else None


def _template_gemm(tensors: Sequence[Tensor]) -> float | None:
    """2*M*N*K of the first two operands whose shapes chain ([.., M, K] @ [.., K, N])."""
    mats = [t for t in tensors if len(t.shape) >= 2]
    for a in mats:
        for b in mats:
            if a is not b and a.shape[-1] == b.shape[-2] and a.shape[:-2] == b.shape[:-2]:
                return 2.0 * math.prod(a.shape[:-2]) * a.shape[-2] * a.shape[-1] * b.shape[-1]
    return None
