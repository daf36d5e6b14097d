"""Issue 13 on an H200: every row of the issue's table, our kernel beside its peer, in one run.

Run on a GPU machine from the repository root:  python3 benchmarks/h200_catalogue_peers.py [--out DIR] [--commit SHA]

Ours: each bundled kernel through the `roofline measure` harness (measure_all): fresh random inputs, outputs
poisoned with NaN, one run checked element by element against the float64 NumPy reference, then timed (CUDA-graph
replays under 1 ms, events above; median; buffer sets rotated under 4 x L2).
Peers: torch (and Triton's one-row-per-program softmax where triton imports) through roofline.measure, the same
timing engine: the first run's output is checked against a float64 torch result on the GPU (outputs given with
out= are poisoned first), then timed as a graph when the callable can be captured, else by events; the timing
column says which. For stencil5/conv3x3 there is no library peer: the peer is Tensor.copy_ of the same bytes
(N² floats read, N² written), the floor a streaming kernel of that traffic can reach.
Ratio = peer time / our time (above 1: ours is faster). Figures count the descriptors' bytes and FLOPs.
"""

from __future__ import annotations

import argparse
import json
import math
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

TB, TF = 1e12, 1e12


def header(commit: str) -> list[str]:
    import cupy as cp
    import numpy as np
    import torch

    smi = subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem,"
                          "clocks.max.mem,power.draw,power.limit,temperature.gpu", "--format=csv"],
                         capture_output=True, text=True).stdout.strip()
    try:
        import triton
        tri = triton.__version__
    except ImportError:
        tri = "not installed"
    rt = cp.cuda.runtime.runtimeGetVersion()
    return smi.splitlines() + [f"CuPy {cp.__version__}  torch {torch.__version__} (CUDA {torch.version.cuda})  "
                               f"Triton {tri}  NumPy {np.__version__}  CUDA runtime {rt // 1000}.{rt % 1000 // 10}  "
                               f"commit {commit}"]


def peers() -> dict:
    """name -> (descriptor, params, fn, check, inputs or None): each peer's callable and its GPU-side check."""
    import torch
    import torch.nn.functional as F

    torch.manual_seed(20261130)
    torch.backends.cuda.matmul.allow_tf32 = False
    dev = "cuda"
    out: dict = {}

    def close(got, want, rtol, atol):
        return bool(torch.isfinite(got).all()) and bool(torch.allclose(got.double(), want, rtol=rtol, atol=atol))

    # attention: inputs() gives fresh buffers of the same values, so one float64 reference checks the first run
    for dtype, tol, key in ((torch.float32, (1e-4, 2e-6), "sdpa fp32"), (torch.bfloat16, (4e-3, 2e-3), "sdpa bf16")):
        base = [torch.randn(1, 32, 4096, 64, device=dev).to(dtype) for _ in range(2)] + \
               [(torch.rand(1, 32, 4096, 64, device=dev) * 2 - 1).to(dtype)]
        want = F.scaled_dot_product_attention(*[t.double() for t in base])
        holder = [None]

        def fn(q, k, v, holder=holder):
            holder[0] = F.scaled_dot_product_attention(q, k, v)
        out[key] = ("attention_fused" + ("_bf16" if dtype == torch.bfloat16 else ""), {}, fn,
                    lambda holder=holder, want=want, tol=tol: close(holder[0], want, *tol),
                    lambda base=base: tuple(t.clone() for t in base))
    # torch's materialised attention, FP32
    q, k = torch.randn(1, 32, 4096, 64, device=dev), torch.randn(1, 32, 4096, 64, device=dev)
    v = torch.rand(1, 32, 4096, 64, device=dev) * 2 - 1
    want = torch.softmax((q.double() / 8) @ k.double().transpose(-1, -2), -1) @ v.double()
    hold = [None]

    def mat(q, k, v):
        hold[0] = torch.softmax((q * 0.125) @ k.transpose(-1, -2), dim=-1) @ v
    out["torch materialised fp32"] = ("attention_materialized", {}, mat,
                                      lambda want=want: close(hold[0], want, 1e-4, 2e-6),
                                      lambda: (q.clone(), k.clone(), v.clone()))
    del base, want
    return out


