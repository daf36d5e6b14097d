"""FLOPs, DRAM bytes and the compute roof of an ATen op, from what the PyTorch profiler records of its arguments.

One model per op class; every count is the op's minimum work: FLOPs the math needs (a fused multiply-add is 2),
bytes every input read once at its own stored size (a broadcast or expanded input once, not per use) and every output
written once. Kineto records no outputs, so their shapes and dtypes follow from the inputs and the op's semantics.

  gemm         mm, addmm, bmm, baddbmm, matmul, linear, mv, dot, _scaled_mm, _int_mm: 2*M*N*K (times the batch);
               the tensor-core roof by dtype, float32 on TF32 only where a kernel name says so
  conv         convolution, _convolution, cudnn_convolution(_transpose), conv1d/2d/3d, conv_transpose1d/2d/3d,
               convolution_backward: 2*N*K*P*Q*(C/groups)*R*S (forward); depthwise on the CUDA cores; a stride
               wider than the kernel (1x1 stride 2) reads only the input rows and pixels its windows reach
  attention    scaled_dot_product_attention and its flash, efficient and cuDNN ops, forward and backward:
               4*B*H*Lq*Lk*D forward (QK^T and PV), halved when causal; backward 2.5x the forward
  elementwise  the map ops and their in-place forms: FLOPs per output element from ELEMENTWISE_FLOPS
  reduction    sum, mean, amax, max, min, var, std, norm, ...: FLOPs per input element from REDUCTIONS
  norm         layer, RMS, batch and group normalisation, forward and backward (FLOPs per element in NORM_FLOPS)
  softmax      softmax, log_softmax and their backwards (SOFTMAX_FLOPS per element)
  pool         max_pool2d(_with_indices) and its backward, avg_pool2d: the input read where the windows reach it
  embedding    embedding (the gathered rows) and its dense backward
  copy, index  cat, stack, copy_, _to_copy/to, clone, fill_, zero_, arange; index, index_select, gather, scatter,
               index_put_
  loss         nll_loss (forward, backward), cross_entropy_loss, mse_loss
  optimizer    _fused_adam(w)_ (with GradScaler's grad_scale), _fused_sgd_, _foreach_*,
               _amp_foreach_non_finite_check_and_unscale_, _amp_update_scale_ (tensor lists: the element dtype
               from the kernel name)
  random       random_, uniform_, normal_, bernoulli_, exponential_: written once, no FLOPs

Special functions (exp, log, erf, tanh, sqrt) count as one FLOP each. Non-matrix work on float16 and bfloat16 is
placed under the FP32 roof: PyTorch computes it in float32 (its opmath type). Pure: no torch, no I/O.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable, Iterable, Sequence

from roofline.model.ops.args import (
    FLOATING, ITEMSIZE, OpInput, OpWork, Tensor, int_tuple, kernel_dtype, matrix_roof, parse_value, says_causal,
    scalar_type, tensor, tensor_list, vector_roof,
)
from roofline.model.ops.multitensor import MtaKernel, blocks_of, grid_elements, parse_kernel

__all__ = ["OpInput", "OpWork", "model_op", "model_from_grid", "ELEMENTWISE_FLOPS", "REDUCTIONS", "NORM_FLOPS", "SOFTMAX_FLOPS"]

SECTOR = 32  # B: a lone element gathered from DRAM costs a whole sector


class _Op:
    """One op's arguments and the notes its model makes on the way."""

    def __init__(self, name: str, inputs: Sequence[OpInput], kernel_names: Sequence[str]):
        self.name = name
        self.inputs = tuple(inputs)
        self.kernels = tuple(k for k in kernel_names if isinstance(k, str))
        self.notes: list[str] = []

    def arg(self, i: int | None) -> OpInput | None:
        return self.inputs[i] if i is not None and 0 <= i < len(self.inputs) else None

    def t(self, i: int | None) -> Tensor | None:
        return tensor(self.arg(i))

    def v(self, i: int | None) -> object:
        a = self.arg(i)
        return None if a is None else parse_value(a.value)

    def tensors(self) -> list[Tensor]:
        return [t for t in (tensor(a) for a in self.inputs) if t is not None]

    def note(self, text: str) -> None:
        if text not in self.notes:
            self.notes.append(text)

    def check_dtypes(self, *tensors: Tensor | None) -> None:
        for t in tensors:
            if t is not None and t.dtype is None:
                self.note(f"unknown dtype '{t.raw}': bytes not modelled")

    def work(self, op_class: str, flops: float | None, nbytes: float | None, roof: str | None,
             dtype: str | None) -> OpWork:
        return OpWork(flops=flops, bytes=nbytes, roof=roof if flops else None, dtype=dtype, op_class=op_class,
                      note="; ".join(self.notes))

    def partial(self, op_class: str, why: str) -> OpWork:
        self.note(why)
        return OpWork(flops=None, bytes=None, roof=None, dtype=None, op_class=op_class, note="; ".join(self.notes))


def _total(parts: Iterable[float | None]) -> float | None:
    """The sum of byte counts; None when any is unknown."""
    total = 0.0
    for p in parts:
        if p is None:
            return None
        total += p
    return total


def _size(numel: float, dtype: str | None) -> float | None:
    """Bytes of numel elements of dtype written (or read) once; None for an unknown dtype."""
    itemsize = ITEMSIZE.get(dtype) if dtype else None
    return None if itemsize is None else float(numel * itemsize)


def _read(*tensors: Tensor | None) -> list[float | None]:
    return [t.nbytes for t in tensors if t is not None]


def _broadcast(shapes: Sequence[Sequence[int]]) -> tuple[int, ...] | None:
    """The broadcast of shapes, or None when they do not broadcast."""
    ndim = max((len(s) for s in shapes), default=0)
    out = []
    for i in range(1, ndim + 1):
        sizes = {s[-i] for s in shapes if len(s) >= i}
        big = sizes - {1}
        if len(big) > 1:
            return None
        out.append(big.pop() if big else (1 if 1 in sizes else 0))
    return tuple(out[::-1])


def _promote(tensors: Sequence[Tensor]) -> str | None:
    """The result dtype of a mixed elementwise op (PyTorch's promotion, for the dtypes that meet in practice):
    dimensioned tensors decide over 0-d ones, floating over integer, the wider over the narrower, and float16 with
    bfloat16 gives float32. Bool inputs (a where's condition, a mask) take part only when all are bool."""
    pool = [t for t in tensors if t.shape] or list(tensors)
    pool = [t for t in pool if t.dtype != "bool"] or pool
    dtypes = {t.dtype for t in pool}
    if None in dtypes:
        return None
    floats = dtypes & FLOATING
    if floats:
        if floats == {"float16", "bfloat16"}:
            return "float32"
        return max(floats, key=lambda d: ITEMSIZE[d])
    return max(dtypes, key=lambda d: ITEMSIZE.get(d, 0)) if dtypes else None


def _flops_if_floating(n: float, dtype: str | None, op: _Op) -> float:
    if dtype in FLOATING or dtype in ("complex64", "complex128"):
        return float(n)
    if dtype is not None:
        op.note(f"{dtype}: no floating-point work")
    return 0.0


# ---------------------------------------------------------------------------------------------------------- gemm

def _matmul_dims(a: tuple[int, ...], b: tuple[int, ...]):
    """torch.matmul's (batch, M, N, K, output shape): 1-D operands as a row or a column, batch dims broadcast."""
    if not a or not b:
        return None
    if len(a) == 1 and len(b) == 1:
        return (1, 1, 1, a[0], ()) if a[0] == b[0] else None
    a2 = (1,) + a if len(a) == 1 else a
    b2 = b + (1,) if len(b) == 1 else b
    if a2[-1] != b2[-2]:
        return None
    batch = _broadcast([a2[:-2], b2[:-2]])
    if batch is None:
        return None
    m, n, k = a2[-2], b2[-1], a2[-1]
    out = batch + ((m,) if len(a) > 1 else ()) + ((n,) if len(b) > 1 else ())
    return math.prod(batch), m, n, k, out


def _gemm_dims(name: str, a: tuple[int, ...], b: tuple[int, ...]):
    """(batch, M, N, K, output shape) of a matmul-like op; None when the shapes do not read as one."""
    if name in ("mm", "addmm", "_scaled_mm", "_int_mm"):
        if len(a) == len(b) == 2 and a[1] == b[0]:
            return 1, a[0], b[1], a[1], (a[0], b[1])
    elif name in ("bmm", "baddbmm"):
        if len(a) == len(b) == 3 and a[0] == b[0] and a[2] == b[1]:
            return a[0], a[1], b[2], a[2], (a[0], a[1], b[2])
    elif name == "linear":
        if len(b) == 2 and a and a[-1] == b[1]:
            return 1, math.prod(a[:-1]), b[0], b[1], a[:-1] + (b[0],)
    elif name == "mv":
        if len(a) == 2 and len(b) == 1 and a[1] == b[0]:
            return 1, a[0], 1, a[1], (a[0],)
    elif name == "dot":
        if len(a) == len(b) == 1 and a[0] == b[0]:
            return 1, 1, 1, a[0], ()
    elif name == "matmul":
        return _matmul_dims(a, b)
    return None


