"""`roofline measure --profile ncu`: run the measured kernels once more under Nsight Compute and add its counters.

How launches are matched to kernels: ncu runs a small target program (this module, `python -m
roofline.profile_ncu --plan PLAN.json --out DONE.json`) with `--profile-from-start off`. For each kernel the target
prepares inputs, makes one untimed run (compilation, module load, lazy allocations: not profiled), then, between
cudaProfilerStart and cudaProfilerStop, launches an empty marker kernel `roofline_ncu_marker` with grid 2i+1, the
kernel's run once, and the marker with grid 2i+2. Every launch between the two markers belongs to kernel i, however
many CUDA kernels (or library kernels) its run makes; their counters are added up.

Where ncu is missing, cannot read the counters (ERR_NVGPUCTRPERM on many cloud and virtualised GPUs) or profiles
nothing, add_profile returns the entries unchanged with a plain note: the measurement stands without counters.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any, Mapping, Sequence

from roofline import ncu

MARKER = "roofline_ncu_marker"
_MARKER_SOURCE = 'extern "C" __global__ void roofline_ncu_marker(int tag) { }\n'
DEFAULT_TIMEOUT = 1800.0
_CUDA_NCU = ("/usr/local/cuda/bin/ncu", "/opt/nvidia/nsight-compute/ncu")


# ---- finding ncu and building its command line -----------------------------------------------------------


def find_ncu(ncu_path: str | os.PathLike[str] | None = None) -> tuple[str | None, str | None]:
    """(path, None) or (None, why not). An explicit --ncu PATH must exist; else PATH, then the CUDA default."""
    if ncu_path:
        p = Path(ncu_path).expanduser()
        if p.is_file() and os.access(p, os.X_OK):
            return str(p), None
        found = shutil.which(str(ncu_path))
        if found:
            return found, None
        return None, f"--ncu {ncu_path}: no such executable"
    found = shutil.which("ncu")
    if found:
        return found, None
    for candidate in _CUDA_NCU:
        if os.access(candidate, os.X_OK):
            return candidate, None
    return None, "Nsight Compute (ncu) is not on PATH; install it or give --ncu PATH"


def ncu_command(ncu_exe: str, target: Sequence[str], metrics: Sequence[str] = ncu.METRICS,
                profile_from_start: bool = False) -> list[str]:
    """The ncu command line: clocks as they are (--clock-control none), raw CSV page in base units."""
    cmd = [ncu_exe, "--clock-control", "none", "--csv", "--page", "raw", "--print-units", "base",
           "--metrics", ncu.metrics_argument(metrics)]
    if not profile_from_start:
        cmd += ["--profile-from-start", "off"]
    return cmd + list(target)


def target_command(plan: Path, done: Path, device_id: int = 0, python: str | None = None) -> list[str]:
    return [python or sys.executable, "-m", "roofline.profile_ncu", "--plan", str(plan), "--out", str(done),
            "--device", str(device_id)]


def make_plan(entries: Sequence[Mapping[str, Any]], selection: Any) -> list[dict[str, Any]]:
    """One item per verified entry: the kernel's name, its evaluated parameters and its descriptor file."""
    descriptors = list(getattr(selection, "runnable", selection) or [])
    by_name = {d.name: d for d in descriptors}
    plan = []
    for e in entries:
        if e.get("status") != "OK" or e["name"] not in by_name:
            continue
        d = by_name[e["name"]]
        plan.append({"name": e["name"], "params": dict(e.get("params") or {}),
                     "descriptor": str(d.path) if d.path else None})
    return plan


# ---- matching launches to kernels -------------------------------------------------------------------------


def _grid_x(launch: ncu.Launch) -> int | None:
    m = re.match(r"\s*\(?\s*(\d+)", launch.info.get("Grid Size", ""))
    return int(m.group(1)) if m else None


def split_by_markers(launches: Sequence[ncu.Launch], count: int) -> list[list[ncu.Launch]]:
    """Launches of kernel i: those between the marker with grid 2i+1 and the marker with grid 2i+2."""
    groups: list[list[ncu.Launch]] = [[] for _ in range(count)]
    current: int | None = None
    for launch in launches:
        if launch.kernel.startswith(MARKER) or launch.kernel.endswith(MARKER):
            x = _grid_x(launch)
            if x is None:
                current = None
            elif x % 2 == 1:
                current = (x - 1) // 2
            else:
                current = None
            continue
        if current is not None and 0 <= current < count:
            groups[current].append(launch)
    return groups


