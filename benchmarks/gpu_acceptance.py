"""The GPU acceptance run: every command that touches a GPU, end to end, checked, in about 5 minutes (issue 21 §3).

Run it after any change to code that runs on a GPU, before resolving:

    python3 benchmarks/gpu_acceptance.py --out /tmp/acceptance            # on the GPU machine
    python3 benchmarks/gpu_acceptance.py --out $OUT --record docs/measurements/h200-acceptance.md

With --record, the Markdown record replaces docs/measurements/<kind>-acceptance.md, and the run's measured spec and
catalogue results replace <kind>-measured.yaml and <kind>-results.json beside it (one current record per kind).

Steps (each a subprocess of the CLI or of Python, with its own time limit, its output kept under --out):
  doctor        `roofline doctor --format json`: no FAIL
  calibrate     `roofline calibrate -o measured.yaml`: every OK figure within its physical bounds (DRAM ≤ L2 ≤ L1
                ≤ SMs × 128 B/clock; FLOP/s ≤ the datasheet at its clock × 1.02), and the spec loads
  measure       the whole catalogue: every kernel verified, none above 102 % of its ceiling
  sweep         copy over 2^16..2^28 (every 4th power): every size verified, the model within 25 % at each
  profile-ncu   `measure --profile ncu` of vector_add and the FP16 GEMM: counters attached, DRAM bytes and tensor
                FLOPs within 10 % of the model
  profile       `roofline profile --with ncu` of a small PyTorch program (benchmarks/acceptance_program.py): groups
                written, the program within its ceiling
  profile-torch the same program with `--with torch` (the PyTorch profiler's trace and the shape models)
  api           roofline.measure of a torch callable with a check: verified, within its ceiling; its results file
                read back by `roofline report`
  plugin        pytest with the plugin on a torch callable (benchmarks/acceptance_plugin_test.py): passes, and
                --roofline-json holds its result

Prints one table (step, status, seconds, figures, what failed) and writes acceptance.json and, with --record, the
Markdown record of the machine kind (replaced, not appended). Exit 1 when any step fails.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Callable

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from roofline.model.invariants import FigureContext, l1_bound  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
PY = sys.executable
MAX_FRACTION = 1.02  # a verified kernel above this share of its ceiling contradicts the model or the ceiling
SWEEP_TARGET = 0.25


class Step:
    def __init__(self, name: str):
        self.name, self.status, self.wall, self.figures, self.problems = name, "PASS", 0.0, "", []

    def fail(self, why: str) -> None:
        self.status = "FAIL"
        self.problems.append(why)

    def row(self) -> dict[str, Any]:
        return {"step": self.name, "status": self.status, "wall_s": round(self.wall, 1), "figures": self.figures,
                "problems": self.problems}


def run(cmd: list[str], out: Path, name: str, timeout: float) -> tuple[int, str, str, float]:
    """Run one command with PYTHONPATH at the tree; keep stdout and stderr under out/name.{out,err}."""
    env = dict(os.environ, PYTHONPATH=str(ROOT), PYTHONUNBUFFERED="1")
    t0 = time.perf_counter()
    try:
        p = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=timeout)
        code, stdout, stderr = p.returncode, p.stdout, p.stderr
    except subprocess.TimeoutExpired as exc:
        code, stdout, stderr = 124, exc.stdout or "", (exc.stderr or "") + f"\ntimed out after {timeout:.0f} s"
        stdout = stdout.decode() if isinstance(stdout, bytes) else stdout
        stderr = stderr.decode() if isinstance(stderr, bytes) else stderr
    wall = time.perf_counter() - t0
    (out / f"{name}.out").write_text(stdout)
    (out / f"{name}.err").write_text(stderr)
    return code, stdout, stderr, wall


def roofline(*args: str) -> list[str]:
    return [PY, "-m", "roofline", *args]


def load(path: Path) -> Any:
    return json.loads(path.read_text())


def fractions_ok(step: Step, kernels: list[dict[str, Any]], what: str) -> None:
    """Every kernel verified and none above MAX_FRACTION of its ceiling."""
    for k in kernels:
        name = k.get("name")
        if k.get("status") != "OK" or not k.get("verified"):
            step.fail(f"{what} {name}: {k.get('status')} {str(k.get('error') or '')[:120]}")
            continue
        f = k.get("fraction_of_ceiling")
        if f is not None and f > MAX_FRACTION:
            step.fail(f"{what} {name}: {f:.1%} of its ceiling (> {MAX_FRACTION:.0%})")


def step_doctor(out: Path) -> Step:
    s = Step("doctor")
    code, stdout, stderr, s.wall = run(roofline("doctor", "--format", "json"), out, "doctor", 120)
    try:
        doc = json.loads(stdout)
    except json.JSONDecodeError:
        s.fail(f"exit {code}, no JSON: {stderr.strip()[-200:]}")
        return s
    by = {c["name"]: c for c in doc["checks"]}
    s.figures = "; ".join(f"{c['name'].split(' (')[0].replace('DRAM bandwidth: ', '')} {c['figure']}"
                          for c in doc["checks"] if c["group"] in ("bandwidth", "compute", "hierarchy"))[:400]
    s.figures += f"; {doc['counts']['PASS']} pass, {doc['counts']['WARN']} warn, {doc['counts']['FAIL']} fail"
    for c in doc["checks"]:
        if c["status"] == "FAIL":
            s.fail(f"{c['name']}: {c['figure']} ({c['bound']})")
    if code not in (0, 1):
        s.fail(f"exit {code}")
    (out / "doctor.json").write_text(stdout)
    _ = by
    return s


def step_calibrate(out: Path) -> Step:
    s = Step("calibrate")
    spec = out / "measured.yaml"
    code, stdout, stderr, s.wall = run(roofline("calibrate", "-o", str(spec), "--format", "json"), out,
                                       "calibrate", 120)
    if code != 0:
        s.fail(f"exit {code}: {stderr.strip()[-200:]}")
        return s
    doc = json.loads(stdout)
    figs = {f["field"]: f for f in doc["figures"]}
    v = {k: (f["value"] if f["status"] == "OK" else None) for k, f in figs.items()}
    dram, l2, l1 = v.get("memory.bandwidth"), v.get("caches.l2.bandwidth"), v.get("caches.l1.bandwidth")
    dev = doc.get("device") or {}
    sms = dev.get("sm_count") or 0
    clock = (figs.get("caches.l1.bandwidth", {}).get("gpu_state") or {}).get("sm_clock_end") or dev.get("sm_clock")
    bound = l1_bound(FigureContext(sm_count=sms or None, sm_clock=clock or None))  # SMs × 128 B × clock × 1.02
    l1_max = bound[0] if bound is not None else None
    if dram and l2 and not dram <= l2:
        s.fail(f"L2 {l2 / 1e12:.3g} TB/s below DRAM {dram / 1e12:.3g}")
    if l2 and l1_max and l2 > l1_max:
        s.fail(f"L2 {l2 / 1e12:.3g} TB/s above the L1 bound {l1_max / 1e12:.3g}")
    if l1 and l1_max and l1 > l1_max:
        s.fail(f"L1 {l1 / 1e12:.3g} TB/s above SMs × 128 B/clock {l1_max / 1e12:.3g}")
    curve = (figs.get("caches.l2.bandwidth", {}).get("details") or {}).get("curve") or []
    s.figures = (f"DRAM {dram / 1e12:.3g}, L2 {l2 / 1e12:.3g}, L1 {l1 / 1e12:.3g} TB/s; "
                 if dram and l2 and l1 else "") + \
        ", ".join(f"{k.split('.')[-1]} {x / 1e12:.4g}" for k, x in v.items() if x and k.startswith("compute")) + \
        " TFLOP/s; L2 curve " + ", ".join(f"{c['working_set'] / 2**20:.3g} MiB {c['bandwidth'] / 1e12:.2f}"
                                          for c in curve)
    code, _, stderr, _ = run(roofline("specs", "show", str(spec)), out, "calibrate-spec-loads", 30)
    if code != 0:
        s.fail(f"the measured spec does not load: {stderr.strip()[-200:]}")
    return s


def step_measure(out: Path) -> Step:
    s = Step("measure")
    res = out / "results.json"
    code, _, stderr, s.wall = run(roofline("measure", "-o", str(res)), out, "measure", 240)
    if not res.exists():
        s.fail(f"exit {code}, no results: {stderr.strip()[-200:]}")
        return s
    doc = load(res)
    fractions_ok(s, doc["kernels"], "kernel")
    if code != 0:
        s.fail(f"exit {code}")
    worst = max((k.get("fraction_of_ceiling") or 0 for k in doc["kernels"]), default=0)
    s.figures = f"{sum(bool(k.get('verified')) for k in doc['kernels'])} of {len(doc['kernels'])} verified; " \
                f"highest fraction of ceiling {worst:.1%}"
    return s


def step_sweep(out: Path) -> Step:
    s = Step("sweep")
    res = out / "sweep.json"
    code, _, stderr, s.wall = run(roofline("sweep", "copy", "--sizes", "2**16..2**28:4", "--min-time", "0.05",
                                           "-o", str(res)), out, "sweep", 90)
    if code != 0 or not res.exists():
        s.fail(f"exit {code}: {stderr.strip()[-200:]}")
        return s
    doc = load(res)
    summary = doc["sweep"]["summary"]
    for k in doc["kernels"]:
        if not k.get("verified"):
            s.fail(f"size {k.get('params')}: not verified")
        err = k.get("prediction_error")
        if err is not None and abs(err) > SWEEP_TARGET:
            s.fail(f"{k.get('params')}: model {err:+.0%}")
    s.figures = f"{summary['within_target']} of {summary['sizes']} sizes within 25 %, worst {summary['worst_error']:+.1%}"
    return s


def step_profile_ncu(out: Path) -> Step:
    s = Step("measure --profile ncu")
    res = out / "profiled.json"
    code, _, stderr, s.wall = run(roofline("measure", "--profile", "ncu", "vector_add", "matmul_library_fp16",
                                           "-o", str(res)), out, "profile-ncu", 120)
    if not res.exists():
        s.fail(f"exit {code}: {stderr.strip()[-200:]}")
        return s
    doc = load(res)
    fractions_ok(s, doc["kernels"], "kernel")
    parts = []
    for k in doc["kernels"]:
        if "counters" not in k:
            s.fail(f"{k['name']}: no counters")
            continue
        rb, rf = k.get("measured_bytes_ratio"), k.get("measured_flops_ratio")
        parts.append(f"{k['name']} bytes {rb:.3f}×" + (f", FLOPs {rf:.4f}×" if rf else "") if rb else k["name"])
        if k["name"] == "vector_add" and (rb is None or abs(rb - 1) > 0.10):
            s.fail(f"vector_add DRAM bytes {rb}× the model")
        if k["name"] == "matmul_library_fp16" and (rf is None or abs(rf - 1) > 0.01):
            s.fail(f"GEMM FLOPs {rf}× the model")
    s.figures = "; ".join(parts)
    return s


def _profile_with(out: Path, source: str) -> Step:
    """`roofline profile --with SOURCE` of the small PyTorch program: groups written, the source named in the file,
    the program within its ceiling."""
    s = Step("profile" if source == "ncu" else f"profile-{source}")
    res = out / f"program-{source}.json"
    code, _, stderr, s.wall = run(roofline("profile", "--with", source, "--range", "start-stop", "-o", str(res), "--",
                                           PY, "benchmarks/acceptance_program.py"), out, s.name, 150)
    if code != 0 or not res.exists():
        s.fail(f"exit {code}: {stderr.strip()[-300:]}")
        return s
    doc = load(res)
    prog = doc.get("program") or {}
    groups = doc.get("groups") or []
    f = prog.get("fraction_of_ceiling")
    if not groups:
        s.fail("no groups")
    if (doc.get("source") or {}).get("with") != source:
        s.fail(f"the file names source {(doc.get('source') or {}).get('with')!r}, not {source!r}")
    if f is not None and f > MAX_FRACTION:
        s.fail(f"program at {f:.1%} of its ceiling")
    s.figures = f"{len(doc['kernels'])} launches, {len(groups)} groups, program {f:.1%} of ceiling" if f else \
        f"{len(doc['kernels'])} launches, {len(groups)} groups"
    return s


def step_profile(out: Path) -> Step:
    return _profile_with(out, "ncu")


def step_profile_torch(out: Path) -> Step:
    return _profile_with(out, "torch")


API = r'''
import json, sys, torch, roofline
a, b = torch.rand(2**26, device="cuda"), torch.rand(2**26, device="cuda")
out = torch.empty_like(a)
r = roofline.measure(lambda: torch.add(a, b, out=out), name="torch.add", flops=a.numel(), bytes=3 * a.nbytes,
                     check=lambda: torch.equal(out, a + b))
roofline.results([r]).write(sys.argv[1])
print(json.dumps({"verified": r.verified, "fraction": r.fraction_of_ceiling, "bandwidth": r.achieved_bandwidth}))
'''


def step_api(out: Path) -> Step:
    s = Step("api")
    res = out / "api.json"
    code, stdout, stderr, s.wall = run([PY, "-c", API, str(res)], out, "api", 90)
    if code != 0:
        s.fail(f"exit {code}: {stderr.strip()[-300:]}")
        return s
    got = json.loads(stdout.strip().splitlines()[-1])
    if not got["verified"]:
        s.fail("not verified")
    if got["fraction"] is None or got["fraction"] > MAX_FRACTION:
        s.fail(f"fraction of ceiling {got['fraction']}")
    code, _, stderr, _ = run(roofline("report", str(res)), out, "api-report", 30)
    if code != 0:
        s.fail(f"report of the API's file: exit {code}: {stderr.strip()[-200:]}")
    s.figures = f"torch.add {got['bandwidth'] / 1e12:.3g} TB/s, {got['fraction']:.1%} of ceiling"
    return s


def step_plugin(out: Path) -> Step:
    s = Step("pytest plugin")
    res = out / "plugin.json"
    from importlib.metadata import entry_points

    # Installed (pip install -e .), pytest loads the plugin by its entry point; run from a bare tree, name it.
    installed = any(e.name == "roofline" for e in entry_points(group="pytest11"))
    plugin = [] if installed else ["-p", "roofline.pytest_plugin"]
    code, stdout, stderr, s.wall = run([PY, "-m", "pytest", "-q", "-p", "no:cacheprovider", *plugin, "--rootdir",
                                        str(ROOT / "benchmarks"), str(ROOT / "benchmarks/acceptance_plugin_test.py"),
                                        "--roofline-json", str(res)], out, "plugin", 90)
    if code != 0:
        s.fail(f"exit {code}: {(stdout + stderr).strip()[-300:]}")
    if not res.exists():
        s.fail("no --roofline-json file")
        return s
    kernels = load(res)["kernels"]
    fractions_ok(s, kernels, "plugin result")
    s.figures = f"{len(kernels)} result(s): " + ", ".join(
        f"{k['name']} {k.get('fraction_of_ceiling') or 0:.1%}" for k in kernels)
    return s


STEPS: dict[str, Callable[[Path], Step]] = {
    "doctor": step_doctor, "calibrate": step_calibrate, "measure": step_measure, "sweep": step_sweep,
    "profile-ncu": step_profile_ncu, "profile": step_profile, "profile-torch": step_profile_torch, "api": step_api,
    "plugin": step_plugin,
}


def environment(tree: str | None = None) -> dict[str, str]:
    def sh(cmd: str) -> str:
        try:
            return subprocess.run(cmd, shell=True, capture_output=True, text=True, timeout=30).stdout.strip()
        except subprocess.TimeoutExpired:
            return ""

    return {
        "date": dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "gpu": sh("nvidia-smi --query-gpu=name,driver_version,power.limit,clocks.max.sm --format=csv,noheader"),
        "versions": sh(f"{PY} -c 'import cupy, torch; print(\"CuPy\", cupy.__version__, \"PyTorch\", "
                       "torch.__version__)'"),
        "ncu": sh("ncu --version | tail -1"),
        # A copy of the tree sent to a GPU machine may carry a stale .git: --tree names the commit the caller sent.
        "commit": tree or sh(f"git -C {ROOT} log --oneline -1"),
    }


def table(rows: list[dict[str, Any]]) -> str:
    lines = ["| step | status | s | figures | problems |", "|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['step']} | {r['status']} | {r['wall_s']:.0f} | {r['figures']} | "
                     f"{'; '.join(r['problems'])[:400]} |")
    return "\n".join(lines)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--out", type=Path, default=Path("/tmp/roofline-acceptance"))
    p.add_argument("--only", default=",".join(STEPS), help="comma-separated steps: " + ", ".join(STEPS))
    p.add_argument("--record", type=Path, default=None, help="write the Markdown record here (replacing it)")
    p.add_argument("--tree", default=None, help="the commit the tree is at, for the record (default: git log)")
    args = p.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    env = environment(args.tree)
    started = time.perf_counter()
    rows = []
    for name in args.only.split(","):
        step = STEPS[name.strip()](args.out)
        rows.append(step.row())
        print(f"[{time.perf_counter() - started:5.0f} s] {step.name}: {step.status} ({step.wall:.0f} s) "
              f"{step.figures[:300]}", flush=True)
        for why in step.problems:
            print(f"    {why}", flush=True)
    total = time.perf_counter() - started
    ok = all(r["status"] == "PASS" for r in rows)
    doc = {"schema": "roofline/acceptance/v1", "environment": env, "total_s": round(total, 1),
           "status": "PASS" if ok else "FAIL", "steps": rows}
    (args.out / "acceptance.json").write_text(json.dumps(doc, indent=2))
    text = (f"# GPU acceptance run: {env['gpu'].split(',')[0] or 'GPU'}\n\n"
            f"`python3 benchmarks/gpu_acceptance.py` on {env['date']}: {doc['status']} in {total:.0f} s.\n\n"
            f"- GPU: {env['gpu']}\n- {env['versions']}; ncu {env['ncu']}\n- tree: {env['commit']}\n\n"
            f"{table(rows)}\n")
    print("\n" + table(rows) + f"\n\n{doc['status']} in {total:.0f} s")
    if args.record:
        # The record of this machine kind replaces the last one, with the measured spec and the catalogue's
        # results beside it (h200-acceptance.md, h200-measured.yaml, h200-results.json).
        args.record.write_text(text)
        stem = args.record.name.removesuffix("-acceptance.md")
        for name, target in (("measured.yaml", f"{stem}-measured.yaml"), ("results.json", f"{stem}-results.json")):
            if (args.out / name).exists():
                (args.record.parent / target).write_bytes((args.out / name).read_bytes())
    (args.out / "acceptance.md").write_text(text)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