def _gemm(op: _Op) -> OpWork:
    name = op.name
    c = extras = None
    if name == "linear":  # linear(input, weight (N, K), bias): the weight is read transposed, once
        a, b, c = op.t(0), op.t(1), op.t(2)
    elif name in ("addmm", "baddbmm"):  # (C, A, B, beta, alpha): C is read unless beta is 0
        c, a, b = op.t(0), op.t(1), op.t(2)
        if op.v(3) == 0 and c is not None:
            c = None
            op.note("beta=0: C not read")
    else:
        a, b = op.t(0), op.t(1)
    if name == "_scaled_mm":  # (A, B, scale_a, scale_b, bias, scale_result, out_dtype, use_fast_accum)
        extras = [op.t(2), op.t(3), op.t(4), op.t(5)]
    if a is None or b is None:
        return op.partial("gemm", "operand shapes not recorded")
    dims = _gemm_dims(name, a.shape, b.shape)
    if dims is None:
        return op.partial("gemm", f"shapes {list(a.shape)} and {list(b.shape)} do not read as {name}")
    batch, m, n, k, out_shape = dims
    flops = 2.0 * batch * m * n * k
    out_dtype = a.dtype
    if name == "_int_mm":
        out_dtype = "int32"
    elif name == "_scaled_mm":
        out_dtype = scalar_type(op.v(6)) or a.dtype
    op.check_dtypes(a, b, c, *(extras or ()))
    nbytes = _total(_read(a, b, c, *(extras or ())) + [_size(math.prod(out_shape), out_dtype)])
    if name in ("mv", "dot"):
        roof = vector_roof(a.dtype)  # cuBLAS gemv and dot run on the CUDA cores
    else:
        roof = matrix_roof(a.dtype, op.kernels, op.notes)
    if a.dtype is not None and a.dtype not in FLOATING and name != "_int_mm":
        flops = _flops_if_floating(flops, a.dtype, op)
    return op.work("gemm", flops, nbytes, roof, a.dtype)


# ---------------------------------------------------------------------------------------------------------- conv

# name: positions of (bias, stride, padding, dilation, transposed, output_padding, groups); a bool is a fixed value
_CONV: dict[str, tuple[int | None, int, int, int, int | bool, int | None, int]] = {
    "convolution": (2, 3, 4, 5, 6, 7, 8),
    "_convolution": (2, 3, 4, 5, 6, 7, 8),
    "conv1d": (2, 3, 4, 5, False, None, 6),
    "conv2d": (2, 3, 4, 5, False, None, 6),
    "conv3d": (2, 3, 4, 5, False, None, 6),
    "cudnn_convolution": (None, 3, 2, 4, False, None, 5),
    "conv_transpose1d": (2, 3, 4, 7, True, 5, 6),
    "conv_transpose2d": (2, 3, 4, 7, True, 5, 6),
    "conv_transpose3d": (2, 3, 4, 7, True, 5, 6),
    "cudnn_convolution_transpose": (None, 4, 2, 5, True, 3, 6),
}


def _conv_roof(op: _Op, dtype: str | None, in_per_group: int, groups: int) -> str | None:
    if groups > 1 and in_per_group == 1:
        op.note("depthwise: CUDA cores")
        return vector_roof(dtype)
    return matrix_roof(dtype, op.kernels, op.notes)


def _window_cover(size: int, out: int, k: int, s: int, p: int, d: int) -> int:
    """Positions of an input dimension of `size` that some of the `out` windows (k taps, dilation d, stride s,
    padding p) read. Windows that meet or overlap (k >= s) cover the span from the first to the last; with dilation
    the span is taken too (an over-count); windows further apart than their width (a 1x1 stride-2 convolution, a
    pooling with stride > kernel) leave the gaps unread."""
    if out <= 0 or size <= 0:
        return 0
    if d != 1 or k >= s:
        return max(0, min(size - 1, (out - 1) * s - p + d * (k - 1)) - max(0, -p) + 1)
    covered = out * k
    o = 0
    while o < out and o * s - p < 0:  # windows that start in the padding on the left
        covered -= min(k, p - o * s)
        o += 1
    o = out - 1
    while o >= 0 and o * s - p + k - 1 > size - 1:  # ... and end in it on the right
        covered -= min(k, o * s - p + k - 1 - (size - 1))
        o -= 1
    return max(0, covered)


def _read_share(arg: OpInput | None, x: Tensor, out_sp: Sequence[int], ks: Sequence[int], stride: Sequence[int],
                pads: Sequence[int], dilation: Sequence[int]) -> float:
    """The share of a convolution's or pooling's input its windows read from DRAM. A skipped position saves
    traffic only where one position of that dimension spans a whole sector (its stride times the element size is
    at least SECTOR bytes): rows of a contiguous NCHW input, pixels of a channels-last one; never single elements."""
    itemsize = x.itemsize or 0
    strides = arg.strides if arg is not None and arg.strides is not None and len(arg.strides) == len(x.shape) \
        else tuple(math.prod(x.shape[i + 1:]) for i in range(len(x.shape)))  # contiguous when not recorded
    share = 1.0
    for i, (size, out, k, s, p, d) in enumerate(zip(x.shape[2:], out_sp, ks, stride, pads, dilation)):
        step = strides[2 + i]
        if isinstance(step, int) and abs(step) * itemsize >= SECTOR and size > 0:
            share *= _window_cover(size, out, k, s, p, d) / size
    return share


def _conv(op: _Op) -> OpWork:
    x, w = op.t(0), op.t(1)
    if x is None or w is None or len(x.shape) < 3 or len(w.shape) != len(x.shape):
        return op.partial("conv", "input and weight shapes not recorded")
    bias_i, stride_i, pad_i, dil_i, trans_i, outpad_i, groups_i = _CONV[op.name]
    nsp = len(x.shape) - 2
    transposed = trans_i if isinstance(trans_i, bool) else op.v(trans_i) is True
    stride, dilation, groups = int_tuple(op.v(stride_i), nsp), int_tuple(op.v(dil_i), nsp), op.v(groups_i)
    pad_value = op.v(pad_i)
    padding = int_tuple(pad_value, nsp) if pad_value not in ("same", "valid") else pad_value
    # output_padding matters only to a transposed convolution
    output_padding = int_tuple(op.v(outpad_i), nsp) if transposed and outpad_i is not None else (0,) * nsp
    if None in (stride, dilation, padding, output_padding) or not isinstance(groups, int) or groups < 1:
        return op.partial("conv", "stride, padding, dilation or groups not recorded")
    if min(stride + dilation) < 1 or (isinstance(padding, tuple) and min(padding + output_padding) < 0):
        return op.partial("conv", f"stride {list(stride)}, padding {padding}, dilation {list(dilation)} impossible")
    n, c, in_sp = x.shape[0], x.shape[1], x.shape[2:]
    ks = w.shape[2:]
    share = 1.0  # of the input the windows read
    if not transposed:
        k, c_per_group = w.shape[0], w.shape[1]
        if c_per_group * groups != c:
            return op.partial("conv", f"weight {list(w.shape)} does not fit input {list(x.shape)} in {groups} groups")
        if padding == "same":
            out_sp = in_sp
        else:
            pads = (0,) * nsp if padding == "valid" else padding
            out_sp = tuple((i + 2 * p - d * (r - 1) - 1) // s + 1
                           for i, p, d, r, s in zip(in_sp, pads, dilation, ks, stride))  # type: ignore[arg-type]
        flops = 2.0 * n * k * math.prod(out_sp) * c_per_group * math.prod(ks)
        roof = _conv_roof(op, x.dtype, c_per_group, groups)
        if padding != "same":
            share = _read_share(op.arg(0), x, out_sp, ks, stride, pads, dilation)  # type: ignore[arg-type]
            if share < 1:
                op.note(f"the windows read {share:.3g} of the input (stride wider than the kernel)")
    else:  # weight (C_in, K/groups, R, S): every input element meets K/groups x R x S weights
        if w.shape[0] != c or not isinstance(padding, tuple):
            return op.partial("conv", f"weight {list(w.shape)} does not fit input {list(x.shape)}")
        k_per_group = w.shape[1]
        k = k_per_group * groups
        geometry = zip(in_sp, stride, padding, dilation, ks, output_padding)  # type: ignore[arg-type]
        out_sp = tuple((i - 1) * s - 2 * p + d * (r - 1) + o + 1 for i, s, p, d, r, o in geometry)
        flops = 2.0 * n * c * math.prod(in_sp) * k_per_group * math.prod(ks)
        roof = matrix_roof(x.dtype, op.kernels, op.notes)
        op.note("transposed")
    if any(o <= 0 for o in out_sp):
        return op.partial("conv", f"output size {list(out_sp)} is empty")
    bias = op.t(bias_i)
    op.check_dtypes(x, w, bias)
    x_read = None if x.nbytes is None else x.nbytes * share
    nbytes = _total([x_read] + _read(w, bias) + [_size(n * k * math.prod(out_sp), x.dtype)])
    return op.work("conv", _flops_if_floating(flops, x.dtype, op), nbytes, roof, x.dtype)


def _conv_backward(op: _Op) -> OpWork:
    """convolution_backward(grad_output, input, weight, bias_sizes, stride, padding, dilation, transposed,
    output_padding, groups, output_mask): grad_input and grad_weight each cost the forward's FLOPs."""
    g, x, w = op.t(0), op.t(1), op.t(2)
    if g is None or x is None or w is None or len(w.shape) < 3:
        return op.partial("conv", "grad_output, input and weight shapes not recorded")
    mask = op.v(10)
    if not (isinstance(mask, list) and len(mask) == 3 and all(isinstance(m, bool) for m in mask)):
        mask = [True, True, True]
        op.note("output_mask not recorded: all three gradients assumed")
    groups = op.v(9) if isinstance(op.v(9), int) else 1
    # the forward's FLOPs: 2 x (elements of the convolution's output side) x (weights each one meets)
    fwd = 2.0 * (x.numel if op.v(7) is True else g.numel) * w.shape[1] * math.prod(w.shape[2:])
    flops = fwd * (mask[0] + mask[1]) + (g.numel if mask[2] else 0)
    op.check_dtypes(g, x, w)
    reads = [g.nbytes] + ([w.nbytes] if mask[0] else []) + ([x.nbytes] if mask[1] else [])
    writes = [_size(x.numel, x.dtype) if mask[0] else 0.0, _size(w.numel, w.dtype) if mask[1] else 0.0,
              _size(g.shape[1], g.dtype) if mask[2] and len(g.shape) > 1 else 0.0]
    roof = _conv_roof(op, x.dtype, w.shape[1], groups) if op.v(7) is not True else matrix_roof(x.dtype, op.kernels,
                                                                                               op.notes)
    return op.work("conv", _flops_if_floating(flops, x.dtype, op), _total(reads + writes), roof, x.dtype)


