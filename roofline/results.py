"""Results files (roofline/results/v1, written by `roofline measure`): strict reading, merging, iterating.

Format history:
  v1  first version: schema, created, tool_version, backend, device, machine (the analysis machine block),
      kernels (every analysis kernel field plus time_median/min/max, repeats, achieved_bandwidth,
      achieved_flops, fraction_of_ceiling, verified, status, error); an optional top-level "sweep"
      marker {"kernel", "param"} for a kernel measured at several sizes. Added within v1 (optional, so older
      files still read): a kernel's "gpu_state" (SM clock at the start and end of its timed window, the maximum,
      mean power, the power limit, the fractions of the window held down by the power or thermal policy, the
      clock-event reasons at the end) and the device's "clock_monitor" (what read them, or why nothing did).

Values are SI base units (s, B, B/s, FLOP, FLOP/s). A reader refuses another schema version with a message that
says which side is newer, and names the file and the field for anything else it cannot use.
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path
from typing import Any, Iterable, Iterator, Sequence

from roofline.errors import at, read_input_text

RESULTS_SCHEMA = "roofline/results/v1"
RESULTS_VERSION = 1
MAX_RESULTS_BYTES = 256 << 20

_NUMBER = "number"
_OPT_NUMBER = "number or null"
_STRING = "string"
_OPT_STRING = "string or null"
_BOOL = "boolean"
_MAPPING = "mapping"
_LIST = "list"

_OPT_MAPPING = "mapping or null"
_TOP = {"created": _STRING, "tool_version": _STRING, "backend": _STRING, "device": _MAPPING,
        "machine": _OPT_MAPPING, "kernels": _LIST}
_DEVICE = {"name": _STRING}
_DEVICE_OPTIONAL = {"spec_id": _OPT_STRING, "spec_derived": _BOOL}
_MACHINE = {"id": _STRING, "name": _STRING, "bandwidth": _NUMBER, "latency": _NUMBER, "bytes_in_flight": _NUMBER,
            "roofs": _MAPPING}
_MACHINE_OPTIONAL = {"resident_threads": _OPT_NUMBER}
# The fields report and plot read: required. The rest of the analysis fields are type-checked when present.
# A file measured without a spec (the NumPy backend, say) has machine null and these ceiling fields null.
_CEILING_FIELDS = ("peak_flops", "bandwidth", "ridge", "bound", "attainable_flops", "sol_time", "memory_time",
                   "compute_time", "threads_needed", "latency_bound")
_KERNEL = {
    "name": _STRING, "params": _MAPPING, "dtype": _STRING, "roof": _STRING, "flops": _NUMBER, "bytes": _NUMBER,
    "intensity": _NUMBER, "peak_flops": _NUMBER, "bandwidth": _NUMBER, "ridge": _NUMBER, "bound": _STRING,
    "attainable_flops": _NUMBER, "sol_time": _NUMBER, "time_median": _OPT_NUMBER, "achieved_bandwidth": _OPT_NUMBER,
    "achieved_flops": _OPT_NUMBER, "fraction_of_ceiling": _OPT_NUMBER, "verified": "boolean or null", "status": _STRING,
}
_KERNEL_OPTIONAL = {
    "launches": _NUMBER, "stages": _LIST, "memory_time": _NUMBER, "compute_time": _NUMBER,
    "access_bytes": _NUMBER, "threads_needed": _NUMBER, "latency_bound": _BOOL, "time_min": _OPT_NUMBER,
    "time_max": _OPT_NUMBER, "repeats": _OPT_NUMBER, "error": _OPT_STRING, "gpu_state": _OPT_MAPPING,
}


def _kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    return {dict: "a mapping", list: "a list", str: "a string"}.get(type(value), type(value).__name__)


def _fits(value: Any, expected: str) -> bool:
    if expected.endswith(" or null") and value is None:
        return True
    base = expected.replace(" or null", "")
    if base == _NUMBER:
        return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
    if base == _STRING:
        return isinstance(value, str)
    if base == _BOOL:  # "verified" is null for launches imported from a profiler, which roofline did not check
        return isinstance(value, bool)
    if base == _MAPPING:
        return isinstance(value, dict)
    return isinstance(value, list)


def _check(path: Path, prefix: str, data: dict[str, Any], required: dict[str, str], optional: dict[str, str]) -> None:
    for key, expected in required.items():
        if key not in data:
            raise at(path, f"{prefix}{key}", f"is missing (expected {expected})")
    for key, expected in {**required, **optional}.items():
        if key in data and not _fits(data[key], expected):
            raise at(path, f"{prefix}{key}", f"expected {expected}, got {_kind(data[key])} {data[key]!r:.60}")


def _check_schema(path: Path, doc: dict[str, Any]) -> None:
    schema = doc.get("schema")
    if schema is None:
        raise at(path, "schema", f"is missing; expected '{RESULTS_SCHEMA}' (is this a results file written by "
                                  "'roofline measure'?)")
    if schema == RESULTS_SCHEMA:
        return
    match = re.fullmatch(r"roofline/results/v(\d+)", str(schema))
    if match:
        version = int(match.group(1))
        if version > RESULTS_VERSION:
            raise at(path, "schema", f"is '{schema}', newer than this roofline reads ('{RESULTS_SCHEMA}'): "
                                      "upgrade roofline")
        raise at(path, "schema", f"is '{schema}', older than this roofline reads ('{RESULTS_SCHEMA}'): "
                                  "measure again with this roofline")
    if str(schema).startswith("roofline/analysis/"):
        raise at(path, "schema", f"is '{schema}': an analysis, not measured results; "
                                  "write results with 'roofline measure -o FILE'")
    raise at(path, "schema", f"is {schema!r}; expected '{RESULTS_SCHEMA}'")


def validate_results(doc: Any, path: Path | str = "<results>") -> dict[str, Any]:
    """Check a parsed results document; raise InputError naming the file and field of the first problem."""
    path = Path(path)
    if not isinstance(doc, dict):
        raise at(path, None, f"expected a JSON object at the top, got {_kind(doc)}")
    _check_schema(path, doc)
    _check(path, "", doc, _TOP, {})
    _check(path, "device.", doc["device"], _DEVICE, _DEVICE_OPTIONAL)
    machine = doc["machine"]
    kernel_fields, optional_fields = _KERNEL, _KERNEL_OPTIONAL
    if machine is None:
        kernel_fields = {k: (f"{v} or null" if k in _CEILING_FIELDS else v) for k, v in _KERNEL.items()}
        optional_fields = {k: (f"{v} or null" if k in _CEILING_FIELDS else v) for k, v in _KERNEL_OPTIONAL.items()}
    else:
        _check(path, "machine.", machine, _MACHINE, _MACHINE_OPTIONAL)
        for roof, value in machine["roofs"].items():
            if not _fits(value, _NUMBER) or value <= 0:
                raise at(path, f"machine.roofs.{roof}", f"expected a positive number (FLOP/s), got {value!r}")
        if not _fits(machine["bandwidth"], _NUMBER) or machine["bandwidth"] <= 0:
            raise at(path, "machine.bandwidth", f"expected a positive number (B/s), got {machine['bandwidth']!r}")
    for i, kernel in enumerate(doc["kernels"]):
        if not isinstance(kernel, dict):
            raise at(path, f"kernels[{i}]", f"expected a mapping, got {_kind(kernel)}")
        name = kernel.get("name")
        label = f"kernels[{i}]" + (f" ({name})" if isinstance(name, str) else "")
        _check(path, f"{label}.", kernel, kernel_fields, optional_fields)
    sweep = doc.get("sweep")
    if sweep is not None and not (isinstance(sweep, dict) and isinstance(sweep.get("kernel"), str)):
        raise at(path, "sweep", "expected a mapping like {kernel: NAME, param: n}")
    return doc


def load_results(path: Path | str) -> dict[str, Any]:
    """Read and validate one results file. Every problem is an InputError (exit 2) naming the file."""
    path = Path(path)
    text = read_input_text(path, MAX_RESULTS_BYTES, "a results JSON file")
    if not text.strip():
        raise at(path, None, "is empty (expected a results JSON file from 'roofline measure -o FILE')")
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as exc:
        raise at(path, None, f"is not valid JSON: line {exc.lineno}, column {exc.colno}: {exc.msg}") from None
    validate_results(doc, path)
    doc.setdefault("_source", str(path))
    return doc


# ---- iterating and merging ---------------------------------------------------------------------


def params_text(params: dict[str, Any]) -> str:
    """Short parameters: 'n=2^28', 'rows=8192 cols=8192'."""
    return " ".join(f"{k}={_short_number(v)}" for k, v in params.items())


def _short_number(v: Any) -> str:
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return str(v)
    if isinstance(v, float) and v.is_integer():
        v = int(v)
    if isinstance(v, int):
        if v >= 1024 and v & (v - 1) == 0:
            return f"2^{v.bit_length() - 1}"
        return str(v)
    return f"{v:.4g}"


def kernel_key(kernel: dict[str, Any]) -> tuple[str, str]:
    """(name, parameters): a kernel's identity within one device's results."""
    return kernel["name"], json.dumps(kernel.get("params", {}), sort_keys=True)


def device_labels(docs: Sequence[dict[str, Any]]) -> list[str]:
    """A readable label per document: the device name, with the file name added where two files share a device."""
    names = [str(d["device"]["name"]) for d in docs]
    labels = []
    for doc, name in zip(docs, names):
        if names.count(name) > 1:
            labels.append(f"{name} ({Path(str(doc.get('_source', '?'))).name})")
        else:
            labels.append(name)
    if len(set(labels)) < len(labels):  # same device and same file name in different folders
        labels = [f"{label} #{i + 1}" for i, label in enumerate(labels)]
    return labels


def iter_kernels(docs: Sequence[dict[str, Any]]) -> Iterator[tuple[str, dict[str, Any], dict[str, Any]]]:
    """(device label, document, kernel) over every kernel of every file, files in the order given."""
    for label, doc in zip(device_labels(docs), docs):
        for kernel in doc["kernels"]:
            yield label, doc, kernel


def sweep_groups(doc: dict[str, Any]) -> dict[str, list[dict[str, Any]]]:
    """Kernels measured at several sizes: name -> entries sorted by bytes (only names with 2+ distinct sizes)."""
    groups: dict[str, list[dict[str, Any]]] = {}
    for kernel in doc["kernels"]:
        groups.setdefault(kernel["name"], []).append(kernel)
    out = {}
    for name, entries in groups.items():
        if len({k["bytes"] for k in entries}) >= 2:
            out[name] = sorted(entries, key=lambda k: k["bytes"])
    marker = doc.get("sweep")
    if isinstance(marker, dict) and marker.get("kernel") in out:  # the marked kernel first
        first = marker["kernel"]
        out = {first: out[first], **{k: v for k, v in out.items() if k != first}}
    return out


def unique_machines(machines: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """Machine blocks without repeats (same id and the same figures)."""
    seen: dict[str, dict[str, Any]] = {}
    for m in machines:
        key = json.dumps({k: m.get(k) for k in ("id", "bandwidth", "latency", "roofs")}, sort_keys=True)
        seen.setdefault(key, m)
    return list(seen.values())
