"""`roofline calibrate`, the figures: what was measured (Figure, with its status, method and raw numbers), and
how each compares with the datasheet. No device is touched here (the GPU work is in roofline.measurement.calibrate.gpu),
so all of it is tested on any machine.

A figure is a value only when its run was verified (status OK). A figure that FAILED or was SKIPPED never reaches
the spec (roofline.measurement.calibrate.spec): it is reported, and the spec leaves the field out.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

from roofline.records.clockstate import describe, throttle_warning
from roofline.model.types import MachineSpec
from roofline.model.invariants import FigureContext, impossible_figure

OK = "OK"
FAILED = "FAILED"
SKIPPED = "SKIPPED"
METHOD = "roofline calibrate"


@dataclass(frozen=True)
class FigureKind:
    field: str  # dotted spec field: memory.bandwidth, compute.fp32, caches.l2.bandwidth, caches.l1.bandwidth
    label: str
    kind: str  # units.parse_quantity kind: bandwidth, flops, time


# The figures calibrate tries, in the order it prints them.
KINDS: tuple[FigureKind, ...] = (
    FigureKind("memory.bandwidth", "DRAM bandwidth", "bandwidth"),
    FigureKind("caches.l2.bandwidth", "L2 bandwidth", "bandwidth"),
    FigureKind("caches.l1.bandwidth", "L1 / shared bandwidth", "bandwidth"),
    FigureKind("memory.latency", "DRAM latency", "time"),
    FigureKind("compute.fp32", "FP32 (FMA)", "flops"),
    FigureKind("compute.fp64", "FP64 (FMA)", "flops"),
    FigureKind("compute.fp16_tensor", "FP16 tensor (cuBLAS)", "flops"),
    FigureKind("compute.bf16_tensor", "BF16 tensor", "flops"),
    FigureKind("compute.tf32_tensor", "TF32 tensor (cuBLAS)", "flops"),
    FigureKind("compute.fp8_tensor", "FP8 tensor", "flops"),
    # the size model's machine figures (calibrate.sizemodel; the spec's model: block)
    FigureKind("model.launch_floor", "launch floor", "time"),
    FigureKind("model.round_trip", "streaming round trip", "time"),
    FigureKind("model.reduction", "block reduction", "time"),
    FigureKind("model.sm_bandwidth", "per-SM bandwidth", "bandwidth"),
    FigureKind("model.block_interval", "block dispatch interval", "time"),
)
KIND_BY_FIELD = {k.field: k for k in KINDS}
REQUIRED_FIELDS = ("memory.bandwidth", "memory.latency")


@dataclass
class Figure:
    """One calibrated figure. `value` is in SI base units and set only for status OK."""

    field: str
    status: str
    value: float | None = None
    method: str = ""  # how it was measured: goes into the spec's sources (cite)
    note: str | None = None  # why it FAILED or was SKIPPED, or a remark on an OK figure
    details: dict[str, Any] = field(default_factory=dict)  # raw numbers for the JSON output
    gpu_state: dict[str, Any] | None = None  # clocks and power over the timed window (measure.gpustate)

    def __post_init__(self) -> None:
        if self.field not in KIND_BY_FIELD:
            raise ValueError(f"unknown calibrated field {self.field!r}")
        if self.status not in (OK, FAILED, SKIPPED):
            raise ValueError(f"unknown status {self.status!r}")
        if self.status == OK and (self.value is None or not math.isfinite(self.value) or self.value <= 0):
            raise ValueError(f"{self.field}: an OK figure needs a positive finite value, got {self.value!r}")
        if self.status != OK:
            self.value = None

    @property
    def ok(self) -> bool:
        return self.status == OK

    def to_dict(self) -> dict[str, Any]:
        return {"field": self.field, "label": KIND_BY_FIELD[self.field].label, "status": self.status,
                "value": self.value, "method": self.method, "note": self.note, "details": self.details,
                "gpu_state": self.gpu_state}


def measured(field_: str, value: float, method: str, note: str | None, details: dict[str, Any],
             gpu_state: Mapping[str, Any] | None) -> Figure:
    """An OK figure. The clocks and power of its timed window go into its method (so the spec's source says what
    clock the figure holds at) and, where the clocks were held down, into its note."""
    state = dict(gpu_state) if gpu_state else None
    clock = describe(state)
    held = throttle_warning(state)
    notes = "; ".join(n for n in (note, held) if n) or None
    return Figure(field_, OK, value, f"{method}; {clock}" if clock else method, notes, details, state)


def failed(field_: str, why: str, method: str = "") -> Figure:
    return Figure(field_, FAILED, None, method, why)


def skipped(field_: str, why: str) -> Figure:
    return Figure(field_, SKIPPED, None, "", why)


# ---- datasheet comparison ----------------------------------------------------------------------


def datasheet_value(spec: MachineSpec | None, field_: str) -> float | None:
    """The datasheet spec's figure for a calibrated field, or None where it gives none."""
    if spec is None:
        return None
    if field_ == "memory.bandwidth":
        return spec.bandwidth or None
    if field_ == "memory.latency":
        return spec.latency or None
    if field_ in ("caches.l1.bandwidth", "caches.l2.bandwidth"):
        level = spec.caches.get(field_.split(".")[1])
        return level.bandwidth if level is not None else None
    if field_.startswith("compute."):
        value = spec.roofs.get(field_.split(".", 1)[1])
        return value if value is not None and math.isfinite(value) else None
    if field_.startswith("model."):
        return getattr(spec.model, field_.split(".", 1)[1])
    raise ValueError(field_)


