"""Nsight Compute (`ncu --csv --page raw`) output → kernel launches → counters. Pure: text in, numbers out.

What `ncu --csv --page raw` writes (to standard output, usually redirected together with the program's own output):

  ==PROF== Connected to process 4242 (/usr/bin/python3.12)       <- ncu's progress lines, the program's output ...
  "ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream","Block Size","Grid Size",
      "Device","CC","dram__bytes_read.sum",...                    <- the header: fixed columns, then metric names
  "","","","","","","","","","","","byte",...                     <- the units row
  "0","4242","python3.12","127.0.0.1","add_f32","1","7","(128, 1, 1)","(16384, 1, 1)","0","9.0","201,342,976",...
                                                                   <- one row per kernel launch

Numbers may carry thousands separators; units are whatever ncu chose ('byte', 'Kbyte', 'nsecond', 'usecond',
'inst', '%'...) unless `--print-units base` was given. Everything here is scaled to SI base units (B, s, counts).

Counters (what roofline uses, by its own names):
  dram_read, dram_write   dram__bytes_read.sum, dram__bytes_write.sum                      B
  l2_bytes, l1_bytes      lts__t_bytes.sum, l1tex__t_bytes.sum                              B
  time                    gpu__time_duration.sum                                            s
  flops_fp32/fp64/fp16    add + mul + 2 × fma of sm__sass_thread_inst_executed_op_{f,d,h}{add,mul,fma}_pred_on.sum
  tensor_inst             sm__inst_executed_pipe_tensor.sum (else the sum of the pipe_tensor_op_* variants)
  tensor_active_pct       sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active (%)
A counter the CSV lacks is None and its metric is listed in `missing`: never silently taken as zero.
"""

from __future__ import annotations

import csv
import io
import math
import re
from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping, Sequence

# ---- the metrics ---------------------------------------------------------------------------------

DRAM_READ = "dram__bytes_read.sum"
DRAM_WRITE = "dram__bytes_write.sum"
L2_BYTES = "lts__t_bytes.sum"
L1_BYTES = "l1tex__t_bytes.sum"
TIME = "gpu__time_duration.sum"
TENSOR_INST = "sm__inst_executed_pipe_tensor.sum"
TENSOR_INST_VARIANTS = ("sm__inst_executed_pipe_tensor_op_hmma.sum", "sm__inst_executed_pipe_tensor_op_gmma.sum",
                        "sm__inst_executed_pipe_tensor_op_imma.sum", "sm__inst_executed_pipe_tensor_op_dmma.sum")
TENSOR_ACTIVE = "sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active"
DEVICE_NAME = "device__attribute_display_name"

PRECISIONS = {"fp32": "f", "fp64": "d", "fp16": "h"}
_OPS = ("add", "mul", "fma")


def flop_metric(precision: str, op: str) -> str:
    """flop_metric('fp32', 'fma') -> 'sm__sass_thread_inst_executed_op_ffma_pred_on.sum'."""
    return f"sm__sass_thread_inst_executed_op_{PRECISIONS[precision]}{op}_pred_on.sum"


FLOP_METRICS = {p: tuple(flop_metric(p, op) for op in _OPS) for p in PRECISIONS}

# The list `roofline measure --profile ncu` collects and the README / docs/ncu.md give for `ncu --metrics`.
CORE_METRICS = (DRAM_READ, DRAM_WRITE, TIME)
METRICS = (
    DRAM_READ, DRAM_WRITE, L2_BYTES, L1_BYTES, TIME,
    *FLOP_METRICS["fp32"], *FLOP_METRICS["fp64"], *FLOP_METRICS["fp16"],
    TENSOR_INST,
)

# What `roofline import ncu --list-metrics` prints for a user's own program: the same, plus the GPU's name so the
# import can pick the spec by itself.
IMPORT_METRICS = (*METRICS, DEVICE_NAME)

# Columns ncu writes before the metrics (they vary a little between versions: some add "Kernel Time").
_ID = "ID"
_KERNEL = "Kernel Name"

# ---- numbers and units -------------------------------------------------------------------------

_PREFIX = {"": 1.0, "K": 1e3, "M": 1e6, "G": 1e9, "T": 1e12, "P": 1e15, "m": 1e-3, "u": 1e-6, "n": 1e-9,
           "p": 1e-12, "Ki": 2.0**10, "Mi": 2.0**20, "Gi": 2.0**30, "Ti": 2.0**40}
