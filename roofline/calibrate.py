"""`roofline calibrate`, the pure part: measured figures in, a spec document (YAML) and a datasheet comparison out.

The GPU work lives in roofline.measure.calibrate_gpu; this module never touches a device, so everything it does is
tested on any machine. A figure is a Figure: a value only when its run was verified (status OK). A figure that
FAILED or was SKIPPED never reaches the spec: it is reported, and the spec leaves the field out. The three fields
the spec schema requires (memory.bandwidth, memory.latency, one compute roof) fall back to the datasheet only with a
source entry that says "datasheet, not measured", and the output says so.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

from roofline.errors import InputError
from roofline.measure.gpustate import describe, throttle_warning
from roofline.model import MachineSpec
from roofline.units import format_flops, format_rate, format_time

OK = "OK"
FAILED = "FAILED"
SKIPPED = "SKIPPED"
METHOD = "roofline calibrate"


@dataclass(frozen=True)
class FigureKind:
    field: str  # dotted spec field: memory.bandwidth, compute.fp32, caches.l2.bandwidth
    label: str
    kind: str  # units.parse_quantity kind: bandwidth, flops, time


# The figures calibrate tries, in the order it prints them.
KINDS: tuple[FigureKind, ...] = (
    FigureKind("memory.bandwidth", "DRAM bandwidth", "bandwidth"),
    FigureKind("caches.l2.bandwidth", "L2 bandwidth", "bandwidth"),
    FigureKind("memory.latency", "DRAM latency", "time"),
    FigureKind("compute.fp32", "FP32 (FMA)", "flops"),
    FigureKind("compute.fp64", "FP64 (FMA)", "flops"),
    FigureKind("compute.fp16_tensor", "FP16 tensor (cuBLAS)", "flops"),
    FigureKind("compute.bf16_tensor", "BF16 tensor", "flops"),
    FigureKind("compute.tf32_tensor", "TF32 tensor (cuBLAS)", "flops"),
    FigureKind("compute.fp8_tensor", "FP8 tensor", "flops"),
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
    if field_ == "caches.l2.bandwidth":
        l2 = spec.caches.get("l2")
        return l2.bandwidth if l2 is not None else None
    if field_.startswith("compute."):
        value = spec.roofs.get(field_.split(".", 1)[1])
        return value if value is not None and math.isfinite(value) else None
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


def format_value(value: float | None, kind: str) -> str:
    if value is None:
        return "–"
    return {"bandwidth": format_rate, "flops": format_flops, "time": format_time}[kind](value)


# ---- the measured spec -------------------------------------------------------------------------


def quantity_text(value: float, kind: str) -> str:
    """A value in SI base units as the spec YAML writes it: '4.213 TB/s', '64.1 TFLOP/s', '341.2 ns', '60 MiB'."""
    if kind == "bytes":
        v = int(round(value))
        for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20)):
            if v >= scale and v % scale == 0:
                return f"{v // scale} {unit}"
        return f"{v} B"
    if kind == "time":
        for unit, scale in (("s", 1.0), ("ms", 1e-3), ("us", 1e-6), ("ns", 1e-9)):
            if value >= scale:
                return f"{_digits(value / scale)} {unit}"
        return f"{_digits(value / 1e-12)} ps"
    unit = {"bandwidth": "B/s", "flops": "FLOP/s"}[kind]
    for prefix, scale in (("P", 1e15), ("T", 1e12), ("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if value >= scale:
            return f"{_digits(value / scale)} {prefix}{unit}"
    return f"{_digits(value)} {unit}"


def _digits(x: float) -> str:
    """Four significant digits, never in exponent form."""
    if x == 0:
        return "0"
    decimals = max(0, 3 - int(math.floor(math.log10(abs(x)))))
    text = f"{x:.{decimals}f}"
    return text.rstrip("0").rstrip(".") if "." in text else text


def spec_id(datasheet: MachineSpec | None, device_name: str) -> str:
    if datasheet is not None and not datasheet.derived:
        return f"{datasheet.id}-measured"
    slug = "".join(c if c.isalnum() else "-" for c in device_name.lower())
    slug = "-".join(part for part in slug.split("-") if part) or "gpu"
    return f"{slug}-measured"


def measured_spec(
    figures: Sequence[Figure],
    device: Mapping[str, Any],
    datasheet: MachineSpec | None,
    date: str,
    tool_version: str,
) -> tuple[dict[str, Any], list[str]]:
    """The spec document (the bundled specs' schema) and the warnings to print.

    Only OK figures become spec fields, each with a source entry naming its method. Device properties (SM count,
    threads per SM, L2 size, memory capacity) come from the CUDA driver and say so. The schema needs a memory
    bandwidth, a memory latency and one compute roof: when calibration could not measure one of them, the datasheet
    value is copied with a source entry saying it was not measured, and a warning is returned; when there is no
    datasheet value either, no spec can be written (InputError)."""
    device_name = str(device.get("name") or "unknown GPU")
    ok = {f.field: f for f in figures if f.ok}
    warnings: list[str] = []
    where = f"{METHOD} {tool_version} on {device_name}, {date}"
    sources: list[dict[str, Any]] = []

    def take(field_: str) -> float | None:
        fig = ok.get(field_)
        if fig is not None:
            sources.append({"for": [field_], "cite": f"{where}: {fig.method}"})
            return fig.value
        return None

    def fallback(field_: str) -> float:
        value = datasheet_value(datasheet, field_)
        label = KIND_BY_FIELD[field_].label
        if value is None:
            raise InputError(
                f"cannot write a measured spec: {label} ({field_}) was not measured and "
                f"{'the datasheet spec ' + datasheet.id if datasheet else 'no datasheet spec'} gives none to fall back on"
            )
        src = datasheet.id if datasheet is not None else "?"
        sources.append({"for": [field_], "cite": f"datasheet, not measured: copied from spec {src} because "
                                                  f"{METHOD} could not measure it on {device_name} ({date})"})
        warnings.append(f"{label} was not measured: the spec carries the datasheet value from {src}, marked "
                        "'datasheet, not measured' in its sources")
        return value

    memory: dict[str, Any] = {}
    for field_ in REQUIRED_FIELDS:
        key = field_.split(".", 1)[1]
        value = take(field_)
        memory[key] = quantity_text(value if value is not None else fallback(field_), KIND_BY_FIELD[field_].kind)
    device_fields: list[str] = []
    if device.get("total_memory"):
        memory["capacity"] = quantity_text(float(device["total_memory"]), "bytes")
        device_fields.append("memory.capacity")

    compute: dict[str, str] = {}
    for kind in KINDS:
        if kind.field.startswith("compute."):
            value = take(kind.field)
            if value is not None:
                compute[kind.field.split(".", 1)[1]] = quantity_text(value, "flops")
    if not compute:
        roof = "fp32"
        compute[roof] = quantity_text(fallback(f"compute.{roof}"), "flops")

    doc: dict[str, Any] = {
        "schema_version": 1,
        "id": spec_id(datasheet, device_name),
        "name": f"{datasheet.name if datasheet is not None and not datasheet.derived else device_name} (measured)",
        "device_names": [device_name],
    }
    if device.get("compute_capability"):
        doc["compute_capability"] = str(device["compute_capability"])
        device_fields.append("compute_capability")
    doc["memory"] = memory
    doc["compute"] = compute
    for key in ("sm_count", "max_threads_per_sm"):
        if device.get(key):
            doc[key] = int(device[key])
            device_fields.append(key)
    l2: dict[str, str] = {}
    if device.get("l2_size"):
        l2["size"] = quantity_text(float(device["l2_size"]), "bytes")
        device_fields.append("caches.l2.size")
    l2_bw = take("caches.l2.bandwidth")
    if l2_bw is not None:
        l2["bandwidth"] = quantity_text(l2_bw, "bandwidth")
    if l2:
        doc["caches"] = {"l2": l2}
    doc["notes"] = _notes(figures, datasheet)
    if device_fields:
        versions = ", ".join(f"{k} {device[k]}" for k in ("cupy_version", "driver", "cuda_runtime") if device.get(k))
        sources.append({"for": device_fields, "cite": f"CUDA device properties of {device_name} read by {where}"
                                                      + (f" ({versions})" if versions else "")})
    doc["sources"] = sources
    doc["measured"] = True
    doc["measurement"] = {"device": device_name, "date": date, "tool_version": tool_version, "method": METHOD}
    return doc, warnings


def _notes(figures: Sequence[Figure], datasheet: MachineSpec | None) -> str:
    parts = []
    missing = [f for f in figures if not f.ok]
    if missing:
        parts.append("Not in this spec (not measured): " + "; ".join(
            f"{KIND_BY_FIELD[f.field].label} ({f.status.lower()}: {f.note or 'no reason given'})" for f in missing
        ) + ".")
    other = ", ".join(k for k in (datasheet.roofs if datasheet else ()) if f"compute.{k}" not in
                      {f.field for f in figures if f.ok})
    if other:
        parts.append(f"Roofs of the datasheet spec {datasheet.id} that calibrate does not measure are left out "  # type: ignore[union-attr]
                     f"({other}); use the datasheet spec for those.")
    parts.append("Every figure here comes from a run whose result was checked; see sources for each method.")
    return " ".join(parts)


def spec_yaml(doc: Mapping[str, Any]) -> str:
    """The spec document as YAML text (roofline.specs.load_spec reads it back)."""
    import yaml

    header = (
        f"# Written by {METHOD} {doc['measurement']['tool_version']} on {doc['measurement']['device']}, "
        f"{doc['measurement']['date']}.\n"
        "# Measured ceilings: use it like any spec (--spec FILE), or beside the datasheet with "
        "'roofline plot --measured-spec FILE'.\n"
    )
    body = yaml.safe_dump(dict(doc), sort_keys=False, allow_unicode=True, width=120, default_flow_style=False)
    return header + body


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
