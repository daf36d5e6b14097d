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
  FLOPs   in Nsight Compute's convention (FADD + FMUL + 2 x FFMA executed; MUFU, compares, selects and
          conversions not FLOPs): with the source, each operation of the kernel body at what the GPU runs for it
          (roofline.model.ops.triton_flops: libdevice.exp 10, x / y 1, rsqrt 0, sqrt_rn 6...) times the points it
          runs on (inside a reduction loop every element; after it, work on the rows' statistics once a row and
          work on their elements once an element; a persistent reduction over its whole R0_BLOCK). Without the
          source: the FLOPs per element of the ATen ops its name says it fused, as Inductor lowers them.
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
from roofline.model.ops.flex_attention import FlexTemplate, flex_from_shapes, flex_work, read_flex
from roofline.model.ops.aten import ELEMENTWISE_FLOPS, NORM_FLOPS, REDUCTIONS, SOFTMAX_FLOPS
from roofline.model.ops.triton_flops import OPS, BodyCounter, reduction_tree_adds, statements
from roofline.model.ops.triton_flops import REDUCTIONS as REDUCTIONS_EXECUTED
from roofline.model.units import MAX_DIGITS
from roofline.model.counts import counted

BACKEND = "triton"
KINDS = {"poi": "pointwise", "red": "reduction", "per": "persistent reduction", "tem": "template", "for": "combo"}
_BROADCAST = 4  # in a reduction, an input at least 1/4 of the iteration space is taken as loaded at every point
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
# what Inductor's lowering of an ATen op executes, in ncu's convention (triton_flops.OPS), where it differs from the
# ATen table: compares, selects, max/min and sign changes are no FLOPs; exp is libdevice.exp (10), tanh 10, erf 18,
# sqrt sqrt_rn (6), rsqrt MUFU alone (0), sigmoid tl.sigmoid (2), log and sin/cos an FMUL around MUFU (1)
_AS_LOWERED = {
    **dict.fromkeys(("neg", "abs", "relu", "maximum", "minimum", "clamp_min", "clamp_max", "clamp", "hardtanh",
                     "threshold", "threshold_backward", "eq", "ne", "lt", "le", "gt", "ge", "where", "masked_fill",
                     "sign", "floor", "ceil", "round", "trunc", "logical_not", "logical_and", "logical_or",
                     "bitwise_and", "bitwise_or", "bitwise_not", "bitwise_xor", "max", "min", "amax", "amin",
                     "argmax", "argmin", "any", "all", "exp2", "log2", "rsqrt"), 0),
    "exp": OPS["libdevice.exp"].flops, "tanh": OPS["libdevice.tanh"].flops, "erf": OPS["libdevice.erf"].flops,
    "sqrt": OPS["tl.sqrt_rn"].flops, "log1p": OPS["libdevice.log1p"].flops, "expm1": OPS["libdevice.expm1"].flops,
    "log": OPS["tl_math.log"].flops, "sin": OPS["tl_math.sin"].flops, "cos": OPS["tl_math.cos"].flops,
    "sigmoid": OPS["tl.sigmoid"].flops,
    "silu": OPS["libdevice.exp"].flops + 2,  # Inductor writes x / (1 + libdevice.exp(-x))
    "silu_backward": OPS["libdevice.exp"].flops + 2 + 5,  # s = 1 / (1 + exp(-x)); g * s * (1 + x * (1 - s))
    "gelu": OPS["libdevice.erf"].flops + 4,  # 0.5 * x * (1 + erf(x * 0.7071))
    # cdf as in gelu, pdf = exp(-x*x/2) * 0.3989 (libdevice.exp), g * (cdf + x * pdf)
    "gelu_backward": OPS["libdevice.erf"].flops + 3 + OPS["libdevice.exp"].flops + 3 + 3,
    "softmax": 3 + OPS["libdevice.exp"].flops, "_softmax": 3 + OPS["libdevice.exp"].flops,  # x - max, exp, sum, /
    "log_softmax": 3 + OPS["libdevice.exp"].flops, "_log_softmax": 3 + OPS["libdevice.exp"].flops,
    "_log_softmax_backward_data": 3 + OPS["libdevice.exp"].flops,  # exp(y), the sum of g, g - exp(y) * sum
    "prepare_softmax_online": REDUCTIONS_EXECUTED["online_softmax_combine"],
    "native_dropout": OPS["tl.rand"].flops + 2,  # a draw, a compare (none), the mask and the scale
    # outside its template, flex_attention_backward is the delta its lowering computes before the template:
    # sum(out * grad_out, -1) (torch/_inductor/kernel/flex/flex_attention.py, flex_attention_backward): a mul and
    # an add an element of out
    "flex_attention_backward": 2,
}
_FLOPS_PER_ELEMENT.update(_AS_LOWERED)
_OP_WORDS = sorted({k.lstrip("_") for k in _FLOPS_PER_ELEMENT}, key=lambda w: -w.count("_"))
# the body of a generated kernel
_SIGNATURE = re.compile(r"'signature':\s*(\{[^{}]*\})")
_MUTATED = re.compile(r"'mutated_arg_names':\s*(\[[^\]]*\])")
# a template's launcher appends its grid (torch/_inductor/select_algorithm.py: FixedGrid, extra_launcher_args)
_EXTRA = re.compile(r"'extra_launcher_args':\s*(\[[^\]]*\])")
_NUMEL = re.compile(r"^\s+(\w*numel)\s*=\s*([0-9]+)\s*$", re.MULTILINE)  # ASCII digits: int() reads them
_ASSIGN = re.compile(r"^(?P<indent>\s+)(?P<targets>[A-Za-z_]\w*(?:\s*,\s*[A-Za-z_]\w*)*)\s*=\s*(?P<expr>.+)$")
_R_BLOCK = re.compile(r"^\s+R0?_BLOCK\s*:\s*tl\.constexpr\s*=\s*([0-9]{1,9})\s*$", re.MULTILINE)  # a persistent reduction
_STORE = re.compile(r"^(?P<indent>\s+)(?P<expr>tl\.store\(.+)$")
_LOOP = re.compile(r"^(?P<indent>\s+)for r\d*_offset in ")
_REDUCE = re.compile(r"\btl\.(sum|max|min|reduce|argmax|argmin)\(|triton_helpers\.(max2|min2|welford\w*|"
                     r"online_softmax\w*)\(|\.(sum|max|min)\(")


