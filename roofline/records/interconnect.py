"""The interconnect file (roofline/interconnect/v1, written by `roofline interconnect -o`) read back and checked for
`plot --interconnect`: the schema and the fields the chart divides by."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from roofline.errors import at
from roofline.load.inputs import read_json
from roofline.records.files import MAX_RESULTS_BYTES

SCHEMA = "roofline/interconnect/v1"


def load_interconnect(path: Path) -> dict[str, Any]:
    """Read and check a roofline/interconnect/v1 file; InputError naming the file and field otherwise."""

    doc = read_json(path, MAX_RESULTS_BYTES, "an interconnect JSON file")
    if not isinstance(doc, dict) or doc.get("schema") != SCHEMA:
        got = doc.get("schema") if isinstance(doc, dict) else type(doc).__name__
        raise at(path, "schema", f"is {got!r:.60}; expected '{SCHEMA}' (written by 'roofline interconnect -o')")
    checks = [("peer.one_way", "bandwidth"), ("peer.both_ways", "bandwidth"), ("allreduce.points", "busbw")]
    for where, key in checks:
        block, name = where.split(".")
        items = (doc.get(block) or {}).get(name, []) if isinstance(doc.get(block), dict) else []
        for i, item in enumerate(items if isinstance(items, list) else [None]):
            value = item.get(key) if isinstance(item, dict) else None
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0:
                raise at(path, f"{where}[{i}].{key}", f"expected a positive number (B/s), got {value!r:.40}")
    for i, h in enumerate(doc.get("host") if isinstance(doc.get("host"), list) else []):
        for key in ("h2d", "d2h"):
            value = h.get(key) if isinstance(h, dict) else None
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0:
                raise at(path, f"host[{i}].{key}", f"expected a positive number (B/s), got {value!r:.40}")
    return doc
