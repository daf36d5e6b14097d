"""The `timeline` block of a results document (roofline/timeline/v1, written by `import torch` and `profile --with
torch`; roofline.kineto.timeline defines its figures) read back: its fields and what the numbers may be. Pure.

The block is additive: a results document without it is as before, and a reader that does not know it keeps it as
written. `report --max-idle` gates on its idle shares, so a block whose figures disagree with each other (idle not
window - busy, a share not idle / window, the causes not adding up to the idle time) is refused naming the field,
as a group whose figures disagree with its launches is (roofline.records.groups).

History: v1 (2026-12) the first.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping

from roofline.errors import at
from roofline.records.fields import BOOL, MAPPING, NUMBER, STRING, check_fields, kind_of

SCHEMA = "roofline/timeline/v1"
VERSION = 1
CAUSES = ("host-bound", "launch-bound", "synchronisation", "other")
_OPT_NUMBER = "number or null"
_SPAN = {"rank": NUMBER, "window": NUMBER, "busy": NUMBER, "idle": NUMBER, "idle_share": NUMBER}
_DEVICE = {**_SPAN, "events": NUMBER, "streams": "list", "idle_by_cause": MAPPING, "gaps": "list",
           "overlap": MAPPING}
_DEVICE_OPTIONAL = {"device": _OPT_NUMBER, "launch_delay": "mapping or null", "graph_launch_delay": "mapping or null"}
_RANK_OPTIONAL = {"busy_outside_collectives": NUMBER, "step": MAPPING}
_GAP = {"start": NUMBER, "duration": NUMBER, "cause": STRING}
_GAP_OPTIONAL = {"host_op": "string or null", "next": STRING, "launch": "string or null", "launch_lead": _OPT_NUMBER,
                 "launch_op": "string or null"}
_DELAY = {"count": NUMBER, "mean": NUMBER, "p50": NUMBER, "p95": NUMBER, "max": NUMBER}
_OVERLAP = {"compute": NUMBER, "copy": NUMBER, "collective": NUMBER, "concurrent": NUMBER,
            "concurrent_share": NUMBER}
_OVERLAP_OPTIONAL = {"compute_collective": NUMBER, "collective_hidden": _OPT_NUMBER}
_STEP = {"wall_time": NUMBER, "busy": NUMBER, "idle_share": NUMBER, "gpu_time": NUMBER}
_STEP_OPTIONAL = {"unmodelled_time": NUMBER, "unmodelled_share": NUMBER, "modelled_time": NUMBER,
                  "sol_time": NUMBER, "devices": NUMBER, "fraction_of_ceiling_kernels": _OPT_NUMBER,
                  "fraction_of_ceiling_wall": _OPT_NUMBER, "model_flops": NUMBER, "hardware_flops": NUMBER,
                  "peak": "mapping or null", "mfu": _OPT_NUMBER, "hfu": _OPT_NUMBER, "flop_convention": STRING}
_STRAGGLER = {"rank": NUMBER, "busy": NUMBER, "median": NUMBER, "outlier": BOOL}
TOLERANCE = 1e-9  # relative to the window: what a float sum may differ by


def _schema(path: Path, block: Mapping[str, Any]) -> None:
    schema = block.get("schema")
    if schema == SCHEMA:
        return
    match = re.fullmatch(r"roofline/timeline/v(\d{1,6})", str(schema))
    if match and int(match.group(1)) > VERSION:
        raise at(path, "timeline.schema", f"is '{schema}', newer than this roofline reads ('{SCHEMA}'): upgrade "
                                          "roofline")
    raise at(path, "timeline.schema", f"is {str(schema)!r:.60}; expected '{SCHEMA}'")


def _non_negative(path: Path, label: str, data: Mapping[str, Any], keys: Any) -> None:
    for key in keys:
        value = data.get(key)
        if isinstance(value, (int, float)) and not isinstance(value, bool) and value < 0:
            raise at(path, f"{label}.{key}", f"is {value!r}; it cannot be negative")


def _disagree(path: Path, field: str, stored: float, computed: float, what: str) -> Exception:
    return at(path, field, f"is {stored!r:.20} but {what} give {computed:.6g}: the file was edited or is corrupt, "
                           "and report gates on this figure; import the trace again")


def _span(path: Path, label: str, data: Any, required: Mapping[str, str], optional: Mapping[str, str]) -> None:
    """A device's or rank's window, busy, idle and idle share: types, signs and that they agree."""
    if not isinstance(data, dict):
        raise at(path, label, f"expected a mapping, got {kind_of(data)}")
    check_fields(path, f"{label}.", data, required, optional)
    _non_negative(path, label, data, ("window", "busy", "idle", "idle_share", "busy_outside_collectives"))
    window, busy = data["window"], data["busy"]
    slack = TOLERANCE * window + 1e-15
    if busy > window + slack:
        raise at(path, f"{label}.busy", f"is {busy!r:.20}, longer than the window ({window!r:.20}): busy time is "
                                        "the part of the window something ran")
    if abs(data["idle"] - (window - busy)) > slack:
        raise _disagree(path, f"{label}.idle", data["idle"], window - busy, "its window and busy time")
    share = data["idle"] / window if window > 0 else 0.0
    if abs(data["idle_share"] - share) > TOLERANCE:
        raise _disagree(path, f"{label}.idle_share", data["idle_share"], share, "its idle time and window")


def _device(path: Path, label: str, data: Any) -> None:
    _span(path, label, data, _DEVICE, _DEVICE_OPTIONAL)
    causes = data["idle_by_cause"]
    for cause, value in causes.items():
        if cause not in CAUSES:
            raise at(path, f"{label}.idle_by_cause.{cause}", f"is not one of {', '.join(CAUSES)}")
        if not isinstance(value, (int, float)) or isinstance(value, bool) or value < 0:
            raise at(path, f"{label}.idle_by_cause.{cause}", f"expected seconds, got {kind_of(value)} {value!r:.20}")
    if causes and abs(sum(causes.values()) - data["idle"]) > TOLERANCE * data["window"] + 1e-12:
        raise _disagree(path, f"{label}.idle_by_cause", sum(causes.values()), data["idle"], "its idle time")
    for i, gap in enumerate(data["gaps"]):
        where = f"{label}.gaps[{i}]"
        if not isinstance(gap, dict):
            raise at(path, where, f"expected a mapping, got {kind_of(gap)}")
        check_fields(path, f"{where}.", gap, _GAP, _GAP_OPTIONAL)
        _non_negative(path, where, gap, ("start", "duration"))
        if gap["cause"] not in CAUSES:
            raise at(path, f"{where}.cause", f"is {gap['cause']!r:.30}; expected one of {', '.join(CAUSES)}")
    for key in ("launch_delay", "graph_launch_delay"):
        if data.get(key) is not None:
            check_fields(path, f"{label}.{key}.", data[key], _DELAY, {})
    check_fields(path, f"{label}.overlap.", data["overlap"], _OVERLAP, _OVERLAP_OPTIONAL)
    _non_negative(path, f"{label}.overlap", data["overlap"], (*_OVERLAP, "compute_collective"))
    if data["overlap"]["concurrent_share"] > 1:
        raise at(path, f"{label}.overlap.concurrent_share", f"is {data['overlap']['concurrent_share']!r:.20}; "
                                                            "expected a share of the busy time, 0 to 1")


def _step(path: Path, label: str, step: Any) -> None:
    if not isinstance(step, dict):
        raise at(path, label, f"expected a mapping, got {kind_of(step)}")
    check_fields(path, f"{label}.", step, _STEP, _STEP_OPTIONAL)
    _non_negative(path, label, step, (*_STEP, *(k for k, v in _STEP_OPTIONAL.items() if "number" in v)))
    for key in ("idle_share", "unmodelled_share"):
        if step.get(key) is not None and step[key] > 1:
            raise at(path, f"{label}.{key}", f"is {step[key]!r:.20}; expected a share, 0 to 1")
    wall, busy = step["wall_time"], step["busy"]
    share = max(wall - busy, 0.0) / wall if wall > 0 else 0.0
    if abs(step["idle_share"] - share) > TOLERANCE:
        raise _disagree(path, f"{label}.idle_share", step["idle_share"], share, "its wall and busy time")
    _step_ratios(path, label, step)


_RATIO_TOLERANCE = 1e-6  # relative: the writer divides the same floats; an edit moves a figure far more


def _step_ratios(path: Path, label: str, step: Mapping[str, Any]) -> None:
    """The step's ratios against the figures they are made of (a hand-edited 'mfu': 5.0 read as MFU 500 % in diff
    and report): MFU and HFU are model and hardware FLOPs over the wall time (device-seconds, every device's window)
    at the peak, the wall fraction of ceiling the SOL time over it, the unmodelled share the unmodelled time over
    the GPU time."""
    wall = step["wall_time"]
    peak = step.get("peak") if isinstance(step.get("peak"), dict) else {}
    flops = peak.get("flops")
    ratios = [("unmodelled_share", "unmodelled_time", step["gpu_time"], "its unmodelled and GPU time")]
    if isinstance(flops, (int, float)) and not isinstance(flops, bool) and flops > 0:
        ratios += [("mfu", "model_flops", wall * flops, "its model FLOPs, wall time and peak"),
                   ("hfu", "hardware_flops", wall * flops, "its hardware FLOPs, wall time and peak")]
    ratios.append(("fraction_of_ceiling_wall", "sol_time", wall, "its SOL and wall time"))
    for key, part, whole, what in ratios:
        stored, value = step.get(key), step.get(part)
        if stored is None or value is None or not whole > 0:
            continue
        expected = value / whole
        if abs(stored - expected) > _RATIO_TOLERANCE * max(abs(expected), 1e-12) + 1e-15:
            raise _disagree(path, f"{label}.{key}", stored, expected, what)


@dataclass(frozen=True)
class RankIdle:
    """One rank's idle share of its window (HTA's definition), what `report --max-idle` gates."""

    rank: Any  # as written (a whole number)
    idle_share: float


@dataclass(frozen=True)
class Timeline:
    """The parts of a checked timeline block a gate reads; `step` as written (a report shows its figures)."""

    step: Mapping[str, Any]
    ranks: tuple[RankIdle, ...]
    devices: tuple[Mapping[str, Any], ...] = ()  # as written: the HTML page draws each device's window and gaps

    @classmethod
    def of(cls, block: Any) -> "Timeline | None":
        """The typed block of a checked document; None where it has none."""
        if not isinstance(block, dict):
            return None
        return cls(block["step"], tuple(RankIdle(r["rank"], r["idle_share"]) for r in block.get("ranks") or ()),
                   tuple(block.get("devices") or ()))


def check_timeline(path: Path, doc: Mapping[str, Any]) -> None:
    """The `timeline` block, when the document has one."""
    if "timeline" not in doc:
        return
    block = doc["timeline"]
    if not isinstance(block, dict):
        raise at(path, "timeline", f"expected a mapping, got {kind_of(block)}")
    _schema(path, block)
    check_fields(path, "timeline.", block, {"devices": "list", "ranks": "list", "step": MAPPING},
                 {"straggler": "mapping or null", "definition": STRING, "causes": "list"})
    for i, device in enumerate(block["devices"]):
        _device(path, f"timeline.devices[{i}]", device)
    for i, rank in enumerate(block["ranks"]):
        _span(path, f"timeline.ranks[{i}]", rank, _SPAN, _RANK_OPTIONAL)
        if "step" in rank:
            _step(path, f"timeline.ranks[{i}].step", rank["step"])
    _step(path, "timeline.step", block["step"])
    if block.get("straggler") is not None:
        check_fields(path, "timeline.straggler.", block["straggler"], _STRAGGLER, {})
