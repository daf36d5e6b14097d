"""The op models on the Nsight Compute path: NVTX ranges of emit_nvtx(record_shapes=True) read into the one op
physics of roofline.model.ops.aten, which the PyTorch-trace path uses too.

NVTX records less than Kineto: input shapes only, no dtypes, no strides and no values of the non-tensor arguments
(a scalar or an absent optional is `[]`). So every tensor takes one element size for the whole program
(`program_itemsize`: that of its tensor-core work, 2 B for BF16/FP16, else 4 B), tensors are taken as contiguous,
and an argument the model reads a value from (a softmax's dim, a convolution's stride, attention's is_causal) is
unknown: the model then falls back as it does for a trace that lacks it (the kernel names of the call, passed in,
can still say "causal"), or gives no model. Pure.
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

from roofline.model.ops.aten import model_op
from roofline.model.ops.args import OpInput

Shape = Sequence[int]

_TENSOR_ITEMSIZE = {"bf16": 2, "fp16": 2, "tf32": 4, "fp8": 1, "int8": 1, "fp64": 8}
# the C++ dtype spelling Kineto would record for a tensor of that element size (the model reads bytes from it)
_DTYPE = {1: "signed char", 2: "c10::BFloat16", 4: "float", 8: "double"}


def op_model(op: str, shapes: Sequence[Shape], itemsize: int,
             kernel_names: Sequence[str] = ()) -> tuple[float | None, float | None]:
    """(FLOPs, DRAM bytes) the op needs at least; (None, None) when no model is known for it or the shapes do not
    read as one (a matmul whose K does not match: no model rather than a wrong one)."""
    dtype = _DTYPE.get(itemsize, "float")
    inputs = [OpInput(dims=tuple(s), dtype=dtype if s else "Scalar") for s in shapes]
    work = model_op(op.split("::")[-1], inputs, tuple(kernel_names))
    if work is None:
        return None, None
    return work.flops, work.bytes


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