@dataclass(frozen=True)
class KernelSource:
    """What a generated kernel's source tells beyond the trace."""

    args: tuple[tuple[str, str], ...]  # (name, Triton type) of the runtime arguments, in order: ('in_ptr0', '*bf16')
    mutated: frozenset[str] = frozenset()
    numels: dict[str, int] = field(default_factory=dict)  # xnumel, r0_numel fixed in the body
    flops_per_point: float = 0.0  # arithmetic done on every point of the iteration space
    flops_per_row: float = 0.0  # arithmetic done once per row (after a reduction)
    reduction: bool = False
    r_block: int | None = None  # the block a persistent reduction holds a row in (its arithmetic runs on all of it)
    unknown_calls: tuple[str, ...] = ()  # math calls not in triton_flops.OPS, counted one FLOP each
    block_sums: int = 0  # float sums over a persistent reduction's whole row (counted one FADD an element)
    r_contiguous: bool = True  # its loads run along the reduced dimension (r0_ with a unit stride), not along x
    element_bits: int = 32  # of the buffer such a load reads
    flex: FlexTemplate | None = None  # a flex_attention template's sizes and block mask


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
        extra = ast.literal_eval(_EXTRA.search(text).group(1)) if _EXTRA.search(text) else []
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return None
    if not isinstance(signature, dict):
        return None
    # the launcher passes every argument but the block sizes (XBLOCK, R0_BLOCK: upper-case meta-parameters), a
    # size fixed at compile time (xnumel: 'constexpr') too
    args = tuple((str(k), str(v)) for k, v in signature.items() if not (str(v) == "constexpr" and str(k).isupper()))
    if isinstance(extra, list):  # the grid a template's launcher passes after the kernel's own arguments
        args += tuple((str(k), "grid") for k in extra)
    found = _NUMEL.findall(text)
    if any(len(v) > MAX_DIGITS for _, v in found):  # no kernel iterates 10^40 points; int() refuses 4300 digits
        return None
    numels = {k: int(v) for k, v in found}
    r_block = _R_BLOCK.search(text)
    body = text[text.find("@triton.jit"):] if "@triton.jit" in text else text
    reduction = bool(_LOOP.search(body)) or bool(_REDUCE.search(body)) or any(k.startswith("r") for k in numels)
    counter = BodyCounter(dict(args), reduction)
    per_point = per_row = 0.0
    unknown: set[str] = set()
    loop_indent: int | None = None
    for line in statements(body):
        loop = _LOOP.match(line)
        if loop:
            loop_indent = len(loop.group("indent"))
            continue
        a = _ASSIGN.match(line)
        if a is None:
            st = _STORE.match(line)
            if st is not None:
                inside = loop_indent is not None and len(st.group("indent")) > loop_indent
                counted = counter.store(st.group("expr"), inside)
                per_point += counted.point
                per_row += counted.row
            continue
        inside = loop_indent is not None and len(a.group("indent")) > loop_indent
        if loop_indent is not None and not inside:
            loop_indent = None
        counted = counter.assign(a.group("targets"), a.group("expr"), inside)
        per_point += counted.point
        per_row += counted.row
        unknown.update(counted.unknown)
    return KernelSource(args, frozenset(str(x) for x in mutated if isinstance(x, str)), numels, per_point, per_row,
                        reduction=reduction, r_block=int(r_block.group(1)) if r_block else None,
                        unknown_calls=tuple(sorted(unknown)), block_sums=counter.block_sums,
                        flex=read_flex(text), **_contiguity(body, dict(args)))


