"""ATen's multi-tensor kernels (multi_tensor_apply) as a trace records their launches: how many elements a launch's
grid covers, and what its templated kernel name says about the lists it reads and writes. Pure.

PyTorch's profiler writes no shapes for a tensor list of 30 or more tensors (pytorch/pytorch#109751), so the fused
optimizers, GradScaler's unscale and the `_foreach_*` ops of any real model arrive without their sizes. Every
kernel launch still records its grid, and ATen gives each block one fixed chunk of one tensor
(pytorch/pytorch aten/src/ATen/native/cuda/MultiTensorApply.cuh, multi_tensor_apply and
multi_tensor_apply_for_fused_optimizer):

  - kChunkSize = 65536 elements per block, kBlockSize = 512 threads;
  - a tensor of n elements takes ceil(n / kChunkSize) blocks, each a chunk of it; only its last chunk is partial;
    an empty tensor takes none;
  - a launch is cut when its blocks reach depth_to_max_blocks (320 for every depth; 2240 with the 32 KB kernel
    arguments of CUDA 12.1+) or its tensors reach depth_to_max_tensors ({110, 64, 48, 36, 30} by list depth; 7x
    with the large arguments); a tensor cut by a full launch goes on in the next one.

So the elements of a launch are at most blocks x kChunkSize, an upper bound: it is exact only when every tensor's
last chunk is full, and overcounts by less than one chunk per tensor. With the number of tensors T known, at least
(blocks - T) x kChunkSize + T (every chunk but each tensor's last is full, and a last chunk holds one element or
more). The kernel's name gives the element type and, for the foreach functors
(aten/src/ATen/native/cuda/ForeachFunctors.cuh: `Functor<T, depth, r_args_depth, res_arg_index>`), how many
lists each block reads (r_args_depth) and which it writes (res_arg_index); the fused optimizers' functors
(FusedAdamMathFunctor<T, depth, ...>, FusedSgdMathFunctor<T, depth>, FusedAdagradMathFunctor<T>) give their
element type and depth.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from typing import Sequence

from roofline.model.ops.args import DTYPES, ITEMSIZE
from roofline.model.counts import counted

CHUNK_SIZE = 65536  # kChunkSize: the elements one block handles
BLOCK_SIZE = 512  # kBlockSize: the threads of a block
# depth_to_max_tensors and depth_to_max_blocks, by list depth 1-5 (DepthToMaxConfig<false>; <true> for the 32 KB
# kernel arguments of CUDA 12.1+, where the driver allows them)
MAX_TENSORS = (110, 64, 48, 36, 30)
MAX_BLOCKS = 320
MAX_TENSORS_LARGE_ARGS = (770, 448, 336, 252, 210)
MAX_BLOCKS_LARGE_ARGS = 2240

GRID_MODEL = "grid model"  # how a note names this model (the importer looks for it)
_KERNEL = re.compile(r"multi_tensor_apply_kernel\s*<")
_METADATA = re.compile(r"(\w*Metadata)\s*<\s*(?:([\w:]+(?:<[^<>]*>)?)\s*,\s*)?(\d+)")
_FUNCTOR = re.compile(r"(\w+Functor\w*)\s*<\s*([\w:]+(?: int)?(?:<[^<>]*>)?)\s*(?:,\s*(\d+)\s*)?"
                      r"(?:,\s*(\d+)\s*,\s*(\d+)\s*)?[,>]")


@dataclass(frozen=True)
class MtaKernel:
    """What a multi_tensor_apply_kernel's templated name says."""
    metadata: str  # TensorListMetadata, TensorListScalarListMetadata, FusedOptimizerTensorListMetadata
    depth: int  # the lists the kernel is handed
    functor: str  # FusedAdamMathFunctor, UnaryOpFunctor, BinaryOpListAlphaFunctor, LpNormFunctor, ...
    dtype: str | None  # the functor's element type as roofline names it (float32, bfloat16...); None: not said
    reads: int | None  # a foreach functor's r_args_depth: the lists each block loads
    res: int | None  # a foreach functor's res_arg_index: the list it stores into

    @property
    def fused(self) -> bool:
        """A fused optimizer's functor (its template arguments after the depth are not r_args_depth, res)."""
        return self.functor.startswith("Fused")

    @property
    def itemsize(self) -> int | None:
        return ITEMSIZE.get(self.dtype) if self.dtype else None


