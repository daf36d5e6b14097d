"""Which spec describes the GPU we are on: a bundled one matched by name, or one derived from its properties."""

from __future__ import annotations

from typing import Any, Mapping

from roofline.model.types import MachineSpec, Source
from roofline.load.specs import SpecCatalog

# FP32 lanes per SM by compute capability major.minor (CUDA C++ Programming Guide, arithmetic throughput table).
FP32_LANES = {"7.0": 64, "7.2": 64, "7.5": 64, "8.0": 64, "8.6": 128, "8.7": 128, "8.9": 128, "9.0": 128,
              "10.0": 128, "10.3": 128, "12.0": 128, "12.1": 128}
ASSUMED_LATENCY = 400e-9  # s: a typical DRAM pointer-chase latency when nothing better is known


def derive_spec(info: Mapping[str, Any]) -> MachineSpec:
    """A spec from device properties alone: theoretical bandwidth = 2 × memory clock × bus width / 8."""
    bandwidth = 2.0 * float(info["memory_clock"]) * float(info["memory_bus_width"]) / 8.0
    lanes = FP32_LANES.get(str(info.get("compute_capability")), 128)
    roofs = {}
    if info.get("sm_count") and info.get("sm_clock"):
        roofs["fp32"] = 2.0 * lanes * info["sm_count"] * float(info["sm_clock"])
    slug = "".join(c if c.isalnum() else "-" for c in str(info["name"]).lower()).strip("-")
    return MachineSpec(
        id=f"derived-{slug}",
        name=f"{info['name']} (derived from device properties)",
        bandwidth=bandwidth,
        latency=ASSUMED_LATENCY,
        roofs=roofs or {"fp32": float("inf")},
        sm_count=info.get("sm_count"),
        max_threads_per_sm=info.get("max_threads_per_sm"),
        derived=True,
        notes="bandwidth = 2 × memory clock × bus width / 8; FP32 = 2 × lanes/SM × SMs × max SM clock; "
              f"latency {ASSUMED_LATENCY * 1e9:.0f} ns is an assumption",
        sources=(Source("derived from CUDA device attributes by roofline", ("memory.bandwidth", "compute.fp32")),),
    )


def spec_for_device(info: Mapping[str, Any], catalog: SpecCatalog) -> MachineSpec:
    matched = catalog.match_device(str(info.get("name", "")))
    return matched if matched is not None else derive_spec(info)
