"""CUDA-graph replays modelled (issue 38 item 1): a small Llama-like forward compiled with
torch.compile(mode="reduce-overhead") (Inductor's cudagraph trees: a warm-up run, a capture, then replays), random
weights, no downloads. Three captures of the same program, each imported by `roofline import torch`:

  all        a plain torch.profiler trace (record_shapes) of the whole run: compile + warm-up + capture + replays
  replays    a plain trace of the replays only (warm-up and capture before the profiler starts)
  profile    `roofline profile --with torch --range start-stop` of one replayed step (its capture recorded by
             profile's own session around CUDAGraph.capture_begin/capture_end)

and a table: GPU events, how many were replayed from a graph, how many of those were matched (by capture order or
to the same kernel launched outside the graph), the share of GPU time modelled, MFU with the model GFLOP and the
window it is over (first to last GPU event: in `all` that window spans the compilation, so its MFU is tiny by
construction), the graph launch delay, whether Kineto wrote CUPTI's graph node ids, and for `profile` the captures
it recorded (calls in each: the graph's nodes only, e.g. {"1": 0, "2": 21} for this model) and its replay
annotations. Expected on an H100 (2026-12-06, after the fix): all 84/84 and profile 21/21 matched by capture, profile
MFU ~20 % (~110 GFLOP over ~0.56 ms), head_capture_calls {"1": 0, "2": 21} (before the fix {"1": 2, "2": 23}: the
generator's two fills before the stream capture were kept), graph delay p50 ~16 µs in all (replays queued behind
the previous one count from its end); replays 0/42 (no warm-up or capture in that trace, each says why). Run ON the
GPU machine from the repository root:

    OUT=/some/dir python3 benchmarks/h200_cudagraph_capture.py

Writes $OUT/{all,replays,profile}.json.gz (traces), $OUT/{all,replays,profile}.results.json.gz and
$OUT/summary.txt (7 files). About 2 minutes on an H200 (the first run compiles; the others hit Inductor's cache).
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

STEPS_BEFORE = 3  # cudagraph trees: warm-up (eager), record (capture), then replays


def program(args: argparse.Namespace) -> None:
    """The user's program: a 2-layer Llama-like forward, bf16, batch 4 x 512 tokens, hidden 1024."""
    import torch
    import torch.nn.functional as F
    from torch import nn

    class Norm(nn.Module):
        def __init__(self, d: int) -> None:
            super().__init__()
            self.weight = nn.Parameter(torch.ones(d))

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            v = x.float().pow(2).mean(-1, keepdim=True)
            return (x.float() * torch.rsqrt(v + 1e-6)).to(x.dtype) * self.weight

    class Block(nn.Module):
        def __init__(self, d: int, heads: int, mlp: int) -> None:
            super().__init__()
            self.heads = heads
            self.n1, self.n2 = Norm(d), Norm(d)
            self.qkv, self.o = nn.Linear(d, 3 * d, bias=False), nn.Linear(d, d, bias=False)
            self.gate, self.up = nn.Linear(d, mlp, bias=False), nn.Linear(d, mlp, bias=False)
            self.down = nn.Linear(mlp, d, bias=False)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            b, s, d = x.shape
            q, k, v = self.qkv(self.n1(x)).view(b, s, 3, self.heads, d // self.heads).unbind(2)
            a = F.scaled_dot_product_attention(q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2),
                                               is_causal=True)
            x = x + self.o(a.transpose(1, 2).reshape(b, s, d))
            h = self.n2(x)
            return x + self.down(F.silu(self.gate(h)) * self.up(h))

    torch.manual_seed(0)
    model = nn.Sequential(*(Block(1024, 16, 2816) for _ in range(2))).to("cuda", torch.bfloat16).eval()
    x = torch.randn(4, 512, 1024, device="cuda", dtype=torch.bfloat16)
    run = torch.compile(model, mode="reduce-overhead")

    def step() -> torch.Tensor:
        with torch.no_grad():
            return run(x)

    if args.role == "all":
        from torch.profiler import ProfilerActivity, profile

        with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA], record_shapes=True) as prof:
            for _ in range(STEPS_BEFORE + 2):
                out = step()
            torch.cuda.synchronize()
        prof.export_chrome_trace(args.trace)
    elif args.role == "replays":
        from torch.profiler import ProfilerActivity, profile

        for _ in range(STEPS_BEFORE):
            step()
        torch.cuda.synchronize()
        with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA], record_shapes=True) as prof:
            for _ in range(2):
                out = step()
            torch.cuda.synchronize()
        prof.export_chrome_trace(args.trace)
    else:  # under `roofline profile --with torch --range start-stop`
        for _ in range(STEPS_BEFORE):
            step()
        torch.cuda.synchronize()
        torch.cuda.profiler.start()
        out = step()
        torch.cuda.synchronize()
        torch.cuda.profiler.stop()
    assert torch.isfinite(out.float()).all(), "non-finite output"


