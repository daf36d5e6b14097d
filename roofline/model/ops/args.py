"""An ATen op's arguments as the PyTorch profiler (Kineto) records them, read into shapes, dtypes and values.

With `record_shapes=True` Kineto records, per argument of an op and in schema order (keyword-only ones too): its
"Input Dims", "Input type", "Input Strides" and "Concrete Inputs"; never the outputs. A tensor's type is its dtype
in C++ spelling ("float", "c10::BFloat16"); a Python number is "Scalar", an int list "ScalarList", an absent optional
argument "" with dims []; a list of tensors is "TensorList" with the shapes nested in its dims and no element dtype
(that comes from a kernel name or nowhere). Concrete values are strings ("1", "False", "[1, 1]", "" for none). Pure.
"""

from __future__ import annotations

import ast
import math
import re
from dataclasses import dataclass
from typing import Sequence

from roofline.model.types import ITEMSIZE as _MODEL_ITEMSIZE

# Kineto's "Input type" of a tensor -> roofline's dtype name.
DTYPES = {
    "float": "float32", "double": "float64", "c10::Half": "float16", "c10::BFloat16": "bfloat16",
    "c10::Float8_e4m3fn": "float8_e4m3", "c10::Float8_e4m3fnuz": "float8_e4m3",
    "c10::Float8_e5m2": "float8_e5m2", "c10::Float8_e5m2fnuz": "float8_e5m2",
    "long int": "int64", "long": "int64", "int": "int32", "short int": "int16", "short": "int16",
    "signed char": "int8", "unsigned char": "uint8", "bool": "bool",
    "c10::complex<float>": "complex64", "c10::complex<double>": "complex128",
}
ITEMSIZE = {**_MODEL_ITEMSIZE, "bool": 1}
FLOATING = {"float64", "float32", "float16", "bfloat16", "float8_e4m3", "float8_e5m2"}
# Input types that are never a tensor (a tensor list is read by tensor_list, not tensor).
NON_TENSOR = {"", "Scalar", "ScalarList", "TensorList", "GenericList", "None", "Device", "Layout", "ScalarType",
              "MemoryFormat", "string", "str", "Tuple"}
# c10::ScalarType codes, as a `dtype=` argument appears among the concrete inputs ("15" is bfloat16).
SCALAR_TYPES = {0: "uint8", 1: "int8", 2: "int16", 3: "int32", 4: "int64", 5: "float16", 6: "float32",
                7: "float64", 9: "complex64", 10: "complex128", 11: "bool", 15: "bfloat16", 23: "float8_e5m2",
                24: "float8_e4m3", 25: "float8_e5m2", 26: "float8_e4m3"}
_MAX_VALUE_CHARS = 4096  # longer concrete values are kept as text: nothing modelled needs one


@dataclass(frozen=True)
class OpInput:
    """One argument of an ATen op as Kineto records it. A TensorList's dims are a tuple of shapes."""

    dims: tuple[int, ...] | None  # "Input Dims": the shape; None (or ()) for a non-tensor
    dtype: str | None  # "Input type": "float", "c10::BFloat16", "long int", "Scalar", "ScalarList", "TensorList", ""
    strides: tuple[int, ...] | None = None  # "Input Strides" when recorded
    value: object = ""  # "Concrete Inputs": "1", "False", "[1, 1]", "" when none


@dataclass(frozen=True)
class OpWork:
    """What an op must do at least: FLOPs, DRAM bytes (every input read once, every output written once) and the
    compute roof it runs under."""

    flops: float | None  # None: not modelled
    bytes: float | None  # the minimum DRAM traffic; None: not modelled (an unknown dtype, a missing shape)
    roof: str | None  # a name in roofline.model.types.ROOF_NAMES; None where there is no floating-point work
    dtype: str | None  # float32, float16, bfloat16, float64, ...
    # gemm, conv, attention, elementwise, reduction, norm, softmax, pool, embedding, copy, index, loss, optimizer
    op_class: str
    note: str = ""  # the assumptions made


@dataclass(frozen=True)
class Tensor:
    """A tensor argument: its shape, dtype and the elements it holds in memory."""

    shape: tuple[int, ...]
    dtype: str | None  # None: a type string not in DTYPES
    raw: str  # the type as recorded
    stored: int  # elements in memory: an expanded (stride-0) dimension holds its element once

    @property
    def numel(self) -> int:
        return math.prod(self.shape)

    @property
    def itemsize(self) -> int | None:
        return ITEMSIZE.get(self.dtype) if self.dtype else None

    @property
    def nbytes(self) -> float | None:
        """Bytes to read it once: its stored elements."""
        return None if self.itemsize is None else float(self.stored * self.itemsize)


def _is_int_seq(x: object) -> bool:
    return isinstance(x, (tuple, list)) and all(isinstance(d, int) and not isinstance(d, bool) for d in x)


def stored_elements(shape: Sequence[int], strides: Sequence[int] | None) -> int:
    """Elements a view holds in memory: a dimension of stride 0 (an expand, a broadcast) holds one."""
    if strides is None or not _is_int_seq(strides) or len(strides) != len(shape):
        return math.prod(shape)
    return math.prod(d if s != 0 else min(d, 1) for d, s in zip(shape, strides))