def row_peers() -> dict:
    """The non-attention peers; built after the attention ones are freed."""
    import torch
    import torch.nn.functional as F

    from roofline.kernelapi import import_file

    dev = "cuda"
    out: dict = {}

    def close(got, want, rtol, atol):
        return bool(torch.isfinite(got).all()) and bool(torch.allclose(got.double(), want, rtol=rtol, atol=atol))

    # gemv batch 16: W and x drawn as _gemv.py draws them (signed, x scaled by 1/sqrt(N))
    n = 16384
    w = (torch.rand(n, n, device=dev) * 2 - 1)
    w = torch.copysign(0.25 + 0.75 * w.abs(), w)
    x = (torch.rand(16, n, device=dev) * 2 - 1)
    x = torch.copysign(0.25 + 0.75 * x.abs(), x) / math.sqrt(n)
    y = torch.full((16, n), float("nan"), device=dev)
    want = x.double() @ w.double().T
    out["torch.matmul"] = ("gemv_batch16", {}, lambda: torch.matmul(x, w.T, out=y),
                           lambda: close(y, want, 1e-4, 1e-5), None)
    # softmax and layer norm, 8192 x 8192
    xs = torch.randn(8192, 8192, device=dev) * 3
    ws = torch.softmax(xs.double(), 1)
    hs = [None]

    def sm():
        hs[0] = torch.softmax(xs, 1)
    out["torch.softmax"] = ("softmax_fused", {}, sm, lambda: close(hs[0], ws, 1e-5, 1e-8), None)
    api = import_file(ROOT / "benchmarks" / "api_check.py")
    tri = api.triton_softmax()
    if tri is not None:
        yt = torch.full_like(xs, float("nan"))
        out["triton softmax"] = ("softmax_fused", {}, lambda: tri(yt, xs), lambda: close(yt, ws, 1e-5, 1e-8), None)
    xl = torch.randn(8192, 8192, device=dev) * 2 + 1
    g, b = torch.rand(8192, device=dev) + 0.5, torch.rand(8192, device=dev) - 0.5
    wl = F.layer_norm(xl.double(), (8192,), g.double(), b.double(), 1e-5)
    hl = [None]

    def lnorm():
        hl[0] = F.layer_norm(xl, (8192,), g, b, 1e-5)
    out["F.layer_norm"] = ("layernorm_fused", {}, lnorm, lambda: close(hl[0], wl, 1e-5, 1e-5), None)
    return out


def stream_peers() -> dict:
    import torch

    dev = "cuda"
    out: dict = {}
    n = 2**28
    a, b = torch.rand(n, device=dev) - 0.5, torch.rand(n, device=dev) + 0.25
    c = torch.full((n,), float("nan"), device=dev)
    out["Tensor.copy_"] = ("copy", {}, lambda: c.copy_(a), lambda: bool(torch.equal(c, a)), None)
    d = torch.full((n,), float("nan"), device=dev)
    out["torch.add(out=)"] = ("vector_add_float4", {}, lambda: torch.add(a, b, out=d),
                              lambda: bool(torch.equal(d, a + b)), None)
    s = torch.full((), float("nan"), device=dev)
    want = b.double().sum()
    out["torch.sum(out=)"] = ("sum", {}, lambda: torch.sum(b, 0, out=s),
                              lambda: bool(torch.isclose(s.double(), want, rtol=1e-5, atol=0)), None)
    g = torch.rand(16384, 16384, device=dev)
    h = torch.full_like(g, float("nan"))
    out["copy_ of N² floats"] = ("stencil5_reuse", {}, lambda: h.copy_(g), lambda: bool(torch.equal(h, g)), None)
    a4, b4 = torch.rand(4096, 4096, device=dev) * 2 - 1, (torch.rand(4096, 4096, device=dev) * 2 - 1) / 64
    c4 = torch.full((4096, 4096), float("nan"), device=dev)
    want4 = a4.double() @ b4.double()
    out["torch.matmul FP32"] = ("matmul_tiled", {}, lambda: torch.matmul(a4, b4, out=c4),
                                lambda: bool(torch.allclose(c4.double(), want4, rtol=1e-4, atol=2e-4)), None)
    return out