_BASE_UNITS = ("byte", "second", "inst", "cycle", "sector", "warp", "request", "thread", "block", "register",
               "hz", "Hz", "wavefront", "transaction", "instruction", "flop", "op")
_ALIASES = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0, "B": 1.0, "KB": 1e3, "MB": 1e6,
            "GB": 1e9, "TB": 1e12, "%": 1.0, "": 1.0}


class NcuParseError(ValueError):
    """The text holds no ncu raw-page table, or one whose numbers cannot be read."""


def unit_scale(unit: str) -> float | None:
    """The factor from `unit` to its base unit: 'Kbyte' -> 1e3, 'usecond' -> 1e-6, 'byte/second' -> 1; None when
    the unit is not one this module knows (the value is then kept as written)."""
    unit = unit.strip()
    if unit in _ALIASES:
        return _ALIASES[unit]
    if "/" in unit:
        top, _, bottom = unit.partition("/")
        a, b = unit_scale(top), unit_scale(bottom)
        return None if a is None or b is None or b == 0 else a / b
    for base in _BASE_UNITS:
        if unit.endswith(base):
            prefix = unit[: -len(base)]
            if prefix in _PREFIX:
                return _PREFIX[prefix]
            if prefix.upper() in ("K",):
                return 1e3
    return None


_MISSING_TEXT = {"", "n/a", "N/A", "-", "nan", "NaN"}


def parse_number(text: str) -> float | None:
    """'201,342,976' -> 201342976.0; '1.5' -> 1.5; '' or 'n/a' -> None. Raises ValueError on anything else."""
    t = text.strip().replace("\u202f", "").replace("\u00a0", "")
    if t in _MISSING_TEXT:
        return None
    if re.fullmatch(r"[+-]?\d{1,3}(,\d{3})+(\.\d*)?([eE][+-]?\d+)?", t):
        t = t.replace(",", "")
    value = float(t)  # ValueError for text
    return value if math.isfinite(value) else None


# ---- the table ---------------------------------------------------------------------------------


@dataclass
class Launch:
    """One kernel launch: its descriptive columns as text and its metrics in base units (None = not reported)."""

    index: int  # position in the file (0-based), for messages
    id: str
    kernel: str
    info: dict[str, str]
    metrics: dict[str, float | None]
    units: dict[str, str]
    raw: dict[str, str] = field(default_factory=dict)  # metric cells ncu wrote that are not numbers

    @property
    def device(self) -> str:
        """The device name when the CSV has it (device__attribute_display_name, or a non-numeric Device)."""
        name = self.raw.get(DEVICE_NAME) or ""
        if name:
            return name
        device = self.info.get("Device", "")
        return "" if re.fullmatch(r"\d*", device.strip()) else device.strip()


@dataclass
class NcuTable:
    launches: list[Launch]
    columns: list[str]  # metric columns, in file order
    units: dict[str, str]
    noise_lines: int  # lines around the table that were not part of it (program output, ==PROF== lines)
    prof_lines: list[str]  # ==PROF== / ==ERROR== / ==WARNING== lines, for messages


def _is_metric(column: str) -> bool:
    return "__" in column


def _rows(text: str) -> list[tuple[int, list[str]]]:
    """(line number, cells) for each line that reads as one CSV record. Lines are parsed one by one so that a
    program's stray quote cannot swallow the table."""
    out = []
    for lineno, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            cells = next(csv.reader(io.StringIO(line)))
        except (csv.Error, StopIteration):
            continue
        out.append((lineno, cells))
    return out


def _is_header(cells: Sequence[str]) -> bool:
    return len(cells) >= 3 and cells[0].strip() == _ID and _KERNEL in cells


