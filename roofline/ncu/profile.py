"""`roofline measure --profile ncu`: run the measured kernels once more under Nsight Compute and add its counters.

How launches are matched to kernels: ncu runs the target program (`python -m roofline.ncu.target PLAN DONE`,
roofline/ncu/target.py) with `--profile-from-start off`. For each kernel the target prepares inputs, makes one
untimed run (compilation, module load, lazy allocations: not profiled), then, between cudaProfilerStart and
cudaProfilerStop, launches an empty marker kernel `roofline_ncu_marker` with grid 2i+1, the kernel's run once, and
the marker with grid 2i+2. Every launch between the two markers belongs to kernel i, however many CUDA kernels (or
library kernels) its run makes; their counters are added up.

Where ncu is missing, cannot read the counters (ERR_NVGPUCTRPERM on many cloud and virtualised GPUs) or profiles
nothing, add_profile returns the entries unchanged with a plain note: the measurement stands without counters.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any, Mapping, Sequence

from roofline.load import handoff
from roofline.records.caveats import warning
from roofline.records.document import Status
from roofline.ncu.counters import compare, counters, sum_counters
from roofline.ncu.metrics import METRICS, metrics_argument
from roofline.ncu.placement import place
from roofline.ncu.table import Launch, NcuParseError, NcuTable, diagnose, parse_csv
from roofline.ncu.target import MARKER
from roofline.ncu.program import run_to_file
from roofline.model.counts import counted

DEFAULT_TIMEOUT = 1800.0
_CUDA_NCU = ("/usr/local/cuda/bin/ncu", "/opt/nvidia/nsight-compute/ncu")


def find_ncu(ncu_path: str | os.PathLike[str] | None = None) -> tuple[str | None, str | None]:
    """(path, None) or (None, why not). An explicit --ncu-path PATH must exist; else PATH, then the CUDA default."""
    if ncu_path:
        p = Path(ncu_path).expanduser()
        if p.is_file() and os.access(p, os.X_OK):
            return str(p), None
        found = shutil.which(str(ncu_path))
        if found:
            return found, None
        return None, f"--ncu-path {ncu_path}: no such executable"
    found = shutil.which("ncu")
    if found:
        return found, None
    for candidate in _CUDA_NCU:
        if os.access(candidate, os.X_OK):
            return candidate, None
    return None, "Nsight Compute (ncu) is not on PATH; install it or give --ncu-path PATH"


def ncu_command(ncu_exe: str, target: Sequence[str], metrics: Sequence[str] = METRICS,
                profile_from_start: bool = False) -> list[str]:
    """The ncu command line: clocks as they are (--clock-control none), raw CSV page in base units."""
    cmd = [ncu_exe, "--clock-control", "none", "--csv", "--page", "raw", "--print-units", "base",
           "--metrics", metrics_argument(metrics)]
    if not profile_from_start:
        cmd += ["--profile-from-start", "off"]
    return cmd + list(target)


def target_command(plan: Path, done: Path, device_id: int = 0, python: str | None = None) -> list[str]:
    return [python or sys.executable, "-m", "roofline.ncu.target", str(plan), str(done), str(device_id)]


def make_plan(entries: Sequence[Mapping[str, Any]], selection: Any) -> list[dict[str, Any]]:
    """One item per verified entry: the kernel's name, its evaluated parameters and its descriptor file."""
    descriptors = list(getattr(selection, "runnable", selection) or [])
    by_name = {d.name: d for d in descriptors}
    return [{"name": e["name"], "params": dict(e.get("params") or {}),
             "descriptor": str(by_name[e["name"]].path) if by_name[e["name"]].path else None}
            for e in entries if e.get("status") == Status.OK.value and e["name"] in by_name]


def split_by_markers(launches: Sequence[Launch], count: int) -> list[list[Launch]]:
    """Launches of kernel i: those between the marker with grid 2i+1 and the marker with grid 2i+2."""
    groups: list[list[Launch]] = [[] for _ in range(count)]
    current: int | None = None
    for launch in launches:
        if launch.kernel.startswith(MARKER) or launch.kernel.endswith(MARKER):
            m = re.match(r"\s*\(?\s*(\d+)", launch.info.get("Grid Size", ""))
            x = int(m.group(1)) if m else None
            current = (x - 1) // 2 if x is not None and x % 2 == 1 else None
            continue
        if current is not None and 0 <= current < count:
            groups[current].append(launch)
    return groups


def merge_counters(entry: dict[str, Any], launches: Sequence[Launch],
                   roofs: Mapping[str, float] | None = None) -> dict[str, Any]:
    """The entry with a counters block (the launches' counters added up, the roof their work points to and the
    counters that decided it), measured / model ratios, and warnings: DRAM bytes more than 10 % above the model,
    or most of the work on another roof than the descriptor's. Without `roofs` the dominant work is the one
    with the most FLOPs; with the machine's roofs, the one that needs the most time at its roof."""
    c = sum_counters([counters(launch.metrics) for launch in launches])
    c["kernels"] = [launch.kernel for launch in launches]
    warnings = list(entry.get("warnings", []))
    if c["flops"]:
        placed = place(c["work"], c["work_counters"], roofs or {r: 1.0 for r in c["work"]})
        c["roof"], c["roof_counters"] = placed.roof, placed.counters
        same = entry.get("roof") == placed.roof or {entry.get("roof"), placed.roof} == {"fp16", "bf16"}
        if entry.get("roof") and not same:  # (CUDA-core FP16 and BF16 share the h counters)
            warnings.append(warning("roof-from-counters",
                                    f"the counters put most of its work on {placed.roof} "
                                    f"({', '.join(placed.counters)}); the descriptor's roof is {entry['roof']}",
                                    "check the descriptor's roof and dtype against the kernel's instructions"))
    out = dict(entry)
    out["counters"] = c
    cmp = compare(c, entry.get("flops"), entry.get("bytes"))
    out["measured_bytes_ratio"] = cmp["measured_bytes_ratio"]
    out["measured_flops_ratio"] = cmp["measured_flops_ratio"]
    out["counter_flag"] = cmp["flag"]
    if cmp["flag"]:
        warnings.append(warning("traffic-over-model", cmp["flag"],
                                "count the re-reads in the descriptor's bytes if they are the design, or fix the "
                                "access pattern"))
    if warnings or "warnings" in entry:
        out["warnings"] = warnings
    return out


