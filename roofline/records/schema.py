"""The rules a results document (roofline/results/v1) must meet before anything reads it: the fields and their
types, and what the numbers may be. Pure: parsed JSON in, an InputError naming the file and field out.
The typed objects built from a checked document are in roofline.records.document.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any, Mapping, Sequence

from roofline.records import caveats
from roofline.model.invariants import impossible_latency, outside
from roofline.errors import at
from roofline.load.jsonio import fast_json
from roofline.records.fields import BOOL as _BOOL, MAPPING as _MAPPING, NUMBER as _NUMBER, STRING as _STRING
from roofline.records.fields import MAX_FRACTION, check_fields as _check, fits as _fits, kind_of as _kind
from roofline.records.groups import check_groups
from roofline.records.timeline import check_timeline

RESULTS_SCHEMA = "roofline/results/v1"
RESULTS_VERSION = 1
_OPT_NUMBER, _OPT_STRING, _OPT_MAPPING, _LIST = "number or null", "string or null", "mapping or null", "list"
_TOP = {"created": _STRING, "tool_version": _STRING, "backend": _STRING, "device": _MAPPING,
        "machine": _OPT_MAPPING, "kernels": _LIST}
_TOP_OPTIONAL = {"policy": _OPT_MAPPING, "sweep": _OPT_MAPPING, "groups": _LIST}
_DEVICE = {"name": _STRING}
_DEVICE_OPTIONAL = {"spec_id": _OPT_STRING, "spec_derived": _BOOL}
_MACHINE = {"id": _STRING, "name": _STRING, "bandwidth": _NUMBER, "latency": _NUMBER, "bytes_in_flight": _NUMBER,
            "roofs": _MAPPING}
_MACHINE_OPTIONAL = {"resident_threads": _OPT_NUMBER, "caches": _MAPPING, "power_limit": _OPT_NUMBER}
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
    "time_max": _OPT_NUMBER, "repeats": _OPT_NUMBER, "error": _OPT_STRING, "warnings": _LIST, "gpu_state": _OPT_MAPPING,
    "time_ci": "list or null", "traffic": _MAPPING, "links": _MAPPING, "counters": _OPT_MAPPING, "work": "list or null",
    "energy": _OPT_MAPPING, "energy_measured": _OPT_MAPPING, "power_roof": _OPT_MAPPING,
    "power_measured": _OPT_MAPPING,
}
# The blocks later stages add to an entry, with the fields a renderer or gate reads from them (each a number or null,
# never negative): Nsight Compute's counters (roofline.ncu.counters; the hierarchical chart reads them) and the GPU's
# state over the timed window (roofline.measurement.gpustate; the throttle warning reads it).
COUNTER_FIELDS = ("dram_read", "dram_write", "dram_bytes", "l2_bytes", "l1_bytes", "time", "flops", "flops_fp32",
                  "flops_fp64", "flops_fp16", "flops_tensor", "tensor_inst", "tensor_active_pct")
_GPU_STATE_FIELDS = ("window", "sm_clock_start", "sm_clock_end", "sm_clock_max", "power_mean", "power_limit",
                     "power_capped", "thermal_capped", "energy")
# A measured kernel's energy over its timed window (roofline.measurement.energy), where NVML read it: numbers, not
# negative; the gates read fraction_of_energy_ceiling.
ENERGY_FIELDS = ("joules_per_run", "power_mean", "flops_per_joule", "bytes_per_joule", "fraction_of_energy_ceiling",
                 "window", "runs", "energy", "counter_period", "uncertainty")
# The power roof (roofline.model.power) an analysis gives an entry, and what its timed window says against it
# (roofline.records.clockstate.power_measured): numbers or null, not negative.
POWER_ROOF_FIELDS = ("power_limit", "time", "flops", "time_roof_sol_time", "memory_rate")
POWER_MEASURED_FIELDS = ("sm_clock", "sm_clock_max", "power_mean", "power_limit", "fraction_of_time_roof",
                         "fraction_of_power_roof")
_HELD_FIELDS = ("power_capped", "thermal_capped")  # shares of the window: 0 to 1


def check_schema(path: Path, doc: Mapping[str, Any]) -> None:
    """Refuse another schema, saying which side is newer."""
    schema = doc.get("schema")
    if schema is None:
        raise at(path, "schema", f"is missing; expected '{RESULTS_SCHEMA}' (is this a results file written by "
                                  "'roofline measure'?)")
    if schema == RESULTS_SCHEMA:
        return
    match = re.fullmatch(r"roofline/results/v(\d{1,6})", str(schema))
    if match:
        if int(match.group(1)) > RESULTS_VERSION:
            raise at(path, "schema", f"is '{schema}', newer than this roofline reads ('{RESULTS_SCHEMA}'): "
                                      "upgrade roofline")
        raise at(path, "schema", f"is '{schema}', older than this roofline reads ('{RESULTS_SCHEMA}'): "
                                  "measure again with this roofline")
    if str(schema).startswith("roofline/analysis/"):
        raise at(path, "schema", f"is '{schema}': an analysis, not measured results; "
                                  "write results with 'roofline measure -o FILE'")
    raise at(path, "schema", f"is {str(schema)!r:.80}; expected '{RESULTS_SCHEMA}'")

TOP_FIELDS = (*_TOP, *_TOP_OPTIONAL)


def check_kernel(path: Path, index: int, data: Any, has_machine: bool, statuses: Sequence[str]) -> None:
    """One entry of kernels[]: types, then what the numbers may be."""
    if not isinstance(data, dict):
        raise at(path, f"kernels[{index}]", f"expected a mapping, got {_kind(data)}")
    name = data.get("name")
    label = f"kernels[{index}]" + (f" ({name})" if isinstance(name, str) else "")
    required, optional = _KERNEL, _KERNEL_OPTIONAL
    if not has_machine:
        required = {k: (f"{v} or null" if k in _CEILING_FIELDS else v) for k, v in _KERNEL.items()}
        optional = {k: (f"{v} or null" if k in _CEILING_FIELDS else v) for k, v in _KERNEL_OPTIONAL.items()}
    _check(path, f"{label}.", data, required, optional)
    if data["status"] not in statuses:
        raise at(path, f"{label}.status", f"is {data['status']!r:.40}; expected one of {', '.join(statuses)}")
    _check_values(path, label, data)


def _check_values(path: Path, label: str, data: Mapping[str, Any]) -> None:
    """The numbers a reader divides by and gates on: what they may be, not just their types."""
    for key in ("flops", "bytes"):
        if data[key] < 0:
            raise at(path, f"{label}.{key}", f"is {data[key]!r}; a count cannot be negative")
    for key in ("time_median", "time_min", "time_max", "sol_time"):
        value = data.get(key)
        if value is not None and value <= 0:
            raise at(path, f"{label}.{key}", f"is {value!r}; a time must be positive")
    fraction = data.get("fraction_of_ceiling")
    if fraction is not None and not 0 <= fraction <= MAX_FRACTION:
        raise at(path, f"{label}.fraction_of_ceiling", f"is {fraction!r}; expected a share of the ceiling from 0 to "
                                                        f"{MAX_FRACTION:g} (a measurement this far off is not one)")
    _check_neighbours(path, label, data)
    if data["status"] == "OK" and data.get("time_median") is None:
        raise at(path, f"{label}.time_median", "is null but the status is OK: a timed kernel has a time")
    if data.get("stages") is not None and not all(isinstance(s, dict) for s in data["stages"]):
        raise at(path, f"{label}.stages", "expected a list of mappings")
    interval = data.get("time_ci")
    if interval is not None and not (len(interval) == 2 and all(_fits(v, _NUMBER) and v > 0 for v in interval)
                                     and interval[0] <= interval[1]):
        raise at(path, f"{label}.time_ci", f"expected [low, high] seconds with 0 < low <= high, got {interval!r:.60}")
    median = data.get("time_median")
    if interval is not None and median is not None and not (
            interval[0] * (1 - 1e-9) <= median <= interval[1] * (1 + 1e-9)):
        raise at(path, f"{label}.time_ci", f"is [{interval[0]:.6g}, {interval[1]:.6g}] s, which does not contain "
                                           f"time_median ({median:.6g} s): an interval of the median holds it")
    if data.get("warnings") is not None and not all(caveats.valid(w) for w in data["warnings"]):
        raise at(path, f"{label}.warnings", "expected a list of {code, text, fix} records (or strings)")
    if data.get("work") is not None and not all(isinstance(w, dict) for w in data["work"]):
        raise at(path, f"{label}.work", "expected a list of mappings (the parts of an imported launch's work)")
    _check_block(path, f"{label}.counters", data.get("counters"), COUNTER_FIELDS)
    _check_block(path, f"{label}.gpu_state", data.get("gpu_state"), _GPU_STATE_FIELDS)
    _check_block(path, f"{label}.energy_measured", data.get("energy_measured"), ENERGY_FIELDS)
    _check_block(path, f"{label}.power_roof", data.get("power_roof"), POWER_ROOF_FIELDS)
    _check_block(path, f"{label}.power_measured", data.get("power_measured"), POWER_MEASURED_FIELDS)
    share = (data.get("energy_measured") or {}).get("fraction_of_energy_ceiling")
    if share is not None and share > MAX_FRACTION:
        raise at(path, f"{label}.energy_measured.fraction_of_energy_ceiling",
                 f"is {share!r}; expected a share of the energy ceiling from 0 to {MAX_FRACTION:g}")
    state = data.get("gpu_state") or {}
    for key in _HELD_FIELDS:
        if state.get(key) is not None and state[key] > 1:
            raise at(path, f"{label}.gpu_state.{key}", f"is {state[key]!r}; expected a share of the window, 0 to 1")
    for key in ("power_limit", "power_mean"):  # a power limit in mW, or a mean no GPU draws, is no figure
        value = state.get(key)
        if value is not None and (value > 0 or key == "power_limit") and (why := outside("power", value)):
            raise at(path, f"{label}.gpu_state.{key}", f"{why}; check the unit (W, not mW)")
    reasons = state.get("reasons_end")
    if reasons is not None and not (isinstance(reasons, list) and all(isinstance(r, str) for r in reasons)):
        raise at(path, f"{label}.gpu_state.reasons_end", f"expected a list of reason names, got {_kind(reasons)}")


# What a stored figure may differ from the one its neighbours give: rounding to six significant digits, not more. The
# writers store sol_time / time_median exactly (roofline.measurement.harness, roofline.model.analysis.timed_figures).
AGREEMENT = 1e-6
_CEILINGS = ("peak_flops", "bandwidth")  # attainable_flops is 0 for a kernel of no FLOPs (copy)


def _check_neighbours(path: Path, label: str, data: Mapping[str, Any]) -> None:
    """A kernel entry's figures against each other (the groups, program and timeline blocks are checked the same way
    in roofline.records.groups and roofline.records.timeline): min <= median <= max, ceilings above 0, and the stored
    fraction of the ceiling equal to sol_time / time_median, so a file edited to say 95 % when its own times say
    0.07 % is refused, not gated on."""
    for key in _CEILINGS:
        value = data.get(key)
        if value is not None and value <= 0:
            raise at(path, f"{label}.{key}", f"is {value!r}; a ceiling is above 0 (a kernel judged against a 0 B/s "
                                             "roof has no fraction of it)")
    low, median, high = data.get("time_min"), data.get("time_median"), data.get("time_max")
    slack = 1 + AGREEMENT
    if low is not None and median is not None and low > median * slack:
        raise at(path, f"{label}.time_min", f"is {low:.6g} s, above time_median ({median:.6g} s): the fastest run "
                                            "cannot be slower than the median")
    if high is not None and median is not None and high * slack < median:
        raise at(path, f"{label}.time_max", f"is {high:.6g} s, below time_median ({median:.6g} s): the slowest run "
                                            "cannot be faster than the median")
    if low is not None and high is not None and low > high * slack:
        raise at(path, f"{label}.time_min", f"is {low:.6g} s, above time_max ({high:.6g} s)")
    fraction, sol = data.get("fraction_of_ceiling"), data.get("sol_time")
    if fraction is not None and sol is not None and median:
        computed = sol / median
        if abs(fraction - computed) > AGREEMENT * max(abs(computed), abs(fraction)):
            raise at(path, f"{label}.fraction_of_ceiling",
                     f"is {fraction:.6g} ({fraction:.2%}) but sol_time / time_median = {sol:.6g} s / {median:.6g} s "
                     f"= {computed:.6g} ({computed:.2%}): the file was edited or is corrupt, and report gates on this "
                     "figure; measure again")


def _check_block(path: Path, label: str, block: Mapping[str, Any] | None, numbers: Sequence[str]) -> None:
    """The numeric fields of an entry's block that readers use: each a number or null, not negative."""
    if block is None:
        return
    _check(path, f"{label}.", block, {}, {key: _OPT_NUMBER for key in numbers})
    for key in numbers:
        if block.get(key) is not None and block[key] < 0:
            raise at(path, f"{label}.{key}", f"is {block[key]!r}; it cannot be negative")