def tensor(inp: OpInput | None) -> Tensor | None:
    """The tensor an argument is, or None for a scalar, a list, an absent optional or an unreadable entry."""
    if inp is None or inp.dtype is None or inp.dtype in NON_TENSOR or inp.dims is None:
        return None
    if not _is_int_seq(inp.dims) or any(d < 0 for d in inp.dims):
        return None
    shape = tuple(inp.dims)
    if inp.dtype not in DTYPES and not shape:
        return None  # an unknown kind of argument without a shape: not taken for a tensor
    return Tensor(shape, DTYPES.get(inp.dtype), inp.dtype, stored_elements(shape, inp.strides))


def tensor_list(inp: OpInput | None) -> list[tuple[int, ...]] | None:
    """The shapes of a TensorList argument (nested dims), or None when the argument is not one."""
    if inp is None or inp.dims is None or not isinstance(inp.dims, (tuple, list)):
        return None
    if inp.dtype == "TensorList" and len(inp.dims) == 0:
        return []
    if inp.dims and all(_is_int_seq(d) for d in inp.dims):
        return [tuple(d) for d in inp.dims]
    return None


def parse_value(value: object) -> object:
    """A concrete input as a Python value: "1" -> 1, "False" -> False, "[1, 1]" -> [1, 1], "" -> None; text that
    reads as none of these stays text."""
    if not isinstance(value, str):
        return value
    s = value.strip()
    if s in ("", "None"):
        return None
    if s in ("True", "true", "False", "false"):
        return s in ("True", "true")
    if len(s) > _MAX_VALUE_CHARS:
        return s
    try:
        return ast.literal_eval(s)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return s


def int_tuple(value: object, n: int) -> tuple[int, ...] | None:
    """An int or int list argument as n ints (a single value repeats, as PyTorch expands `stride=2`)."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return (value,) * n
    if _is_int_seq(value) and len(value) in (1, n):  # type: ignore[arg-type]
        return tuple(value) * (n if len(value) == 1 else 1)  # type: ignore[arg-type]
    return None


def scalar_type(value: object) -> str | None:
    """A `dtype=` concrete input (a c10::ScalarType code) as a dtype name."""
    return SCALAR_TYPES.get(value) if isinstance(value, int) and not isinstance(value, bool) else None


# Kernel-name spellings of a dtype, most telling first: a bfloat16 kernel also names float (its math type).
_KERNEL_DTYPES = (
    (re.compile(r"c10::BFloat16|__nv_bfloat16|\bbf16\b"), "bfloat16"),
    (re.compile(r"c10::Half|\b__half\b"), "float16"),
    (re.compile(r"\bdouble\b"), "float64"),
    (re.compile(r"\bfloat\b"), "float32"),
)
_FUNCTOR_DTYPE = re.compile(r"Functor<\s*([\w:]+(?: int)?)")
_OPAQUE = re.compile(r"OpaqueType<(\d+)u?>")


def kernel_dtype(kernel_names: Sequence[str]) -> tuple[str | None, int | None]:
    """(dtype, itemsize) a kernel's templated name shows, for ops whose arguments carry none (tensor lists);
    (None, None) when no name says. `OpaqueType<2u>` (cat's copies) gives the itemsize alone."""
    for name in kernel_names:
        m = _FUNCTOR_DTYPE.search(name)
        if m and m.group(1) in DTYPES:
            dtype = DTYPES[m.group(1)]
            return dtype, ITEMSIZE[dtype]
    for name in kernel_names:
        m = _OPAQUE.search(name)
        if m:
            return None, int(m.group(1))
    for name in kernel_names:
        for pattern, dtype in _KERNEL_DTYPES:
            if pattern.search(name):
                return dtype, ITEMSIZE[dtype]
    return None, None


def matrix_roof(dtype: str | None, kernel_names: Sequence[str], notes: list[str]) -> str | None:
    """The tensor-core roof of a GEMM, convolution or attention by dtype; float32 is TF32 when a kernel name says
    so (cuBLAS/cuDNN "tf32", CUTLASS "tensorop_s1688"), else the CUDA cores' FP32."""
    if dtype == "float32":
        if says_tf32(kernel_names):
            notes.append("TF32 from the kernel name")
            return "tf32_tensor"
        return "fp32"
    if dtype == "float64":
        notes.append("FP64 tensor cores assumed (cuBLAS and cuDNN use DMMA on sm80 and later)")
        return "fp64_tensor"
    return {"float16": "fp16_tensor", "bfloat16": "bf16_tensor", "float8_e4m3": "fp8_tensor",
            "float8_e5m2": "fp8_tensor", "int8": "int8_tensor"}.get(dtype or "")


def vector_roof(dtype: str | None) -> str | None:
    """The CUDA-core roof of a non-matrix op. PyTorch computes float16 and bfloat16 elementwise, reduction and
    normalisation work in float32 (its opmath type), so those run under the FP32 roof; integer ops have none."""
    if dtype == "float64":
        return "fp64"
    if dtype in ("float32", "float16", "bfloat16"):
        return "fp32"
    return None


def says_tf32(kernel_names: Sequence[str]) -> bool:
    return any("tf32" in k.lower() or re.search(r"tensorop_s\d+gemm", k) for k in kernel_names)


def says_causal(kernel_names: Sequence[str]) -> bool:
    return any("causal" in k.lower() for k in kernel_names)