# ---------------------------------------------------------------------------------------------------------- pool

# name: positions of (kernel_size, stride, padding, dilation (None: 1), ceil_mode); FLOPs per window element
_POOL: dict[str, tuple[int, int, int, int | None, int]] = {
    "max_pool2d": (1, 2, 3, 4, 5),
    "max_pool2d_with_indices": (1, 2, 3, 4, 5),
    "avg_pool2d": (1, 2, 3, None, 4),
}


def _pool_out(size: int, k: int, s: int, p: int, d: int, ceil: bool) -> int:
    """PyTorch's pooling output size: floor (or ceil) of the window count, a last window that would start in the
    right padding dropped."""
    span = size + 2 * p - d * (k - 1) - 1 + (s - 1 if ceil else 0)
    out = span // s + 1
    if ceil and (out - 1) * s >= size + p:
        out -= 1
    return out


def _pool_geometry(op: _Op, x: Tensor, first: int, dil_i: int | None, ceil_i: int):
    """(kernel, stride, padding, dilation, output spatial shape) of a 2-D pooling, or None when not recorded."""
    ks = int_tuple(op.v(first), 2)
    stride_value = op.v(first + 1)
    stride = ks if stride_value in (None, []) else int_tuple(stride_value, 2)  # stride=[]: the kernel size
    pads = int_tuple(op.v(first + 2), 2)
    dilation = (1, 1) if dil_i is None else int_tuple(op.v(dil_i), 2)
    ceil = op.v(ceil_i) is True
    if ks is None or stride is None or pads is None or dilation is None or len(x.shape) not in (3, 4) \
            or min(ks + stride + dilation) < 1 or min(pads) < 0:
        return None
    out_sp = tuple(_pool_out(i, k, s, p, d, ceil) for i, k, s, p, d in zip(x.shape[-2:], ks, stride, pads, dilation))
    return ks, stride, pads, dilation, out_sp


def _pool(op: _Op) -> OpWork:
    """max_pool2d(_with_indices) / avg_pool2d (self, kernel_size, stride, padding, [dilation,] ceil_mode, ...): the
    input read once where the windows reach it, the output (and for _with_indices the int64 indices) written; one
    FLOP per window element (a compare or an add; avg adds the divide)."""
    x = op.t(0)
    if x is None or len(x.shape) not in (3, 4):
        return op.partial("pool", "input shape not recorded")
    k_i, _, _, dil_i, ceil_i = _POOL[op.name]
    geometry = _pool_geometry(op, x, k_i, dil_i, ceil_i)
    if geometry is None:
        return op.partial("pool", "kernel_size, stride, padding or dilation not recorded")
    ks, stride, pads, dilation, out_sp = geometry
    if min(out_sp) <= 0:
        return op.partial("pool", f"output size {list(out_sp)} is empty")
    lead = x.shape[:-2]
    out = math.prod(lead) * math.prod(out_sp)
    per = math.prod(ks) + (1 if op.name == "avg_pool2d" else 0)
    op.note(f"{per} FLOPs per output element")
    # _read_share takes (N, C, spatial...): a 3-D (C, H, W) input is one sample
    full = x if len(x.shape) == 4 else Tensor((1,) + x.shape, x.dtype, x.raw, x.stored)
    arg = op.arg(0)
    if arg is not None and arg.strides is not None and len(x.shape) == 3:
        arg = OpInput(full.shape, arg.dtype, (x.numel,) + tuple(arg.strides), arg.value)
    share = _read_share(arg, full, out_sp, ks, stride, pads, dilation)
    if share < 1:
        op.note(f"the windows read {share:.3g} of the input (stride wider than the kernel)")
    op.check_dtypes(x)
    parts = [None if x.nbytes is None else x.nbytes * share, _size(out, x.dtype)]
    if op.name == "max_pool2d_with_indices":
        parts.append(_size(out, "int64"))
    return op.work("pool", _flops_if_floating(out * per, x.dtype, op), _total(parts), vector_roof(x.dtype),
                   x.dtype)


def _max_pool_backward(op: _Op) -> OpWork:
    """max_pool2d_with_indices_backward(grad_output, self, kernel_size, stride, padding, dilation, ceil_mode,
    indices): the output gradient and the indices read, every element of the input gradient written once (each
    gathers from the windows that chose it); one add per output-gradient element."""
    g, x, idx = op.t(0), op.t(1), op.t(7)
    if g is None or x is None:
        return op.partial("pool", "grad_output and input shapes not recorded")
    idx_bytes = idx.nbytes if idx is not None else _size(g.numel, "int64")
    op.check_dtypes(g, x)
    parts = _read(g) + [idx_bytes, _size(x.numel, x.dtype)]
    return op.work("pool", _flops_if_floating(g.numel, g.dtype, op), _total(parts), vector_roof(g.dtype), g.dtype)


# ----------------------------------------------------------------------------------------------------- attention

# name: (position of query, layout, position of is_causal (or custom_mask_type), backward, position of a mask/bias)
_ATTENTION: dict[str, tuple[int, str, int, bool, int | None]] = {
    "scaled_dot_product_attention": (0, "BHLD", 5, False, 3),
    "_scaled_dot_product_flash_attention": (0, "BHLD", 4, False, None),
    "_scaled_dot_product_efficient_attention": (0, "BHLD", 6, False, 3),
    "_scaled_dot_product_cudnn_attention": (0, "BHLD", 6, False, 3),
    # what SDPA's cuDNN path calls in torch 2.9 and later: (query, key, value, attn_bias, cum_seq_q, cum_seq_k, max_q,
    # max_k, compute_log_sumexp, dropout_p, is_causal, return_debug_mask, scale)
    "_cudnn_attention_forward": (0, "BHLD", 10, False, 3),
    "_flash_attention_forward": (0, "BLHD", 8, False, None),
    "_efficient_attention_forward": (0, "BLHD", 9, False, 3),
    "_scaled_dot_product_flash_attention_backward": (1, "BHLD", 11, True, None),
    "_scaled_dot_product_efficient_attention_backward": (1, "BHLD", 11, True, 4),
    "_scaled_dot_product_cudnn_attention_backward": (1, "BHLD", 14, True, 8),
    # (grad_out, query, key, value, out, logsumexp, philox_seed, philox_offset, attn_bias, cum_seq_q, cum_seq_k, max_q,
    # max_k, dropout_p, is_causal, scale)
    "_cudnn_attention_backward": (1, "BHLD", 14, True, 8),
    "_flash_attention_backward": (1, "BLHD", 11, True, None),
    "_efficient_attention_backward": (1, "BLHD", 14, True, 4),
}
ATTENTION_BACKWARD_FACTOR = 2.5  # QK^T recomputed, then dV = P^T dO, dP = dO V^T, dQ = dS K, dK = dS^T Q


def _attention_kernel(kernels: Sequence[str]) -> str | None:
    for k in kernels:
        low = k.lower()
        if "cudnn" in low:
            return "cuDNN"
        if "flash" in low:
            return "flash"
        if "fmha_cutlass" in low or "efficient" in low or "mem_eff" in low:
            return "memory-efficient"
    return None


def _attention(op: _Op) -> OpWork:
    qi, layout, causal_i, backward, mask_i = _ATTENTION[op.name]
    q, k, v = op.t(qi), op.t(qi + 1), op.t(qi + 2)
    if q is None or k is None or v is None:
        return op.partial("attention", "query, key and value shapes not recorded")
    variant = _attention_kernel(op.kernels)
    if variant and op.name == "scaled_dot_product_attention":
        op.note(f"{variant} kernel")
    mask = op.t(mask_i)
    op.check_dtypes(q, k, v, mask)
    if len(q.shape) == len(k.shape) == len(v.shape) == 3 and layout == "BLHD":
        op.note("variable-length batch: FLOPs need the sequence lengths")
        o_numel = q.numel // q.shape[-1] * v.shape[-1]
        flops = None
    elif len(q.shape) == len(k.shape) == len(v.shape) == 4:
        if layout == "BHLD":
            b, h, lq, d = q.shape
            lk = k.shape[2]
        else:
            b, lq, h, d = q.shape
            lk = k.shape[1]
        dv = v.shape[3]
        flops = 2.0 * b * h * lq * lk * (d + dv)  # QK^T: 2*Lq*Lk*D, PV: 2*Lq*Lk*Dv, per batch and query head
        o_numel = b * h * lq * dv
        causal = op.v(causal_i)
        if isinstance(causal, bool) and causal or (isinstance(causal, int) and not isinstance(causal, bool)
                                                   and causal > 0):
            flops /= 2
            op.note("causal: half the score matrix")
        elif causal is None and says_causal(op.kernels):
            flops /= 2
            op.note("causal from the kernel name")
    else:
        return op.partial("attention", f"query {list(q.shape)}, key {list(k.shape)}, value {list(v.shape)} "
                                       "do not read as attention")
    o_size = _size(o_numel, q.dtype)
    if backward:
        flops = None if flops is None else flops * ATTENTION_BACKWARD_FACTOR
        op.note(f"backward counted as {ATTENTION_BACKWARD_FACTOR:g}x the forward")
        # read dO, Q, K, V, O (and the mask); write dQ, dK, dV
        parts = [o_size] + _read(q, k, v, mask) + [o_size, _size(q.numel, q.dtype), _size(k.numel, k.dtype),
                                                   _size(v.numel, v.dtype)]
    else:
        parts = _read(q, k, v, mask) + [o_size]
    roof = matrix_roof(q.dtype, op.kernels, op.notes)
    flops = None if flops is None else _flops_if_floating(flops, q.dtype, op)
    return OpWork(flops=flops, bytes=_total(parts), roof=roof if flops else None, dtype=q.dtype,
                  op_class="attention", note="; ".join(op.notes))


