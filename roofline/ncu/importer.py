"""`roofline import ncu`: an `ncu --csv --page raw` capture of any program -> a results document (roofline/results/v1).

Each kernel launch becomes one results entry, no descriptor needed. Its figures come from the counters alone:
  flops      CUDA-core FLOPs (FP32, FP64, FP16/BF16) + tensor-core FLOPs (FP16, BF16, TF32, FP8, INT8, FP64)
  bytes      DRAM bytes read + written
  time       gpu__time_duration
Its roof is the precision of its dominant work, and a launch of mixed work is placed by the sum of the times each
part needs at its own roof (roofline.ncu.placement); `roof_counters` names the counters that decided it and `work`
lists every part. The ceiling is judged at the traffic the kernel really made (not a minimum), so a kernel that
moves twice the bytes it needs can still look close to its ceiling: the counters block says so.

Imported launches were never checked by roofline against a reference, so they carry "verified": null and the
status "IMPORTED"; roofline did not run them.
"""

from __future__ import annotations

import datetime as _dt
import math
import re
from dataclasses import asdict
from pathlib import Path
from typing import Any, Mapping, Sequence

from roofline.version import __version__
from roofline.model.analysis import machine_summary, timed_elsewhere
from roofline.records.caveats import warning
from roofline.records.document import Status
from roofline.records.schema import RESULTS_SCHEMA
from roofline.errors import InputError
from roofline.model.types import MachineSpec
from roofline.ncu.counters import counters
from roofline.ncu.halfprec import AMBIGUOUS, AMBIGUOUS_ROOF, HalfKind, half_kind
from roofline.ncu.metrics import DRAM_READ, DRAM_WRITE, FLOP_METRICS, IMPORT_METRICS, TIME, metrics_argument
from roofline.ncu.nvtx import launch_stack
from roofline.ncu.placement import place
from roofline.ncu.table import (MAX_CSV_BYTES, DroppedRow, ImpossibleValue, Launch, NcuParseError, NcuTable,
                                TooManyLaunches, diagnose, parse_csv_file)
from roofline.load.selection import spec_for_device
from roofline.load.specs import SpecCatalog
from roofline.model.units import format_flops
from roofline.model.counts import counted

SHOWN = 5  # rows a note names before "and N more"
NARROW = ("capture fewer: ncu --launch-count N, --kernel-name regex:NAME, or an NVTX range (--nvtx "
          "--nvtx-include NAME/); nothing was written")
MAX_LISTED = 100  # dropped rows listed in source.dropped (source.dropped_rows counts them all)


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


def choose_spec(table: NcuTable, spec_name: str | None, catalog: SpecCatalog) -> MachineSpec:
    """--spec when given; else the bundled spec whose device_names lists the CSV's device."""
    names = {launch.device for launch in table.launches if launch.device}
    return spec_for_device(names, spec_name, catalog, "the CSV's launches",
                           "the CSV does not name its GPU (collect device__attribute_display_name too, or profile "
                           "with 'ncu --set full')")


def _warnings(c: dict[str, Any], notes: list[str]) -> list[dict[str, Any]]:
    """What the reader of one entry must know about its FLOPs and its roof, as records."""
    collect = "collect the metrics 'roofline import ncu --list-metrics' prints"
    out = [warning("roof-from-counters", note, "give the spec the roof, or compare on a spec that has it")
           for note in notes]
    flop_missing = [m for names in FLOP_METRICS.values() for m in names if m in c["missing"]]
    if c["flops"] is None:
        out.append(warning("flops-unknown", "the CSV has no FLOP counters: FLOPs unknown, counted as 0 here", collect))
    elif flop_missing:
        out.append(warning("flops-unknown", f"CUDA-core FLOPs from the counters present; {len(flop_missing)} FLOP "
                                            "counter(s) absent (listed in counters.missing)", collect))
    if c.get("tensor_inst") and c.get("flops_tensor") is None:
        out.append(warning("flops-unknown", f"{c['tensor_inst']:.3g} tensor-pipe instructions but no "
                                            "sm__ops_path_tensor_* counters in the CSV: their FLOPs are unknown, so "
                                            "FLOPs and intensity are understated", collect))
    return out


def _half_work(c: dict[str, Any], kernel: str, stack: list[str] | None) -> HalfKind | None:
    """Which half precision the launch's CUDA-core half work is (None when it has none): the counters call it all
    fp16, so BF16 work named by the kernel or its NVTX ranges is moved to the bf16 roof here."""
    if "fp16" not in c["work"]:
        return None
    half = half_kind(kernel, stack or [])
    if half.kind == "bf16":
        c["work"]["bf16"] = c["work"].pop("fp16")
        c["work_counters"]["bf16"] = c["work_counters"].pop("fp16")
    return half