def ratio(measured: float | None, datasheet: float | None) -> float | None:
    """measured ÷ datasheet (for latency too: above 1 means slower than the datasheet says)."""
    if measured is None or not datasheet:
        return None
    return measured / datasheet


def datasheet_at_clock(spec: MachineSpec | None, field_: str, sm_clock: float | None) -> float | None:
    """The datasheet compute roof scaled to the SM clock the figure ran at, or None.

    Why: a GPU held to 1.44 GHz by its power limit cannot reach a tensor peak quoted at 1.83 GHz. Measured ÷ this
    separates what the clock costs from what the code leaves behind. Compute roofs scale with the clock; memory
    figures do not, so they get None. Tensor roofs use the spec's clocks.tensor, the others clocks.boost."""
    if spec is None or not sm_clock or not field_.startswith("compute."):
        return None
    sheet = datasheet_value(spec, field_)
    quoted = (spec.clocks.get("tensor") if field_.endswith("_tensor") else None) or spec.clocks.get("boost")
    if not sheet or not quoted:
        return None
    return sheet * sm_clock / quoted


def comparison_rows(figures: Sequence[Figure], datasheet: MachineSpec | None) -> list[dict[str, Any]]:
    """One row per figure, in KINDS order: label, datasheet value, measured value, ratio, the SM clock and power
    cap over the figure's timed window, the datasheet at that clock and the ratio to it, status, note."""
    by_field = {f.field: f for f in figures}
    rows = []
    for kind in KINDS:
        fig = by_field.get(kind.field)
        if fig is None:
            continue
        sheet = datasheet_value(datasheet, kind.field)
        state = fig.gpu_state or {}
        at_clock = datasheet_at_clock(datasheet, kind.field, state.get("sm_clock_end"))
        rows.append({
            "field": kind.field, "label": kind.label, "kind": kind.kind, "datasheet": sheet,
            "measured": fig.value, "ratio": ratio(fig.value, sheet), "sm_clock": state.get("sm_clock_end"),
            "power_capped": state.get("power_capped"), "datasheet_at_clock": at_clock,
            "ratio_at_clock": ratio(fig.value, at_clock), "status": fig.status, "note": fig.note,
        })
    return rows


def calibration_document(figures: Sequence[Figure], datasheet: MachineSpec | None, device: Mapping[str, Any],
                         spec_doc: Mapping[str, Any] | None, wall_time: float | None = None) -> dict[str, Any]:
    """What `calibrate --format json` prints: the comparison rows, every figure with its details, and the spec."""
    return {
        "schema": "roofline/calibration/v1",
        "device": dict(device),
        "datasheet": datasheet.id if datasheet is not None else None,
        "rows": comparison_rows(figures, datasheet),
        "figures": [f.to_dict() for f in figures],
        "spec": dict(spec_doc) if spec_doc is not None else None,
        "wall_time": wall_time,
    }


def enforce_bounds(figures: Sequence[Figure], datasheet: MachineSpec | None,
                   device: Mapping[str, Any]) -> list[Figure]:
    """Every OK figure held to its physical bounds (roofline.model.invariants); one outside them becomes FAILED with the
    reason and never reaches the spec or a chart. Why here and not only in the probes: an 11 PB/s L2 figure was
    once checked, timed and written, because its probe's result was right and its timer wrong."""
    by = {f.field: f for f in figures}

    def ok_value(name: str) -> float | None:
        f = by.get(name)
        return f.value if f is not None and f.ok else None

    sms = int(device.get("sm_count") or 0) or None
    out = []
    for f in figures:
        if not f.ok or f.field.startswith("model."):  # the size model's figures: held to their ranges where measured
            out.append(f)
            continue
        clock = (f.gpu_state or {}).get("sm_clock_end") or None
        ctx = FigureContext(datasheet=datasheet, sm_count=sms, sm_clock=clock,
                            dram_bandwidth=ok_value("memory.bandwidth") if f.field != "memory.bandwidth" else None,
                            l1_bandwidth=ok_value("caches.l1.bandwidth") if f.field == "caches.l2.bandwidth" else None)
        why = impossible_figure(f.field, f.value, ctx)
        if why is None:
            out.append(f)
        else:
            out.append(Figure(f.field, FAILED, None, f.method, f"physically impossible, not used: {why}",
                              {**f.details, "impossible_value": f.value}, f.gpu_state))
    return out
