"""FP32 SGEMM designs for issue 13's matmul_tiled row (target: >= 0.9x cuBLAS FP32 in the same run), side by side on
one GPU: every variant of benchmarks/sgemm_variants.cu (block tile 128 x 128, 256 threads, 8 x 8 outputs a thread;
K-depth BK, cp.async stages, thread layout and block order vary; the .cu says what each means), the shipped
kernels/matmul.cu matmul_tiled through its own launcher, and cuBLAS (`cupy.matmul` into a preallocated out, the
launcher of the bundled matmul_library; CuPy leaves TF32 off, so it is true FP32) before and after the variants.

Run on a GPU machine:  python3 benchmarks/sgemm_variants.py [--n 4096] [--only NAME ...]

Every variant is first checked, output poisoned (NaN), on fresh random inputs (kernels/_matmul.py's, signed and
scaled so |C| ~ 0.3) against a float64 reference computed on the GPU (cupy float64 matmul of the upcast inputs), at
the awkward sizes 1000 (not a multiple of the tile), 1003 (odd, not a multiple of 4: the scalar edge path), 257 and
at the timed size, with _matmul.py's tolerance (roofline.measurement.verify.check_outputs); a variant that fails is
reported and never timed. Timing: CUDA events around each launch after 0.2 s of warm-up, median over >= 0.3 s; the
SM clock and board power are read (NVML) at the end of each timed window, since an FFMA-heavy kernel can be
power-capped. The ratio is cuBLAS time (the mean of its two windows) over the variant's time.
"""

from __future__ import annotations

import argparse
import re
import statistics
import sys
import time
from pathlib import Path
from typing import Any, Callable

import numpy as np

from event_timing import timed  # benchmarks/event_timing.py (benchmarks/ is on sys.path when run as a script)

ROOT = Path(__file__).resolve().parent.parent
SOURCE = ROOT / "benchmarks" / "sgemm_variants.cu"
TILE, THREADS, APAD = 128, 256, 4


def variant_names(source: str) -> list[tuple[str, int, int]]:
    """(entry point, BK, STAGES) of each SGEMM_VARIANT(BK, STAGES, WM, GROUP) instantiated in the .cu."""
    out = []
    for bk, st, wm, g in re.findall(r"^SGEMM_VARIANT\((\d+), (\d+), (\d+), (\d+)\)", source, re.M):
        out.append((f"sg_bk{bk}_s{st}_w{wm}_g{g}", int(bk), int(st)))
    return out


def shared_bytes(bk: int, stages: int) -> int:
    """Dynamic shared memory of one block: STAGES x (A tile BK x (128 + 4) + B tile BK x 128) floats."""
    return stages * bk * (2 * TILE + APAD) * 4