def _check_devices(path: Path, doc: Mapping[str, Any]) -> None:
    """A several-GPU file (measure --device all): each `devices` entry has an index and a name, and each kernel
    names one of those indices in `device`. Files without `devices` are single-device and need neither. The list is
    kept in `extra`, so it round-trips as written."""
    if "devices" not in doc:
        return
    if not isinstance(doc["devices"], list) or not doc["devices"]:
        raise at(path, "devices", f"expected a non-empty list of devices, got {_kind(doc['devices'])}")
    indices = []
    ranks: dict[Any, int] = {}
    for i, dev in enumerate(doc["devices"]):
        if not isinstance(dev, dict):
            raise at(path, f"devices[{i}]", f"expected a mapping, got {_kind(dev)}")
        _check(path, f"devices[{i}].", dev, {"index": _NUMBER, "name": _STRING}, {})
        if dev["index"] in indices:
            raise at(path, f"devices[{i}].index", f"device {dev['index']!r:.20} appears twice (also devices"
                                                  f"[{indices.index(dev['index'])}]); each device's results are "
                                                  "listed once, so one of them is from another file: remove it")
        indices.append(dev["index"])
        # A fleet file (mpirun): one entry per rank. The same rank twice (two runs pasted together) would be judged as
        # two GPUs, and move the fleet's medians, without a word.
        if dev.get("rank") is not None:
            if dev["rank"] in ranks:
                raise at(path, f"devices[{i}].rank", f"rank {dev['rank']!r:.20} appears twice (also devices"
                                                     f"[{ranks[dev['rank']]}]); a fleet file holds one result per "
                                                     "rank, so one of them is from another run: remove it")
            ranks[dev["rank"]] = i
    for i, k in enumerate(doc["kernels"]):
        if k.get("device") not in indices:
            raise at(path, f"kernels[{i}].device", f"is {k.get('device')!r:.20}; expected one of the devices' "
                                                    f"indices {indices}")