# label, our kernel, its params, peer keys, target kind, target value, target text
ROWS = [
    ("attention_fused FP32", "attention_fused", {}, ["sdpa fp32"], "ratio", 1.0, "≥ 1.0× SDPA FP32"),
    ("attention_materialized FP32", "attention_materialized", {}, ["torch materialised fp32", "sdpa fp32"], None, 0,
     "measured"),
    ("attention_fused_bf16", "attention_fused_bf16", {}, ["sdpa bf16"], "flops", 250e12, "≥ 250 TFLOP/s"),
    ("gemv_batch16 16×16384²", "gemv_batch16", {}, ["torch.matmul"], "bw", 3.5e12, "≥ 3.5 TB/s"),
    ("softmax_fused 8192²", "softmax_fused", {}, ["torch.softmax", "triton softmax"], "bw", 4.2e12, "≥ 4.2 TB/s"),
    ("layernorm_fused 8192²", "layernorm_fused", {}, ["F.layer_norm"], "bw", 4.2e12, "≥ 4.2 TB/s"),
    ("stencil5_reuse 16384²", "stencil5_reuse", {}, ["copy_ of N² floats"], "bw", 4.2e12, "≥ 4.2 TB/s"),
    ("conv3x3_reuse 16384²", "conv3x3_reuse", {}, ["copy_ of N² floats"], "bw", 4.2e12, "≥ 4.2 TB/s"),
    ("matmul_tiled FP32 4096³", "matmul_tiled", {}, ["matmul_library (cuBLAS)", "torch.matmul FP32"], "ratio", 0.9,
     "≥ 0.9× cuBLAS FP32"),
    ("copy 2^28", "copy", {}, ["Tensor.copy_"], "bw", 4.30e12, "≥ 4.30 TB/s"),
    ("vector_add_float4 2^28", "vector_add_float4", {}, ["torch.add(out=)"], "bw", 4.40e12, "≥ 4.40 TB/s"),
    ("sum 2^28", "sum", {}, ["torch.sum(out=)"], "bw", 4.50e12, "≥ 4.50 TB/s"),
]


