"""`roofline calibrate`, the measured spec: the calibrated figures written as a spec document in the bundled specs'
schema (measured: true), each field cited with its method, and its YAML text.

The three fields the spec schema requires (memory.bandwidth, memory.latency, one compute roof) fall back to the
datasheet only with a source entry that says "datasheet, not measured", and a warning says so. Pure: no device.
"""

from __future__ import annotations

from typing import Any, Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
import datetime as dt
import tempfile

import yaml

from roofline.errors import InputError
from roofline.measurement.calibrate.figures import KIND_BY_FIELD, KINDS, METHOD, REQUIRED_FIELDS, Figure, datasheet_value
from roofline.model.types import MachineSpec
from roofline.model.units import quantity_text
from roofline.load.specs import load_spec
from roofline.version import __version__


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
    l2: dict[str, Any] = {}
    if device.get("l2_size"):
        l2["size"] = quantity_text(float(device["l2_size"]), "bytes")
        device_fields.append("caches.l2.size")
    l2_bw = take("caches.l2.bandwidth")
    if l2_bw is not None:
        l2["bandwidth"] = quantity_text(l2_bw, "bandwidth")
        curve = ok["caches.l2.bandwidth"].details.get("curve") or []
        if curve:  # the working sets it was measured at: plot --hierarchy draws where the plateau ends
            l2["curve"] = [{"working_set": quantity_text(float(c["working_set"]), "bytes"),
                            "bandwidth": quantity_text(float(c["bandwidth"]), "bandwidth")} for c in curve]
    caches: dict[str, dict[str, Any]] = {}
    l1_bw = take("caches.l1.bandwidth")  # no datasheet gives one: the hierarchical chart's L1 roof comes from here
    if l1_bw is not None:
        caches["l1"] = {"bandwidth": quantity_text(l1_bw, "bandwidth")}
    if l2:
        caches["l2"] = l2
    if caches:
        doc["caches"] = caches
    model = _model_block(ok, take)
    if model:
        doc["model"] = model
    doc["notes"] = _notes(figures, datasheet)
    if device_fields:
        versions = ", ".join(f"{k} {device[k]}" for k in ("cupy_version", "driver", "cuda_runtime") if device.get(k))
        sources.append({"for": device_fields, "cite": f"CUDA device properties of {device_name} read by {where}"
                                                      + (f" ({versions})" if versions else "")})
    if datasheet is not None and not datasheet.derived and datasheet.power_limit:
        # the board's limit is no figure calibrate measures; the datasheet's, so the energy block is held to it
        doc["power_limit"] = quantity_text(datasheet.power_limit, "power")
        sources.append({"for": ["power_limit"], "cite": f"datasheet, not measured: copied from spec {datasheet.id}"})
    doc["sources"] = sources
    doc["measured"] = True
    doc["measurement"] = {"device": device_name, "date": date, "tool_version": tool_version, "method": METHOD}
    return doc, warnings


def _model_block(ok: Mapping[str, Figure], take: Any) -> dict[str, Any]:
    """The size model's figures (calibrate.sizemodel) as the spec's model: block, the per-SM curve with them."""
    model: dict[str, Any] = {}
    for field_ in ("model.launch_floor", "model.round_trip", "model.reduction", "model.sm_bandwidth",
                   "model.block_interval"):
        value = take(field_)
        if value is not None:
            model[field_.split(".", 1)[1]] = quantity_text(value, KIND_BY_FIELD[field_].kind)
    curve = ok["model.sm_bandwidth"].details.get("curve") if "model.sm_bandwidth" in ok else None
    if curve:
        model["sm_curve"] = [{"sms": int(c["sms"]), "bandwidth": quantity_text(float(c["bandwidth"]), "bandwidth")}
                             for c in curve]
    return model


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
    """The spec document as YAML text (roofline.load.specs.load_spec reads it back)."""
    header = (
        f"# Written by {METHOD} {doc['measurement']['tool_version']} on {doc['measurement']['device']}, "
        f"{doc['measurement']['date']}.\n"
        "# Measured ceilings: use it like any spec (--spec FILE), or beside the datasheet with "
        "'roofline plot --calibrated FILE'.\n"
    )
    body = yaml.safe_dump(dict(doc), sort_keys=False, allow_unicode=True, width=120, default_flow_style=False)
    return header + body


def check_loads(text: str) -> None:
    """Read the YAML back through the spec loader (from a temporary file, as a user's --spec FILE would be), so a
    spec the loader would refuse is an error here, never a file written."""
    with tempfile.TemporaryDirectory() as tmp:
        probe = Path(tmp) / "measured.yaml"
        probe.write_text(text, encoding="utf-8")
        load_spec(probe)


# A block added to the spec document between building it and writing it (the energy block, the links), given the
# document and the date it is cited with: (the new document, its warnings).
Amend = Callable[[dict[str, Any], str], tuple[dict[str, Any], list[str]]]


@dataclass(frozen=True)
class WrittenSpec:
    """A measured spec ready to write: its document, the warnings to print, and its YAML text, checked to load."""

    doc: dict[str, Any]
    warnings: list[str]
    text: str


def written_spec(figures: Sequence[Figure], device: Mapping[str, Any], datasheet: MachineSpec | None,
                 amend: Amend | None = None) -> WrittenSpec:
    """The one way a calibration becomes a spec file's text (one GPU, every GPU of a host, a fleet): the document
    dated today by this version, `amend` (the energy block, the links) given that date, its YAML, and that YAML read
    back through the spec loader, so a spec the loader would refuse is an error here, never a file written."""
    date = dt.datetime.now(dt.timezone.utc).date().isoformat()
    doc, warnings = measured_spec(figures, device, datasheet, date, __version__)
    if amend is not None:
        doc, more = amend(doc, date)
        warnings = [*warnings, *more]
    text = spec_yaml(doc)
    check_loads(text)
    return WrittenSpec(doc, warnings, text)