class Clocks:
    """SM clock (MHz) and board power (W) through NVML when it is installed; empty strings otherwise."""

    def __init__(self) -> None:
        try:
            import pynvml

            pynvml.nvmlInit()
            self.nv: Any = pynvml
            self.handle = pynvml.nvmlDeviceGetHandleByIndex(0)
        except Exception:  # NVML is optional: the table then has no clock column
            self.nv = None

    def read(self) -> str:
        if self.nv is None:
            return ""
        sm = self.nv.nvmlDeviceGetClockInfo(self.handle, self.nv.NVML_CLOCK_SM)
        watts = self.nv.nvmlDeviceGetPowerUsage(self.handle) / 1000
        return f"{sm} MHz {watts:.0f} W"

    def header(self) -> str:
        if self.nv is None:
            return "NVML not available"
        limit = self.nv.nvmlDeviceGetEnforcedPowerLimit(self.handle) / 1000
        top = self.nv.nvmlDeviceGetMaxClockInfo(self.handle, self.nv.NVML_CLOCK_SM)
        return f"power limit {limit:.0f} W, max SM clock {top} MHz, driver {self.nv.nvmlSystemGetDriverVersion()}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n", type=int, default=4096)
    parser.add_argument("--check-sizes", default="1000,1003,257")
    parser.add_argument("--only", action="append", default=[], help="time only these variants (repeatable)")
    parser.add_argument("--min-time", type=float, default=0.3)
    args = parser.parse_args()

    import cupy as cp

    from roofline.kernelapi import import_file
    from roofline.measurement.context import KernelContext
    from roofline.measurement.verify import check_outputs

    fam = import_file(ROOT / "kernels" / "_matmul.py")
    clocks = Clocks()
    props = cp.cuda.runtime.getDeviceProperties(0)
    print(f"{props['name'].decode()}, {props['multiProcessorCount']} SMs, CUDA runtime "
          f"{cp.cuda.runtime.runtimeGetVersion()}, driver API {cp.cuda.runtime.driverGetVersion()}, "
          f"CuPy {cp.__version__}, {clocks.header()}, {time.strftime('%Y-%m-%d %H:%M:%S UTC', time.gmtime())}",
          flush=True)

    from roofline.measurement.cuda_includes import expand_includes

    source = expand_includes(SOURCE.read_text(), ROOT / "kernels", Path.read_text)
    t0 = time.perf_counter()
    module = cp.RawModule(code=source, options=("--std=c++17",))
    variants = [v for v in variant_names(source) if not args.only or v[0] in args.only]
    funcs = {}
    for name, bk, st in variants:
        f = module.get_function(name)  # compiles the module on the first call
        smem = shared_bytes(bk, st)
        if smem > 48 * 1024:  # past the default limit; ask for the whole 228 KB as shared so 2 blocks fit an SM
            f.max_dynamic_shared_size_bytes = smem
            f.preferred_shared_memory_carveout = 100
        funcs[name] = (f, smem)
        print(f"{name}: {f.num_regs} registers, {f.local_size_bytes} B local, {smem} B shared", flush=True)
    print(f"compiled {len(funcs)} variants in {time.perf_counter() - t0:.1f} s", flush=True)

    ctx = KernelContext(ROOT / "kernels", {}, cp, lambda file, opts: cp.RawModule(
        code=expand_includes(file.read_text(), file.parent, Path.read_text),
        options=("--std=c++17", f"-I{file.parent}", *opts)))
    shipped = import_file(ROOT / "kernels" / "matmul_tiled.py")

    def launcher(name: str, n: int) -> Callable[[Any, Any, Any], None]:
        if name == "cublas":
            return fam.cupy({"n": n}, ctx)
        if name == "matmul_tiled (shipped)":
            return shipped.cupy({"n": n}, ctx)
        f, smem = funcs[name]
        tiles = (n + TILE - 1) // TILE
        extra = (np.int32(n), np.int32(n % 4 == 0))
        return lambda a, b, c: f((tiles * tiles,), (THREADS,), (a, b, c) + extra, shared_mem=smem)

    rng = np.random.default_rng(20261130)
    data: dict[int, tuple[Any, Any, np.ndarray]] = {}
    for n in [int(s) for s in args.check_sizes.split(",")] + [args.n]:
        host = fam.inputs({"n": n}, np.float32, rng)
        a, b = cp.asarray(host["a"]), cp.asarray(host["b"])
        ref = cp.asnumpy(cp.matmul(a.astype(cp.float64), b.astype(cp.float64)))
        data[n] = (a, b, ref)

    def verified(name: str) -> str | None:
        for n, (a, b, ref) in data.items():
            c = cp.full((n, n), np.nan, cp.float32)
            launcher(name, n)(a, b, c)
            cp.cuda.Device().synchronize()
            problem = check_outputs({"c": c}, {"c": ref}, fam.TOLERANCE, xp=cp)
            if problem:
                return f"n={n}: {problem}"
        return None

    n = args.n
    a, b, _ = data[n]
    c = cp.empty((n, n), cp.float32)
    flops = 2 * n**3
    rows: list[tuple[str, float | None, str]] = []  # (name, seconds or None, note)
    order = ["cublas", "matmul_tiled (shipped)"] + [v[0] for v in variants] + ["cublas"]
    for name in order:
        problem = verified(name)
        if problem:
            rows.append((name, None, "FAILED " + problem[:100]))
            print(f"{name}: FAILED {problem}", flush=True)
            continue
        run = launcher(name, n)
        t = timed(cp, lambda: run(a, b, c), args.min_time, warmup=0.2)
        state = clocks.read()
        rows.append((name, t, state))
        print(f"{name:24} {t * 1e6:9.1f} µs  {flops / t / 1e12:6.2f} TFLOP/s  {state}", flush=True)

    ref_times = [t for name, t, _ in rows if name == "cublas" and t is not None]
    ref = statistics.mean(ref_times) if ref_times else None
    print(f"\nN = {n}, FP32 (no TF32); ratio = cuBLAS time (mean of its {len(ref_times)} windows) / time; "
          f"all verified at n = {', '.join(str(k) for k in data)}")
    print("| variant | time | TFLOP/s | × cuBLAS | SM clock, power at end of window |\n| --- | --- | --- | --- | --- |")
    for name, t, note in rows:
        if t is None:
            print(f"| {name} | – | – | – | {note} |")
        else:
            ratio = f"{ref / t:.3f}" if ref else "–"
            print(f"| {name} | {t * 1e6:.1f} µs | {flops / t / 1e12:.2f} | {ratio} | {note} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
