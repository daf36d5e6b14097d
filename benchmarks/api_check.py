"""Issue 12 on an H200: the Python API against the CLI, user kernels on the chart, and the noise-aware gate.

Run on the GPU machine from the repository root (about 1-2 minutes):
    python3 benchmarks/api_check.py --out DIR
1. `roofline measure vector_add_float4` (the CLI) and roofline.measure on the same kernel, and on torch.add, at
   n = 2^28: the API/CLI ratio of our kernel's median must be within 2 %.
2. torch.softmax, a Triton softmax (the tutorial's one-row-per-program pattern, written here) and our
   softmax_fused through the API at 8192 x 8192, every output checked against torch.softmax in float64, written to
   DIR/api.json and drawn by `roofline plot` (DIR/api.png) and gated by `roofline report`.
3. The ci gate: 30 A/A pairs (the same torch.add measured twice) must never fail `--max-regression 3%`; 30 pairs
   where B does 5 % more work (n * 1.05 elements, the model unchanged) must fail it.
Every line printed is measured in this run; nothing is timed before its output was checked.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

import cupy as cp
import torch

import roofline
from roofline.api import backend
from roofline.gates.config import GateConfig
from roofline.gates.report import build_report
from roofline.records.files import ResultsFile
from roofline.load.kernels import KernelCatalog
from roofline.measurement.implementation import load_implementation


def our_kernel(name: str, params: dict) -> object:
    """The bundled kernel's CuPy launcher, built as `roofline measure` builds it."""
    (d,) = KernelCatalog.load([]).select([name])
    return load_implementation(d).fn("cupy")(params, backend("cupy").context(d))


def part1(out: Path) -> list[str]:
    n = 2**28
    subprocess.run([sys.executable, "-m", "roofline", "measure", "vector_add_float4", "-p", f"n={n}", "--spec",
                    "h200", "-o", str(out / "cli.json")], check=True, stdout=subprocess.DEVNULL)
    cli = json.loads((out / "cli.json").read_text())["kernels"][0]
    a, b = cp.random.random(n, dtype=cp.float32), cp.random.random(n, dtype=cp.float32)
    c = cp.full(n, cp.nan, dtype=cp.float32)
    launch = our_kernel("vector_add_float4", {"n": n})
    ours = roofline.measure(lambda: launch(a, b, c), descriptor="vector_add_float4", params={"n": n}, spec="h200",
                            check=lambda: bool(cp.array_equal(c, a + b)))
    ta, tb = torch.as_tensor(a, device="cuda"), torch.as_tensor(b, device="cuda")
    tc = torch.empty_like(ta)
    theirs = roofline.measure(lambda: torch.add(ta, tb, out=tc), name="torch.add", descriptor="vector_add",
                              params={"n": n}, spec="h200", check=lambda: bool(torch.equal(tc, ta + tb)))
    ratio = ours.time_median / cli["time_median"]
    return [f"vector_add_float4 CLI {cli['time_median'] * 1e6:.1f} us ({cli['achieved_bandwidth'] / 1e12:.3f} TB/s)",
            f"vector_add_float4 API {ours.time_median * 1e6:.1f} us ({ours.achieved_bandwidth / 1e12:.3f} TB/s), "
            f"{ours.extra['timing']}; API/CLI = {ratio:.4f} -> {'PASS' if abs(ratio - 1) <= 0.02 else 'FAIL'} (2 %)",
            f"torch.add API {theirs.time_median * 1e6:.1f} us ({theirs.achieved_bandwidth / 1e12:.3f} TB/s), "
            f"{theirs.extra['timing']}, verified {theirs.verified}"]


def triton_softmax() -> object | None:
    try:
        import triton
        import triton.language as tl
    except ImportError:
        return None

    @triton.jit
    def kernel(out_ptr, in_ptr, cols, BLOCK: tl.constexpr):
        row = tl.program_id(0)
        offs = tl.arange(0, BLOCK)
        x = tl.load(in_ptr + row * cols + offs, mask=offs < cols, other=-float("inf"))
        x = x - tl.max(x, axis=0)
        e = tl.exp(x)
        tl.store(out_ptr + row * cols + offs, e / tl.sum(e, axis=0), mask=offs < cols)

    def run(y: torch.Tensor, x: torch.Tensor) -> None:
        rows, cols = x.shape
        kernel[(rows,)](y, x, cols, BLOCK=triton.next_power_of_2(cols), num_warps=16)

    return run