# --------------------------------------------------------------------------------------------------- elementwise

# FLOPs per output element; exp, log, erf, tanh, sqrt and the like count as 1
ELEMENTWISE_FLOPS: dict[str, int] = {
    **dict.fromkeys(("add", "sub", "rsub", "mul", "div", "neg", "abs", "relu", "maximum", "minimum", "clamp_min",
                     "clamp_max", "threshold", "threshold_backward", "eq", "ne", "lt", "le", "gt", "ge", "where",
                     "masked_fill", "sign", "exp", "exp2", "log", "log2", "log1p", "expm1", "sqrt", "rsqrt",
                     "reciprocal", "sin", "cos", "erf", "tanh", "floor", "ceil", "round", "trunc", "remainder",
                     "fmod", "square", "logical_not", "logical_and", "logical_or", "bitwise_and", "bitwise_or",
                     "bitwise_not", "bitwise_xor", "relu6", "pow", "max", "min"), 1),
    "clamp": 2, "hardtanh": 2,  # a min and a max
    "leaky_relu": 2,  # compare, multiply
    "sigmoid": 4,  # 1 / (1 + exp(-x)): negate, exp, add, divide
    "silu": 5,  # x * sigmoid(x)
    "gelu": 5,  # 0.5 * x * (1 + erf(x / sqrt(2))): scale, erf, add, two multiplies; the tanh form: 9 (GELU_TANH)
    "softplus": 3, "elu": 3, "hardsigmoid": 3, "hardswish": 4, "mish": 5,  # mish: x * tanh(softplus(x))
    "lerp": 3, "addcmul": 3, "addcdiv": 3,  # self + value * t1 * t2 (or / t2)
    "sigmoid_backward": 3,  # g * y * (1 - y)
    "tanh_backward": 3,  # g * (1 - y * y)
    "silu_backward": 9,  # sigmoid (4), then g * s * (1 + x * (1 - s))
    "gelu_backward": 11,  # cdf (4) + pdf exp(-x^2/2)/sqrt(2 pi) (4) + g * (cdf + x * pdf) (3)
    "native_dropout": 3, "native_dropout_backward": 2,  # compare with the random draw, two multiplies
}
GELU_TANH = 9  # 0.5 * x * (1 + tanh(sqrt(2/pi) * (x + 0.044715 * x^3))): x^3 (2), scale, add, scale, tanh, add, 2 muls
_COMPARISONS = {"eq", "ne", "lt", "le", "gt", "ge", "logical_not", "logical_and", "logical_or"}


def _elementwise(op: _Op) -> OpWork:
    name = op.name
    inplace = name.endswith("_") and not name.startswith("__")
    base = name[:-1] if inplace else name
    ts = op.tensors()
    if not ts:
        return op.partial("elementwise", "tensor shapes not recorded")
    out_shape = _broadcast([t.shape for t in ts])
    if out_shape is None:
        return op.partial("elementwise", f"shapes {[list(t.shape) for t in ts]} do not broadcast")
    compute = _promote(ts)
    out_dtype = "bool" if base in _COMPARISONS else compute
    per = ELEMENTWISE_FLOPS.get(base, 1)
    if base == "gelu" and op.v(1) == "tanh":
        per = GELU_TANH
    if base == "pow":
        exponent = op.v(1)
        per = 1 if exponent == 2 else 3  # x*x; else exp(y * log(x))
    if per != 1:
        op.note(f"{base}: {per} FLOPs per element")
    first = ts[0]
    if inplace:  # the result is written back into the first input, at its own shape and dtype
        out_shape, out_dtype = first.shape, first.dtype
        op.note("in place: the first input written back")
    numel = math.prod(out_shape)
    op.check_dtypes(*ts)
    parts = _read(*ts) + [_size(numel, out_dtype)]
    if base == "native_dropout":
        parts.append(_size(numel, "bool"))  # the mask
    flops = _flops_if_floating(numel * per, compute, op)
    return op.work("elementwise", flops, _total(parts), vector_roof(compute), compute)


# ----------------------------------------------------------------------------------------------------- reductions

# name: (position of dim, FLOPs per input element)
REDUCTIONS: dict[str, tuple[int, int]] = {
    **dict.fromkeys(("sum", "nansum", "mean", "prod", "amax", "amin", "max", "min", "argmax", "argmin", "any",
                     "all"), (1, 1)),
    **dict.fromkeys(("var", "std", "var_mean", "std_mean"), (1, 4)),  # sum for the mean, subtract, square, add
    "norm": (2, 2), "linalg_vector_norm": (2, 2),  # square, add (the 2-norm)
    "logsumexp": (1, 4),  # max, subtract, exp, add
}
_WITH_DTYPE_ARG = {"sum": 3, "nansum": 3, "mean": 3, "prod": 3}  # position of dtype= in the dim overload


def _reduction(op: _Op) -> OpWork:
    x = op.t(0)
    if x is None:
        return op.partial("reduction", "input shape not recorded")
    dim_i, per = REDUCTIONS[op.name]
    ndim = len(x.shape)
    dim = op.v(dim_i)
    out_dtype = x.dtype
    if op.name in _WITH_DTYPE_ARG:
        if len(op.inputs) <= 2:  # sum(self, *, dtype): everything, the dtype at 1
            out_dtype = scalar_type(op.v(1)) or out_dtype
            dim = None
        else:
            out_dtype = scalar_type(op.v(_WITH_DTYPE_ARG[op.name])) or out_dtype
    if isinstance(dim, bool) or not (dim is None or isinstance(dim, int) or (isinstance(dim, list) and all(
            isinstance(d, int) for d in dim))):
        return op.partial("reduction", f"dim {dim!r} unreadable")
    dims = [] if dim is None else ([dim] if isinstance(dim, int) else dim)
    dims = sorted({d % ndim for d in dims}) if ndim else []
    kept = math.prod(s for i, s in enumerate(x.shape) if dims and i not in dims)
    if out_dtype in ("bool", "uint8", "int8", "int16", "int32") and op.name in ("sum", "nansum", "prod"):
        out_dtype = "int64"
    parts = _read(x)
    if op.name in ("argmax", "argmin"):
        parts.append(_size(kept, "int64"))
    elif op.name in ("any", "all"):
        parts.append(_size(kept, "bool"))
    else:
        parts.append(_size(kept, out_dtype))
        if op.name in ("max", "min") and isinstance(dim, int):
            parts.append(_size(kept, "int64"))  # max.dim also returns the indices
        if op.name in ("var_mean", "std_mean"):
            parts.append(_size(kept, out_dtype))
    if per != 1:
        op.note(f"{op.name}: {per} FLOPs per input element")
    op.check_dtypes(x)
    flops = _flops_if_floating(x.numel * per, x.dtype, op)
    return op.work("reduction", flops, _total(parts), vector_roof(x.dtype), x.dtype)


# -------------------------------------------------------------------------------------------------- normalisation

NORM_FLOPS = {
    "layer_norm": 8,  # mean (add), variance (subtract, square, add), normalise (subtract, multiply), affine (2)
    "layer_norm_backward_dx": 10,  # x-hat (2), g*w, two row sums (3), the input gradient (4)
    "rms_norm": 4,  # square and add, scale, weight
    "rms_norm_backward_dx": 7,  # x-hat, g*w, a row sum (2), the input gradient (3)
    "batch_norm_train": 5,  # statistics (add; square, add), normalise-and-affine folded into one FMA (2)
    "batch_norm_eval": 2,  # one FMA with the folded scale and shift
    "batch_norm_backward": 9,  # x-hat (2), two channel sums (3), the input gradient (4)
    "weight_grad": 2, "bias_grad": 1,  # g * x-hat accumulated; g accumulated
}


def _acc(dtype: str | None) -> str:
    """The dtype of the saved statistics (mean, rstd): float32, float64 for float64 inputs."""
    return "float64" if dtype == "float64" else "float32"


def _mask(op: _Op, i: int, n: int) -> list[bool]:
    m = op.v(i)
    if isinstance(m, list) and len(m) == n and all(isinstance(b, bool) for b in m):
        return m
    return [True] * n


def _norm_rows(op: _Op, x: Tensor, normalized: object, weight: Tensor | None) -> int | None:
    """How many rows a layer or RMS norm normalises: the elements over the normalised trailing shape."""
    if isinstance(normalized, list) and all(isinstance(d, int) for d in normalized):
        size = math.prod(normalized)
    elif weight is not None:
        size = weight.numel
    else:
        return None
    return x.numel // size if size else None