def merge_counters(entry: dict[str, Any], launches: Sequence[ncu.Launch]) -> dict[str, Any]:
    """The entry with a counters block (the launches' counters added up), measured / model ratios, and the
    traffic flag as a warning when DRAM bytes exceed the model by more than 10 %."""
    c = ncu.sum_counters([ncu.counters(launch.metrics) for launch in launches])
    c["kernels"] = [launch.kernel for launch in launches]
    out = dict(entry)
    out["counters"] = c
    cmp = ncu.compare(c, entry.get("flops"), entry.get("bytes"))
    out["measured_bytes_ratio"] = cmp["measured_bytes_ratio"]
    out["measured_flops_ratio"] = cmp["measured_flops_ratio"]
    out["counter_flag"] = cmp["flag"]
    if cmp["flag"]:
        out["warnings"] = [*entry.get("warnings", []), cmp["flag"]]
    return out


def attach(entries: Sequence[dict[str, Any]], plan: Sequence[Mapping[str, Any]], table: ncu.NcuTable,
           done: Mapping[str, Any] | None = None) -> tuple[list[dict[str, Any]], list[str]]:
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
        merged = merge_counters(e, groups[i])
        if merged.get("counter_flag"):
            notes.append(f"note: {e['name']}: {merged['counter_flag']}")
        out.append(merged)
    return out, notes


# ---- the entry point measure calls ------------------------------------------------------------------------


def add_profile(entries: list[dict[str, Any]], selection: Any, overrides: Mapping[str, Any] | None = None,
                ncu_path: str | None = None, device_id: int = 0, timeout: float = DEFAULT_TIMEOUT,
                save_csv: Path | None = None) -> tuple[list[dict[str, Any]], list[str]]:
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
        cmd = ncu_command(exe, target_command(plan_path, done_path, device_id))
        env = dict(os.environ)
        root = str(Path(__file__).resolve().parent.parent)
        env["PYTHONPATH"] = root + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
        try:
            proc = subprocess.run(cmd, capture_output=True, text=True, errors="replace", timeout=timeout, env=env)
        except subprocess.TimeoutExpired:
            return entries, [f"note: --profile ncu: ncu did not finish within {timeout:.0f} s; results have no "
                             "counters (profile fewer kernels or smaller sizes)"]
        except OSError as exc:
            return entries, [f"note: --profile ncu: cannot run {exe}: {exc.strerror}; results have no counters"]
        done = None
        if done_path.is_file():
            try:
                done = json.loads(done_path.read_text(encoding="utf-8"))
            except (OSError, json.JSONDecodeError):
                done = None
    if save_csv is not None:
        Path(save_csv).write_text(proc.stdout, encoding="utf-8")
    return finish(entries, plan, proc.stdout, proc.stderr, proc.returncode, done)


def finish(entries: list[dict[str, Any]], plan: Sequence[Mapping[str, Any]], stdout: str, stderr: str,
           returncode: int, done: Mapping[str, Any] | None) -> tuple[list[dict[str, Any]], list[str]]:
    """Parse what ncu wrote and merge it; every failure becomes a note and unchanged entries."""
    problem = ncu.diagnose(stdout + "\n" + stderr)
    try:
        table = ncu.parse_csv(stdout)
    except ncu.NcuParseError:
        table = None
    if table is None or not table.launches:
        why = problem or (done or {}).get("error") or (
            f"ncu exited with status {returncode}" if returncode else "ncu recorded no kernel launches")
        return entries, [f"note: --profile ncu: {why}; results have no counters"]
    out, notes = attach(entries, plan, table, done)
    if problem and not any("counters" in e for e in out):
        notes.insert(0, f"note: --profile ncu: {problem}")
    profiled = sum("counters" in e for e in out)
    notes.append(f"note: --profile ncu: counters for {profiled} of {len(plan)} kernel(s)")
    return out, notes


# ---- the target program ncu runs -------------------------------------------------------------------------------


def _profiler(cp: Any) -> tuple[Any, Any]:
    rt = cp.cuda.runtime
    if hasattr(rt, "profilerStart") and hasattr(rt, "profilerStop"):
        return rt.profilerStart, rt.profilerStop
    from cupy.cuda import profiler  # older CuPy

    return profiler.start, profiler.stop


