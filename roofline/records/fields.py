"""The field checks every block of a results document is held to (the top, the kernels, the groups): a value's
type named as a reader would say it, and a missing or mistyped field refused naming the file and field.

It exists apart from roofline.records.schema so that the blocks checked elsewhere (roofline.records.groups) share one
rule without importing the whole schema, which checks the groups in turn. Pure: parsed JSON in, InputError out.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any, Mapping

from roofline.errors import at

MAX_FRACTION = 10.0  # anything beyond this is not a measurement of the kernel the model describes

# The type names a field's expected type is written in ("number or null" allows None too).
NUMBER, STRING, BOOL, MAPPING = "number", "string", "boolean", "mapping"


def kind_of(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, float) and not math.isfinite(value):
        return "a non-finite number"
    if isinstance(value, (int, float)):
        return "a number"
    return {dict: "a mapping", list: "a list", str: "a string"}.get(type(value), type(value).__name__)


def fits(value: Any, expected: str) -> bool:
    if expected.endswith(" or null") and value is None:
        return True
    base = expected.replace(" or null", "")
    if base == NUMBER:
        return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
    if base == STRING:
        return isinstance(value, str)
    if base == BOOL:
        return isinstance(value, bool)
    if base == MAPPING:
        return isinstance(value, dict)
    return isinstance(value, list)


def check_fields(path: Path, prefix: str, data: Mapping[str, Any], required: Mapping[str, str],
                 optional: Mapping[str, str]) -> None:
    for key, expected in required.items():
        if key not in data:
            raise at(path, f"{prefix}{key}", f"is missing (expected {expected})")
    for key, expected in {**required, **optional}.items():
        if key in data and not fits(data[key], expected):
            raise at(path, f"{prefix}{key}", f"expected {expected}, got {kind_of(data[key])} {data[key]!r:.60}")
