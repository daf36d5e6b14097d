"""The calibrate and sweep targets on an H200, through the real commands.

Run on a GPU machine:  python3 benchmarks/h200_calibrate_sweep.py --out DIR
It runs `roofline calibrate -o DIR/h200-measured.yaml`, then `roofline sweep vector_add_float4 --sizes
2**12..2**28 --calibrated DIR/h200-measured.yaml -o DIR/sweep.json`, draws both charts, and prints each target with
PASS or FAIL:

  calibrated copy bandwidth ≥ 4.1 TB/s, FP32 ≥ 63 TFLOP/s, FP16 tensor ≥ 790 TFLOP/s, DRAM latency 250–600 ns,
  calibrate under 60 s, every sweep size 2^12..2^28 predicted within 25 %, the whole script under 4 minutes.

DIR receives every output (the spec, the calibration JSON, the sweep results, the logs, the charts) and h200.md, a
summary in the form of docs/measurements/h200.md. Exit status 0 when every target holds, 1 otherwise.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

TARGETS = {
    "copy_bw": 4.1e12,
    "fp32": 63e12,
    "fp16_tensor": 790e12,
    "latency": (250e-9, 600e-9),
    "calibrate_s": 60.0,
    "sweep_error": 0.25,
    "total_s": 240.0,
}


def roofline(args: list[str], out: Path, name: str) -> tuple[int, str, str, float]:
    """Run `python -m roofline ARGS` from the repository root; keep stdout and stderr in DIR/NAME.{out,err}."""
    env = {**os.environ, "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""),
           "COLUMNS": "200"}
    started = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "roofline", *args], cwd=ROOT, env=env, capture_output=True,
                          text=True)
    wall = time.perf_counter() - started
    (out / f"{name}.out").write_text(done.stdout, encoding="utf-8")
    (out / f"{name}.err").write_text(done.stderr, encoding="utf-8")
    return done.returncode, done.stdout, done.stderr, wall


def fmt(value: float | None, unit: str, scale: float, digits: int = 3) -> str:
    return "–" if value is None else f"{value / scale:.{digits}g} {unit}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, default=Path("h200-calibrate-sweep"), help="output folder")
    parser.add_argument("--sizes", default="2**12..2**28", help="sweep sizes (default 2**12..2**28)")
    args = parser.parse_args()
    out: Path = args.out.resolve()
    out.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    checks: list[tuple[str, str, bool]] = []
    report: list[str] = []

    # ---- calibrate ----
    spec_path = out / "h200-measured.yaml"
    code, stdout, stderr, cal_wall = roofline(["calibrate", "-o", str(spec_path), "--format", "json"], out,
                                              "calibrate")
    print(f"roofline calibrate: exit {code}, {cal_wall:.1f} s (including Python and CuPy start-up)")
    if stderr.strip():
        print(stderr.rstrip())
    if code != 0:
        print("calibrate failed; see", out / "calibrate.err")
        return 1
    (out / "calibrate.json").write_text(stdout, encoding="utf-8")
    cal = json.loads(stdout)
    rows = {r["field"]: r for r in cal["rows"]}
    figures = {f["field"]: f for f in cal["figures"]}
    table = ["| figure | datasheet | measured | measured / datasheet | SM clock (end of window) | power-capped | "
             "datasheet at that clock | measured / that | status |",
             "| --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    units = {"bandwidth": ("TB/s", 1e12), "flops": ("TFLOP/s", 1e12), "time": ("ns", 1e-9)}
    for r in cal["rows"]:
        unit, scale = units[r["kind"]]
        ratio = "–" if r["ratio"] is None else f"{r['ratio']:.0%}"
        capped = "–" if r.get("power_capped") is None else f"{r['power_capped']:.0%}"
        at_ratio = "–" if r.get("ratio_at_clock") is None else f"{r['ratio_at_clock']:.0%}"
        table.append(f"| {r['label']} | {fmt(r['datasheet'], unit, scale)} | {fmt(r['measured'], unit, scale, 4)} | "
                     f"{ratio} | {fmt(r.get('sm_clock'), 'MHz', 1e6, 4)} | {capped} | "
                     f"{fmt(r.get('datasheet_at_clock'), unit, scale, 4)} | {at_ratio} | "
                     f"{r['status']}{' (' + r['note'] + ')' if r['note'] and r['status'] != 'OK' else ''} |")
    print("\n".join(table))
    report += [f"## roofline calibrate ({cal['device'].get('name')}, datasheet {cal['datasheet']})", "",
               f"Wall time {cal_wall:.1f} s (command, including start-up); inside the command {cal['wall_time']:.1f} s.",
               "", *table, ""]

    copy = (figures.get("memory.bandwidth", {}).get("details") or {}).get("copy") or {}
    copy_bw = copy.get("achieved_bandwidth") if copy.get("status") == "OK" else None
    fp32 = rows.get("compute.fp32", {}).get("measured")
    fp16 = rows.get("compute.fp16_tensor", {}).get("measured")
    latency = rows.get("memory.latency", {}).get("measured")
    lo, hi = TARGETS["latency"]
    checks += [
        ("copy bandwidth ≥ 4.1 TB/s", fmt(copy_bw, "TB/s", 1e12, 4), copy_bw is not None and copy_bw >= TARGETS["copy_bw"]),
        ("FP32 ≥ 63 TFLOP/s", fmt(fp32, "TFLOP/s", 1e12, 4), fp32 is not None and fp32 >= TARGETS["fp32"]),
        ("FP16 tensor ≥ 790 TFLOP/s", fmt(fp16, "TFLOP/s", 1e12, 4), fp16 is not None and fp16 >= TARGETS["fp16_tensor"]),
        ("DRAM latency 250–600 ns", fmt(latency, "ns", 1e-9, 4), latency is not None and lo <= latency <= hi),
        ("calibrate < 60 s", f"{cal_wall:.1f} s", cal_wall < TARGETS["calibrate_s"]),
    ]

    # ---- sweep ----
    sweep_path = out / "sweep.json"
    code, stdout, stderr, sweep_wall = roofline(
        ["sweep", "vector_add_float4", "--sizes", args.sizes, "--calibrated", str(spec_path), "-o", str(sweep_path)],
        out, "sweep")
    print(f"\nroofline sweep: exit {code}, {sweep_wall:.1f} s")
    print(stdout.rstrip())
    print(stderr.rstrip())
    if code == 0:
        doc = json.loads(sweep_path.read_text(encoding="utf-8"))
        entries = doc["kernels"]
        errors = [e.get("prediction_error") for e in entries]
        ok = bool(entries) and all(e["status"] == "OK" and err is not None and abs(err) <= TARGETS["sweep_error"]
                                   for e, err in zip(entries, errors))
        worst = max((abs(e) for e in errors if e is not None), default=None)
        checks.append((f"sweep: every size within 25 % ({len(entries)} sizes)",
                       "worst " + ("–" if worst is None else f"{worst:.1%}"), ok))
        m = doc["sweep"]["model"]
        lines = ["| n | bytes | measured | predicted | error | achieved | regime | sets |",
                 "| --- | --- | --- | --- | --- | --- | --- | --- |"]
        for e in entries:
            err = e.get("prediction_error")
            lines.append(
                f"| 2^{int(e['size']).bit_length() - 1} | {e['bytes'] / 2**20:.3g} MiB | "
                f"{fmt(e['time_median'], 'µs', 1e-6, 4)} | {fmt(e['predicted_time'], 'µs', 1e-6, 4)} | "
                f"{'–' if err is None else f'{err:+.1%}'} | {fmt(e.get('achieved_bandwidth'), 'TB/s', 1e12)} | "
                f"{e['prediction']['regime']} | {e.get('buffer_sets', 1)} |")
        report += ["## roofline sweep vector_add_float4", "",
                   f"Model {m['model']}: L = {m['launch_floor'] * 1e6:.3g} µs ({m['launch_floor_source']}); "
                   f"λ = {m['latency'] * 1e9:.4g} ns ({m['latency_source']}); BW = {m['bandwidth'] / 1e12:.4g} TB/s "
                   f"({m['bandwidth_source']}) × η = {m['efficiency']:.3f} ({m['efficiency_source']}). "
                   f"Simple max(L, λ + B/BW) model: worst error {doc['sweep']['summary']['simple_worst_error']:+.1%}.",
                   "", *lines, "", doc["sweep"]["measurement"], ""]
    else:
        checks.append(("sweep: every size within 25 %", f"sweep exited {code}", False))

    # ---- charts ----
    for name, cmd in (("sweep-png", ["plot", "--sweep", str(sweep_path), "--measured-spec", str(spec_path),
                                    "-o", str(out / "sweep.png")]),
                      ("roofs-png", ["plot", "--spec", "h200", "--measured-spec", str(spec_path), "vector_add_float4",
                                     "copy", "triad", "fma_peak", "matmul_library_fp16", "-o", str(out / "roofs.png")])):
        if name == "sweep-png" and not sweep_path.exists():
            continue
        c, _, err, _ = roofline(cmd, out, name)
        if c != 0:
            print(f"{name}: exit {c}: {err.strip()}")

    total = time.perf_counter() - started
    checks.append(("whole script < 4 min", f"{total:.0f} s", total < TARGETS["total_s"]))
    print("\nTargets:")
    width = max(len(c[0]) for c in checks)
    for what, got, passed in checks:
        print(f"  {'PASS' if passed else 'FAIL'}  {what:<{width}}  {got}")
    report = ["# H200: roofline calibrate and sweep", "",
              "| target | measured | verdict |", "| --- | --- | --- |",
              *[f"| {w} | {g} | {'PASS' if p else 'FAIL'} |" for w, g, p in checks], "", *report]
    (out / "h200.md").write_text("\n".join(report) + "\n", encoding="utf-8")
    print(f"\nwrote {out} (h200.md summarises; copy it to docs/measurements/h200.md)")
    return 0 if all(p for _, _, p in checks) else 1


if __name__ == "__main__":
    sys.exit(main())
