"""The results format (roofline/results/v1) as a JSON Schema (draft 2020-12), generated from the field tables that
roofline.records.schema checks every file against, so the published shape cannot drift from the one enforced.

Why a generated JSON Schema beside dataclasses and hand-written checks, and not pydantic or msgspec: the checks need
what a schema language does not say well (a file and field named in every message, an interval that holds its
median, fields that may be null only in a file measured without a spec, plausible ranges per figure), the typed
objects are plain frozen dataclasses (roofline.records.document) with no dependency and no start-up cost on the
fast commands, and tools outside Python (a CI job in another language, an editor) get the shape from this schema.
It is the format's shape and the simplest value rules; roofline's own checks are stricter (docs/results-schema.md).
Pure."""

from __future__ import annotations

from typing import Any, Mapping

from roofline.records import schema as s
from roofline.records.document import Status
from roofline.records.fields import BOOL, MAPPING, MAX_FRACTION, NUMBER, STRING

DRAFT = "https://json-schema.org/draft/2020-12/schema"
SCHEMA_ID = "urn:roofline:results:v1"

_TYPES = {NUMBER: "number", STRING: "string", BOOL: "boolean", MAPPING: "object", "list": "array"}


def _type(expected: str, nullable: bool = False) -> dict[str, Any]:
    """A field table's type ('number or null', 'mapping', …) as JSON Schema; `nullable` adds null."""
    base = expected.replace(" or null", "")
    kinds = [_TYPES[base]]
    if nullable or expected.endswith(" or null"):
        kinds.append("null")
    return {"type": kinds[0] if len(kinds) == 1 else kinds}


def _object(required: Mapping[str, str], optional: Mapping[str, str], nullable: tuple[str, ...] = (),
            extra: Mapping[str, dict[str, Any]] | None = None) -> dict[str, Any]:
    props = {k: _type(v, k in nullable) for k, v in {**required, **optional}.items()}
    for key, rule in (extra or {}).items():
        props[key] = {**props.get(key, {}), **rule}
    return {"type": "object", "required": list(required), "properties": props}


def _numbers(fields: tuple[str, ...]) -> dict[str, Any]:
    """A block of counts and times readers use: each a number at least 0, or null."""
    return {"type": ["object", "null"],
            "properties": {k: {"type": ["number", "null"], "minimum": 0} for k in fields}}


def results_json_schema() -> dict[str, Any]:
    """roofline/results/v1 as a JSON Schema. Ceiling fields may be null (a file measured without a spec)."""
    positive_time = {"exclusiveMinimum": 0}
    kernel = _object(s._KERNEL, s._KERNEL_OPTIONAL, nullable=s._CEILING_FIELDS, extra={
        "status": {"enum": [st.value for st in Status]},
        "flops": {"minimum": 0}, "bytes": {"minimum": 0},
        "time_median": positive_time, "time_min": positive_time, "time_max": positive_time, "sol_time": positive_time,
        "fraction_of_ceiling": {"minimum": 0, "maximum": MAX_FRACTION},
        "time_ci": {"items": {"type": "number", "exclusiveMinimum": 0}, "minItems": 2, "maxItems": 2},
        "stages": {"items": {"type": "object"}},
        "work": {"items": {"type": "object"}},
        "counters": _numbers(s.COUNTER_FIELDS),
        "gpu_state": _numbers(s._GPU_STATE_FIELDS),
        "energy_measured": _numbers(s.ENERGY_FIELDS),
        "power_roof": _numbers(s.POWER_ROOF_FIELDS),
        "power_measured": _numbers(s.POWER_MEASURED_FIELDS),
    })
    machine = _object(s._MACHINE, s._MACHINE_OPTIONAL, extra={
        "bandwidth": {"exclusiveMinimum": 0}, "latency": {"exclusiveMinimum": 0},
        "bytes_in_flight": {"exclusiveMinimum": 0},
        "roofs": {"minProperties": 1, "additionalProperties": {"type": "number", "exclusiveMinimum": 0}},
    })
    machine["type"] = ["object", "null"]
    top = _object(s._TOP, s._TOP_OPTIONAL, extra={
        "device": _object(s._DEVICE, s._DEVICE_OPTIONAL),
        "machine": machine,
        "kernels": {"minItems": 1, "items": kernel},
        "groups": {"items": {"type": "object"}},
        "devices": {"type": "array", "minItems": 1,
                    "items": {"type": "object", "required": ["index", "name"],
                              "properties": {"index": {"type": "number"}, "name": {"type": "string"}}}},
    })
    top["required"] = ["schema", *top["required"]]
    top["properties"] = {"schema": {"const": s.RESULTS_SCHEMA}, **top["properties"]}
    return {"$schema": DRAFT, "$id": SCHEMA_ID, "title": f"roofline results ({s.RESULTS_SCHEMA})",
            "description": "Written by roofline measure, sweep, calibrate, import and profile; read by report and "
                           "plot. The shape and the simplest value rules; roofline checks more (see "
                           "docs/results-schema.md).", **top}
