"""FP16 or BF16: which half precision a launch's CUDA-core half work was in, from what can tell them apart.

ncu's half-precision thread-instruction counters (sm__sass_thread_inst_executed_op_h{add,mul,fma}_pred_on) count
HADD2/HMUL2/HFMA2 and their .BF16 forms alike, so the counters alone cannot say which (the tensor-core counters
can: src_fp16 and src_bf16 are separate metrics, so tensor work needs none of this). What does tell them apart:

  1. the kernel's name, where templates and libraries spell the type: c10::BFloat16, __nv_bfloat16,
     cutlass::bfloat16_t, bf16 in cuBLAS/CUTLASS/cuDNN names, nvjet's `tst` (BF16 in, FP32 compute, BF16 out)
     against c10::Half, __half, cutlass::half_t, fp16/f16, nvjet's `hsh`, cuBLAS's h884/h1688/h16816 GEMMs;
  2. where the name says neither, the NVTX ranges around the launch, innermost first (a range a person named
     'attention_bf16'; PyTorch's emit_nvtx records shapes but no dtypes).

A name that says both (a conversion kernel) or nothing decides nothing: the work stays on the fp16 roof as before,
and its dtype reads AMBIGUOUS. Pure.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Sequence

AMBIGUOUS = "float16/bfloat16"  # the dtype of half work whose kind nothing tells
AMBIGUOUS_ROOF = "fp16/bf16?"  # how a table shows the roof of such work

_BF16 = re.compile(r"bfloat16|(?<![a-z])bf16(?![0-9])", re.IGNORECASE)
_FP16 = re.compile(r"c10::half\b|__half2?\b|\bhalf_t\b|[<,(]\s*half\s*[>,*&)]|(?<![a-z])(?:fp|f)16(?![0-9])"
                   r"|(?<![a-z])float16|(?<![a-z])h\d{3,5}gemm", re.IGNORECASE)
_NVJET = re.compile(r"nvjet_sm\d+[a-z]?_([a-z]+)_")  # the type letters: t = BF16, h = FP16, s = FP32, q = FP8


@dataclass(frozen=True)
class HalfKind:
    kind: str | None  # "bf16", "fp16", or None when nothing tells
    evidence: str  # where it was read, or why nothing could tell

    @property
    def dtype(self) -> str:
        return {"bf16": "bfloat16", "fp16": "float16"}.get(self.kind or "", AMBIGUOUS)


def spelled(text: str) -> tuple[list[str], list[str]]:
    """(BF16 spellings, FP16 spellings) found in a kernel or range name."""
    bf16 = [repr(m.group(0)) for m in _BF16.finditer(text)]
    fp16 = [repr(m.group(0).strip("<,()>*& ")) for m in _FP16.finditer(text)]
    jet = _NVJET.search(text)
    if jet:
        letters = jet.group(1)
        if "t" in letters:
            bf16.append(f"nvjet's type letters {letters!r}")
        if "h" in letters:
            fp16.append(f"nvjet's type letters {letters!r}")
    return bf16, fp16


def _decide(text: str) -> tuple[str | None, str | None, bool]:
    """(kind, the spelling that decided, whether the text names both)."""
    bf16, fp16 = spelled(text)
    if bf16 and fp16:
        return None, None, True
    if bf16:
        return "bf16", bf16[0], False
    if fp16:
        return "fp16", fp16[0], False
    return None, None, False


def half_kind(kernel_name: str, nvtx: Sequence[str] = ()) -> HalfKind:
    """FP16 or BF16 for a launch's CUDA-core half work, from its kernel name, else its NVTX ranges (innermost
    first); HalfKind(None, why) when neither tells."""
    kind, word, both = _decide(kernel_name)
    if kind:
        return HalfKind(kind, f"the kernel name says {word}")
    if both:
        return HalfKind(None, "the kernel name spells both FP16 and BF16")
    for name in reversed(list(nvtx)):
        kind, word, both = _decide(name)
        if kind:
            short = name if len(name) <= 60 else name[:59] + "…"
            return HalfKind(kind, f"the NVTX range {short!r} says {word}")
        if both:
            break
    return HalfKind(None, "neither the kernel name nor an NVTX range spells FP16 or BF16")


def roof_text(roof: str, dtype: str | None) -> str:
    """A roof as tables show it: the roof's name, or AMBIGUOUS_ROOF where the work's half precision is unknown."""
    return AMBIGUOUS_ROOF if dtype == AMBIGUOUS and roof in ("fp16", "bf16") else roof