def _plausible_machine(path: Path, machine: Mapping[str, Any]) -> None:
    """The spec a results file was measured against, held to the ranges a spec file is (roofline.model.invariants
    PLAUSIBLE): a file edited by hand, or written from a spec before the ranges, cannot carry a 1,555 B/s DRAM."""
    why = outside("memory_bandwidth", machine["bandwidth"])
    field = "bandwidth"
    if why is None:
        why, field = impossible_latency("memory", machine["latency"]), "latency"
    for roof, value in machine["roofs"].items():
        if why is None:
            kind = "tensor_roof" if roof.endswith("_tensor") else "cuda_core_roof"
            why, field = outside(kind, value), f"roofs.{roof}"
    if why is None and machine.get("power_limit") is not None:
        why, field = outside("power", machine["power_limit"]), "power_limit"
    if why is not None:
        raise at(path, f"machine.{field}", f"{why}; check the unit and the figure")


def kernel_identity(kernel: Mapping[str, Any]) -> tuple[str, str, str]:
    """(name, parameters, device): a kernel entry's identity; a document holds each once."""
    return str(kernel.get("name")), _canonical(kernel.get("params", {})), str(kernel.get("device", ""))


def _canonical(params: Any) -> str:
    """Parameters as one canonical text (sorted keys): orjson where it can, the standard encoder otherwise."""
    orjson = fast_json()  # the identity of 38,000 imported launches in a tenth of the standard encoder's time
    if orjson is not None:
        try:
            return orjson.dumps(params, option=orjson.OPT_SORT_KEYS | orjson.OPT_NON_STR_KEYS).decode("utf-8")
        except orjson.JSONEncodeError:
            pass
    return json.dumps(params, sort_keys=True, default=str)