def figures(trace: Path, results: Path) -> dict[str, object]:
    """What the import made of a trace: the share modelled and how the replayed kernels were matched."""
    proc = subprocess.run([sys.executable, "-m", "roofline", "import", "torch", str(trace), "-o", str(results)],
                          capture_output=True, text=True, timeout=240)
    if proc.returncode != 0:
        return {"error": (proc.stderr or proc.stdout)[-400:]}
    doc = json.loads(results.read_text())
    entries = doc["kernels"] + doc["unmodelled"]
    graph = [e for e in entries if "graph" in e]
    matched = [e for e in graph if (e.get("graph") or {}).get("matched")]
    opener = gzip.open if trace.name.endswith(".gz") else open
    with opener(trace, "rt") as f:
        raw = json.load(f)
    events = raw["traceEvents"]
    nodes = sum(1 for e in events if e.get("cat") == "kernel" and (e.get("args") or {}).get("graph node id"))
    begins = sum(1 for e in events if str(e.get("name", "")).startswith("cudaStreamBeginCapture"))
    step = doc.get("timeline", {}).get("step", {})
    delay = (doc.get("timeline", {}).get("devices") or [{}])[0].get("graph_launch_delay") or {}
    total = sum(e.get("time_median", e.get("time", 0.0)) for e in entries)
    lost = sum(e["time"] for e in doc["unmodelled"])
    unmatched = [e for e in graph if not (e.get("graph") or {}).get("matched")]
    head = (raw.get("roofline_graph_captures") or {}).get("captures", [])
    marks = sum(1 for e in events if e.get("cat") == "user_annotation"
                and str(e.get("name", "")).startswith("roofline.graph "))
    return {"events": len(entries), "graph": len(graph),
            "by_capture": sum(1 for e in matched if e["graph"]["matched"] == "capture"),
            "by_kernel": sum(1 for e in matched if e["graph"]["matched"] == "kernel"),
            "unmatched": len(unmatched), "modelled_share": 1 - lost / total if total else 0.0,
            "mfu": step.get("mfu"), "model_gflop": (step.get("model_flops") or 0) / 1e9,
            "window_ms": (step.get("wall_time") or 0) * 1e3, "gpu_idle_share": step.get("idle_share"),
            "graph_delay_p50_us": (delay.get("p50") or 0) * 1e6, "graph_launches":
            delay.get("count", 0), "kineto_graph_node_ids": nodes, "capture_markers": begins,
            "head_captures": len(head),
            "head_capture_calls": {str(c.get("key")): len(c.get("launches") or []) for c in head},
            "replay_marks": marks,
            "matched_note": next((str(e["graph"].get("note"))[:200] for e in graph
                                  if (e.get("graph") or {}).get("matched")), None),
            "why_unmatched": sorted({str(e["graph"].get("note"))[:160] for e in unmatched})[:3],
            "why_unmodelled": sorted({str(e["why"])[:160] for e in doc["unmodelled"]})[:4]}


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--role", choices=["all", "replays", "profile"])
    parser.add_argument("--trace")
    args = parser.parse_args()
    if args.role:
        program(args)
        return 0
    out = Path(os.environ.get("OUT") or "cudagraph-out")
    out.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp())
    env = dict(os.environ, TORCHINDUCTOR_CACHE_DIR=str(work / "inductor"), PYTHONUNBUFFERED="1",
               PYTHONPATH=os.getcwd() + (os.pathsep + os.environ["PYTHONPATH"] if os.environ.get("PYTHONPATH") else ""))
    lines = []
    import torch

    lines.append(f"torch {torch.__version__}, cuda {torch.version.cuda}, {torch.cuda.get_device_name(0)}")
    me = [sys.executable, __file__]
    for role in ("all", "replays", "profile"):
        trace = out / f"{role}.json.gz"
        raw = work / f"{role}.json"
        t0 = time.time()
        if role == "profile":
            cmd = [sys.executable, "-m", "roofline", "profile", "--with", "torch", "--range", "start-stop",
                   "--save-trace", str(trace), "-o", str(work / "profile-direct.json"), "--", *me, "--role", role]
        else:
            cmd = [*me, "--role", role, "--trace", str(raw)]
        proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=200)
        wall = time.time() - t0
        if role != "profile" and raw.exists():
            with open(raw, "rb") as src, gzip.open(trace, "wb") as dst:
                shutil.copyfileobj(src, dst)
        lines.append(f"\n== {role}: exit {proc.returncode}, {wall:.1f} s")
        lines.extend(("  " + l) for l in (proc.stderr.strip().splitlines()[-6:]))
        if not trace.exists():
            continue
        results = work / f"{role}.results.json"
        got = figures(trace, results)
        if results.exists():
            with open(results, "rb") as src, gzip.open(out / f"{role}.results.json.gz", "wb") as dst:
                shutil.copyfileobj(src, dst)
        lines.extend(f"  {k}: {v}" for k, v in got.items())
    text = "\n".join(lines) + "\n"
    (out / "summary.txt").write_text(text)
    print(text)
    shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
