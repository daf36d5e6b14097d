"""The interconnect file (roofline/interconnect/v1, written by `roofline interconnect -o`) read back and checked for
`plot --interconnect`: the schema and every field the table and chart read, so that a hand-edited or truncated
file is one InputError naming the file and field, never a KeyError in the renderer."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from roofline.errors import at
from roofline.load.inputs import read_json
from roofline.records.fields import NUMBER, STRING, check_fields, fits, kind_of
from roofline.records.files import MAX_RESULTS_BYTES

SCHEMA = "roofline/interconnect/v1"

_ID = "number or string"  # a GPU index as the renderer prints it
_LINK_ROOF = {"bandwidth": NUMBER, "per_direction": NUMBER}  # B/s, both directions summed / one way
_BLOCKS = {  # list field -> (fields each item must have, the positive B/s figure among them)
    "peer.one_way": ({"src": _ID, "dst": _ID, "bandwidth": NUMBER}, ("bandwidth",)),
    "peer.both_ways": ({"a": _ID, "b": _ID, "bandwidth": NUMBER}, ("bandwidth",)),
    "allreduce.points": ({"bytes": NUMBER, "busbw": NUMBER}, ("bytes", "busbw")),
}


def _mapping_or_null(path: Path, label: str, value: Any) -> dict[str, Any]:
    if value is not None and not isinstance(value, dict):
        raise at(path, label, f"expected a mapping or null, got {kind_of(value)} {value!r:.40}")
    return value or {}


def _items(path: Path, label: str, items: Any, fields: dict[str, str], positive: tuple[str, ...]) -> None:
    if not isinstance(items, list):
        raise at(path, label, f"expected a list, got {kind_of(items)} {items!r:.40}")
    for i, item in enumerate(items):
        if not isinstance(item, dict):
            raise at(path, f"{label}[{i}]", f"expected a mapping, got {kind_of(item)} {item!r:.40}")
        for key, expected in fields.items():
            value = item.get(key)
            ok = fits(value, NUMBER) or (expected == _ID and fits(value, STRING))
            if key in positive and ok:
                ok = value > 0
            if not ok:
                what = "a positive number (B/s)" if key in positive else expected
                raise at(path, f"{label}[{i}].{key}", f"expected {what}, got {value!r:.40}")


def load_interconnect(path: Path) -> dict[str, Any]:
    """Read and check a roofline/interconnect/v1 file; InputError naming the file and field otherwise."""
    doc = read_json(path, MAX_RESULTS_BYTES, "an interconnect JSON file")
    if not isinstance(doc, dict) or doc.get("schema") != SCHEMA:
        got = doc.get("schema") if isinstance(doc, dict) else kind_of(doc)
        raise at(path, "schema", f"is {got!r:.60}; expected '{SCHEMA}' (written by 'roofline interconnect -o')")
    roofs = _mapping_or_null(path, "roofs", doc.get("roofs"))
    for link, roof in roofs.items():
        if roof is None:
            continue
        if not isinstance(roof, dict):
            raise at(path, f"roofs.{link}", f"expected a mapping like {{bandwidth, per_direction}}, got {kind_of(roof)}")
        check_fields(path, f"roofs.{link}.", roof, _LINK_ROOF, {})
        for key in _LINK_ROOF:
            if not roof[key] > 0:
                raise at(path, f"roofs.{link}.{key}", f"expected a positive number (B/s), got {roof[key]!r:.40}")
    for where, (fields, positive) in _BLOCKS.items():
        block, name = where.split(".")
        items = _mapping_or_null(path, block, doc.get(block)).get(name, [])
        _items(path, where, items, fields, positive)
    if doc.get("allreduce") and doc["allreduce"].get("points") and not fits(doc["allreduce"].get("ranks"), NUMBER):
        raise at(path, "allreduce.ranks", f"expected a number, got {doc['allreduce'].get('ranks')!r:.40}")
    host = doc.get("host")
    if host is not None and not isinstance(host, dict):  # a list of copies, or {skipped: why}
        _items(path, "host", host, {"device": _ID, "h2d": NUMBER, "d2h": NUMBER}, ("h2d", "d2h"))
    for block in ("peer", "host", "allreduce"):
        value = doc.get(block)
        if isinstance(value, dict) and not fits(value.get("skipped"), "string or null"):
            raise at(path, f"{block}.skipped", f"expected a reason (string) or null, got {value['skipped']!r:.40}")
    if not fits(doc.get("spec_id"), "string or null"):
        raise at(path, "spec_id", f"expected a string or null, got {doc['spec_id']!r:.40}")
    return doc