def attach(entries: Sequence[dict[str, Any]], plan: Sequence[Mapping[str, Any]], table: NcuTable,
           done: Mapping[str, Any] | None = None,
           roofs: Mapping[str, float] | None = None) -> tuple[list[dict[str, Any]], list[str]]:
    """Counters merged into the planned entries; notes for kernels that got none."""
    groups = split_by_markers(table.launches, len(plan))
    status = {k.get("index"): k for k in (done or {}).get("kernels", [])}
    by_key = {(p["name"], json.dumps(p["params"], sort_keys=True)): i for i, p in enumerate(plan)}
    notes: list[str] = []
    out = []
    for e in entries:
        i = by_key.get((e["name"], json.dumps(e.get("params") or {}, sort_keys=True)))
        if i is None:
            out.append(e)
            continue
        if not groups[i]:
            why = (status.get(i) or {}).get("error")
            notes.append(f"note: {e['name']}: no counters: "
                         + (f"its profiled run failed ({why})" if why else "ncu recorded no launch for it"))
            out.append(e)
            continue
        merged = merge_counters(e, groups[i], roofs)
        if merged.get("counter_flag"):
            notes.append(f"note: {e['name']}: {merged['counter_flag']}")
        out.append(merged)
    return out, notes


def _run(cmd: list[str], timeout: float, tmp: Path) -> subprocess.CompletedProcess[str]:
    """ncu over the target, in a process group of its own that a timeout or Ctrl-C ends whole (roofline.ncu.program.
    run_to_file); its CSV goes through a file, its standard error is kept bounded."""
    env = dict(os.environ)
    root = str(Path(__file__).resolve().parents[2])
    env["PYTHONPATH"] = root + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    out = tmp / "ncu.csv"
    status, stderr = run_to_file(cmd, out, timeout, env)
    return subprocess.CompletedProcess(cmd, status, out.read_text(encoding="utf-8", errors="replace"), stderr)


def add_profile(entries: list[dict[str, Any]], selection: Any, overrides: Mapping[str, Any] | None = None,
                ncu_path: str | None = None, device_id: int = 0, timeout: float = DEFAULT_TIMEOUT,
                save_csv: Path | None = None,
                roofs: Mapping[str, float] | None = None) -> tuple[list[dict[str, Any]], list[str]]:
    """Run the verified kernels once more under ncu and merge counters into their entries.

    `selection` is the measured descriptors (session.Selection or a list); `overrides` is accepted for the
    CLI's convenience (the entries' own evaluated parameters are what is replayed). Returns (entries, notes);
    on any trouble with ncu the entries come back unchanged and a note says plainly why."""
    plan = make_plan(entries, selection)
    if not plan:
        return entries, ["note: --profile ncu: no verified kernel to profile"]
    exe, why = find_ncu(ncu_path)
    if exe is None:
        return entries, [f"note: --profile ncu: {why}; results have no counters"]
    with tempfile.TemporaryDirectory(prefix="roofline-ncu-") as tmp:
        plan_path, done_path = Path(tmp) / "plan.json", Path(tmp) / "done.json"
        plan_path.write_text(json.dumps({"kernels": plan}), encoding="utf-8")
        try:
            proc = _run(ncu_command(exe, target_command(plan_path, done_path, device_id)), timeout, Path(tmp))
        except subprocess.TimeoutExpired:
            return entries, [f"note: --profile ncu: ncu did not finish within {timeout:.0f} s; results have no "
                             "counters (profile fewer kernels or smaller sizes)"]
        except OSError as exc:
            return entries, [f"note: --profile ncu: cannot run {exe}: {exc.strerror}; results have no counters"]
        done = None
        if done_path.is_file():
            try:
                done = handoff.read(done_path)
            except (OSError, json.JSONDecodeError):
                done = None
    if save_csv is not None:
        Path(save_csv).write_text(proc.stdout, encoding="utf-8")
    return finish(entries, plan, proc.stdout, proc.stderr, proc.returncode, done, roofs)


def finish(entries: list[dict[str, Any]], plan: Sequence[Mapping[str, Any]], stdout: str, stderr: str,
           returncode: int, done: Mapping[str, Any] | None,
           roofs: Mapping[str, float] | None = None) -> tuple[list[dict[str, Any]], list[str]]:
    """Parse what ncu wrote and merge it; every failure becomes a note and unchanged entries."""
    problem = diagnose(stdout + "\n" + stderr)
    try:
        table: NcuTable | None = parse_csv(stdout)
    except NcuParseError as exc:
        table, problem = None, problem or str(exc)
    if table is None or not table.launches:
        why = problem or (done or {}).get("error") or (
            f"ncu exited with status {returncode}" if returncode else "ncu recorded no kernel launches")
        return entries, [f"note: --profile ncu: {why}; results have no counters"]
    out, notes = attach(entries, plan, table, done, roofs)
    if problem and not any("counters" in e for e in out):
        notes.insert(0, f"note: --profile ncu: {problem}")
    profiled = sum("counters" in e for e in out)
    notes.append(f"note: --profile ncu: counters for {profiled} of {counted(len(plan), 'kernel')}")
    return out, notes
