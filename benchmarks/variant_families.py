"""The row kernels (softmax, layer norm) and the streaming kernels (copy, vector add, sum) of issue 13, variant by
variant; benchmarks/kernel_variants.py calls these (--only rows / maps) after the stencil and gemv families.

Every variant is run with its output poisoned (NaN) and checked against a reference before it is timed (rows: the
float64 NumPy reference at awkward sizes and at the timed size; maps: the float64 host sum, and for copy and add,
which are exact in float32, the same operation by CuPy). Timing: CUDA events around each launch, median over
≥ 0.3 s after warm-up (the `timed` of kernel_variants.py). Bandwidth counts each descriptor's bytes.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
ROW_CONFIGS = ((256, 8), (512, 4), (1024, 2))  # the (threads, float4 per thread) that hold a row of 8192 floats


def rows_family(cp, timed, rows_out, rows: int = 8192, cols: int = 8192) -> None:
    """softmax_fused and layernorm_fused: the shared-memory kernel against register-resident rows per config, the
    layer norm with gamma/beta loaded with the row or after the reductions (LN_PREFETCH), and the persistent kernels
    that keep the next row in flight (norm.cu *_pipe_T_V) at 1-4 blocks per SM. (Streaming cache hints, ROW_HINTS,
    were 2-4 % slower in run 6 and are no longer timed.)"""
    from roofline.kernelapi import import_file
    from roofline.measurement.verify import check_outputs

    rr = import_file(ROOT / "kernels" / "_rows_ref.py")
    sm = import_file(ROOT / "kernels" / "_softmax.py")
    ln = import_file(ROOT / "kernels" / "_layernorm.py")
    code = (ROOT / "kernels" / "norm.cu").read_text() + (ROOT / "benchmarks" / "row_pipe.cu").read_text()
    mods = {0: cp.RawModule(code=code, options=("--std=c++17",)),  # as shipped (ROW_HINTS = 0, LN_PREFETCH = 1)
            "noprefetch": cp.RawModule(code=code, options=("--std=c++17", "-DLN_PREFETCH=0"))}
    sms = cp.cuda.runtime.getDeviceProperties(0)["multiProcessorCount"]
    rng = np.random.default_rng(20261130)
    shapes = [(257, 1000), (3, 4), (5, 8188), (rows, cols)]
    data = {}
    for shape in shapes:
        p = {"rows": shape[0], "cols": shape[1]}
        xs = sm.inputs(p, np.float32, rng)
        xl = ln.inputs(p, np.float32, rng)
        data[shape] = (p, xs, sm.reference(p, **xs)["y"], xl, ln.reference(p, **xl)["y"])

    def launcher(op, variant, shape):
        r, c = shape
        if variant == "shared":
            k = mods[0].get_function(f"{op}_fused")
            grid, block, vec = rr.row_launch(r, c)
            smem = c * 4
            if smem > 48 * 1024 - 1024:
                k.max_dynamic_shared_size_bytes = smem
            extra = (np.int32(c), np.int32(vec), np.int32(1)) + ((np.float32(ln.EPS),) if op == "layernorm" else ())
            return lambda *a: k(grid, block, a + extra, shared_mem=smem)
        eps = (np.float32(ln.EPS),) if op == "layernorm" else ()
        if variant[0] == "pipe":
            _, t, v, per_sm = variant
            cfg = (t, v) if t * v * 4 >= c else rr.reg_config(c)
            if cfg not in ROW_CONFIGS:  # the pipe kernels are compiled for ROW_CONFIGS only
                cfg = min((g for g in ROW_CONFIGS if g[0] * g[1] * 4 >= c), key=lambda g: g[0] * g[1])
            k = mods[0].get_function(f"{op}_pipe_{cfg[0]}_{cfg[1]}")
            grid = (min(r, per_sm * sms),)
            return lambda *a: k(grid, (cfg[0],), a + (np.int32(r), np.int32(c)) + eps)
        hints, t, v = variant
        cfg = (t, v) if t * v * 4 >= c else rr.reg_config(c)  # the awkward sizes run the config the launcher picks
        k = mods[hints].get_function(f"{op}_reg_{cfg[0]}_{cfg[1]}")
        return lambda *a: k((r,), (cfg[0],), a + (np.int32(c),) + eps)

    variants = (["shared"] + [(0, t, v) for t, v in ROW_CONFIGS] + [("noprefetch", t, v) for t, v in ROW_CONFIGS]
                + [("pipe", t, v, k) for t, v in ROW_CONFIGS for k in (1, 2, 3, 4)])
    for op in ("softmax", "layernorm"):
        for variant in variants:
            if variant != "shared" and variant[0] == "noprefetch" and op == "softmax":
                continue  # LN_PREFETCH changes only the layer norm
            label = f"{op} " + ("shared-memory row (old)" if variant == "shared" else
                                f"persistent, next row in flight, T={variant[1]} V={variant[2]} {variant[3]}/SM"
                                if variant[0] == "pipe" else
                                f"registers T={variant[1]} V={variant[2]} gamma/beta after the reductions"
                                if variant[0] == "noprefetch" else
                                f"registers T={variant[1]} V={variant[2]} hints={variant[0]}")
            problem = None
            for shape in shapes:
                p, xs, ys, xl, yl = data[shape]
                ins = ([cp.asarray(xs["x"])] if op == "softmax"
                       else [cp.asarray(xl[k]) for k in ("x", "gamma", "beta")])
                y = cp.full(shape, np.nan, cp.float32)
                launcher(op, variant, shape)(*ins, y)
                cp.cuda.Device().synchronize()
                problem = check_outputs({"y": y}, {"y": ys if op == "softmax" else yl},
                                        sm.TOLERANCE if op == "softmax" else ln.TOLERANCE, xp=cp)
                if problem:
                    problem = f"{shape}: {problem}"
                    break
            if problem:
                rows_out.append((label, f"{rows}x{cols}", "FAILED", problem[:90]))
                print(f"{label}: FAILED {problem}", flush=True)
                continue
            t = timed(launcher(op, variant, (rows, cols)), (*ins, y))
            nbytes = (2 * rows * cols + (0 if op == "softmax" else 2 * cols)) * 4
            rows_out.append((label, f"{rows}x{cols}", f"{t * 1e6:.1f} µs", f"{nbytes / t / 1e12:.3f} TB/s"))
            print(f"{label:48} {t * 1e6:8.1f} µs  {nbytes / t / 1e12:.3f} TB/s", flush=True)
            del ins, y
    cp.get_default_memory_pool().free_all_blocks()


def maps_family(cp, timed, rows_out, n: int = 2**28) -> None:
    """copy and vector_add_float4 (maps.cu) at other float4-per-thread counts (VPT), block sizes and with streaming
    hints (MAP_HINTS); sum (reduce.cu) at other unroll depths and blocks per SM, and in one launch whose last block
    adds the partials (benchmarks/kernel_variants.cu)."""
    sms = cp.cuda.runtime.getDeviceProperties(0)["multiProcessorCount"]
    maps_code = (ROOT / "kernels" / "maps.cu").read_text()
    a = cp.random.random(n, dtype=cp.float32) + 0.5
    b = cp.random.random(n, dtype=cp.float32) - 0.25
    want_add = a + b
    out = cp.empty(n, cp.float32)

    def report(label, t, nbytes):
        rows_out.append((label, f"n={n}", f"{t * 1e6:.1f} µs", f"{nbytes / t / 1e12:.3f} TB/s"))
        print(f"{label:48} {t * 1e6:8.1f} µs  {nbytes / t / 1e12:.3f} TB/s", flush=True)

    for vpt in (2, 4, 8):
        for hints in (0, 1):
            mod = cp.RawModule(code=maps_code, options=("--std=c++17", f"-DVPT={vpt}", f"-DMAP_HINTS={hints}"))
            for threads in (128, 256):
                blocks = max(1, -(-n // (4 * vpt * threads)))
                for name, ins, want, nbytes in (("copy_f32", (a,), a, 8 * n), ("add_f32", (a, b), want_add, 12 * n)):
                    k = mod.get_function(name)
                    label = f"{name} VPT={vpt} threads={threads} hints={hints}"

                    def run(*arrays, k=k, blocks=blocks, threads=threads):
                        k((blocks,), (threads,), arrays + (np.int64(n),))
                    out.fill(np.nan)
                    run(*ins, out)
                    if not bool(cp.array_equal(out, want)):
                        rows_out.append((label, f"n={n}", "FAILED", "differs from the CuPy result"))
                        print(f"{label}: FAILED", flush=True)
                        continue
                    report(label, timed(run, (*ins, out)), nbytes)
    del b, want_add, out
    cp.get_default_memory_pool().free_all_blocks()

    x = a
    want = float(cp.asnumpy(x).sum(dtype=np.float64))
    res = cp.empty(1, cp.float32)
    red_code = (ROOT / "kernels" / "reduce.cu").read_text()
    var_code = (ROOT / "benchmarks" / "kernel_variants.cu").read_text()
    counter = cp.zeros(1, cp.uint32)
    for unroll in (4, 8):
        opts = ("--std=c++17", f"-DUNROLL={unroll}", f"-I{ROOT / 'kernels'}")
        red = cp.RawModule(code=red_code, options=opts)
        var = cp.RawModule(code=var_code, options=opts)
        for per_sm in (4, 6, 8):
            blocks = per_sm * sms
            partial = cp.empty(blocks, cp.float64)
            pk, fk, ok = (red.get_function("sum_partial"), red.get_function("sum_finish"),
                          var.get_function("sum_onepass"))

            def two(x, res, pk=pk, fk=fk, partial=partial, blocks=blocks):
                pk((blocks,), (256,), (x, partial, np.int64(n)))
                fk((1,), (256,), (partial, np.int32(blocks), res))

            def one(x, res, ok=ok, partial=partial, blocks=blocks):
                ok((blocks,), (256,), (x, partial, counter, res, np.int64(n)))

            for kind, run in (("two launches", two), ("one launch, last block adds", one)):
                label = f"sum UNROLL={unroll} {per_sm}/SM {kind}"
                res.fill(np.nan)
                run(x, res)
                got = float(res.get()[0])
                if not abs(got - want) <= 1e-5 * abs(want):
                    rows_out.append((label, f"n={n}", "FAILED", f"{got} vs {want}"))
                    print(f"{label}: FAILED {got} vs {want}", flush=True)
                    continue
                report(label, timed(run, (x, res)), 4 * n)
    del a, x
    cp.get_default_memory_pool().free_all_blocks()