_LOAD = re.compile(r"tl\.load\((?P<ptr>\w+) \+ \((?P<index>[^()]*)\)")
_UNIT = {"r": re.compile(r"(?<![\w*.])r0_\d+(?![\w*.])"), "x": re.compile(r"(?<![\w*.])x\d+(?![\w*.])")}


def _contiguity(body: str, signature: dict[str, str]) -> dict[str, object]:
    """Whether the kernel's loads run along the reduced dimension (an r0_ index with a unit stride) or along x, and
    the element width of the first such load: what Triton's coalescing lays a block out by."""
    loads = [(m.group("ptr"), m.group("index")) for m in _LOAD.finditer(body)]
    for axis in ("r", "x"):
        for ptr, index in loads:
            if _UNIT[axis].search(index):
                bits = {"fp16": 16, "bf16": 16, "fp64": 64, "i8": 8, "u8": 8, "i1": 8, "fp8e4nv": 8}.get(
                    signature.get(ptr, "").lstrip("*"), 32)
                return {"r_contiguous": axis == "r", "element_bits": bits}
    return {"r_contiguous": True, "element_bits": 32}


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


def model_triton(name: str, inputs: Sequence[OpInput], source: KernelSource | None = None,
                 launch: tuple[Sequence[int] | None, Sequence[int] | None] | None = None) -> OpWork:
    """The minimum work of one Inductor Triton launch (see the module's docstring); `launch`: its (grid, block)."""
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
    reach = points if kind != "template" else None  # a template's epilogue sizes do not bound its operands
    if source is None and kind != "template":
        # the product of the positive Scalars bounds the space (a seed offset only loosens it); a template's
        # trailing Scalars are its launch grid (FixedGrid), which bounds nothing
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
    if kind == "template" and "flex_attention" in name:
        flex = source.flex if source is not None else None
        if flex is None and source is None:
            flex = flex_from_shapes("backward" in name, [(t.shape, t.dtype in FLOATING) for _, t, _ in buffers])
        if flex is not None:
            work = flex_work(flex)
            notes.append(work.note + ("" if source is not None else " (sizes from the recorded shapes)"))
            return OpWork(work.tensor + work.cuda, nbytes, matrix_roof(dtype, [name], notes), dtype, "triton",
                          note="; ".join(notes))
    if kind == "template" and any(op in ("mm", "addmm", "bmm", "baddbmm") for op in ops):
        flops = None
        if not any(op in ("bmm", "baddbmm") for op in ops):
            by_role = {roles.get(i): t for i, t, _ in buffers}
            flops = _operand_gemm(*(by_role.get(r) for r in ("arg_A", "arg_B", "out_ptr0")))
        if flops is None:
            flops = _template_gemm([t for _, t, _ in buffers])
        if flops is not None:
            notes.append("a Triton GEMM template: 2*M*N*K from the operand shapes")
            return OpWork(flops, nbytes, matrix_roof(dtype, [name], notes), dtype, "triton", note="; ".join(notes))
    flops: float | None
    if source is not None and points is not None:
        # a persistent reduction computes on its whole block of R0_BLOCK lanes per row, the masked ones too (the
        # mask guards only loads and stores), so its arithmetic runs on xnumel * R0_BLOCK points
        computed = rows * max(source.r_block, points // rows) if rows and source.r_block else points
        flops = source.flops_per_point * computed + (source.flops_per_row * rows if rows else 0.0)
        tree = _tree(source, rows, launch)
        if tree:
            flops += tree
            notes.append(f"the reduction tree of its {counted(source.block_sums, 'sum')} from the launch's layout")
        if source.unknown_calls:
            notes.append(f"{', '.join(source.unknown_calls)} not in the FLOP table: one FLOP each")
    elif source is None:
        # a fused kernel runs over its largest buffer (a pointwise kernel's output, a reduction's input)
        points = max(footprints)
        if reach is not None:
            points = min(points, reach)  # a gathered table is not iterated over
        scalars = [_whole(i.value) for i in inputs if i.dtype == "Scalar"]
        counts = [_FLOPS_PER_ELEMENT.get(op, _FLOPS_PER_ELEMENT.get("_" + op)) for op in ops]
        if "prepare_softmax_online" in ops:  # the statistics pass of a (log-)softmax: only the online combine
            counts = [0 if op.lstrip("_") in ("softmax", "log_softmax") else c for op, c in zip(ops, counts)]
        if "native_layer_norm_backward" in ops:
            counts[ops.index("native_layer_norm_backward")] = _layer_norm_backward_part(
                kind, ops, [(t, inp) for _, t, inp in buffers], scalars)
        per = sum(c or 0 for c in counts)
        unknown = [op for op, c in zip(ops, counts) if c is None]
        reduced = scalars[-1] if kind == "persistent reduction" and len(scalars) >= 2 else None
        padded = 1 << (reduced - 1).bit_length() if reduced else None
        if reduced and padded != reduced:
            # Inductor gives a persistent reduction R0_BLOCK = next_power_of_2(r0_numel) and its arithmetic runs on
            # all of it, the masked lanes too
            points = points * padded / reduced
        flops = float(per * points)
        converted = _half_conversions(buffers, footprints, points, per, kind == "pointwise")
        flops += converted
        notes.append(f"{per} FLOPs per element of its largest buffer from the fused ops" + (
            f" ({', '.join(unknown)} not known: counted as 0)" if unknown else "") + (
            f", over rows of {reduced} padded to {padded}" if reduced and padded != reduced else "") + (
            f", and {converted:.0f} float16 -> float32 conversions of its inputs" if converted else ""))
    else:
        flops = None
        notes.append("iteration sizes not recorded: FLOPs not modelled")
    if dtype not in FLOATING:
        flops = 0.0 if flops is not None else None
    roof = vector_roof(dtype) if flops else None
    if ops:
        notes.insert(0, f"{kind or 'Triton'} kernel fusing {', '.join(ops)}")
    return OpWork(flops, nbytes, roof, dtype, "triton", note="; ".join(notes))


def _tree(source: KernelSource, rows: int | None, launch: tuple[Sequence[int] | None, Sequence[int] | None] | None
          ) -> float:
    """FADDs a persistent reduction's sums run beyond one an element (their shuffle and shared-memory trees), from
    its launch: XBLOCK = xnumel / grid, num_warps = block / 32 (triton_flops.reduction_tree_adds). 0 where unknown."""
    if not (source.block_sums and source.r_block and rows and launch):
        return 0.0
    grid, block = launch
    if not grid or not block or grid[0] <= 0 or block[0] < 32 or block[0] % 32:
        return 0.0
    x_block = 1 << max(0, math.ceil(rows / grid[0]) - 1).bit_length()  # a power of two, as Triton's blocks are
    per_row = reduction_tree_adds(source.r_block, x_block, block[0] // 32, source.r_contiguous, source.element_bits)
    return source.block_sums * rows * (per_row - source.r_block)


def _half_conversions(buffers: Sequence[tuple[int, Tensor, OpInput]], footprints: Sequence[int], points: float,
                      per: float, pointwise: bool) -> float:
    """The float16 -> float32 conversions of a kernel read without its source. Inductor computes in float32: each
    float16 input it loads is converted (cvt.f32.f16, executed as HADD2.F32, which ncu counts as a half add) where
    it is loaded. Inductor orders a kernel's buffers in-out, inputs, outputs (torch/_inductor/codegen/common.py,
    KernelArgs.python_argdefs), so the last buffer is written: not converted. A pointwise kernel loads every input
    at every point of its iteration space (a broadcast weight by its index modulo, a scatter's slice by a masked
    load), one element a point; a reduction loads a row statistic once a row and a weight once a column of its
    block, so there an input under a quarter of the iteration space counts once per element (a lower bound). A
    kernel without arithmetic that writes float16 only copies: fptrunc(fpext(x)) folds and nothing is converted."""
    if len(buffers) < 2 or (per == 0 and buffers[-1][1].dtype == "float16"):
        return 0.0
    total = 0.0
    for (_, t, _), elements in zip(buffers[:-1], footprints[:-1]):
        if t.dtype == "float16":
            total += points if pointwise or elements * _BROADCAST >= points else elements
    return total


def _layer_norm_backward_part(kind: str | None, ops: Sequence[str], buffers: Sequence[tuple[Tensor, OpInput]],
                              scalars: Sequence[int | None]) -> int:
    """FLOPs per element of what `native_layer_norm_backward` stands for in one Inductor kernel, which its name
    alone does not say: in a forward kernel (native_layer_norm fused too) only rstd / N saved for the backward, once
    a row (0 per element); in a reduction over the rows' contiguous dimension (the reduced size is the stride-1
    dimension of the largest buffer), the input gradient (the ATen table's dx); in a reduction over the rows (the
    weight and bias gradients' partial sums: g * x-hat and g accumulated), 3, and 1 in the stage that sums those
    partial sums (one buffer as large as the largest)."""
    if "native_layer_norm" in ops:
        return 0
    reduced = scalars[-1] if len(scalars) >= 2 and kind in ("reduction", "persistent reduction") else None
    if reduced is not None and buffers:
        t, inp = max(buffers, key=lambda b: b[0].stored)
        strides = inp.strides or ()
        row = next((d for d, s in zip(t.shape, strides) if s == 1), t.shape[-1] if t.shape else None)
        if row != reduced:
            if sum(b[0].stored == t.stored for b in buffers) == 1:
                return NORM_FLOPS["bias_grad"]  # the second stage: one buffer of partial sums summed
            return NORM_FLOPS["weight_grad"] + NORM_FLOPS["bias_grad"]
    return NORM_FLOPS["layer_norm_backward_dx"]


def _whole(value: object) -> int | None:
    """A concrete input that is a whole number of at least 0 ("4096"), else None."""
    n = parse_value(value)
    return n if isinstance(n, int) and not isinstance(n, bool) and n >= 0 else None


def _operand_gemm(a: Tensor | None, b: Tensor | None, out: Tensor | None) -> float | None:
    """2*M*N*K of an mm/addmm template from its operands as the source names them (torch/_inductor/kernel/mm.py:
    arg_A [M, K], arg_B [K, N], the output out_ptr0 [M, N]), by their elements alone, since the profiler records
    each as the view it was (A as [B, S, K] or [B, H, S, D], B as the weight [N, K] before its transpose):
    K = sqrt(|A| |B| / |out|). None where the three do not make one GEMM."""
    if a is None or b is None or out is None:
        return None
    na, nb, nc = (math.prod(t.shape) for t in (a, b, out))
    if not (na and nb and nc):
        return None
    k = math.isqrt(na * nb // nc)
    if k <= 0 or na % k or nb % k or (na // k) * (nb // k) != nc:
        return None
    return 2.0 * nc * k


def _template_gemm(tensors: Sequence[Tensor]) -> float | None:
    """2*M*N*K of the first two operands whose shapes chain ([.., M, K] @ [.., K, N])."""
    mats = [t for t in tensors if len(t.shape) >= 2]
    for a in mats:
        for b in mats:
            if a is not b and a.shape[-1] == b.shape[-2] and a.shape[:-2] == b.shape[:-2]:
                return 2.0 * math.prod(a.shape[:-2]) * a.shape[-2] * a.shape[-1] * b.shape[-1]
    return None
