"""Analytic models of common PyTorch ops from the input shapes emit_nvtx(record_shapes=True) records.

  matmul family (mm, addmm, bmm, baddbmm, matmul, linear)   FLOPs 2*M*N*K (times the batch); bytes: the inputs
                                                            and the output once
  softmax, log_softmax, layer_norm, elementwise ops         FLOPs not modelled (None: the counters stand); bytes:
                                                            the inputs and the output once

NVTX shapes carry no dtypes, so bytes use one element size for the whole program (`program_itemsize`: that of its
tensor-core work, 2 B for BF16/FP16, else 4 B). Ops with no entry here (convolutions: NVTX gives no strides) get
no model. Pure.
"""

from __future__ import annotations

import math
from typing import Any, Mapping, Sequence

Shape = Sequence[int]

_MATMUL = {"mm", "addmm", "bmm", "baddbmm", "matmul", "linear", "addbmm"}
_NORMS = {"softmax", "_softmax", "log_softmax", "_log_softmax", "layer_norm", "native_layer_norm", "rms_norm",
          "_fused_rms_norm", "group_norm", "native_group_norm"}
_ELEMENTWISE = {"add", "add_", "sub", "sub_", "mul", "mul_", "div", "div_", "gelu", "relu", "relu_", "silu",
                "tanh", "pow", "neg", "exp", "sigmoid", "where", "copy_", "clone", "contiguous", "_to_copy", "to",
                "dropout", "masked_fill", "masked_fill_", "rsqrt", "sqrt", "threshold", "hardtanh", "clamp"}
_TENSOR_ITEMSIZE = {"bf16": 2, "fp16": 2, "tf32": 4, "fp8": 1, "int8": 1, "fp64": 8}


def _numel(shape: Shape) -> int:
    return math.prod(shape) if shape else 1


def _broadcast(shapes: Sequence[Shape]) -> list[int] | None:
    ndim = max((len(s) for s in shapes), default=0)
    out = []
    for i in range(1, ndim + 1):
        dims = {s[-i] for s in shapes if len(s) >= i} - {1}
        if len(dims) > 1:
            return None
        out.append(dims.pop() if dims else 1)
    return out[::-1]


def matmul_dims(op: str, shapes: Sequence[Shape]) -> tuple[int, int, int, int] | None:
    """(batch, M, N, K) of a matmul-like op from its input shapes; None when they do not read as one."""
    s = [list(x) for x in shapes if x is not None]
    try:
        if op == "mm" and len(s) >= 2 and len(s[0]) == len(s[1]) == 2 and s[0][1] == s[1][0]:
            return 1, s[0][0], s[1][1], s[0][1]
        if op == "addmm" and len(s) >= 3 and len(s[1]) == len(s[2]) == 2 and s[1][1] == s[2][0]:
            return 1, s[1][0], s[2][1], s[1][1]
        if op == "bmm" and len(s) >= 2 and len(s[0]) == len(s[1]) == 3 and s[0][2] == s[1][1]:
            return s[0][0], s[0][1], s[1][2], s[0][2]
        if op == "baddbmm" and len(s) >= 3 and len(s[1]) == len(s[2]) == 3 and s[1][2] == s[2][1]:
            return s[1][0], s[1][1], s[2][2], s[1][2]
        if op == "addbmm" and len(s) >= 3 and len(s[1]) == len(s[2]) == 3 and s[1][2] == s[2][1]:
            return s[1][0], s[1][1], s[2][2], s[1][2]
        if op == "linear" and len(s) >= 2 and len(s[1]) == 2 and s[0] and s[0][-1] == s[1][1]:
            return 1, _numel(s[0][:-1]), s[1][0], s[1][1]
        if op == "matmul" and len(s) >= 2 and len(s[0]) >= 2 and len(s[1]) >= 2 and s[0][-1] == s[1][-2]:
            batch = _broadcast([s[0][:-2], s[1][:-2]])
            if batch is None:
                return None
            return _numel(batch), s[0][-2], s[1][-1], s[0][-1]
    except (TypeError, IndexError):
        return None
    return None


def op_model(op: str, shapes: Sequence[Shape], itemsize: int) -> tuple[float | None, float | None]:
    """(FLOPs, DRAM bytes) the op needs at least; (None, None) when no model is known for it."""
    name = op.split("::")[-1]
    shapes = [list(x) for x in shapes]
    if name in _MATMUL:
        dims = matmul_dims(name, shapes)
        if dims is None:
            return None, None
        b, m, n, k = dims
        inputs = sum(_numel(x) for x in shapes if x)
        return 2.0 * b * m * n * k, float((inputs + b * m * n) * itemsize)
    tensors = [x for x in shapes if x]  # [] is a scalar argument (or an optional left out)
    if not tensors:
        return None, None
    if name in _NORMS:
        x = tensors[0]
        params = sum(_numel(t) for t in tensors[1:])
        return None, float((2 * _numel(x) + params) * itemsize)
    if name in _ELEMENTWISE:
        out = _broadcast(tensors)
        if out is None:
            return None, None
        return None, float((sum(_numel(t) for t in tensors) + _numel(out)) * itemsize)
    return None, None


def program_itemsize(entries: Sequence[Mapping[str, Any]]) -> int:
    """The element size of a program's tensors, from its tensor-core work (the precision with the most tensor
    FLOPs); 4 B when it has none."""
    work: dict[str, float] = {}
    for e in entries:
        for part in e.get("work") or []:
            roof = str(part.get("work", ""))
            if roof.endswith("_tensor"):
                work[roof] = work.get(roof, 0.0) + float(part.get("flops") or 0.0)
    if not work:
        return 4
    best = max(work, key=lambda r: work[r])
    return _TENSOR_ITEMSIZE.get(best.removesuffix("_tensor"), 4)
