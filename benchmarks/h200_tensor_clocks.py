"""Why the calibrated FP16 tensor figure depends on how long the GEMM runs.

Run on a GPU machine:  python3 benchmarks/h200_tensor_clocks.py --out DIR

For a square float16 (and bfloat16) GEMM through cuBLAS (cupy.matmul, and torch.matmul as the peer), on several
kinds of input data, it times

  burst      5 warm-ups, then 50 products each between CUDA events; the median (the protocol of the reference
             sheet's 794 TFLOP/s and of KINDS.md's 769-798)
  sustained  back-to-back products for --seconds, each between CUDA events; the median of every 100 ms window

while nvidia-smi samples the SM clock, the power draw, the temperature and the active clock-event reasons every
25 ms. Every product's output is poisoned (NaN) first and checked against a float64 host reference on 64 sampled
rows before anything is timed. Then it runs `roofline measure matmul_library_fp16 -p n=N` at two --min-time values,
so the harness's figure sits beside the hand-timed ones from the same session.

DIR receives the samples, the per-window series (JSON) and the log; the last lines printed are a short table.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import threading
import time
from datetime import datetime
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent

REASON_BITS = {0x1: "idle", 0x2: "app-clocks", 0x4: "sw-power-cap", 0x8: "hw-slowdown", 0x10: "sync-boost",
               0x20: "sw-thermal", 0x40: "hw-thermal", 0x80: "hw-power-brake", 0x100: "display-clocks"}


class Sampler:
    """nvidia-smi in loop mode on a pipe; each line carries nvidia-smi's own timestamp, so pipe buffering does not
    move the samples in time."""

    def __init__(self, period_ms: int = 25) -> None:
        self.fields = self._fields()
        self.samples: list[dict[str, float]] = []
        self.proc = subprocess.Popen(["nvidia-smi", f"--query-gpu={','.join(self.fields)}",
                                      "--format=csv,noheader,nounits", f"-lms={period_ms}"],
                                     stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        self.thread = threading.Thread(target=self._read, daemon=True)
        self.thread.start()

    @staticmethod
    def _fields() -> list[str]:
        base = ["timestamp", "clocks.sm", "power.draw", "temperature.gpu"]
        for reasons in ("clocks_event_reasons.active", "clocks_throttle_reasons.active"):
            probe = subprocess.run(["nvidia-smi", f"--query-gpu={','.join(base + [reasons])}",
                                    "--format=csv,noheader,nounits"], capture_output=True, text=True)
            if probe.returncode == 0:
                return base + [reasons]
        return base

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            parts = [p.strip() for p in line.split(",")]
            if len(parts) != len(self.fields):
                continue
            try:
                t = datetime.strptime(parts[0], "%Y/%m/%d %H:%M:%S.%f").timestamp()
                row = {"t": t, "sm_mhz": float(parts[1]), "power_w": float(parts[2]), "temp_c": float(parts[3])}
                if len(parts) > 4:
                    row["reasons"] = int(parts[4], 16)
            except ValueError:
                continue
            self.samples.append(row)

    def between(self, t0: float, t1: float) -> list[dict[str, float]]:
        return [s for s in self.samples if t0 <= s["t"] <= t1]

    def stop(self) -> None:
        self.proc.terminate()
        self.proc.wait(timeout=5)


def reasons_text(samples: list[dict[str, float]]) -> str:
    seen = 0
    for s in samples:
        seen |= int(s.get("reasons", 0))
    names = [name for bit, name in REASON_BITS.items() if seen & bit]
    return "+".join(names) if names else ("none" if samples and "reasons" in samples[0] else "?")


def summary(samples: list[dict[str, float]]) -> dict[str, object]:
    if not samples:
        return {"n": 0}
    return {"n": len(samples),
            "sm_mhz": statistics.median(s["sm_mhz"] for s in samples),
            "sm_mhz_min": min(s["sm_mhz"] for s in samples),
            "power_w": statistics.median(s["power_w"] for s in samples),
            "power_w_max": max(s["power_w"] for s in samples),
            "temp_c": max(s["temp_c"] for s in samples),
            "reasons": reasons_text(samples)}


def make_inputs(cp, kind: str, n: int, seed: int):
    """float32 CuPy arrays; the caller rounds them to the GEMM's dtype."""
    rs = cp.random.RandomState(seed)
    if kind == "roofline":  # kernels/_matmul.py: |v| in [0.25, 1], random sign; B scaled by 1/sqrt(n)
        def signed():
            u = rs.uniform(-1.0, 1.0, (n, n), dtype=cp.float32)
            return cp.copysign(0.25 + 0.75 * cp.abs(u), u)
        a, b = signed(), signed() / np.sqrt(n)
    elif kind == "normal":
        a, b = rs.standard_normal((n, n), dtype=cp.float32), rs.standard_normal((n, n), dtype=cp.float32) / np.sqrt(n)
    elif kind == "uniform01":
        a, b = rs.uniform(0, 1, (n, n), dtype=cp.float32), rs.uniform(0, 1, (n, n), dtype=cp.float32) / np.sqrt(n)
    elif kind == "zeros":
        a, b = cp.zeros((n, n), cp.float32), cp.zeros((n, n), cp.float32)
    else:
        raise ValueError(kind)
    return a, b