def run_target(plan: Sequence[Mapping[str, Any]], device_id: int = 0) -> dict[str, Any]:
    """Launch each planned kernel once between markers, under cudaProfilerStart/Stop. Prints nothing on stdout
    (ncu's CSV goes there)."""
    import numpy as np

    from roofline.expr import compile_expr
    from roofline.kernels import KernelCatalog
    from roofline.measure.backend_cupy import CupyBackend
    from roofline.measure.harness import prepare_host
    from roofline.measure.implementation import load_implementation
    from roofline.measure.policy import MeasurePolicy
    from roofline.workload import evaluate

    backend = CupyBackend(device_id)
    cp = backend.cp
    start, stop = _profiler(cp)
    marker = cp.RawKernel(_MARKER_SOURCE, MARKER)
    extra = sorted({str(Path(p["descriptor"]).parent) for p in plan if p.get("descriptor")})
    catalog = KernelCatalog.load([Path(e) for e in extra if not _is_bundled(Path(e))])
    by_name = {d.name: d for d in catalog.descriptors}
    policy = MeasurePolicy()
    report: dict[str, Any] = {"kernels": []}
    for i, item in enumerate(plan):
        status: dict[str, Any] = {"index": i, "name": item["name"], "ok": False, "error": None}
        report["kernels"].append(status)
        try:
            d = by_name[item["name"]]
            overrides = {k: compile_expr(v) for k, v in item["params"].items() if k in d.params}
            work = evaluate(d, overrides)
            impl = load_implementation(d)
            host = prepare_host(d, work, impl, policy)
            run = backend.build(impl, host.params, backend.context(d), tuple(host.out_specs))
            buffers = {k: backend.upload(np.asarray(v)) for k, v in host.inputs.items()}
            buffers.update({k: backend.poisoned(s, t) for k, (s, t) in host.out_specs.items()})
            run(**buffers)  # compile, load, allocate: outside the profiled range
            backend.synchronize()
            start()
            try:
                marker((2 * i + 1,), (1,), (np.int32(i),))
                run(**buffers)
                marker((2 * i + 2,), (1,), (np.int32(i),))
                backend.synchronize()
            finally:
                stop()
            status["ok"] = True
        except Exception as exc:  # noqa: BLE001 - one kernel's failure must not lose the others' counters
            status["error"] = f"{type(exc).__name__}: {str(exc).strip().splitlines()[0] if str(exc).strip() else ''}"
        finally:
            try:
                backend.release()
            except Exception:  # noqa: BLE001
                pass
    return report


def _is_bundled(folder: Path) -> bool:
    from roofline.bundled import bundled_dir

    try:
        return folder.resolve() == bundled_dir("kernels").resolve()
    except OSError:
        return False


def plan_from_names(names: Sequence[str], kernel_paths: Sequence[Path], params: Sequence[str]) -> list[dict[str, Any]]:
    """A plan from kernel names and -p overrides, as `roofline measure` selects them."""
    from roofline.selection import load_selection
    from roofline.workload import evaluate

    selected, overrides = load_selection(names, kernel_paths, params)
    plan = []
    for d in selected:
        if d.implementation is None:
            continue
        work = evaluate(d, {k: v for k, v in overrides.items() if k in d.params})
        plan.append({"name": d.name, "params": dict(work.params), "descriptor": str(d.path) if d.path else None})
    return plan


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m roofline.profile_ncu",
                                     description="The program 'roofline measure --profile ncu' runs under ncu.")
    parser.add_argument("kernels", nargs="*", metavar="KERNEL",
                        help="bundled kernels to launch once each (instead of --plan)")
    parser.add_argument("-p", "--param", dest="params", action="append", default=[], metavar="NAME=VALUE")
    parser.add_argument("--kernels", dest="kernel_paths", action="append", default=[], type=Path, metavar="PATH")
    parser.add_argument("--plan", type=Path, default=None, help="the plan add_profile writes")
    parser.add_argument("--out", type=Path, default=None, help="write which kernels ran here (JSON)")
    parser.add_argument("--device", type=int, default=0)
    args = parser.parse_args(argv)
    if args.plan is not None:
        plan = json.loads(args.plan.read_text(encoding="utf-8"))["kernels"]
    else:
        plan = plan_from_names(args.kernels, args.kernel_paths, args.params)
    try:
        report = run_target(plan, args.device)
    except Exception as exc:  # noqa: BLE001 - CuPy missing, no device: say so in the report
        report = {"kernels": [], "error": f"the profiled program failed: {type(exc).__name__}: {exc}"}
    report["plan"] = plan
    if args.out is not None:
        args.out.write_text(json.dumps(report), encoding="utf-8")
    else:
        for k in report["kernels"]:
            print(f"roofline.profile_ncu: {k['index']} {k['name']}: {'ok' if k['ok'] else k['error']}",
                  file=sys.stderr)
    return 0 if not report.get("error") else 3


if __name__ == "__main__":
    sys.exit(main())
