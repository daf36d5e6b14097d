"""A small PyTorch program for the GPU acceptance run's `roofline profile` step (benchmarks/gpu_acceptance.py):
an MLP block in BF16 (two GEMMs, GELU, layer norm, softmax), one warm-up step, then one profiled step between
torch.cuda.profiler.start()/stop() inside emit_nvtx(record_shapes=True)."""

import torch

torch.manual_seed(0)
x = torch.randn(4096, 2048, device="cuda", dtype=torch.bfloat16)
w1 = torch.randn(2048, 8192, device="cuda", dtype=torch.bfloat16) / 45
w2 = torch.randn(8192, 2048, device="cuda", dtype=torch.bfloat16) / 90
norm = torch.nn.LayerNorm(2048, device="cuda", dtype=torch.bfloat16)


def step() -> torch.Tensor:
    h = torch.nn.functional.gelu(x @ w1)
    y = norm(h @ w2 + x)
    return torch.softmax(y.float(), dim=-1)


step()
torch.cuda.synchronize()
with torch.autograd.profiler.emit_nvtx(record_shapes=True):
    torch.cuda.profiler.start()
    out = step()
    torch.cuda.synchronize()
    torch.cuda.profiler.stop()
assert torch.isfinite(out).all()
