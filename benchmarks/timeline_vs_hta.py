"""The timeline's idle share beside HTA's (Holistic Trace Analysis) on the same traces; HTA only where installed.

    python benchmarks/timeline_vs_hta.py TRACE.json[.gz] ...

For each trace: roofline's window, busy and idle share (roofline.kineto.timeline, per rank: the union over the rank's
devices) and HTA's `get_temporal_breakdown` idle share, twice: as HTA reads by default (it rounds each event of a
nanosecond-resolution trace inward to whole microseconds: start up, end down, which shortens every short kernel) and
with HTA_DISABLE_NS_ROUNDING=1 (the events as recorded, which is what roofline reads). HTA is asked to keep the last
profiler step (include_last_profiler_step=True): roofline imports every event of the trace. Where HTA's temporal
breakdown stops on its own assertion (its rounding makes events of negative duration on some traces), its idle time
is read from the same helper the breakdown uses (BreakdownAnalysis._get_idle_time_for_kernels) and the row says so.
HTA 0.5.0 takes every event whose `stream` is not -1 for GPU work, and the cpu_op of an Inductor Triton launch
records the stream it launches on (args.stream 0): on a torch.compile trace HTA's temporal breakdown counts those
CPU ops' time as GPU busy time and widens its window with them. The column "HTA's formula, GPU events only" applies
HTA's own idle computation to its kernel, memcpy and memset events alone; the exit status compares with it.
Launch delay is put beside HTA's get_cuda_kernel_launch_stats: HTA counts runtime launches only (cudaLaunchKernel,
cudaMemcpyAsync, cudaMemsetAsync), roofline every launch with its call in the trace, driver launches (cuLaunchKernel:
Triton, cuBLASLt's nvjet) and graph launches included, so the counts and percentiles differ a little.
Exit status 1 when a trace's idle shares differ by more than 1 point (with HTA's rounding off), 0 otherwise.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

AGREE = 0.01  # the bound: within 1 point of HTA's idle share


def ours(path: Path) -> tuple[float, float, Any]:
    """(idle share of rank 0, seconds the read and the analysis took, its first device's launch delay)."""
    from roofline.kineto.reader import read_trace
    from roofline.kineto.timeline import analyze

    began = time.perf_counter()
    trace = read_trace(path)
    timeline = analyze([trace], [trace.rank or 0])
    return timeline.ranks[0].idle_share, time.perf_counter() - began, timeline.devices[0].launch_delay


_HTA = r"""
import json, sys, time
from hta.trace_analysis import TraceAnalysis
from hta.analyzers.breakdown_analysis import BreakdownAnalysis
began = time.perf_counter()
t = TraceAnalysis(trace_dir=sys.argv[1], include_last_profiler_step=True)
how = "get_temporal_breakdown"
try:
    row = t.get_temporal_breakdown(visualize=False).iloc[0]
    idle, window = float(row["idle_time(us)"]), float(row["kernel_time(us)"])
except AssertionError:
    df = t.t.get_trace(t.t.get_ranks()[0])
    idle, window = BreakdownAnalysis._get_idle_time_for_kernels(df[df["stream"].ne(-1)].copy())
    how = "_get_idle_time_for_kernels (get_temporal_breakdown asserted)"
seconds = time.perf_counter() - began
df = t.t.get_trace(t.t.get_ranks()[0])
sym = t.t.symbol_table.get_sym_table()
gpu = df[df["stream"].ne(-1) & df["cat"].map(lambda c: sym[c] in ("kernel", "gpu_memcpy", "gpu_memset"))]
only_idle, only_window = BreakdownAnalysis._get_idle_time_for_kernels(gpu.copy())
delay = t.get_cuda_kernel_launch_stats(visualize=False)[t.t.get_ranks()[0]]["launch_delay"]
print(json.dumps({"idle": idle / window, "gpu_only": only_idle / only_window, "seconds": seconds, "how": how,
                  "launches": len(delay),
                  "p50": float(delay.median()), "p95": float(delay.quantile(0.95))}))
"""


def hta(path: Path, rounding: bool) -> dict | None:
    """HTA's idle share in a child process (its environment option is read at import), or None without HTA."""
    import json

    with tempfile.TemporaryDirectory(prefix="roofline-hta-") as tmp:
        copy = Path(tmp) / path.name
        shutil.copyfile(path, copy)
        env = dict(os.environ, HTA_DISABLE_NS_ROUNDING="0" if rounding else "1")
        run = subprocess.run([sys.executable, "-c", _HTA, tmp], capture_output=True, text=True, env=env)
    if run.returncode != 0:
        if "No module named 'hta'" in run.stderr:
            return None
        raise RuntimeError(f"HTA failed on {path}: {run.stderr.strip().splitlines()[-1]}")
    return json.loads(run.stdout.strip().splitlines()[-1])


def main(paths: list[str]) -> int:
    worst = 0.0
    print("| trace | roofline idle | HTA idle (as recorded) | HTA idle (HTA's rounding) | HTA's formula, GPU events only "
          "| roofline s | HTA s | HTA via | launch delay p50 / p95 (launches): roofline | HTA |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for p in map(Path, paths):
        idle, seconds, delay = ours(p)
        exact, rounded = hta(p, rounding=False), hta(p, rounding=True)
        if exact is None or rounded is None:
            print(f"| {p.name} | {idle:.2%} | HTA not installed | | {seconds:.2f} | | |")
            continue
        worst = max(worst, abs(idle - exact["gpu_only"]))
        mine = f"{delay.p50 * 1e6:.2f} / {delay.p95 * 1e6:.1f} µs ({delay.count})" if delay else "–"
        print(f"| {p.name} | {idle:.2%} | {exact['idle']:.2%} | {rounded['idle']:.2%} | {exact['gpu_only']:.2%} | "
              f"{seconds:.2f} | "
              f"{exact['seconds']:.2f} | {exact['how']} | {mine} | {exact['p50']:.2f} / {exact['p95']:.1f} µs "
              f"({exact['launches']}) |")
    print(f"\nlargest difference from HTA's formula on the GPU events as recorded: {worst * 100:.2f} points (bound "
          f"{AGREE * 100:.0f})")
    return 1 if worst > AGREE else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