def check(cp, a, b, c, rows: int = 64) -> float:
    """Relative error of C on sampled rows against a float64 host product of the rounded inputs (all three passed
    as float32 CuPy arrays); raises if anything is off."""
    n = a.shape[0]
    idx = np.random.default_rng(1).choice(n, rows, replace=False)
    a64 = cp.asnumpy(a[idx]).astype(np.float64)
    b64 = cp.asnumpy(b).astype(np.float64)
    got = cp.asnumpy(c[idx]).astype(np.float64)
    if not np.isfinite(got).all():
        raise SystemExit("output has NaN or Inf: not every element was written")
    ref = a64 @ b64
    scale = np.linalg.norm(ref)
    err = np.linalg.norm(got - ref) / scale if scale else float(np.abs(got).max())
    if err > 1e-2:
        raise SystemExit(f"relative error {err:.2e} on sampled rows: the product is wrong")
    return float(err)


def burst(cp, fn, warm: int = 5, n: int = 50) -> float:
    for _ in range(warm):
        fn()
    ev = [(cp.cuda.Event(), cp.cuda.Event()) for _ in range(n)]
    for s, e in ev:
        s.record()
        fn()
        e.record()
    ev[-1][1].synchronize()
    return statistics.median(cp.cuda.get_elapsed_time(s, e) / 1e3 for s, e in ev)


