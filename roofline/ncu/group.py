"""A profile's launches grouped (by op, kernel or NVTX level) and ranked by recoverable time.

For each group, from its launches (each already placed on its roof by roofline.ncu.importer):
  time              sum of launch times (gpu__time_duration)
  sol_time          sum of each launch's speed-of-light time at its own roof and the DRAM bandwidth
  fraction          sol_time / time: the time-weighted mean of the launches' fractions of ceiling
  recoverable_time  time - sol_time: what the group would give back if every launch ran at its ceiling
  roof              the roof of the launches that hold most of the group's time
Groups are ranked by recoverable time; the program's totals (GPU time, SOL time, fraction, the share of the
recoverable time the top 5 groups hold) go beside them. Where NVTX ranges carry input shapes, the op's analytic
model (roofline.ncu.opmodel) is put beside the counters and a group whose DRAM traffic is more than
TRAFFIC_FLAG times its model's is flagged.
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

from roofline.ncu.importer import short_name
from roofline.ncu.nvtx import op_name, shapes
from roofline.ncu.opmodel import op_model, program_itemsize
from roofline.records.groups import TOP, group_figures, parse_group_by, program_totals

__all__ = ["NO_RANGE", "TOP", "add_groups", "group_entries", "group_name", "parse_group_by", "program_totals"]

TRAFFIC_FLAG = 1.5  # counted DRAM bytes over model bytes above which a group is flagged
NO_RANGE = "(no NVTX range)"


def group_name(entry: Mapping[str, Any], by: str, level: int = 0) -> str:
    """The group one launch belongs to. Without NVTX ranges, 'op' falls back to the kernel's name."""
    stack = entry.get("nvtx") or []
    if by == "op":
        return op_name(stack[-1]) if stack else short_name(entry.get("kernel_name") or entry["name"])
    if by == "range":
        return op_name(stack[level - 1]) if len(stack) >= level else NO_RANGE
    return short_name(entry.get("kernel_name") or entry["name"])


def _model(entries: Sequence[Mapping[str, Any]], itemsize: int) -> tuple[float | None, float | None, int]:
    """(model FLOPs, model bytes, ranges modelled) over the distinct op calls of a group (a call that launches
    several kernels is modelled once)."""
    calls: dict[str, list[str]] = {}  # each op call's range -> the kernels it launched (a name may say "causal")
    for e in entries:
        stack = e.get("nvtx") or []
        if stack:
            calls.setdefault(stack[-1], []).append(str(e.get("kernel_name") or e.get("name") or ""))
    seen: dict[str, tuple[float | None, float | None]] = {}
    for call, kernels in calls.items():
        found = shapes(call)
        seen[call] = op_model(op_name(call), found, itemsize, kernels) if found is not None else (None, None)
    flops = [f for f, _ in seen.values()]
    bytes_ = [b for _, b in seen.values()]
    model_flops = None if not seen or None in flops else float(sum(flops))  # type: ignore[arg-type]
    model_bytes = None if not seen or None in bytes_ else float(sum(bytes_))  # type: ignore[arg-type]
    return model_flops, model_bytes, len(seen)


def group_entries(entries: Sequence[Mapping[str, Any]], group_by: str) -> list[dict[str, Any]]:
    """The groups of a profile's launches, ranked by recoverable time (largest first)."""
    by, level = parse_group_by(group_by)
    if by == "none":
        return []
    members: dict[str, list[Mapping[str, Any]]] = {}
    for e in entries:
        members.setdefault(group_name(e, by, level), []).append(e)
    total = sum(e["time_median"] for e in entries)
    itemsize = program_itemsize(entries)
    groups = []
    for name, items in members.items():
        g: dict[str, Any] = {"name": name, "by": group_by, **group_figures(items, total),
                             "kernels": [e["params"]["launch"] for e in items]}
        flops, bytes_ = g["flops"], g["bytes"]
        if by == "op":
            model_flops, model_bytes, calls = _model(items, itemsize)
            if model_flops is not None or model_bytes is not None:
                g.update(model_flops=model_flops, model_bytes=model_bytes, model_calls=calls,
                         model_itemsize=itemsize)
                if model_flops and flops > 0:
                    g["flops_ratio"] = flops / model_flops
                if model_bytes:
                    g["bytes_ratio"] = bytes_ / model_bytes
                    if bytes_ > TRAFFIC_FLAG * model_bytes:
                        g["flag"] = (f"DRAM traffic {bytes_ / model_bytes:.1f}x the model's (inputs and outputs "
                                     f"once at {itemsize} B per element): fusion or a better kernel pays here")
        groups.append(g)
    groups.sort(key=lambda g: (-g["recoverable_time"], g["name"]))
    return groups


def add_groups(doc: dict[str, Any], group_by: str) -> list[str]:
    """Add `groups` and `program` to an imported document (nothing for 'none'); notes for the user."""
    groups = group_entries(doc["kernels"], group_by)
    if not groups:
        return []
    doc["groups"] = groups
    doc["program"] = program_totals(groups)
    notes = []
    by, _ = parse_group_by(group_by)
    if by in ("op", "range") and not any(e.get("nvtx") for e in doc["kernels"]):
        notes.append("note: the capture has no NVTX ranges (profile with --nvtx, and push ranges in the program: "
                     "torch.autograd.profiler.emit_nvtx()); " + ("grouped by kernel name instead" if by == "op"
                                                                 else f"every launch is in '{NO_RANGE}'"))
    for g in groups:
        if g.get("flag"):
            notes.append(f"note: {g['name']}: {g['flag']}")
    return notes