def _ambiguous_warning(roof: str, roofs: Mapping[str, float]) -> dict[str, Any]:
    fp16, bf16 = roofs.get("fp16"), roofs.get("bf16")
    if fp16 and bf16 and fp16 == bf16:
        either = "; the spec gives FP16 and BF16 the same rate, so the fraction of ceiling holds either way"
    elif fp16 and bf16:
        either = (f"; were it BF16, its roof would be bf16 ({format_flops(bf16)}) rather than fp16 "
                  f"({format_flops(fp16)})")
    else:
        either = ""
    return warning("precision-ambiguous",
                   f"FP16 or BF16 work: ncu's half-precision counters count both alike and neither the kernel name "
                   f"nor an NVTX range says which, so it is timed at {roof} and labelled {AMBIGUOUS}{either}",
                   "name the type in an NVTX range around the launch (e.g. 'attention_bf16')")


def _not_finite(entry: Mapping[str, Any]) -> tuple[str, float] | None:
    """The first figure of an entry that overflowed (inf or nan), as (field, value); None when all are finite."""
    blocks = [("", entry), ("counters.", entry["counters"]), *((f"work[{i}].", part) for i, part in
                                                                 enumerate(entry["work"]))]
    for prefix, block in blocks:
        for key, value in block.items():
            if isinstance(value, float) and not math.isfinite(value):
                return prefix + key, value
    return None


def launch_entry(launch: Launch, machine: MachineSpec) -> tuple[dict[str, Any] | None, str | None]:
    """(entry, None) for a usable launch, (None, why) for one without DRAM bytes or time. Raises ImpossibleValue
    when its counters overflow a float (a count ncu cannot have written)."""
    c = counters(launch.metrics)
    lacking = [m for m, v in ((DRAM_READ, c["dram_read"]), (DRAM_WRITE, c["dram_write"]), (TIME, c["time"]))
               if v is None]
    if lacking:
        return None, f"no {', '.join(lacking)}"
    if not c["time"] or c["time"] <= 0:
        return None, "a GPU time of 0"
    if not c["dram_bytes"] or c["dram_bytes"] <= 0:
        return None, "no DRAM traffic (0 B): it has no place on the roofline"
    stack = launch_stack(launch.info)
    half = _half_work(c, launch.kernel, stack)
    placed = place(c["work"], c["work_counters"], machine.roofs)
    dtype = placed.dtype
    notes = list(placed.notes)
    entry: dict[str, Any] = {
        "name": short_name(launch.kernel), "kernel_name": launch.kernel, "params": {"launch": int(launch.id)},
        "dtype": dtype, "roof": placed.roof, "roof_counters": placed.counters, "work": placed.parts,
        "launches": 1, "stages": [],
        **timed_elsewhere(c["flops"] or 0.0, c["dram_bytes"], c["time"], placed.peak, machine, placed.compute_time),
        "verified": None, "status": Status.IMPORTED.value, "error": None, "timing": "ncu gpu__time_duration", "counters": c,
        "ncu": {key: launch.info[col] for key, col in (
            ("id", "ID"), ("process", "Process Name"), ("block", "Block Size"), ("grid", "Grid Size"),
            ("device", "Device"), ("cc", "CC"), ("stream", "Stream")) if col in launch.info},
        "warnings": _warnings(c, notes),
    }
    if half is not None:  # the CUDA-core half work's type, and what told it (or that nothing did)
        entry["half_precision"] = {"dtype": half.dtype, "from": half.evidence}
        if half.kind is None and placed.parts and placed.parts[0]["work"] == "fp16":
            entry["dtype"] = AMBIGUOUS
            entry["warnings"].append(_ambiguous_warning(placed.roof, machine.roofs))
    if stack is not None:
        entry["nvtx"] = stack  # the NVTX push/pop ranges around the launch, outermost first
    bad = _not_finite(entry)
    if bad is not None:
        raise ImpossibleValue(f"line {launch.line} (launch {launch.id}): its {bad[0]} comes out as {bad[1]}: counts "
                              "this large, or a time this short, are not ones ncu writes")
    return entry, None


def launch_numbers(launches: Sequence[Launch]) -> tuple[list[int], list[int]]:
    """(params.launch, capture) of each launch. params.launch is ncu's ID unless an ID repeats (captures
    concatenated into one file): the launch that repeats one starts the next capture, whose launches are numbered on
    after the largest number so far (its ID + that offset), so every number is unique and a file always gives the
    same ones. Captures count from 1."""
    numbers: list[int] = []
    capture_of: list[int] = []
    seen: set[int] = set()
    offset, top, capture = 0, -1, 1
    for launch in launches:
        ncu_id = int(launch.id)
        if ncu_id in seen:
            capture, seen, offset = capture + 1, set(), top + 1
        seen.add(ncu_id)
        numbers.append(offset + ncu_id)
        capture_of.append(capture)
        top = max(top, offset + ncu_id)
    return numbers, capture_of