def _layer_norm(op: _Op) -> OpWork:
    """layer_norm / native_layer_norm (input, normalized_shape, weight, bias, eps): writes the output, and the
    per-row mean and rstd; rms_norm / _fused_rms_norm (input, normalized_shape, weight, eps): the output (and rstd)."""
    x, w = op.t(0), op.t(2)
    if x is None:
        return op.partial("norm", "input shape not recorded")
    rms = "rms" in op.name
    b = None if rms else op.t(3)
    rows = _norm_rows(op, x, op.v(1), w)
    if rows is None:
        return op.partial("norm", "normalized_shape not recorded")
    per = NORM_FLOPS["rms_norm" if rms else "layer_norm"]
    op.note(f"{per} FLOPs per element")
    stats = 0 if op.name in ("rms_norm",) else (1 if rms else 2)
    op.check_dtypes(x, w, b)
    parts = _read(x, w, b) + [_size(x.numel, x.dtype), _size(stats * rows, _acc(x.dtype))]
    return op.work("norm", _flops_if_floating(x.numel * per, x.dtype, op), _total(parts), vector_roof(x.dtype),
                   x.dtype)


def _layer_norm_backward(op: _Op) -> OpWork:
    """native_layer_norm_backward(grad_out, input, normalized_shape, mean, rstd, weight, bias, output_mask);
    _fused_rms_norm_backward(grad_out, input, normalized_shape, rstd, weight, output_mask)."""
    rms = "rms" in op.name
    g, x = op.t(0), op.t(1)
    stats = [op.t(3)] if rms else [op.t(3), op.t(4)]
    w = op.t(4) if rms else op.t(5)
    if g is None or x is None:
        return op.partial("norm", "grad_output and input shapes not recorded")
    mask = _mask(op, 5 if rms else 7, 2 if rms else 3)
    per = (NORM_FLOPS["rms_norm_backward_dx" if rms else "layer_norm_backward_dx"] if mask[0] else 0) \
        + (NORM_FLOPS["weight_grad"] if mask[1] else 0) + (NORM_FLOPS["bias_grad"] if not rms and mask[2] else 0)
    op.note(f"{per} FLOPs per element")
    wn = w.numel if w is not None else 0
    op.check_dtypes(g, x, w, *stats)
    parts = _read(g, x, w, *stats) + [_size(x.numel if mask[0] else 0, x.dtype),
                                      _size(wn * (mask[1] + (0 if rms else mask[2])), w.dtype if w else x.dtype)]
    return op.work("norm", _flops_if_floating(x.numel * per, x.dtype, op), _total(parts), vector_roof(x.dtype),
                   x.dtype)


# name: position of `training` (a bool: fixed)
_BATCH_NORM: dict[str, int | bool] = {
    "batch_norm": 5, "native_batch_norm": 5, "cudnn_batch_norm": 5, "_native_batch_norm_legit": 5,
    "_batch_norm_impl_index": 5, "_batch_norm_with_update": True, "_native_batch_norm_legit_no_training": False,
    "_batch_norm_no_update": False,
}


def _batch_norm(op: _Op) -> OpWork:
    """(input, weight, bias, running_mean, running_var, training, ...): training computes the channel statistics,
    writes the saved mean and invstd and updates the running ones; evaluation reads the running ones."""
    x, w, b, rm, rv = (op.t(i) for i in range(5))
    if x is None or len(x.shape) < 2:
        return op.partial("norm", "input shape not recorded")
    flag = _BATCH_NORM[op.name]
    training = flag if isinstance(flag, bool) else op.v(flag)
    if not isinstance(training, bool):
        return op.partial("norm", "training flag not recorded")
    c = x.shape[1]
    op.check_dtypes(x, w, b, rm, rv)
    parts = _read(x, w, b, rm, rv) + [_size(x.numel, x.dtype)]
    if training:
        per = NORM_FLOPS["batch_norm_train"]
        parts += [_size(2 * c, _acc(x.dtype))] + [t.nbytes for t in (rm, rv) if t is not None]  # running stats
        op.note(f"training: {per} FLOPs per element, the input read once")
    else:
        per = NORM_FLOPS["batch_norm_eval"]
        op.note(f"evaluation: {per} FLOPs per element")
    return op.work("norm", _flops_if_floating(x.numel * per, x.dtype, op), _total(parts), vector_roof(x.dtype),
                   x.dtype)


def _batch_norm_backward(op: _Op) -> OpWork:
    """native_batch_norm_backward / batch_norm_backward (grad_out, input, weight, running_mean, running_var,
    save_mean, save_invstd, train, eps, output_mask, ...); cudnn_batch_norm_backward (input, grad_output, weight,
    running_mean, running_var, save_mean, save_var, epsilon, reserveSpace)."""
    cudnn = op.name == "cudnn_batch_norm_backward"
    g, x = (op.t(1), op.t(0)) if cudnn else (op.t(0), op.t(1))
    w = op.t(2)
    if g is None or x is None or len(x.shape) < 2:
        return op.partial("norm", "grad_output and input shapes not recorded")
    mask = [True, True, True] if cudnn else _mask(op, 9, 3)
    per = (NORM_FLOPS["batch_norm_backward"] if mask[0] else 0) + (NORM_FLOPS["weight_grad"] if mask[1] else 0) \
        + (NORM_FLOPS["bias_grad"] if mask[2] else 0)
    op.note(f"{per} FLOPs per element")
    c = x.shape[1]
    saved = [op.t(5), op.t(6)]
    op.check_dtypes(g, x, w, *saved)
    parts = _read(g, x, w, *saved) + [_size(x.numel if mask[0] else 0, x.dtype),
                                      _size(c * (mask[1] + mask[2]), w.dtype if w else x.dtype)]
    return op.work("norm", _flops_if_floating(x.numel * per, x.dtype, op), _total(parts), vector_roof(x.dtype),
                   x.dtype)


def _group_norm(op: _Op) -> OpWork:
    """group_norm(input, num_groups, weight, bias, eps, cudnn_enabled); native_group_norm(input, weight, bias, N, C,
    HxW, group, eps): writes the output and the per-(sample, group) mean and rstd."""
    x = op.t(0)
    w, b, groups = (op.t(2), op.t(3), op.v(1)) if op.name == "group_norm" else (op.t(1), op.t(2), op.v(6))
    if x is None or not x.shape:
        return op.partial("norm", "input shape not recorded")
    if not isinstance(groups, int) or isinstance(groups, bool):
        return op.partial("norm", "number of groups not recorded")
    per = NORM_FLOPS["layer_norm"]
    op.note(f"{per} FLOPs per element")
    op.check_dtypes(x, w, b)
    parts = _read(x, w, b) + [_size(x.numel, x.dtype), _size(2 * x.shape[0] * groups, _acc(x.dtype))]
    return op.work("norm", _flops_if_floating(x.numel * per, x.dtype, op), _total(parts), vector_roof(x.dtype),
                   x.dtype)


def _group_norm_backward(op: _Op) -> OpWork:
    """native_group_norm_backward(grad_out, input, mean, rstd, weight, N, C, HxW, group, output_mask)."""
    g, x, mean, rstd, w = (op.t(i) for i in range(5))
    if g is None or x is None:
        return op.partial("norm", "grad_output and input shapes not recorded")
    mask = _mask(op, 9, 3)
    per = (NORM_FLOPS["layer_norm_backward_dx"] if mask[0] else 0) + (NORM_FLOPS["weight_grad"] if mask[1] else 0) \
        + (NORM_FLOPS["bias_grad"] if mask[2] else 0)
    op.note(f"{per} FLOPs per element")
    wn = w.numel if w is not None else 0
    op.check_dtypes(g, x, mean, rstd, w)
    parts = _read(g, x, mean, rstd, w) + [_size(x.numel if mask[0] else 0, x.dtype),
                                          _size(wn * (mask[1] + mask[2]), w.dtype if w else x.dtype)]
    return op.work("norm", _flops_if_floating(x.numel * per, x.dtype, op), _total(parts), vector_roof(x.dtype),
                   x.dtype)


# -------------------------------------------------------------------------------------------------------- softmax

SOFTMAX_FLOPS = {
    "softmax": 5,  # max, subtract, exp, sum, divide
    "log_softmax": 5,  # max, subtract, exp, sum, subtract the log-sum
    "_softmax_backward_data": 4,  # g * y, the row sum, subtract, multiply by y
    "_log_softmax_backward_data": 4,  # exp(y), the row sum of g, multiply, subtract
}


def _softmax(op: _Op) -> OpWork:
    """softmax/log_softmax(self, dim, dtype); _softmax/_log_softmax(self, dim, half_to_float)."""
    x = op.t(0)
    if x is None:
        return op.partial("softmax", "input shape not recorded")
    base = op.name.lstrip("_")
    out_dtype = x.dtype
    if op.name.startswith("_"):
        if op.v(2) is True:
            out_dtype = "float32"
    else:
        out_dtype = scalar_type(op.v(2)) or x.dtype
    per = SOFTMAX_FLOPS[base]
    op.note(f"{per} FLOPs per element")
    op.check_dtypes(x)
    parts = _read(x) + [_size(x.numel, out_dtype)]
    return op.work("softmax", _flops_if_floating(x.numel * per, x.dtype, op), _total(parts), vector_roof(x.dtype),
                   x.dtype)


def _softmax_backward(op: _Op) -> OpWork:
    """_softmax_backward_data / _log_softmax_backward_data (grad_output, output, dim, input_dtype)."""
    g, y = op.t(0), op.t(1)
    if g is None or y is None:
        return op.partial("softmax", "grad_output and output shapes not recorded")
    out_dtype = scalar_type(op.v(3)) or g.dtype
    per = SOFTMAX_FLOPS[op.name]
    op.note(f"{per} FLOPs per element")
    op.check_dtypes(g, y)
    parts = _read(g, y) + [_size(g.numel, out_dtype)]
    return op.work("softmax", _flops_if_floating(g.numel * per, g.dtype, op), _total(parts), vector_roof(g.dtype),
                   g.dtype)