def fig(e: dict) -> str:
    if e.get("status") != "OK":
        return "–"
    mem = e["bound"] == "memory" if "bound" in e else e["achieved_bandwidth"] > 1e11
    return f"{e['achieved_bandwidth'] / TB:.3f} TB/s" if mem else f"{e['achieved_flops'] / TF:.1f} TFLOP/s"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", type=Path, default=None)
    ap.add_argument("--commit", default="unknown")
    args = ap.parse_args()

    import torch

    import roofline
    from roofline.model.expr import compile_expr
    from roofline.load.kernels import KernelCatalog
    import roofline.api
    from roofline.measurement.policy import MeasurePolicy
    from roofline.measurement.session import measure_all
    from roofline.load.specs import SpecCatalog

    lines = header(args.commit)
    for line in lines:
        print(line, flush=True)
    # one engine (one stream) for ours and the peers: roofline.measure makes its engine's stream current, and a
    # second CupyBackend would then record its events on a stream our kernels no longer launch on
    backend = roofline.api.backend("cupy")
    machine = SpecCatalog.bundled().resolve("h200-sxm")
    catalog = {d.name: d for d in KernelCatalog.load().descriptors}
    policy = MeasurePolicy()

    ours: dict = {}
    for _, kernel, params, *_ in ROWS + [(None, "matmul_library", {})]:
        if kernel in ours:
            continue
        e = measure_all([catalog[kernel]], {k: compile_expr(str(v)) for k, v in params.items()}, backend, machine,
                        policy)[0]
        backend.release()
        ours[kernel] = e
        print(f"ours {kernel:26} {e['status']:6} " + (
            f"{e['time_median'] * 1e6:10.1f} µs  {fig(e):>14}  ({e['timing']})" if e["status"] == "OK"
            else str(e["error"])), flush=True)
    peer_results: dict = {}
    for build in (peers, row_peers, stream_peers):
        for key, (desc, params, fn, check, inputs) in build().items():
            try:
                r = roofline.measure(fn, name=key, descriptor=desc, params=params or None, spec="h200",
                                     check=check, inputs=inputs)
                e = r.to_json()
                e["timing"] = (r.extra or {}).get("timing")
            except Exception as exc:  # noqa: BLE001 - a peer that cannot run is reported, not fatal
                e = {"status": "FAILED", "error": f"{type(exc).__name__}: {str(exc)[:200]}"}
            peer_results[key] = e
            print(f"peer {key:26} {e.get('status'):6} " + (
                f"{e['time_median'] * 1e6:10.1f} µs  {fig(e):>14}  ({e['timing']})" if e.get("status") == "OK"
                else str(e.get("error"))), flush=True)
        torch.cuda.synchronize()
        torch.cuda.empty_cache()

    peer_results["matmul_library (cuBLAS)"] = {**ours["matmul_library"], "timing": ours["matmul_library"]["timing"]}

    table = [f"{'kernel':28} {'ours':>10} {'achieved':>14} {'timing':>8} | {'peer':24} {'peer time':>10} "
             f"{'peer achieved':>14} {'timing':>8} {'ratio':>6} | target / verdict"]
    record = []
    for label, kernel, _, keys, kind, bar, text in ROWS:
        e = ours[kernel]
        ok = e["status"] == "OK"
        first = True
        for key in keys:
            p = peer_results.get(key)
            if p is None:
                continue
            pok = p.get("status") == "OK"
            ratio = p["time_median"] / e["time_median"] if ok and pok else None
            verdict = ""
            if first:
                if kind == "ratio":
                    passed = ratio is not None and ratio >= bar
                elif kind == "bw":
                    passed = ok and e["achieved_bandwidth"] >= bar
                elif kind == "flops":
                    passed = ok and e["achieved_flops"] >= bar
                else:
                    passed = ok
                verdict = f"{text}: {'PASS' if passed else 'MISS'}" if kind else f"{text}: {'OK' if ok else 'FAILED'}"
            table.append(
                f"{label if first else '':28} "
                + (f"{e['time_median'] * 1e6:8.1f}µs {fig(e):>14} {str(e['timing'])[:8]:>8}" if first and ok
                   else (f"{'FAILED':>10} {'':>14} {'':>8}" if first else f"{'':>10} {'':>14} {'':>8}"))
                + f" | {key:24} " + (f"{p['time_median'] * 1e6:8.1f}µs {fig(p):>14} {str(p['timing'])[:8]:>8} "
                                     if pok else f"{'FAILED':>10} {'':>14} {'':>8} ")
                + f"{ratio if ratio else 0:6.3f} | {verdict}")
            record.append({"row": label, "kernel": kernel, "ours": {k: e.get(k) for k in (
                "status", "time_median", "achieved_bandwidth", "achieved_flops", "timing", "error")},
                "peer": key, "peer_result": {k: p.get(k) for k in (
                    "status", "time_median", "achieved_bandwidth", "achieved_flops", "timing", "error")},
                "ratio": ratio, "target": text if first else None, "verdict": verdict or None})
            first = False
        if not ok:
            table.append(f"{'':28} our kernel FAILED: {e['error']}")
    text_out = "\n".join(lines + [""] + table)
    print("\n" + "\n".join(table))
    if args.out:
        args.out.mkdir(parents=True, exist_ok=True)
        (args.out / "catalogue-peers.txt").write_text(text_out + "\n")
        (args.out / "catalogue-peers.json").write_text(json.dumps(
            {"header": lines, "rows": record, "device": backend.info}, indent=2, default=str))
    return 0 if all(ours[k]["status"] == "OK" for k in ours) else 1


if __name__ == "__main__":
    sys.exit(main())