def check_document(path: Path, doc: Any, statuses: Sequence[str]) -> None:
    """A whole results document, as parsed JSON: schema, top-level blocks, every kernel, devices, groups, and
    each (name, params, device) once."""
    if not isinstance(doc, dict):
        raise at(path, None, f"expected a JSON object at the top, got {_kind(doc)}")
    check_schema(path, doc)
    _check(path, "", doc, _TOP, _TOP_OPTIONAL)
    _check(path, "device.", doc["device"], _DEVICE, _DEVICE_OPTIONAL)
    machine = doc["machine"]
    if machine is not None:
        _check(path, "machine.", machine, _MACHINE, _MACHINE_OPTIONAL)
        if not machine["roofs"]:  # a spec has at least one compute roof; the chart draws the machine under them
            raise at(path, "machine.roofs", "is empty: expected the machine's compute roofs, like {fp32: 6.7e13}")
        for roof, value in machine["roofs"].items():
            if not _fits(value, _NUMBER) or value <= 0:
                raise at(path, f"machine.roofs.{roof}", f"expected a positive number (FLOP/s), got {value!r:.40}")
        for key in ("bandwidth", "latency", "bytes_in_flight"):
            if machine[key] <= 0:
                raise at(path, f"machine.{key}", f"expected a positive number, got {machine[key]!r}")
        _plausible_machine(path, machine)
    if not doc["kernels"]:
        raise at(path, "kernels", "is empty: a results file holds at least one kernel")
    for i, kernel in enumerate(doc["kernels"]):
        check_kernel(path, i, kernel, machine is not None, statuses)
    _check_devices(path, doc)
    seen: dict[tuple[str, str, str], int] = {}
    for i, raw in enumerate(doc["kernels"]):
        key = kernel_identity(raw)
        if key in seen:
            raise at(path, f"kernels[{i}] ({key[0]})", f"repeats kernels[{seen[key]}]: the same kernel, "
                                                       "parameters and device appear twice")
        seen[key] = i
    sweep = doc.get("sweep")
    if sweep is not None and not isinstance(sweep.get("kernel"), str):
        raise at(path, "sweep", "expected a mapping like {kernel: NAME, param: n}")
    check_groups(path, doc)
    check_timeline(path, doc)