# ------------------------------------------------------------------------------------------------------ embedding

def _embedding(op: _Op) -> OpWork:
    """embedding(weight, indices, ...): reads the gathered rows (not the whole table), the indices; writes them."""
    w, idx = op.t(0), op.t(1)
    if w is None or idx is None or not w.shape:
        return op.partial("embedding", "weight and indices shapes not recorded")
    out = idx.numel * w.shape[-1]
    op.check_dtypes(w, idx)
    parts = [_size(out, w.dtype)] + _read(idx) + [_size(out, w.dtype)]
    return op.work("embedding", 0.0, _total(parts), None, w.dtype)


def _embedding_backward(op: _Op) -> OpWork:
    """embedding_backward / embedding_dense_backward (grad, indices, num_weights, ...): the gradient and the indices
    read, the rows the indices touch (at most one per index, at most num_weights) written; one add per gradient
    element. The zeros of the other rows are written by the zero_/fill_ op inside it (its own kernel in the trace),
    not by this op's kernels."""
    g, idx, num = op.t(0), op.t(1), op.v(2)
    if g is None or idx is None or not g.shape or not isinstance(num, int) or isinstance(num, bool):
        return op.partial("embedding", "grad, indices or num_weights not recorded")
    op.check_dtypes(g, idx)
    op.note("the touched rows of the weight gradient written once; its zero fill is the fill_ op's")
    parts = _read(g, idx) + [_size(min(idx.numel, num) * g.shape[-1], g.dtype)]
    return op.work("embedding", _flops_if_floating(g.numel, g.dtype, op), _total(parts), vector_roof(g.dtype),
                   g.dtype)


# ----------------------------------------------------------------------------------------------------------- copy

def _list_itemsize(op: _Op) -> tuple[str | None, int | None]:
    dtype, itemsize = kernel_dtype(op.kernels)
    if itemsize is None:
        op.note("tensor-list dtype not recorded and no kernel name says it: bytes not modelled")
    else:
        op.note("element size from the kernel name")
    return dtype, itemsize


def _copy(op: _Op) -> OpWork:
    name = op.name
    if name in ("cat", "stack"):  # (tensors, dim): each element read once and written once
        shapes = tensor_list(op.arg(0))
        if shapes is None:
            return op.partial("copy", "tensor-list shapes not recorded")
        numel = sum(math.prod(s) for s in shapes)
        dtype, itemsize = _list_itemsize(op)
        return op.work("copy", 0.0, None if itemsize is None else 2.0 * numel * itemsize, None, dtype)
    x = op.t(0)
    if x is None:
        return op.partial("copy", "input shape not recorded")
    op.check_dtypes(x)
    if name in ("fill_", "zero_"):  # written, never read
        return op.work("copy", 0.0, _size(x.numel, x.dtype), None, x.dtype)
    if name == "copy_":  # copy_(self, src, non_blocking): src read, self written (a cast when the dtypes differ)
        src = op.t(1)
        if src is None:
            return op.partial("copy", "source shape not recorded")
        op.check_dtypes(src)
        if src.dtype != x.dtype:
            op.note(f"cast {src.dtype} to {x.dtype}")
        return op.work("copy", 0.0, _total(_read(src) + [_size(x.numel, x.dtype)]), None, x.dtype)
    out_dtype = x.dtype
    if name == "_to_copy":  # _to_copy(self, *, dtype, layout, device, ...)
        out_dtype = scalar_type(op.v(1)) or x.dtype
    elif name == "to":  # to(self, other) | to(self, dtype, ...) | to(self, device, dtype, ...)
        other = op.t(1)
        out_dtype = other.dtype if other is not None else (scalar_type(op.v(1)) or scalar_type(op.v(2)) or x.dtype)
    if out_dtype != x.dtype:
        op.note(f"cast {x.dtype} to {out_dtype}")
    return op.work("copy", 0.0, _total(_read(x) + [_size(x.numel, out_dtype)]), None, x.dtype)


# arange's overloads by how many arguments Kineto records: positions of (start, end, step, dtype or out)
_ARANGE = {2: (None, 0, None, 1), 4: (0, 1, 2, 3), 5: (None, 0, None, 1), 6: (0, 1, None, 2), 7: (0, 1, 2, 3)}


def _arange(op: _Op) -> OpWork:
    """arange (end | start, end[, step], dtype=, ... or out=): ceil((end - start) / step) elements written, never
    read. The overload is told by the argument count (out: 2 and 4, the dtype= forms: 5, 6, 7); the dtype comes
    from the out tensor or dtype=, else int64 when every bound is an integer and float32 otherwise (PyTorch's
    default)."""
    where = _ARANGE.get(len(op.inputs))
    if where is None:
        return op.partial("copy", f"{len(op.inputs)} arguments: not an arange overload")
    start_i, end_i, step_i, dtype_i = where
    start, end = (0 if start_i is None else op.v(start_i)), op.v(end_i)
    step = 1 if step_i is None else op.v(step_i)
    if not all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in (start, end, step)) or step == 0:
        return op.partial("copy", "start, end or step not recorded")
    out = op.t(dtype_i)
    dtype = out.dtype if out is not None else scalar_type(op.v(dtype_i))
    if dtype is None and op.v(dtype_i) is None and out is None:
        dtype = "int64" if all(isinstance(v, int) for v in (start, end, step)) else "float32"
    count = max(0, math.ceil((end - start) / step))  # type: ignore[operator]
    return op.work("copy", 0.0, _size(count, dtype), None, dtype)


# ---------------------------------------------------------------------------------------------------------- index

def _index(op: _Op) -> OpWork:
    name = op.name
    x = op.t(0)
    if x is None:
        return op.partial("index", "input shape not recorded")
    op.check_dtypes(x)
    if name in ("index_select", "gather"):  # (self, dim, index): the gathered elements read, then written
        idx, dim = op.t(2), op.v(1)
        if idx is None or not isinstance(dim, int) or isinstance(dim, bool) or not x.shape:
            return op.partial("index", "index shape or dim not recorded")
        if name == "gather":
            out = idx.numel
        else:
            out = x.numel // x.shape[dim % len(x.shape)] * idx.numel if x.shape[dim % len(x.shape)] else 0
        op.check_dtypes(idx)
        parts = [_size(out, x.dtype)] + _read(idx) + [_size(out, x.dtype)]
        return op.work("index", 0.0, _total(parts), None, x.dtype)
    if name in ("index", "index_put_", "index_put"):  # (self, indices, [values, accumulate])
        shapes = tensor_list(op.arg(1))
        single = op.t(1)
        if shapes is None and single is not None:
            shapes = [single.shape]
        if not shapes or len(shapes) > len(x.shape):
            return op.partial("index", "index shapes not recorded")
        picked = _broadcast(shapes)
        if picked is None:
            return op.partial("index", "index shapes do not broadcast")
        out = math.prod(picked) * math.prod(x.shape[len(shapes):])
        idx_bytes = float(sum(math.prod(s) for s in shapes) * 8)
        op.note("indices taken as int64 on the leading dims")
        if name == "index":  # the gathered elements read, then written
            return op.work("index", 0.0, _total([_size(out, x.dtype), idx_bytes, _size(out, x.dtype)]), None, x.dtype)
        values = op.t(2)
        accumulate = op.v(3) is True
        reads = _read(values) + [idx_bytes] + ([_size(out, x.dtype)] if accumulate else [])
        writes = [_size(out, x.dtype)] if name == "index_put_" else [_size(x.numel, x.dtype)] + _read(x)
        flops = _flops_if_floating(out, x.dtype, op) if accumulate else 0.0
        return op.work("index", flops, _total(reads + writes), vector_roof(x.dtype), x.dtype)
    # scatter(self, dim, index, src | value), scatter_add(self, dim, index, src) and their in-place forms
    idx, src = op.t(2), op.t(3)
    if idx is None:
        return op.partial("index", "index shape not recorded")
    op.check_dtypes(idx, src)
    add = name.startswith("scatter_add")
    scattered = [_size(idx.numel, x.dtype)]
    parts = _read(idx, src) + scattered + (scattered if add else [])  # scatter_add reads what it adds to
    if not name.endswith("_"):  # out of place: self copied to the output first
        parts += [x.nbytes, _size(x.numel, x.dtype)]
    flops = _flops_if_floating(idx.numel, x.dtype, op) if add else 0.0
    return op.work("index", flops, _total(parts), vector_roof(x.dtype), x.dtype)


# ----------------------------------------------------------------------------------------------------------- loss

