"""`roofline import ncu`: an `ncu --csv --page raw` capture of any program → a results document (roofline/results/v1).

Each kernel launch becomes one results entry, no descriptor needed. Its figures come from the counters alone:
  flops      FP32 + FP64 + FP16 FLOPs (add + mul + 2 × fma) of the counters the CSV has
  bytes      DRAM bytes read + written
  time       gpu__time_duration
and from them intensity, attainable, speed-of-light time and the fraction of the ceiling, exactly as `analyze`
computes them for a descriptor. The ceiling is judged at the traffic the kernel really made (not a minimum), so a
kernel that moves twice the bytes it needs can still look close to its ceiling: the counters block says so.

Imported launches were never checked by roofline against a reference, so they carry "verified": null and the
status "IMPORTED"; roofline did not run them.
"""

from __future__ import annotations

import datetime as _dt
import re
from pathlib import Path
from typing import Any, Sequence

from roofline import __version__
from roofline import ncu
from roofline.analysis import machine_summary
from roofline.errors import InputError
from roofline.model import MachineSpec
from roofline.specs import SpecCatalog

RESULTS_SCHEMA = "roofline/results/v1"
STATUS = "IMPORTED"
MAX_CSV_BYTES = 512 << 20

_DTYPE = {"fp64": "float64", "fp32": "float32", "fp16": "float16"}


def short_name(kernel: str, limit: int = 80) -> str:
    """A readable kernel name: 'void at::native::foo<4, bar<int>>(int, float*)' -> 'at::native::foo'."""
    name = kernel.strip()
    name = re.sub(r"^(void|__global__ void)\s+", "", name)
    name = name.replace("(anonymous namespace)::", "")
    out, depth = [], 0
    for ch in name:
        if ch in "<(":
            depth += 1
            continue
        if ch in ">)":
            depth = max(0, depth - 1)
            continue
        if depth == 0:
            out.append(ch)
    short = "".join(out).strip() or name
    return short if len(short) <= limit else short[: limit - 1] + "…"


def machine_caches(machine: MachineSpec) -> dict[str, dict[str, float | None]]:
    return {level: {"size": c.size, "bandwidth": c.bandwidth, "latency": c.latency}
            for level, c in machine.caches.items()}


def choose_spec(table: ncu.NcuTable, spec_name: str | None, catalog: SpecCatalog) -> MachineSpec:
    """--spec when given; else the bundled spec whose device_names lists the CSV's device."""
    if spec_name and spec_name != "auto":
        return catalog.resolve(spec_name)
    names = sorted({launch.device for launch in table.launches if launch.device})
    if len(names) > 1:
        raise InputError(f"the CSV holds launches on several devices ({', '.join(names)}); choose one with --spec")
    if not names:
        raise InputError("the CSV does not name its GPU (collect device__attribute_display_name too, or use "
                         "--set full); say which spec to compare with: --spec h200 (see 'roofline specs')")
    matched = catalog.match_device(names[0])
    if matched is None:
        raise InputError(f"no bundled spec lists the device '{names[0]}'; say which to compare with: --spec SPEC "
                         "(a bundled id or a YAML file; see 'roofline specs')")
    return matched


def _roof(c: dict[str, Any], machine: MachineSpec) -> tuple[str, str]:
    """(roof, dtype): the CUDA-core precision that did most of the FLOPs; FP32 when none did."""
    best = max(("fp64", "fp32", "fp16"), key=lambda p: (c.get(f"flops_{p}") or 0.0, p == "fp32"))
    if not c.get(f"flops_{best}"):
        best = "fp32"
    if best not in machine.roofs:
        best = "fp32" if "fp32" in machine.roofs else next(iter(machine.roofs))
    return best, _DTYPE.get(best, "unknown")