def parse_csv(text: str) -> NcuTable:
    """Every launch in an `ncu --csv --page raw` capture. Header(s) are found wherever they are; a second header
    (two captures concatenated) starts a new column set. Raises NcuParseError when there is no table at all."""
    if text.startswith("\ufeff"):
        text = text[1:]
    lines = text.splitlines()
    prof = [ln.strip() for ln in lines if ln.lstrip().startswith(("==PROF==", "==ERROR==", "==WARNING=="))]
    header: list[str] | None = None
    units: dict[str, str] = {}
    launches: list[Launch] = []
    metric_columns: list[str] = []
    used = 0
    expect_units = False
    for lineno, cells in _rows(text):
        if _is_header(cells):
            header = [c.strip() for c in cells]
            for c in header:
                if _is_metric(c) and c not in metric_columns:
                    metric_columns.append(c)
            units = {}
            expect_units = True
            used += 1
            continue
        if header is None or len(cells) != len(header):
            continue
        first = cells[0].strip()
        if expect_units and first == "":
            units.update({h: u.strip() for h, u in zip(header, cells) if _is_metric(h)})
            expect_units = False
            used += 1
            continue
        expect_units = False
        if not re.fullmatch(r"\d+", first):
            continue
        used += 1
        row = dict(zip(header, cells))
        metrics: dict[str, float | None] = {}
        raw: dict[str, str] = {}
        for h in header:
            if not _is_metric(h):
                continue
            cell = row[h]
            try:
                value = parse_number(cell)
            except ValueError:
                raw[h] = cell.strip()  # a text metric (a device name, say)
                metrics[h] = None
                continue
            scale = unit_scale(units.get(h, ""))
            metrics[h] = value if value is None or scale is None else value * scale
        info = {h: row[h].strip() for h in header if not _is_metric(h)}
        launches.append(Launch(len(launches), first, info.get(_KERNEL, "?"), info, metrics,
                               {h: units.get(h, "") for h in header if _is_metric(h)}, raw))
    if header is None:
        hint = ""
        for line in prof:
            if "ERR_NVGPUCTRPERM" in line or "==ERROR==" in line:
                hint = f" (ncu said: {line[:200]})"
                break
        raise NcuParseError("no 'ncu --csv --page raw' table found: expected a header line starting with "
                            f"\"ID\" and naming \"Kernel Name\"{hint}")
    noise = sum(1 for ln in lines if ln.strip()) - used
    return NcuTable(launches, metric_columns, units, noise, prof)


# ---- counters -------------------------------------------------------------------------------------


def _get(metrics: Mapping[str, float | None], name: str, missing: list[str]) -> float | None:
    value = metrics.get(name)
    if value is None:
        missing.append(name)
    return value


CYCLES_PER_SECOND = "smsp__cycles_elapsed.avg.per_second"


def instruction_count(metrics: Mapping[str, float | None], name: str, time: float | None) -> tuple[float | None, bool]:
    """(count, from_rate) for an sm__sass_thread_inst_executed_op_*_pred_on.sum metric: the metric itself, its
    smsp__ twin (the same total), or, as `--set full` records them, the per-cycle rate
    smsp__...sum.per_cycle_elapsed × smsp__cycles_elapsed.avg.per_second × gpu__time_duration."""
    for candidate in (name, "smsp__" + name[len("sm__"):]):
        if metrics.get(candidate) is not None:
            return metrics[candidate], False
    rate = metrics.get("smsp__" + name[len("sm__"):] + ".per_cycle_elapsed")
    cycles = metrics.get(CYCLES_PER_SECOND)
    if rate is not None and cycles is not None and time is not None:
        return rate * cycles * time, True
    return None, False


def counters(metrics: Mapping[str, float | None]) -> dict[str, Any]:
    """roofline's counters from one launch's metrics (base units). Absent metrics are None and listed in
    'missing'; a precision's FLOPs are the add + mul + 2 × fma of the counters present (None when none is)."""
    missing: list[str] = []
    read = _get(metrics, DRAM_READ, missing)
    write = _get(metrics, DRAM_WRITE, missing)
    out: dict[str, Any] = {
        "dram_read": read,
        "dram_write": write,
        "dram_bytes": None if read is None or write is None else read + write,
        "l2_bytes": _get(metrics, L2_BYTES, missing),
        "l1_bytes": _get(metrics, L1_BYTES, missing),
        "time": _get(metrics, TIME, missing),
    }
    total = 0.0
    any_flops = False
    rates_used = False
    for precision, names in FLOP_METRICS.items():
        present = {}
        for op, n in zip(_OPS, names):
            value, from_rate = instruction_count(metrics, n, out["time"])
            present[op] = value
            rates_used = rates_used or from_rate
        missing += [n for n, v in zip(names, present.values()) if v is None]
        values = [v for v in present.values() if v is not None]
        if not values:
            out[f"flops_{precision}"] = None
            continue
        flops = (present["add"] or 0.0) + (present["mul"] or 0.0) + 2.0 * (present["fma"] or 0.0)
        out[f"flops_{precision}"] = flops
        total += flops
        any_flops = True
    out["flops"] = total if any_flops else None
    out["flops_source"] = None if not any_flops else ("rates" if rates_used else "counts")
    tensor = metrics.get(TENSOR_INST)
    if tensor is None:
        variants = [metrics.get(v) for v in TENSOR_INST_VARIANTS if metrics.get(v) is not None]
        tensor = sum(variants) if variants else None
    if tensor is None:
        missing.append(TENSOR_INST)
    out["tensor_inst"] = tensor
    out["tensor_active_pct"] = metrics.get(TENSOR_ACTIVE)
    out["missing"] = missing
    return out


