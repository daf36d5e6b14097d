"""Measured kernels held to the physics of the GPU they ran on: a verified result whose achieved bandwidth or
FLOP/s no GPU of this kind can deliver is turned into a FAILED one with the reason (issue 21: an impossible figure is
never written as verified, whatever checked its output).

Why a verified kernel can still be impossible: the output check proves the kernel computed the right thing, not
that the timer saw it run or that the model counts what it moves. Both have happened (an L2 probe timed outside
its events; byte models that counted re-reads served by the cache at 136-505 % of the ceiling).
"""

from __future__ import annotations

from typing import Any, Mapping

from roofline.model.types import MachineSpec
from roofline.records.document import KernelResult
from roofline.model.invariants import FigureContext, impossible_dram_bandwidth, impossible_flops


def impossible_reason(entry: Mapping[str, Any], machine: MachineSpec | None,
                      device: Mapping[str, Any]) -> str | None:
    """Why the entry's figures are physically impossible on `machine`, or None. Only a GPU's verified results are
    judged (the NumPy backend times the host, whose limits a GPU spec does not describe)."""
    if machine is None or entry.get("status") != "OK" or device.get("kind") != "gpu":
        return None
    state = entry.get("gpu_state") or {}
    ctx = FigureContext(datasheet=machine, sm_count=int(device.get("sm_count") or 0) or None,
                        sm_clock=state.get("sm_clock_end") or None)
    bw = entry.get("achieved_bandwidth")
    # The harness rotates buffer sets until a working set is 4 × the L2, so every counted byte of a verified result
    # is a DRAM byte: above the datasheet × 1.05 the model counts bytes the kernel does not move, or time was lost.
    if bw and (why := impossible_dram_bandwidth(float(bw), ctx)) is not None:
        return f"{why} (the descriptor's bytes are its DRAM traffic)"
    flops, roof = entry.get("achieved_flops"), entry.get("roof")
    if flops and roof and roof in machine.roofs and (why := impossible_flops(roof, float(flops), ctx)) is not None:
        return why
    return None


def bound_entry(entry: dict[str, Any], machine: MachineSpec | None, device: Mapping[str, Any]) -> dict[str, Any]:
    """The entry unchanged, or FAILED with the reason and the impossible figures kept under `impossible`."""
    why = impossible_reason(entry, machine, device)
    if why is None:
        return entry
    kept = {k: entry.get(k) for k in ("time_median", "achieved_bandwidth", "achieved_flops", "fraction_of_ceiling")}
    analysis = {k: v for k, v in entry.items() if k not in kept and k not in ("status", "verified", "error",
                                                                                "warnings", "time_min", "time_max",
                                                                                "repeats", "time_ci")}
    return KernelResult.failure(analysis, f"physically impossible, not reported as verified: {why}",
                                impossible=kept).to_json()