def not_imported_notes(skipped: Sequence[Mapping[str, Any]], dropped: Sequence[DroppedRow]) -> list[str]:
    """One note per reason a launch row was not imported, with how many and the first few of them."""
    by_reason: dict[str, list[str]] = {}
    for s in skipped:
        by_reason.setdefault(s["why"], []).append(f"launch {s['id']} ({short_name(s['kernel'], 40)})")
    for d in dropped:
        label = f"line {d.line}" + (f" (ID {d.id})" if d.id else "") + (f" ({d.detail})" if d.detail else "")
        by_reason.setdefault(f"a row with {d.why}" if d.why.startswith(("an ", "too ")) else d.why, []).append(label)
    notes = []
    for why, labels in by_reason.items():
        more = f" and {len(labels) - SHOWN} more" if len(labels) > SHOWN else ""
        notes.append(f"note: {counted(len(labels), 'launch row')} not imported, {why}: {', '.join(labels[:SHOWN])}{more}")
    return notes


def import_table(table: NcuTable, machine: MachineSpec, source: str = "<csv>") -> tuple[dict[str, Any], list[str]]:
    """(results document, notes). Raises InputError when no launch is usable or a count is impossible."""
    entries, notes = [], []
    skipped: list[dict[str, Any]] = []
    numbers, capture_of = launch_numbers(table.launches)
    captures = max(capture_of, default=1)
    for launch, number, capture in zip(table.launches, numbers, capture_of):
        try:
            entry, why = launch_entry(launch, machine)
        except ImpossibleValue as exc:
            raise InputError(f"{source}: {exc}") from None
        if entry is None:
            skipped.append({"id": launch.id, "line": launch.line, "kernel": launch.kernel, "why": str(why)})
            continue
        entry["params"] = {"launch": number}
        if captures > 1:
            entry["ncu"]["capture"] = capture
        entries.append(entry)
    notes += not_imported_notes(skipped, table.dropped)
    if captures > 1:
        notes.append(f"note: the launch IDs start again {counted(captures - 1, 'time')} (captures concatenated into one "
                     "file?): each later capture is numbered on after the one before it in params.launch; ncu.id "
                     "and ncu.capture keep ncu's ID and which capture it came from")
    ambiguous = sum(1 for e in entries if e["dtype"] == AMBIGUOUS)
    if ambiguous:
        notes.append(f"note: {counted(ambiguous, 'launch')} did FP16 or BF16 work that ncu's counters cannot tell apart and "
                     f"whose kernel names do not say: placed under fp16 and labelled '{AMBIGUOUS}' (roof shown as "
                     f"'{AMBIGUOUS_ROOF}')")
    if not entries:
        if not table.launches:
            raise InputError(f"{source}: the ncu table has a header but no kernel launches"
                             + (f" ({notes[0][6:]})" if notes else ""))
        raise InputError(f"{source}: none of the {counted(len(table.launches), 'launch')} has DRAM bytes and GPU time; "
                         f"collect them with: ncu --csv --page raw --metrics {metrics_argument(IMPORT_METRICS)} "
                         "PROGRAM")
    devices = sorted({launch.device for launch in table.launches if launch.device})
    summary = machine_summary(machine)
    summary["caches"] = {level: {"size": c.size, "bandwidth": c.bandwidth, "latency": c.latency}
                         for level, c in machine.caches.items()}
    doc = {
        "schema": RESULTS_SCHEMA,
        "created": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "tool_version": __version__,
        "backend": "ncu",
        "device": {"name": devices[0] if devices else machine.name, "spec_id": machine.id,
                   "spec_derived": bool(machine.derived), "kind": "gpu"},
        "machine": summary,
        "source": {"tool": "ncu", "file": source, "launches": len(table.launches) + len(table.dropped),
                   "skipped": skipped, "dropped": [asdict(d) for d in table.dropped[:MAX_LISTED]],
                   "dropped_rows": len(table.dropped), "captures": captures, "metrics": table.columns},
        "kernels": entries,
    }
    return doc, notes


def summary_line(doc: Mapping[str, Any], verb: str) -> str:
    """'imported 5 of 7 launch(es) on h200-sxm (2 not imported: see the notes above)'."""
    done, total = len(doc["kernels"]), doc["source"]["launches"]
    rest = f" ({total - done} not imported: see the notes above)" if done < total else ""
    return f"{verb} {done} of {counted(total, 'launch')} on {doc['machine']['id']}{rest}"


def import_csv(path: Path, spec_name: str | None = None,
               catalog: SpecCatalog | None = None) -> tuple[dict[str, Any], list[str]]:
    """Read one ncu CSV file into a results document, line by line (a large capture is never held whole);
    (document, notes for the user)."""
    try:
        table = parse_csv_file(path, MAX_CSV_BYTES)
    except TooManyLaunches as exc:
        raise InputError(f"{path}: {exc}", fix=NARROW) from None
    except NcuParseError as exc:
        said = getattr(exc, "prof_lines", None)
        why = diagnose("\n".join(said)) if said and not isinstance(exc, ImpossibleValue) else None
        raise InputError(f"{path}: {why}; the file holds no counters" if why else f"{path}: {exc}") from None
    machine = choose_spec(table, spec_name, catalog or SpecCatalog.bundled())
    return import_table(table, machine, str(path))