def sum_counters(items: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Counters of several launches (one kernel that launches several CUDA kernels) added up. A field is None
    when any launch lacks it; missing is the union; tensor_active_pct is the time-weighted mean."""
    if not items:
        raise ValueError("no launches to add up")
    out: dict[str, Any] = {}
    for key in ("dram_read", "dram_write", "dram_bytes", "l2_bytes", "l1_bytes", "time", "flops_fp32",
                "flops_fp64", "flops_fp16", "flops", "tensor_inst"):
        values = [c.get(key) for c in items]
        out[key] = None if any(v is None for v in values) else float(sum(values))
    pct = [(c.get("tensor_active_pct"), c.get("time") or 0.0) for c in items]
    if all(p is not None for p, _ in pct) and sum(t for _, t in pct) > 0:
        out["tensor_active_pct"] = sum(p * t for p, t in pct) / sum(t for _, t in pct)
    else:
        out["tensor_active_pct"] = None
    sources = {c.get("flops_source") for c in items} - {None}
    out["flops_source"] = sources.pop() if len(sources) == 1 else ("mixed" if sources else None)
    out["missing"] = list(dict.fromkeys(m for c in items for m in c.get("missing", [])))
    out["launches"] = len(items)
    return out


# ---- comparing with the model -----------------------------------------------------------------------

FLAG_THRESHOLD = 1.10  # measured DRAM traffic more than 10 % above the model is flagged


def ratio(measured: float | None, model: float | None) -> float | None:
    if measured is None or not model:
        return None
    return measured / model


def traffic_flag(c: Mapping[str, Any], model_bytes: float | None, threshold: float = FLAG_THRESHOLD) -> str | None:
    """A one-line hint when measured DRAM traffic exceeds the model's bytes by more than 10 %, else None.

    Reads and writes are judged together against the model (which counts both); the hint names the larger."""
    measured = c.get("dram_bytes")
    r = ratio(measured, model_bytes)
    if r is None or r <= threshold:
        return None
    read, write = c.get("dram_read") or 0.0, c.get("dram_write") or 0.0
    from roofline.units import format_bytes

    detail = f"{format_bytes(read)} read + {format_bytes(write)} written vs {format_bytes(model_bytes)} modelled"
    if read >= write:
        return f"reads {r:.1f}× the model ({detail}): re-reads or uncoalesced access?"
    return f"writes {r:.1f}× the model ({detail}): redundant stores, a temporary array, or spills?"


def compare(c: Mapping[str, Any], model_flops: float | None, model_bytes: float | None) -> dict[str, Any]:
    """measured / model for DRAM bytes and FLOPs, and the traffic flag (None when within 10 %)."""
    return {
        "measured_bytes_ratio": ratio(c.get("dram_bytes"), model_bytes),
        "measured_flops_ratio": ratio(c.get("flops"), model_flops),
        "flag": traffic_flag(c, model_bytes),
    }


# ---- why ncu gave nothing ------------------------------------------------------------------------------


def diagnose(output: str) -> str | None:
    """A plain sentence when ncu's output says it could not profile (no counter access, driver library not
    loaded, unsupported GPU); None when nothing of the sort is there."""
    if "ERR_NVGPUCTRPERM" in output:
        return ("ncu cannot read the GPU performance counters here (ERR_NVGPUCTRPERM: the driver allows them to "
                "admin users only; see https://developer.nvidia.com/ERR_NVGPUCTRPERM)")
    if "LibraryNotLoaded" in output or "libnvperf" in output.lower():
        return "ncu could not load its profiling library on this machine (LibraryNotLoaded)"
    for pattern, why in (
        ("not supported", "ncu does not support profiling this GPU (common on virtualised GPUs)"),
        ("Failed to find metric", "this ncu or GPU does not know one of the metrics asked for"),
        ("No kernels were profiled", "ncu profiled no kernels"),
    ):
        for line in output.splitlines():
            if pattern in line and line.lstrip().startswith(("==ERROR==", "==WARNING==", "==PROF==")):
                return f"{why} ({line.strip()[:200]})"
    for line in output.splitlines():
        if line.lstrip().startswith("==ERROR=="):
            return f"ncu reported an error: {line.strip()[:200]}"
    return None


def metrics_argument(metrics: Iterable[str] = METRICS) -> str:
    return ",".join(metrics)
