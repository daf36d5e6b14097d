"""gemv_batch16 designs (issue 13) against the shipped kernel and cuBLAS, in one run on one GPU.

y[16][n] = x[16][n] · Wᵀ, W n × n float32. The variants are in benchmarks/gemv16_variants.cu (x staged in shared
memory, split into TF32 hi/lo once per block; W split by masking; unguarded loads away from the edges); the shipped
kernel is kernels/_gemv.py's KERNELS[16] with its BLOCKS_PER_SM. All run through _gemv.py's `launcher` (K split over
blockIdx.y, gemv_reduce adding the slices), so a variant differs from the shipped kernel only in its kernel.

Every kernel, cuBLAS included, is run at the awkward sizes (1003, 1000, 257) and at the timed size with its output
poisoned (NaN) and checked on the GPU against _gemv.py's float64 reference with its TOLERANCE
(roofline.measurement.verify.check_outputs); one that fails is reported and not timed. Timing: CUDA events around each
launch (the reduce included), median over >= 0.3 s after warm-up. TB/s counts the descriptor's bytes,
(n² + 2·16·n)·4. Run on a GPU machine:  python3 benchmarks/gemv16_variants.py [--n 16384]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

from event_timing import timed  # benchmarks/event_timing.py (benchmarks/ is on sys.path when run as a script)

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

# (kernel in gemv16_variants.cu, tiles of 8 rows a warp, blocks-per-SM targets of the K split to try)
VARIANTS = [("v16_xs_4_4_4", 4, (4, 8)), ("v16_xs_4_4_3", 4, (8,)), ("v16_xs_4_2_4", 4, (4, 8)),
            ("v16_xs_2_8_4", 2, (4, 8)), ("v16_xs_2_4_6", 2, (6, 12)), ("v16_xs_8_2_3", 8, (3, 6)),
            ("v16_xr_4_4_4", 4, (4, 8)), ("v16_xr_2_4_6", 2, (6, 12))]
BATCH = 16


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n", type=int, default=16384)
    parser.add_argument("--check-sizes", default="1003,1000,257")
    args = parser.parse_args()

    import cupy as cp

    from roofline.kernelapi import import_file
    from roofline.measurement.verify import check_outputs

    t_start = time.perf_counter()
    gv = import_file(ROOT / "kernels" / "_gemv.py")
    props = cp.cuda.runtime.getDeviceProperties(0)
    sms = props["multiProcessorCount"]
    smi = subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version,clocks.max.sm,power.limit",
                          "--format=csv,noheader"], capture_output=True, text=True).stdout.strip()
    print(f"# {props['name'].decode()} ({sms} SMs); nvidia-smi: {smi}; CuPy {cp.__version__}, "
          f"CUDA runtime {cp.cuda.runtime.runtimeGetVersion()}; {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}",
          flush=True)
    opts = ("--std=c++17", f"-I{ROOT / 'kernels'}")
    shipped_mod = cp.RawModule(code=(ROOT / "kernels" / "gemv.cu").read_text(), options=opts)
    var_mod = cp.RawModule(code=(ROOT / "benchmarks" / "gemv16_variants.cu").read_text(), options=opts)
    shipped_name, shipped_rows = gv.KERNELS[BATCH]
    shipped_sm = gv.BLOCKS_PER_SM[BATCH]

    # label -> (module, kernel, rows per warp, blocks-per-SM target)
    candidates = {f"shipped {shipped_name} {shipped_sm}/SM": (shipped_mod, shipped_name, shipped_rows, shipped_sm)}
    for name, nt, per_sms in VARIANTS:
        for per_sm in per_sms:
            candidates[f"{name} {per_sm}/SM"] = (var_mod, name, 8 * nt, per_sm)

    def run_for(label: str, n: int):
        if label == "cuBLAS":
            return lambda w, x, y: cp.matmul(x, w.T, out=y), None
        mod, name, rows, per_sm = candidates[label]
        return gv.launcher(mod, name, rows, n, BATCH, per_sm * sms, cp.empty)

    rng = np.random.default_rng(20261130)
    sizes = [int(s) for s in args.check_sizes.split(",")] + [args.n]
    data = {}
    for n in sizes:
        h = gv.inputs({"n": n, "batch": BATCH}, np.float32, rng)
        ref = gv.reference({"n": n, "batch": BATCH}, h["w"], h["x"])
        data[n] = ({"w": cp.asarray(h["w"]), "x": cp.asarray(h["x"])}, ref)
        del h
    print(f"# inputs and float64 references ready ({time.perf_counter() - t_start:.1f} s)", flush=True)

    labels = list(candidates) + ["cuBLAS"]
    verified: dict[str, tuple] = {}
    for label in labels:
        problem = None
        for n in sizes:
            dev, ref = data[n]
            run, slices = run_for(label, n)
            y = cp.full((BATCH, n), np.nan, cp.float32)
            run(dev["w"], dev["x"], y)
            cp.cuda.Device().synchronize()
            problem = check_outputs({"y": y}, ref, gv.TOLERANCE, xp=cp)
            if problem:
                print(f"{label}: FAILED at n={n}: {problem}", flush=True)
                break
        if not problem:
            verified[label] = slices  # slices at the timed size (the last one checked)

    n = args.n
    dev, _ = data[n]
    y = cp.empty((BATCH, n), cp.float32)
    nbytes = (n * n + 2 * BATCH * n) * 4
    times: dict[str, float] = {}
    for label in labels:
        if label not in verified:
            continue
        run, _ = run_for(label, n)
        times[label] = timed(cp, lambda run=run: run(dev["w"], dev["x"], y))
        print(f"{label:28} {times[label] * 1e6:8.1f} µs  {nbytes / times[label] / 1e12:.3f} TB/s", flush=True)

    shipped = times.get(next(iter(candidates)))
    cublas = times.get("cuBLAS")
    print(f"\nn = {n}, batch {BATCH}; verified at n = {', '.join(map(str, sizes))} (NaN-poisoned, rtol "
          f"{gv.TOLERANCE['rtol']}, atol {gv.TOLERANCE['atol']}); median of CUDA-event times over >= 0.3 s")
    print("| variant | K slices | µs | TB/s of W | × shipped | × cuBLAS |\n| --- | --- | --- | --- | --- | --- |")
    for label in labels:
        if label not in times:
            print(f"| {label} | – | FAILED verification | – | – | – |")
            continue
        t = times[label]
        slices = "–" if label == "cuBLAS" else verified[label] or 1
        print(f"| {label} | {slices} | {t * 1e6:.1f} | {nbytes / t / 1e12:.3f} | "
              f"{shipped / t if shipped else float('nan'):.3f} | {cublas / t if cublas else float('nan'):.3f} |")
    print(f"# elapsed {time.perf_counter() - t_start:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
