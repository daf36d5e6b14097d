"""The launch floor: the least time a kernel launch takes, however little work it does.

A kernel occupies its stream for at least the turnaround of an empty launch (`model.launch_floor` of a measured
spec: an empty kernel timed by CUDA-graph replay, roofline.measurement.launch_overhead). A speed-of-light time
below it cannot be reached: a 1 µs element-wise op whose bytes at DRAM bandwidth take 2 ns is at the floor, not at
0.2 % of its ceiling. The gates that judge a profile's groups count each launch as at least this long."""

from __future__ import annotations

from dataclasses import dataclass

from roofline.model.types import MachineSpec

# s: a CUDA-graph-replayed empty launch on recent NVIDIA data-centre GPUs (the H200's measured 501.8 ns,
# specs/h200-sxm.yaml model.launch_floor); used where a spec gives none, and said so
DEFAULT_LAUNCH_FLOOR = 0.5e-6


@dataclass(frozen=True)
class LaunchFloor:
    """Seconds per launch and where the figure came from (shown beside a verdict that used it)."""

    seconds: float
    source: str


def launch_floor_of(machine: MachineSpec | None, machine_id: str | None = None) -> LaunchFloor:
    """The spec's model.launch_floor, else the stated default."""
    if machine is not None and machine.model.launch_floor is not None:
        return LaunchFloor(machine.model.launch_floor, f"{machine.id} model.launch_floor")
    who = machine.id if machine is not None else (machine_id or "the spec")
    return LaunchFloor(DEFAULT_LAUNCH_FLOOR, f"assumed: {who} gives no model.launch_floor")