def _classes(x: Tensor) -> tuple[int, int]:
    """(rows, classes) of a classifier input: (N, C, d1, ...) or (C,)."""
    c = x.shape[1] if len(x.shape) >= 2 else (x.shape[0] if x.shape else 1)
    return (x.numel // c if c else 0), c


def _loss(op: _Op) -> OpWork:
    name = op.name
    if name == "mse_loss":  # (self, target, reduction): subtract, square, add per element
        x, y = op.t(0), op.t(1)
        if x is None or y is None:
            return op.partial("loss", "input shapes not recorded")
        out = x.numel if op.v(2) == 0 else 1
        op.check_dtypes(x, y)
        op.note("3 FLOPs per element")
        return op.work("loss", _flops_if_floating(3 * x.numel, x.dtype, op),
                       _total(_read(x, y) + [_size(out, x.dtype)]), vector_roof(x.dtype), x.dtype)
    backward = name == "nll_loss_backward"
    x, target, weight = (op.t(1), op.t(2), op.t(3)) if backward else (op.t(0), op.t(1), op.t(2))
    if x is None or target is None:
        return op.partial("loss", "input and target shapes not recorded")
    op.check_dtypes(x, target, weight)
    rows, _ = _classes(x)
    reduction = op.v(4 if backward else 3)
    if name == "cross_entropy_loss":  # (self, target, weight, reduction, ignore_index, label_smoothing)
        op.note("log_softmax and nll_loss counted as one pass: 5 FLOPs per element, 1 per row")
        out = rows if reduction == 0 else 1
        flops = SOFTMAX_FLOPS["log_softmax"] * x.numel + rows
        parts = _read(x, target, weight) + [_size(out, x.dtype)]
    elif backward:  # (grad_output, self, target, weight, reduction, ignore_index, total_weight)
        # the input gradient is zeroed by the zero_/fill_ op inside this one (its own kernel): this op's kernel
        # writes one element per row, a sector each
        op.note(f"one element per row written, a {SECTOR}-byte sector each; the zero fill is the fill_ op's")
        flops = rows
        itemsize = x.itemsize
        parts = _read(op.t(0), target, weight, op.t(6)) \
            + [None if itemsize is None else float(rows * max(itemsize, SECTOR))]
    else:  # nll_loss(self, target, weight, reduction, ignore_index): one element of each row gathered
        op.note(f"one element per row gathered, a {SECTOR}-byte sector each")
        out = rows if reduction == 0 else 2  # the loss and total_weight
        flops = rows
        itemsize = x.itemsize
        parts = [None if itemsize is None else float(rows * max(itemsize, SECTOR))] + _read(target, weight) \
            + [_size(out, x.dtype)]
    return op.work("loss", _flops_if_floating(flops, x.dtype, op), _total(parts), vector_roof(x.dtype), x.dtype)


# ------------------------------------------------------------------------------------------------------ optimizer
#
# The fused optimizers, GradScaler's unscale and the _foreach_* ops run ATen's multi-tensor kernels
# (roofline.model.ops.multitensor). Their work per element of the first list (FLOPs, element reads, element
# writes) is one function per op family below, used by the shape model (the recorded list shapes, or the
# parameter shapes `profile` annotates) and by the grid model (the launches' blocks, where the trace recorded no
# shapes: PyTorch keeps none for a list of 30 or more tensors). From pytorch/pytorch aten/src/ATen/native/cuda/:
#   fused Adam(W)  fused_adam_utils.cuh (adam_math, FusedAdamMathFunctor): param, grad, exp_avg, exp_avg_sq (and
#                  max_exp_avg_sq with amsgrad) loaded; param and the moments stored, and the unscaled gradient too
#                  when grad_scale is given ("Conditional Gradient Store when optimizer.step is called by GradScaler")
#   fused SGD      FusedSgdKernel.cu (sgd_math): param, grad (and momentum_buffer) loaded; param (and the buffer)
#                  stored, the gradient too with grad_scale
#   fused Adagrad  fused_adagrad_utils.cuh: param, grad, state_sum loaded; param and state_sum stored, the
#                  gradient too with grad_scale
#   unscale        AmpKernels.cu: multi_tensor_apply<1> with UnaryOpFunctor<T, 1, 1, 0>: each gradient loaded,
#                  multiplied by inv_scale, checked finite, stored back
#   _foreach_*     ForeachFunctors.cuh: Functor<T, depth, r_args_depth, res_arg_index> loads r_args_depth lists
#                  and stores one (res_arg_index); ZeroFunctor loads none

# a launched op's tensor list recorded empty: the profiler kept no shapes for it (seen with PyTorch 2.11 on an
# optimizer step after GradScaler, 2026-12-03)
NO_LIST_SHAPES = "the trace records no shapes for its tensor lists"
ADAM_FLOPS = 13  # m = b1*m + (1-b1)*g (3); v = b2*v + (1-b2)*g*g (4); sqrt(v)/bc2 + eps (3); p -= step*m/denom (3)
ADAGRAD_FLOPS = 7  # s += g*g (2); sqrt(s) + eps (2); p -= clr * g / denom (3)
FOREACH_FLOPS = {"norm": 2, "addcmul": 3, "addcdiv": 3, "lerp": 3, "zero": 0, "copy": 0}
# the ops whose first argument is a list of the step's parameters (or gradients), and the functor of each
FUSED_OPTIMIZERS = ("_fused_adam_", "_fused_adamw_", "_fused_sgd_", "_fused_adagrad_")
MULTI_TENSOR_OPS = FUSED_OPTIMIZERS + ("_amp_foreach_non_finite_check_and_unscale_",)


@dataclass(frozen=True)
class PerElement:
    """An optimizer's or foreach op's work per element of its first list."""
    flops: int
    reads: int  # element streams loaded
    writes: int  # element streams stored
    extra_bytes: float = 0.0  # bytes read once per op, not per element (a tensor repeated through a list)


def _number(value: object) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def _scaled(op: _Op, i: int, flops: int, writes: int) -> tuple[int, int]:
    """GradScaler's grad_scale (argument i) given: each gradient divided by it and stored back unscaled."""
    if tensor(op.arg(i)) is not None:
        op.note("GradScaler's grad_scale: one more FLOP, and the unscaled gradient stored back")
        return flops + 1, writes + 1
    return flops, writes


def _adam_per_element(op: _Op, kernel: MtaKernel | None = None) -> PerElement:
    """_fused_adam_ / _fused_adamw_ (params, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs, state_steps, lr,
    beta1, beta2, weight_decay, eps, amsgrad, maximize, grad_scale, found_inf)."""
    flops, reads, writes = ADAM_FLOPS, 4, 3
    flops, writes = _scaled(op, 13, flops, writes)
    wd = _number(op.v(9))
    if wd:
        flops += 1 if op.name == "_fused_adamw_" else 2  # p *= 1 - lr*wd | g += wd*p
    if op.v(11) is True or (kernel is not None and kernel.depth == 5):  # amsgrad: max_exp_avg_sq read and written
        flops, reads, writes = flops + 1, reads + 1, writes + 1
    return PerElement(flops, reads, writes)


def _sgd_per_element(op: _Op, kernel: MtaKernel | None = None) -> PerElement:
    """_fused_sgd_(params, grads, momentum_buffer_list, weight_decay, momentum, lr, dampening, nesterov, maximize,
    is_first_step, grad_scale, found_inf)."""
    momentum = _number(op.v(4))
    with_momentum = bool(momentum) or (kernel is not None and kernel.depth == 3)
    if with_momentum:  # buf = m*buf + (1-d)*g (3); p -= lr*buf (2); read p, g, buf; write p, buf
        flops, reads, writes = 5, 3, 2
        if op.v(7) is True:
            flops += 2  # nesterov: g + m*buf
    else:  # p -= lr*g; read p, g; write p
        flops, reads, writes = 2, 2, 1
    if _number(op.v(3)):
        flops += 2
    flops, writes = _scaled(op, 10, flops, writes)
    return PerElement(flops, reads, writes)


def _adagrad_per_element(op: _Op, kernel: MtaKernel | None = None) -> PerElement:
    """_fused_adagrad_(params, grads, state_sums, state_steps, lr, lr_decay, weight_decay, eps, maximize,
    grad_scale, found_inf): read param, grad, state_sum; write param, state_sum."""
    flops, reads, writes = ADAGRAD_FLOPS, 3, 2
    if _number(op.v(6)):
        flops += 2  # g += wd*p
    flops, writes = _scaled(op, 9, flops, writes)
    return PerElement(flops, reads, writes)


def _unscale_per_element(op: _Op, kernel: MtaKernel | None = None) -> PerElement:
    """_amp_foreach_non_finite_check_and_unscale_(grads, found_inf, inv_scale): every gradient read, multiplied by
    inv_scale, checked finite and written back."""
    op.note("2 FLOPs per element (the multiply and the finite check); read and written back")
    return PerElement(2, 1, 1)


_PER_ELEMENT: dict[str, Callable[..., PerElement]] = {
    "_fused_adam_": _adam_per_element, "_fused_adamw_": _adam_per_element, "_fused_sgd_": _sgd_per_element,
    "_fused_adagrad_": _adagrad_per_element, "_amp_foreach_non_finite_check_and_unscale_": _unscale_per_element,
}


def _list_model(op: _Op) -> OpWork:
    """A fused optimizer or the unscale from its first list's recorded shapes (the shape model)."""
    params = tensor_list(op.arg(0))
    if not params:  # an empty list: the op would have launched nothing
        return op.partial("optimizer", NO_LIST_SHAPES)
    n = sum(math.prod(s) for s in params)
    per = _PER_ELEMENT[op.name](op)  # the model first in the note, then what it assumed
    op.notes.insert(0, f"shape model: {len(params)} tensors, {n:,} elements per list from their recorded shapes")
    return _per_element_work(op, per, n)


def _per_element_work(op: _Op, per: PerElement, n: float, typed: tuple[str | None, int | None] | None = None
                      ) -> OpWork:
    """The op's work over n elements per list; `typed`: (dtype, itemsize) the caller read, else the kernel names'."""
    op.note(f"{per.flops} FLOPs, {per.reads} element reads and {per.writes} element writes per element")
    dtype, itemsize = typed if typed is not None else _list_itemsize(op)
    compute = dtype or ("float32" if itemsize == 4 else None)
    flops = float(per.flops * n) if compute is None or compute in FLOATING else 0.0
    nbytes = None if itemsize is None else float((per.reads + per.writes) * n * itemsize + per.extra_bytes)
    return op.work("optimizer", flops, nbytes, vector_roof(compute), dtype)


def _amp_update_scale(op: _Op) -> OpWork:
    """_amp_update_scale_(self, growth_tracker, found_inf, growth_factor, backoff_factor, interval): the scale and the
    growth tracker read and written, found_inf read; one multiply."""
    scale, tracker, found = op.t(0), op.t(1), op.t(2)
    if scale is None or tracker is None or found is None:
        return op.partial("optimizer", "scale tensors not recorded")
    op.check_dtypes(scale, tracker, found)
    return op.work("optimizer", _flops_if_floating(scale.numel, scale.dtype, op),
                   _total(_read(scale, tracker, found) + [scale.nbytes, tracker.nbytes]), vector_roof(scale.dtype),
                   scale.dtype)


def _random(op: _Op) -> OpWork:
    """random_, uniform_, normal_, bernoulli_, exponential_ (in place): every element written once; the generator's
    integer work is not floating-point."""
    x = op.t(0)
    if x is None:
        return op.partial("random", "tensor shape not recorded")
    op.check_dtypes(x)
    op.note("written once; the random generator's integer arithmetic counted as no FLOPs")
    return op.work("random", 0.0, _size(x.numel, x.dtype), None, x.dtype)


def _foreach(op: _Op) -> OpWork:
    """_foreach_<op>[_](lists, scalars...): every tensor list read once; the first written back (in place) or a new
    list of its shapes written; _foreach_zero_ only writes, _foreach_copy_ reads the source, _foreach_norm writes one
    value per tensor."""
    base = _foreach_base(op.name)
    inplace = op.name.endswith("_")
    lists = [s for s in (tensor_list(a) for a in op.inputs) if s is not None]
    if not lists or not any(lists):
        return op.partial("optimizer", NO_LIST_SHAPES)
    first = sum(math.prod(s) for s in lists[0])
    reads = sum(sum(math.prod(s) for s in shapes) for shapes in lists)
    if base == "zero":
        reads = 0
    elif base == "copy":
        reads -= first  # the destination is not read
    writes = len(lists[0]) if base == "norm" else first
    per = _foreach_flops(base, op)
    if inplace and base not in ("zero", "copy"):
        op.note("in place: the first list written back")
    op.notes.insert(0, f"shape model: {len(lists[0])} tensors, {first:,} elements in the first list from their "
                       "recorded shapes")
    dtype, itemsize = _list_itemsize(op)
    compute = dtype or ("float32" if itemsize == 4 else None)
    flops = float(per * first) if compute is None or compute in FLOATING else 0.0
    return op.work("optimizer", flops, None if itemsize is None else float((reads + writes) * itemsize),
                   vector_roof(compute), dtype)


def _foreach_base(name: str) -> str:
    return name[len("_foreach_"):].rstrip("_")


def _foreach_flops(base: str, op: _Op) -> int:
    per = FOREACH_FLOPS.get(base, ELEMENTWISE_FLOPS.get(base, 1))
    if per != 1:
        op.note(f"{base}: {per} FLOPs per element")
    return per


def _foreach_per_element(op: _Op, kernel: MtaKernel) -> PerElement | None:
    """A _foreach_ op's work per element from its kernel's functor: r_args_depth lists loaded, one stored (none
    loaded by ZeroFunctor; LpNormFunctor loads one and stores a partial sum per block, counted as none)."""
    base = _foreach_base(op.name)
    flops = _foreach_flops(base, op)
    if kernel.functor.startswith("Zero"):
        return PerElement(flops, 0, 1)
    if "Norm" in kernel.functor:
        return PerElement(flops, 1, 0)
    if kernel.reads is None:
        return None
    return PerElement(flops, kernel.reads, 1)


STEP_COUNTER = ("step-counter model: the optimizer's step counters (torch/optim/adam.py, _fused_adam: _foreach_add_(state_steps, 1) "
                "before the fused step, _foreach_sub_(state_steps, [found_inf] * n) after it): one 1-element "
                "tensor per parameter, one block each: {n} tensors")


def model_from_grid(name: str, inputs: Sequence[OpInput], launches: Sequence[tuple[str, Sequence[int] | None]],
                    tensors: int | None = None, tensors_from: str = "", step_counter: bool = False
                    ) -> OpWork | None:
    """The work of a multi-tensor op whose lists the trace recorded without shapes, from its kernels' launches
    (name, grid): each block one chunk of CHUNK_SIZE elements, so blocks x CHUNK_SIZE elements per list at most
    (the grid model; roofline.model.ops.multitensor). `tensors`: how many tensors the lists hold, when the trace
    tells (the lower bound, named in the note with `tensors_from`). `step_counter`: the op is a fused optimizer's
    step counter (its list one 1-element tensor per parameter, so exactly one element per block). None when the
    op has no per-element model or no launch is a multi-tensor kernel with a grid."""
    if not isinstance(name, str):
        return None
    name = name.partition("::")[2] if name.startswith("aten::") else name
    name = name.split(".")[0]
    parsed = [(parse_kernel(k), blocks_of(g)) for k, g in launches]
    mta = [(k, b) for k, b in parsed if k is not None and b]
    if not mta:
        return None
    kernel = mta[0][0]
    op = _Op(name, inputs, [k for k, _ in launches])
    if name in _PER_ELEMENT:
        per: PerElement | None = _PER_ELEMENT[name](op, kernel)
    elif name.startswith("_foreach_"):
        per = _foreach_per_element(op, kernel)
    else:
        per = None
    if per is None:
        return None
    dtype = next((k.dtype for k, _ in mta if k.dtype), None)
    itemsize = ITEMSIZE.get(dtype) if dtype else None
    if itemsize is None:
        op.note("no element type in the kernel's template arguments: bytes not modelled")
    else:
        op.note(f"element type {dtype} from the kernel's template arguments")
    blocks = [b for _, b in mta]
    if step_counter:  # the model first in the note, then what it assumed
        n = float(sum(blocks))
        if per.reads == 2 and _foreach_base(name) == "sub" and itemsize:  # [found_inf] * n: one tensor, read once
            per = PerElement(per.flops, 1, per.writes, float(itemsize))
        op.notes.insert(0, STEP_COUNTER.format(n=int(n)))
    else:
        grid = grid_elements(blocks, tensors)
        assert grid is not None
        n = float(grid.upper)
        op.notes.insert(0, grid.describe(tensors_from))
    return _per_element_work(op, per, n, (dtype, itemsize))


# -------------------------------------------------------------------------------------------------------- dispatch

_MODELS: dict[str, Callable[[_Op], OpWork]] = {
    **dict.fromkeys(("mm", "addmm", "bmm", "baddbmm", "matmul", "linear", "mv", "dot", "_scaled_mm", "_int_mm"),
                    _gemm),
    **dict.fromkeys(_CONV, _conv),
    "convolution_backward": _conv_backward,
    **dict.fromkeys(_POOL, _pool),
    "max_pool2d_with_indices_backward": _max_pool_backward,
    **dict.fromkeys(_ATTENTION, _attention),
    **dict.fromkeys(REDUCTIONS, _reduction),
    **dict.fromkeys(("layer_norm", "native_layer_norm", "rms_norm", "_fused_rms_norm"), _layer_norm),
    **dict.fromkeys(("native_layer_norm_backward", "_fused_rms_norm_backward"), _layer_norm_backward),
    **dict.fromkeys(_BATCH_NORM, _batch_norm),
    **dict.fromkeys(("native_batch_norm_backward", "batch_norm_backward", "cudnn_batch_norm_backward"),
                    _batch_norm_backward),
    **dict.fromkeys(("group_norm", "native_group_norm"), _group_norm),
    "native_group_norm_backward": _group_norm_backward,
    **dict.fromkeys(("softmax", "_softmax", "log_softmax", "_log_softmax"), _softmax),
    **dict.fromkeys(("_softmax_backward_data", "_log_softmax_backward_data"), _softmax_backward),
    "embedding": _embedding,
    **dict.fromkeys(("embedding_backward", "embedding_dense_backward"), _embedding_backward),
    **dict.fromkeys(("cat", "stack", "copy_", "_to_copy", "to", "clone", "contiguous", "fill_", "zero_"), _copy),
    "arange": _arange,
    **dict.fromkeys(("index", "index_select", "gather", "scatter", "scatter_", "scatter_add", "scatter_add_",
                     "index_put_", "index_put"), _index),
    **dict.fromkeys(("nll_loss", "nll_loss_forward", "nll_loss_nd", "nll_loss_backward", "cross_entropy_loss",
                     "mse_loss"), _loss),
    **dict.fromkeys(MULTI_TENSOR_OPS, _list_model),
    "_amp_update_scale_": _amp_update_scale,
    **dict.fromkeys(("random_", "uniform_", "normal_", "bernoulli_", "exponential_"), _random),
}


def _model_for(name: str, op: _Op) -> Callable[[_Op], OpWork] | None:
    if name in ("max", "min") and op.t(1) is not None:
        return _elementwise  # max(self, other): the elementwise maximum
    if name in _MODELS:
        return _MODELS[name]
    if name.startswith("_foreach_"):
        return _foreach
    base = name[:-1] if name.endswith("_") and not name.startswith("__") else name
    if base in ELEMENTWISE_FLOPS:
        return _elementwise
    return None


def model_op(name: str, inputs: Sequence[OpInput], kernel_names: Sequence[str] = ()) -> OpWork | None:
    """The work of one ATen op ("aten::mm") from its recorded arguments; None for an op without a model. A model
    whose arguments were not recorded returns its class with flops and bytes None and a note saying what is
    missing. kernel_names (the kernels the op launched) only give hints: TF32, causal masking, a list's dtype."""
    if not isinstance(name, str):
        return None
    if "::" in name:
        namespace, _, name = name.partition("::")
        if namespace != "aten":
            return None
    name = name.split(".")[0]
    op = _Op(name, inputs, kernel_names)
    model = _model_for(name, op)
    return None if model is None else model(op)
