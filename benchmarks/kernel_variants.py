"""Designs of the stencil kernels and launch choices of the skinny GEMM, side by side on one GPU: stencil5/conv3x3
naive vs register streaming (one or four columns per thread, rows per block), gemv at batch 16 (CUDA cores, and
3xTF32 tensor cores at several tile counts and load depths) and 1 with different K splits, and (issue 13,
benchmarks/variant_families.py) the softmax/layer-norm row kernels and the copy/add/sum streaming kernels.

History (2026-11-30, H200, raw output in docs/measurements/): a 32 × 32 shared-memory tile design of the reuse
kernels reached 2.3-2.7 TB/s and was replaced by the streaming kernels; for gemv_b16, four and two rows per warp and
a software-pipelined variant were tried and were no faster (they are no longer in gemv.cu).

Run on a GPU machine:  python3 benchmarks/kernel_variants.py [--n 16384]

Every variant is first run at awkward sizes and at the timed size with its outputs poisoned (NaN) and checked
element by element against the bundled NumPy reference (roofline.measurement.verify.check_outputs, on the GPU); a
variant that fails is reported and never timed. Timing: CUDA events around each launch, median over ≥ 0.3 s after
warm-up. Bandwidth counts the descriptor's bytes (stencil: 2 N² × 4; gemv: (N² + 2 × 16 × N) × 4).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n", type=int, default=16384)
    parser.add_argument("--check-sizes", default="1003,1000,257")
    parser.add_argument("--only", choices=["stencil", "gemv", "rows", "maps"], action="append",
                        help="run these families only (repeatable)")
    parser.add_argument("-D", dest="defines", action="append", default=[],
                        help="a preprocessor definition for stencil.cu, e.g. -D STREAM4_MIN_BLOCKS=16")
    args = parser.parse_args()

    import cupy as cp

    from roofline.kernelapi import import_file
    from roofline.measurement.verify import check_outputs

    st = import_file(ROOT / "kernels" / "_stencil.py")
    families = {op: import_file(ROOT / "kernels" / f"_{op}.py") for op in ("stencil5", "conv3x3")}
    gv = import_file(ROOT / "kernels" / "_gemv.py")
    opts = ("--std=c++17", f"-I{ROOT / 'kernels'}")
    stencil_mod = cp.RawModule(code=(ROOT / "kernels" / "stencil.cu").read_text(),
                               options=opts + tuple(f"-D{d}" for d in args.defines))
    if args.defines:
        print("stencil.cu compiled with", " ".join(f"-D{d}" for d in args.defines), flush=True)
    gemv_mod = cp.RawModule(code=(ROOT / "kernels" / "gemv.cu").read_text(), options=opts)
    sms = cp.cuda.runtime.getDeviceProperties(0)["multiProcessorCount"]

    def stencil_launch(name: str, n: int, rows: int | None):
        op, kind = name.split("_", 1)  # stencil5_naive, conv3x3_stream4, ...
        if kind == "naive":
            return st.naive_launcher(stencil_mod, op, n)
        return st.stream_launcher(stencil_mod, op, n, rows, wide=kind == "stream4")

    def gemv_launch(name: str, rows_per_warp: int, n: int, batch: int, per_sm: int):
        return gv.launcher(gemv_mod, name, rows_per_warp, n, batch, per_sm * sms, cp.empty)

    from event_timing import timed as event_timed

    def timed(fn, arrays, min_time: float = 0.3) -> float:
        return event_timed(cp, lambda: fn(*arrays), min_time)

    rng = np.random.default_rng(20261130)
    rows_out: list[tuple[str, str, str, str]] = []
    sizes = [int(s) for s in args.check_sizes.split(",")] + [args.n]

    cache: dict[tuple[str, int], tuple[dict, dict]] = {}

    def check(label: str, make, run_for, ref_fn, out_shape) -> bool:
        for n in (sizes if "stream4" not in label else [m for m in sizes if m % 4 == 0] + [1028]):
            key = (label.split()[0].split("_")[0] + str(out_shape(1)), n)  # one input set per operation and size
            if key not in cache:
                h = make(n)
                cache[key] = (h, ref_fn(n, h))
            host, reference = cache[key]
            dev = {k: cp.asarray(v) for k, v in host.items()}
            y = cp.full(out_shape(n), np.nan, cp.float32)
            run_for(n)(*dev.values(), y)
            cp.cuda.Device().synchronize()
            tolerance = gv.TOLERANCE if "gemv" in label else families[label.split("_")[0]].TOLERANCE
            problem = check_outputs({"y": y}, reference, tolerance, xp=cp)
            if problem:
                rows_out.append((label, f"n={n}", "FAILED", problem[:80]))
                print(f"{label}: FAILED at n={n}: {problem}", flush=True)
                return False
        return True

    # ---- stencil and conv ----
    n = args.n
    only = set(args.only or ["stencil", "gemv", "rows", "maps"])
    for op in ("stencil5", "conv3x3") if "stencil" in only else ():
        def make(m, op=op):
            return families[op].inputs({"n": m}, np.float32, rng)

        def ref(m, h, op=op):
            return families[op].reference({"n": m}, **h)

        variants = ([(f"{op}_naive", None)] + [(f"{op}_stream", r) for r in (64, 128)]
                    + [(f"{op}_stream4", r) for r in (16, 32, 64, 128)])
        big = make(n)
        big_dev = {k: cp.asarray(v) for k, v in big.items()}
        y = cp.empty((n, n), cp.float32)
        for name, rows in variants:
            label = name + (f" rows={rows}" if rows else "")
            if not check(label, make, lambda m, name=name, rows=rows: stencil_launch(name, m, rows), ref,
                         lambda m: (m, m)):
                continue
            t = timed(stencil_launch(name, n, rows), (*big_dev.values(), y))
            bw = 2 * n * n * 4 / t
            rows_out.append((label, f"n={n}", f"{t * 1e6:.1f} µs", f"{bw / 1e12:.3f} TB/s"))
            print(f"{label:28} {t * 1e6:9.1f} µs  {bw / 1e12:.3f} TB/s", flush=True)
        del big_dev, y
        cp.get_default_memory_pool().free_all_blocks()

    # ---- gemv ----
    tc = [(f"gemv_b16_tc_{nt}_{u}", 8 * nt) for nt, u in ((1, 4), (2, 2), (2, 4), (4, 1), (4, 2), (4, 4), (8, 1))]
    for batch, variants in ((16, [("gemv_b16", 8)] + tc), (1, [("gemv_b1", 8)])) if "gemv" in only else ():
        def make(m, batch=batch):
            return gv.inputs({"n": m, "batch": batch}, np.float32, rng)

        def ref(m, h, batch=batch):
            return gv.reference({"n": m, "batch": batch}, h["w"], h["x"])

        big = make(n)
        big_dev = {k: cp.asarray(v) for k, v in big.items()}
        y = cp.empty((batch, n), cp.float32)
        nbytes = (n * n + 2 * batch * n) * 4
        for name, gr in variants:
            for per_sm in (4, 8, 16, 32) if "tc" in name else (4, 8, 16):
                label = f"{name} (rows/warp {gr}) {per_sm}/SM"
                if not check(label, make, lambda m, name=name, gr=gr, per_sm=per_sm, batch=batch:
                             gemv_launch(name, gr, m, batch, per_sm)[0], ref, lambda m, batch=batch: (batch, m)):
                    continue
                run, slices = gemv_launch(name, gr, n, batch, per_sm)
                t = timed(run, (*big_dev.values(), y))
                rows_out.append((label, f"slices={slices}", f"{t * 1e6:.1f} µs", f"{nbytes / t / 1e12:.3f} TB/s "
                                 f"{2 * batch * n * n / t / 1e12:.2f} TFLOP/s"))
                print(f"{label:34} slices {slices:3}  {t * 1e6:9.1f} µs  {nbytes / t / 1e12:.3f} TB/s", flush=True)
        del big_dev, y
        cp.get_default_memory_pool().free_all_blocks()

    fam = import_file(ROOT / "benchmarks" / "variant_families.py")
    if "rows" in only:
        fam.rows_family(cp, timed, rows_out)
    if "maps" in only:
        fam.maps_family(cp, timed, rows_out)

    print("\n| variant | size | time | achieved |\n| --- | --- | --- | --- |")
    for r in rows_out:
        print("| " + " | ".join(r) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
