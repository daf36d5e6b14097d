"""Typed fields of YAML input files (specs, descriptors, gates), one clear message naming the file and field."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Iterable, Mapping

from roofline.errors import at, closest
from roofline.load.inputs import read_yaml
from roofline.model.units import UnitError, parse_quantity

MAX_FILE_BYTES = 1 << 20  # a spec or descriptor is a page of text; refuse anything huge


def read_yaml_mapping(path: Path) -> dict[str, Any]:
    """A YAML file whose top is a mapping, read through the one input layer (roofline.load.inputs)."""
    data = read_yaml(path, MAX_FILE_BYTES)
    if not isinstance(data, dict):
        raise at(path, None, f"expected a mapping of keys at the top, got {_kind(data)}")
    return data


def _kind(value: object) -> str:
    if value is None:
        return "nothing"
    return {dict: "a mapping", list: "a list", str: "a string", bool: "a boolean", int: "a number", float: "a number"}.get(
        type(value), type(value).__name__
    )


class Fields:
    """Typed access to one mapping of a YAML file, with the path of each field for messages."""

    def __init__(self, path: Path, data: Mapping[str, Any], prefix: str = ""):
        self.path = path
        self.data = data
        self.prefix = prefix

    def name(self, key: str) -> str:
        return f"{self.prefix}{key}"

    def error(self, key: str | None, message: str) -> Exception:
        return at(self.path, self.name(key) if key else (self.prefix.rstrip(".") or None), message)

    def reject_unknown(self, known: Iterable[str]) -> None:
        known = list(known)
        for key in self.data:
            if not isinstance(key, str):
                raise self.error(None, f"key {key!r} is not a string")
            if key not in known:
                raise self.error(key, f"unknown key{closest(key, known)}; known keys: {', '.join(known)}")

    def has(self, key: str) -> bool:
        return key in self.data and self.data[key] is not None

    def required(self, key: str) -> Any:
        if not self.has(key):
            raise self.error(key, "is required")
        return self.data[key]

    def string(self, key: str, required: bool = False) -> str | None:
        if not self.has(key):
            if required:
                raise self.error(key, "is required")
            return None
        value = self.data[key]
        if not isinstance(value, str) or not value.strip():
            raise self.error(key, f"expected a non-empty string, got {_kind(value)} {value!r}")
        return value.strip()

    def boolean(self, key: str, default: bool = False) -> bool:
        if not self.has(key):
            return default
        value = self.data[key]
        if not isinstance(value, bool):
            raise self.error(key, f"expected true or false, got {value!r}")
        return value

    def integer(self, key: str, minimum: int = 1) -> int | None:
        if not self.has(key):
            return None
        value = self.data[key]
        if isinstance(value, bool) or not isinstance(value, int):
            raise self.error(key, f"expected a whole number, got {_kind(value)} {value!r}")
        if value < minimum:
            raise self.error(key, f"must be at least {minimum}, got {value}")
        return value

    def quantity(self, key: str, kind: str, required: bool = False) -> float | None:
        """A positive quantity in SI base units, parsed from '4.8 TB/s'. The unit is required: a bare 1555 meant as
        GB/s would otherwise be read as 1,555 B/s."""
        if not self.has(key):
            if required:
                raise self.error(key, "is required")
            return None
        try:
            value = parse_quantity(self.data[key], kind, unit_required=True)
        except UnitError as exc:
            raise self.error(key, str(exc)) from None
        if value <= 0:
            raise self.error(key, f"must be positive, got {self.data[key]!r}")
        return value

    def mapping(self, key: str, required: bool = False) -> "Fields | None":
        if not self.has(key):
            if required:
                raise self.error(key, "is required")
            return None
        value = self.data[key]
        if not isinstance(value, dict):
            raise self.error(key, f"expected a mapping, got {_kind(value)}")
        return Fields(self.path, value, f"{self.name(key)}.")

    def string_list(self, key: str) -> tuple[str, ...]:
        if not self.has(key):
            return ()
        value = self.data[key]
        if isinstance(value, str):
            value = [value]
        if not isinstance(value, list) or not all(isinstance(v, str) and v.strip() for v in value):
            raise self.error(key, "expected a list of strings")
        return tuple(v.strip() for v in value)

    def schema_version(self, supported: int, what: str) -> None:
        if not self.has("schema_version"):
            return
        version = self.data["schema_version"]
        if isinstance(version, bool) or not isinstance(version, int):
            raise self.error("schema_version", f"expected a whole number, got {version!r}")
        if version > supported:
            raise self.error(
                "schema_version", f"is {version}, newer than this roofline reads ({supported}): upgrade roofline"
            )
        if version < 1:
            raise self.error("schema_version", f"is {version}; {what} versions start at 1")