@functools.lru_cache(maxsize=1 << 12)  # a trace launches the same few kernels many times
def parse_kernel(name: str) -> MtaKernel | None:
    """The multi-tensor kernel a launch's name spells (Kineto's `(anonymous namespace)::` and ncu's `<unnamed>::`
    alike); None for any other kernel."""
    if not isinstance(name, str) or not _KERNEL.search(name):
        return None
    body = name[_KERNEL.search(name).end():]  # type: ignore[union-attr]
    meta = _METADATA.search(body)
    functor = _FUNCTOR.search(body)
    if functor is None or (meta is None and functor.group(3) is None):
        return None
    numbers = [g for g in (meta.group(3) if meta is not None else None, *functor.group(3, 4, 5)) if g is not None]
    if any(len(g) > 2 for g in numbers):  # ATen's depths are 1 to 5: a longer number is no kernel of its
        return None
    depth = int(meta.group(3) if meta is not None else functor.group(3))
    dtype = DTYPES.get(functor.group(2).strip())
    fused = functor.group(1).startswith("Fused")
    reads = res = None
    if not fused and functor.group(4) is not None:
        reads, res = int(functor.group(4)), int(functor.group(5))
    # depth_to_max_tensors has an entry for depths 1-5; a foreach functor reads 1 to depth lists and stores into one
    # of them (ForeachFunctors.cuh): a name outside that is no multi-tensor kernel ATen builds (read as none)
    if not 1 <= depth <= len(MAX_TENSORS) or reads is not None and not (1 <= reads <= depth and 0 <= res < depth):
        return None
    return MtaKernel(meta.group(1) if meta is not None else "", depth, functor.group(1), dtype, reads, res)


def blocks_of(grid: Sequence[int] | None) -> int | None:
    """The blocks of a launch: grid x * y * z (multi_tensor_apply launches a 1-D grid)."""
    if not grid or any(not isinstance(g, int) or isinstance(g, bool) or g < 0 for g in grid):
        return None
    n = 1
    for g in grid:
        n *= g
    return n


@dataclass(frozen=True)
class GridElements:
    """The elements per list the launches of one op cover, from their blocks."""
    launches: int
    blocks: int
    upper: int  # blocks x CHUNK_SIZE: every last chunk taken as full
    lower: int | None  # with the tensor count: (blocks - T) x CHUNK_SIZE + T; None without it
    tensors: int | None

    def describe(self, tensors_from: str = "") -> str:
        text = (f"{GRID_MODEL}: {counted(self.launches, 'launch')}, {self.blocks:,} blocks of at most {CHUNK_SIZE:,} elements "
                f"(ATen's kChunkSize, MultiTensorApply.cuh) = at most {self.upper:,} elements per list, an upper "
                "bound (each tensor's last chunk is partial)")
        if self.lower is not None:
            text += (f"; {self.tensors} tensors{' (' + tensors_from + ')' if tensors_from else ''}: at least "
                     f"{self.lower:,} elements, so at most {self.upper / self.lower - 1:.1%} over")
        return text


def grid_elements(blocks: Sequence[int], tensors: int | None = None) -> GridElements | None:
    """The elements per list the launches (their blocks) cover; None without a launch. `tensors` (T, when the
    trace says how many tensors the lists hold) gives the lower bound."""
    if not blocks:
        return None
    total = sum(blocks)
    lower = None
    if tensors is not None and 0 < tensors <= total:
        lower = (total - tensors) * CHUNK_SIZE + tensors
    return GridElements(len(blocks), total, total * CHUNK_SIZE, lower, tensors if lower is not None else None)