def launch_entry(launch: ncu.Launch, machine: MachineSpec) -> tuple[dict[str, Any] | None, str | None]:
    """(entry, None) for a usable launch, (None, why) for one without DRAM bytes or time."""
    c = ncu.counters(launch.metrics)
    lacking = [m for m, v in ((ncu.DRAM_READ, c["dram_read"]), (ncu.DRAM_WRITE, c["dram_write"]),
                              (ncu.TIME, c["time"])) if v is None]
    if lacking:
        return None, f"no {', '.join(lacking)}"
    if not c["time"] or c["time"] <= 0:
        return None, "a GPU time of 0"
    if not c["dram_bytes"] or c["dram_bytes"] <= 0:
        return None, "no DRAM traffic (0 B): it has no place on the roofline"
    roof, dtype = _roof(c, machine)
    flops = c["flops"] or 0.0
    bytes_ = c["dram_bytes"]
    time = c["time"]
    peak = machine.roofs[roof]
    bw = machine.bandwidth
    ai = flops / bytes_
    ridge = peak / bw
    memory_time, compute_time = bytes_ / bw, flops / peak
    sol = max(memory_time, compute_time)
    warnings: list[str] = []
    flop_missing = [m for p in ncu.FLOP_METRICS.values() for m in p if m in c["missing"]]
    if c["flops"] is None:
        warnings.append("the CSV has no FLOP counters: FLOPs unknown, counted as 0 here")
    elif flop_missing:
        warnings.append(f"FLOPs from the counters present; {len(flop_missing)} FLOP counter(s) absent "
                        "(listed in counters.missing)")
    if c.get("tensor_inst"):
        warnings.append(f"{c['tensor_inst']:.3g} tensor-pipe instructions: their FLOPs are not in the "
                        "CUDA-core counters, so FLOPs and intensity are understated")
    entry: dict[str, Any] = {
        "name": short_name(launch.kernel),
        "kernel_name": launch.kernel,
        "params": {"launch": int(launch.id)},
        "dtype": dtype,
        "roof": roof,
        "launches": 1,
        "stages": [],
        "flops": flops,
        "bytes": bytes_,
        "intensity": ai,
        "peak_flops": peak,
        "bandwidth": bw,
        "ridge": ridge,
        "bound": "memory" if ai < ridge else "compute",
        "attainable_flops": min(peak, ai * bw),
        "memory_time": memory_time,
        "compute_time": compute_time,
        "sol_time": sol,
        "latency_bound": bytes_ < machine.bytes_in_flight,
        "time_median": time,
        "time_min": time,
        "time_max": time,
        "repeats": 1,
        "achieved_bandwidth": bytes_ / time,
        "achieved_flops": flops / time,
        "fraction_of_ceiling": sol / time,
        "verified": None,
        "status": STATUS,
        "error": None,
        "timing": "ncu gpu__time_duration",
        "counters": c,
        "ncu": {key: launch.info[col] for key, col in (
            ("id", "ID"), ("process", "Process Name"), ("block", "Block Size"), ("grid", "Grid Size"),
            ("device", "Device"), ("cc", "CC"), ("stream", "Stream")) if col in launch.info},
        "warnings": warnings,
    }
    return entry, None


def import_table(table: ncu.NcuTable, machine: MachineSpec, source: str = "<csv>") -> tuple[dict[str, Any], list[str]]:
    """(results document, notes). Raises InputError when no launch is usable."""
    entries, notes = [], []
    skipped: list[dict[str, str]] = []
    for launch in table.launches:
        entry, why = launch_entry(launch, machine)
        if entry is None:
            skipped.append({"id": launch.id, "kernel": launch.kernel, "why": str(why)})
            notes.append(f"note: launch {launch.id} ({short_name(launch.kernel)}) skipped: {why}")
        else:
            entries.append(entry)
    if not entries:
        if not table.launches:
            raise InputError(f"{source}: the ncu table has a header but no kernel launches")
        raise InputError(f"{source}: none of the {len(table.launches)} launch(es) has DRAM bytes and GPU time; "
                         f"collect them with: ncu --csv --page raw --metrics {ncu.metrics_argument()} PROGRAM")
    devices = sorted({launch.device for launch in table.launches if launch.device})
    summary = machine_summary(machine)
    summary["caches"] = machine_caches(machine)
    doc = {
        "schema": RESULTS_SCHEMA,
        "created": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "tool_version": __version__,
        "backend": "ncu",
        "device": {"name": devices[0] if devices else machine.name, "spec_id": machine.id,
                   "spec_derived": bool(machine.derived), "kind": "gpu"},
        "machine": summary,
        "source": {"tool": "ncu", "file": source, "launches": len(table.launches), "skipped": skipped,
                   "metrics": table.columns},
        "kernels": entries,
    }
    return doc, notes


def read_csv_text(path: Path) -> str:
    path = Path(path)
    try:
        size = path.stat().st_size
        if size > MAX_CSV_BYTES:
            raise InputError(f"{path}: file is {size} bytes; an ncu CSV may be at most {MAX_CSV_BYTES}")
        data = path.read_bytes()
    except FileNotFoundError:
        raise InputError(f"{path}: no such file") from None
    except IsADirectoryError:
        raise InputError(f"{path}: is a folder, expected the CSV that 'ncu --csv --page raw' writes") from None
    except OSError as exc:
        raise InputError(f"{path}: cannot read: {exc.strerror}") from None
    return data.decode("utf-8", errors="replace")


def import_csv(path: Path, spec_name: str | None = None,
               catalog: SpecCatalog | None = None) -> tuple[dict[str, Any], list[str]]:
    """Read one ncu CSV file into a results document; (document, notes for the user)."""
    text = read_csv_text(path)
    try:
        table = ncu.parse_csv(text)
    except ncu.NcuParseError as exc:
        why = ncu.diagnose(text)
        raise InputError(f"{path}: {why}; the file holds no counters" if why else f"{path}: {exc}") from None
    machine = choose_spec(table, spec_name, catalog or SpecCatalog.bundled())
    return import_table(table, machine, str(path))


def counter_summary(entries: Sequence[dict[str, Any]]) -> list[str]:
    """Lines for people: one per flagged entry."""
    out = []
    for e in entries:
        for w in e.get("warnings", []):
            if "× the model" in w:
                out.append(f"{e['name']}: {w}")
    return out