def part2(out: Path) -> list[str]:
    rows = cols = 8192
    params = {"rows": rows, "cols": cols}
    x = torch.randn(rows, cols, device="cuda")
    want = torch.softmax(x.double(), dim=1).float()
    measured = [roofline.measure(lambda: torch.softmax(x, 1), name="torch.softmax", descriptor="softmax_fused",
                                 params=params, spec="h200", reference=want, rtol=1e-5, atol=1e-7)]
    y2 = torch.full_like(x, float("nan"))
    tri = triton_softmax()
    if tri is not None:
        measured.append(roofline.measure(lambda: tri(y2, x), name="triton softmax", descriptor="softmax_fused",
                                         params=params, spec="h200",
                                         check=lambda: bool(torch.allclose(y2, want, rtol=1e-5, atol=1e-7))))
    cx = cp.asarray(x)
    cy = cp.full((rows, cols), cp.nan, dtype=cp.float32)
    launch = our_kernel("softmax_fused", params)
    cwant = cp.asarray(want)
    measured.append(roofline.measure(lambda: launch(cx, cy), descriptor="softmax_fused", params=params, spec="h200",
                                     check=lambda: bool(cp.allclose(cy, cwant, rtol=1e-5, atol=1e-7))))
    roofline.results(measured, spec="h200").write(out / "api.json")
    subprocess.run([sys.executable, "-m", "roofline", "plot", "--results", str(out / "api.json"), "-o",
                    str(out / "api.png")], check=True)
    report = subprocess.run([sys.executable, "-m", "roofline", "report", str(out / "api.json")],
                            capture_output=True, text=True)
    lines = [f"{r.name:22} {r.status.value:6} {r.time_median * 1e6 if r.time_median else 0:8.1f} us "
             f"{(r.achieved_bandwidth or 0) / 1e12:.3f} TB/s {(r.fraction_of_ceiling or 0):.0%} of ceiling "
             f"{r.error or ''}" for r in measured]
    return lines + [f"report on api.json: exit {report.returncode}"]


def part3() -> list[str]:
    n = 2**26
    big = int(n * 1.05)
    a, b = torch.rand(big, device="cuda"), torch.rand(big, device="cuda")
    c = torch.empty_like(a)

    def add(m: int):
        return lambda: torch.add(a[:m], b[:m], out=c[:m])

    def one(m: int) -> ResultsFile:
        r = roofline.measure(add(m), name="add", flops=n, bytes=12 * n, spec="h200", min_time=0.1,
                             check=lambda: bool(torch.equal(c[:m], a[:m] + b[:m])))
        return ResultsFile.of(roofline.results([r], spec="h200").to_json())

    config = GateConfig().with_options(None, 0.03)
    same = slower = 0
    for _ in range(30):
        base = one(n)
        same += not build_report([one(n)], config, [base])["summary"]["ok"]
        slower += not build_report([one(big)], config, [base])["summary"]["ok"]
    return [f"A/A pairs failing the ci gate at 3 %: {same} of 30 -> {'PASS' if same == 0 else 'FAIL'}",
            f"5 %-more-work pairs failing it: {slower} of 30 -> {'PASS' if slower == 30 else 'FAIL'}"]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", type=Path, required=True)
    out = parser.parse_args().out
    out.mkdir(parents=True, exist_ok=True)
    lines = [f"{torch.cuda.get_device_name()}, torch {torch.__version__}, cupy {cp.__version__}"]
    for part in (part1, part2):
        lines += part(out)
    lines += part3()
    text = "\n".join(lines)
    (out / "api_check.txt").write_text(text + "\n")
    print(text)


if __name__ == "__main__":
    main()
