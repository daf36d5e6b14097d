"""The Nsight Compute metrics roofline reads, by its own names, and the lists it asks ncu for.

  dram_read, dram_write   dram__bytes_read.sum, dram__bytes_write.sum                      B
  l2_bytes, l1_bytes      lts__t_bytes.sum, l1tex__t_bytes.sum                              B
  time                    gpu__time_duration.sum                                            s
  CUDA-core FLOPs         add + mul + 2 × fma of sm__sass_thread_inst_executed_op_{f,d,h}{add,mul,fma}_pred_on.sum
  tensor-core FLOPs       sm__ops_path_tensor_src_<source>[_dst_<accumulator>].sum: math operations, an FMA
                          counted as 2, so the sum is FLOPs (2·M·N·K for one GEMM)
  tensor_inst             sm__inst_executed_pipe_tensor.sum (else the sum of the pipe_tensor_op_* variants)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable

DRAM_READ = "dram__bytes_read.sum"
DRAM_WRITE = "dram__bytes_write.sum"
L2_BYTES = "lts__t_bytes.sum"
L1_BYTES = "l1tex__t_bytes.sum"
TIME = "gpu__time_duration.sum"
TENSOR_INST = "sm__inst_executed_pipe_tensor.sum"
TENSOR_INST_VARIANTS = ("sm__inst_executed_pipe_tensor_op_hmma.sum", "sm__inst_executed_pipe_tensor_op_gmma.sum",
                        "sm__inst_executed_pipe_tensor_op_imma.sum", "sm__inst_executed_pipe_tensor_op_dmma.sum")
TENSOR_ACTIVE = "sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active"
DEVICE_NAME = "device__attribute_display_name"
CYCLES_PER_SECOND = "smsp__cycles_elapsed.avg.per_second"

# CUDA-core (non-tensor) arithmetic: precision -> the letter in the SASS opcode (FFMA, DFMA, HFMA2).
# The h instructions carry FP16 and BF16 alike (HFMA2 and HFMA2.BF16), so the two cannot be told apart here.
PRECISIONS = {"fp32": "f", "fp64": "d", "fp16": "h"}
OPS = ("add", "mul", "fma")
CUDA_ROOF = {"fp32": "fp32", "fp64": "fp64", "fp16": "fp16"}  # the roof that bounds each CUDA-core precision


def flop_metric(precision: str, op: str) -> str:
    """flop_metric('fp32', 'fma') -> 'sm__sass_thread_inst_executed_op_ffma_pred_on.sum'."""
    return f"sm__sass_thread_inst_executed_op_{PRECISIONS[precision]}{op}_pred_on.sum"


FLOP_METRICS = {p: tuple(flop_metric(p, op) for op in OPS) for p in PRECISIONS}


def tensor_metric(source: str, dst: str | None = None) -> str:
    """tensor_metric('bf16', 'fp32') -> 'sm__ops_path_tensor_src_bf16_dst_fp32.sum'."""
    return f"sm__ops_path_tensor_src_{source}" + (f"_dst_{dst}" if dst else "") + ".sum"


@dataclass(frozen=True)
class TensorPath:
    """Tensor-core work of one source precision. ncu splits some by accumulator precision (`split`, added up when
    any is present); others come as one metric (`total`, read only when no split one is present)."""

    source: str
    roof: str
    split: tuple[str, ...] = ()
    total: str | None = None


TENSOR_PATHS = (
    TensorPath("fp16", "fp16_tensor", (tensor_metric("fp16", "fp16"), tensor_metric("fp16", "fp32")),
               tensor_metric("fp16")),
    TensorPath("bf16", "bf16_tensor", (tensor_metric("bf16", "fp32"),)),
    TensorPath("tf32", "tf32_tensor", (tensor_metric("tf32", "fp32"),)),
    TensorPath("fp8", "fp8_tensor", (tensor_metric("fp8", "fp16"), tensor_metric("fp8", "fp32")),
               tensor_metric("fp8")),
    TensorPath("int8", "int8_tensor", total=tensor_metric("int8")),
    TensorPath("fp64", "fp64_tensor", total=tensor_metric("fp64")),
)

# The tensor metrics asked for: every form. On sm_90 ncu 2025.3 knows src_fp16, src_bf16_dst_fp32,
# src_tf32_dst_fp32, src_fp8, src_int8 and src_fp64 (`ncu --query-metrics --chip gh100`); the dst-split FP16 and FP8
# names are other chips' and ncu leaves them out of the CSV without a word (seen on the H200, 2026-11-30;
# docs/measurements/h200-2026-11-30-ncu-tensor.txt), so one list serves every GPU.
TENSOR_METRICS = tuple(dict.fromkeys(m for p in TENSOR_PATHS for m in (*p.split, *([p.total] if p.total else []))))

# The list `roofline measure --profile ncu` collects and the README / docs/ncu.md give for `ncu --metrics`.
CORE_METRICS = (DRAM_READ, DRAM_WRITE, TIME)
METRICS = (
    DRAM_READ, DRAM_WRITE, L2_BYTES, L1_BYTES, TIME,
    *FLOP_METRICS["fp32"], *FLOP_METRICS["fp64"], *FLOP_METRICS["fp16"],
    *TENSOR_METRICS,
    TENSOR_INST,
)

# What `roofline import ncu --list-metrics` prints for a user's own program: the same, plus the GPU's name so the
# import can pick the spec by itself.
IMPORT_METRICS = (*METRICS, DEVICE_NAME)

# Metrics whose value is a count, a byte total or a duration: a negative or infinite value is impossible.
NON_NEGATIVE = frozenset((DRAM_READ, DRAM_WRITE, L2_BYTES, L1_BYTES, TIME, TENSOR_INST, *TENSOR_INST_VARIANTS,
                          *TENSOR_METRICS, *(m for names in FLOP_METRICS.values() for m in names)))


def metrics_argument(metrics: Iterable[str] = METRICS) -> str:
    """The comma-separated list `ncu --metrics` takes."""
    return ",".join(metrics)
