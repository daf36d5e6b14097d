"""A launch's work -> the roof that bounds it. Pure.

Each kind of work is timed at its own roof (the FLOPs a BF16 GEMM did on the tensor cores at bf16_tensor, its
epilogue's FP32 FLOPs at fp32); the launch's compute time is the sum of those times, and the roof it is placed by
is its FLOPs over that time. Its named roof is the one of the part that needs the most time: the precision of its
dominant work. The counters that measured that part are what decided it, and the result says so.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping

# Where a spec lacks a roof, the nearest it may have: CUDA-core FP16 and BF16 share a rate on most bundled GPUs (not
# the A100's, 78 against 39 TFLOP/s), as do the FP16 and BF16 tensor paths; FP64 tensor work is at least as fast as
# FP64 CUDA-core work.
FALLBACK = {
    "fp16": ("fp16", "bf16"), "bf16": ("bf16", "fp16"),
    "fp16_tensor": ("fp16_tensor", "bf16_tensor"), "bf16_tensor": ("bf16_tensor", "fp16_tensor"),
    "fp64_tensor": ("fp64_tensor", "fp64"),
}
DTYPE = {"fp64": "float64", "fp64_tensor": "float64", "fp32": "float32", "tf32_tensor": "tfloat32",
         "fp16": "float16", "fp16_tensor": "float16", "bf16": "bfloat16", "bf16_tensor": "bfloat16",
         "fp8_tensor": "float8", "int8_tensor": "int8"}


@dataclass
class Placement:
    roof: str  # the roof of the part that needs the most time
    peak: float  # FLOP/s the launch is placed by: its FLOPs over its compute time (the roof's own for one part)
    compute_time: float  # s, each part's FLOPs at its roof, added up
    counters: list[str]  # the metrics of the dominant part: what decided the roof
    parts: list[dict[str, Any]] = field(default_factory=list)  # {work, roof, flops, peak_flops, time, counters}
    notes: list[str] = field(default_factory=list)  # roofs the spec lacks and what was used instead

    @property
    def dtype(self) -> str:
        """The type of the dominant work, not of the roof it was timed at: BF16 work on a spec without a bf16 roof
        is timed at fp16 and is still bfloat16."""
        return DTYPE.get(self.parts[0]["work"] if self.parts else self.roof, "unknown")


def roof_for(work: str, roofs: Mapping[str, float]) -> tuple[str, str | None]:
    """(roof to time `work` at, note or None): the work's own roof, a fallback, or the spec's fastest roof."""
    for name in FALLBACK.get(work, (work,)):
        if name in roofs:
            return name, None if name == work else f"the spec has no {work} roof: {work} work timed at {name}"
    fastest = max(roofs, key=lambda r: roofs[r])
    return fastest, f"the spec has no {work} roof: {work} work timed at its fastest roof, {fastest} (an upper bound)"


def place(work: Mapping[str, float], work_counters: Mapping[str, list[str]], roofs: Mapping[str, float]) -> Placement:
    """The placement of a launch that did `work` ({roof name: FLOPs}) on a machine with `roofs` ({name: FLOP/s}).
    A launch without FLOPs sits under the FP32 roof (there is nothing to decide)."""
    if not roofs:
        raise ValueError("the machine has no compute roofs")
    parts, notes = [], []
    for name, flops in work.items():
        if flops <= 0:
            continue
        roof, note = roof_for(name, roofs)
        if note:
            notes.append(note)
        parts.append({"work": name, "roof": roof, "flops": flops, "peak_flops": roofs[roof],
                      "time": flops / roofs[roof], "counters": list(work_counters.get(name, []))})
    if not parts:
        roof = "fp32" if "fp32" in roofs else max(roofs, key=lambda r: roofs[r])
        return Placement(roof, roofs[roof], 0.0, [], [], notes)
    parts.sort(key=lambda p: p["time"], reverse=True)
    total_flops = sum(p["flops"] for p in parts)
    compute_time = sum(p["time"] for p in parts)
    top = parts[0]
    peak = top["peak_flops"] if len(parts) == 1 else total_flops / compute_time
    return Placement(top["roof"], peak, compute_time, top["counters"], parts, notes)