def sustained(cp, fn, seconds: float, per_call: float, sampler: Sampler, flop: float, window: float = 0.1):
    calls = max(10, int(seconds / per_call))
    ev = [(cp.cuda.Event(), cp.cuda.Event()) for _ in range(calls)]
    cp.cuda.Device().synchronize()
    t0 = time.time()
    for s, e in ev:
        s.record()
        fn()
        e.record()
    ev[-1][1].synchronize()
    t_end = time.time()
    first = ev[0][0]
    points = [(cp.cuda.get_elapsed_time(first, s) / 1e3, cp.cuda.get_elapsed_time(s, e) / 1e3) for s, e in ev]
    windows = []
    w = 0
    while True:
        sel = [d for start, d in points if w * window <= start < (w + 1) * window]
        if not sel:
            break
        smp = sampler.between(t0 + w * window, t0 + (w + 1) * window)
        windows.append({"t": round(w * window, 3), "tflops": flop / statistics.median(sel) / 1e12, **summary(smp)})
        w += 1
    whole = statistics.median(d for _, d in points)
    first_half = statistics.median(d for start, d in points if start < 0.5)
    return {"calls": calls, "median_s": whole, "tflops": flop / whole / 1e12,
            "first_0.5s_tflops": flop / first_half / 1e12, "samples": summary(sampler.between(t0, t_end)),
            "windows": windows}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, default=Path("h200-tensor-clocks"))
    parser.add_argument("--n", type=int, default=8192)
    parser.add_argument("--seconds", type=float, default=3.0)
    parser.add_argument("--rest", type=float, default=4.0, help="idle seconds before each sustained run")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)

    import cupy as cp
    import torch

    n = args.n
    flop = 2.0 * n ** 3
    sampler = Sampler()
    time.sleep(1.0)
    idle = summary(sampler.samples[-20:])
    print(f"GPU {cp.cuda.runtime.getDeviceProperties(0)['name'].decode()}  cupy {cp.__version__}  torch "
          f"{torch.__version__}  n={n}  idle: {idle}", flush=True)

    cases = [("cupy", "float16", "roofline"), ("cupy", "float16", "normal"), ("cupy", "float16", "uniform01"),
             ("cupy", "float16", "zeros"), ("torch", "float16", "roofline"), ("cupy", "bfloat16", "roofline"),
             ("torch", "bfloat16", "roofline"), ("cupy", "float16", "roofline")]
    rows = []
    for lib, dtype_name, kind in cases:
        a32, b32 = make_inputs(cp, kind, n, seed=20261130)
        if lib == "cupy":
            # float32 -> float16/bfloat16 and back through torch, so no CuPy bfloat16 arithmetic is needed;
            # CuPy sees the 16-bit pattern as its own dtype (bfloat16 from ml_dtypes).
            dtype = np.dtype(np.float16)
            if dtype_name == "bfloat16":
                import ml_dtypes  # CuPy 14 takes bfloat16 through ml_dtypes
                dtype = np.dtype(ml_dtypes.bfloat16)
            tdtype = getattr(torch, dtype_name)
            a, b = (cp.from_dlpack(torch.from_dlpack(x).to(tdtype).view(torch.int16)).view(dtype) for x in (a32, b32))
            nan_bits = 0x7E00 if dtype_name == "float16" else 0x7FC0
            c = cp.full((n, n), nan_bits, dtype=cp.uint16).view(dtype)

            def fn(a=a, b=b, c=c):
                cp.matmul(a, b, out=c)

            def as_f32(x, tdtype=tdtype):
                return cp.from_dlpack(torch.from_dlpack(x.view(cp.int16)).view(tdtype).float())
        else:
            tdtype = getattr(torch, dtype_name)
            a, b = (torch.from_dlpack(x).to(tdtype) for x in (a32, b32))
            c = torch.full((n, n), float("nan"), dtype=tdtype, device=a.device)

            def fn(a=a, b=b, c=c):
                torch.matmul(a, b, out=c)

            def as_f32(x):
                return cp.from_dlpack(x.float())
        del a32, b32
        fn()
        cp.cuda.Device().synchronize()
        err = check(cp, as_f32(a), as_f32(b), as_f32(c))
        time.sleep(args.rest)
        t_burst = burst(cp, fn)
        time.sleep(args.rest)
        sus = sustained(cp, fn, args.seconds, t_burst, sampler, flop)
        row = {"lib": lib, "dtype": dtype_name, "data": kind, "rel_err": err,
               "burst_tflops": flop / t_burst / 1e12, **{k: v for k, v in sus.items()}}
        rows.append(row)
        s = sus["samples"]
        last = sus["windows"][-1] if sus["windows"] else {}
        print(f"{lib:5} {dtype_name:8} {kind:9} err {err:.1e}  burst {row['burst_tflops']:6.1f}  first 0.5 s "
              f"{sus['first_0.5s_tflops']:6.1f}  {args.seconds:g} s {sus['tflops']:6.1f}  last window "
              f"{last.get('tflops', float('nan')):6.1f} TFLOP/s | SM {s.get('sm_mhz_min', '?')}-"
              f"{s.get('sm_mhz', '?')} MHz, power ≤{s.get('power_w_max', '?')} W, {s.get('temp_c', '?')} C, "
              f"{s.get('reasons', '?')}", flush=True)
        del a, b, c, fn
        cp.get_default_memory_pool().free_all_blocks()
        torch.cuda.empty_cache()
    sampler.stop()
    (args.out / "tensor_clocks.json").write_text(json.dumps({"n": n, "idle": idle, "rows": rows,
                                                             "samples": sampler.samples}, indent=1))

    env = {**os.environ, "PYTHONPATH": str(ROOT), "COLUMNS": "200"}
    for min_time in ("0.5", "0.05"):
        time.sleep(args.rest)
        done = subprocess.run([sys.executable, "-m", "roofline", "measure", "matmul_library_fp16", "-p", f"n={n}",
                               "--min-time", min_time, "--format", "json"], cwd=ROOT, env=env,
                              capture_output=True, text=True)
        (args.out / f"measure_min{min_time}.json").write_text(done.stdout + done.stderr)
        try:
            entry = json.loads(done.stdout)["kernels"][0]
            print(f"roofline measure --min-time {min_time}: {entry['status']} {flop / entry['time_median'] / 1e12:.1f}"
                  f" TFLOP/s median over {entry.get('repeats')} runs", flush=True)
        except (ValueError, KeyError, IndexError, TypeError) as exc:
            print(f"roofline measure --min-time {min_time}: rc {done.returncode}, {exc}: {done.stderr[-400:]}")
    smi = subprocess.run(["nvidia-smi", "-q", "-d", "CLOCK,POWER,PERFORMANCE,TEMPERATURE"], capture_output=True,
                         text=True)
    (args.out / "nvidia-smi-q.txt").write_text(smi.stdout)
    return 0


if __name__ == "__main__":
    sys.exit(main())
