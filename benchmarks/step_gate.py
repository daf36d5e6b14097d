"""A training step repeated, for checking `profile --with torch --steps N` and `report --baseline` on a GPU.

A stack of LAYERS blocks (Linear 4096x4096 BF16, GELU, residual add), MSE loss, backward and a fused AdamW step.
WARMUP steps run first, outside any range; then STEPS steps, each inside an NVTX range named 'step' (what
`roofline profile --with torch --range step --steps N` records, one ProfilerStep#k per range). --extra-adds K adds K
more residual adds per step (the same shape), so aten::add's time grows by K/LAYERS: with 20 layers, --extra-adds 1
is a 5 % slowdown of that group alone.

    roofline profile --with torch --range step --steps 10 -o a.json -- python3 benchmarks/step_gate.py
    roofline profile --with torch --range step --steps 10 -o b.json -- python3 benchmarks/step_gate.py --extra-adds 1
    roofline report b.json --baseline a.json --max-regression 3%
"""

import argparse
import contextlib

import torch

parser = argparse.ArgumentParser()
parser.add_argument("--layers", type=int, default=20)
parser.add_argument("--width", type=int, default=4096)
parser.add_argument("--batch", type=int, default=8192)
parser.add_argument("--warmup", type=int, default=3)
parser.add_argument("--steps", type=int, default=12)
parser.add_argument("--extra-adds", type=int, default=0)
args = parser.parse_args()

torch.manual_seed(0)
layers = torch.nn.ModuleList(torch.nn.Linear(args.width, args.width, bias=False)
                             for _ in range(args.layers)).to("cuda", torch.bfloat16)
opt = torch.optim.AdamW(layers.parameters(), lr=1e-5, fused=True)
x0 = torch.randn(args.batch, args.width, device="cuda", dtype=torch.bfloat16)
zero = torch.zeros_like(x0)


def step() -> torch.Tensor:
    opt.zero_grad(set_to_none=True)
    x = x0
    for layer in layers:
        x = x + torch.nn.functional.gelu(layer(x))
    for _ in range(args.extra_adds):
        x = x + zero
    loss = (x.float() ** 2).mean()
    loss.backward()
    opt.step()
    return loss.detach()


for i in range(args.warmup + args.steps):
    with torch.cuda.nvtx.range("step") if i >= args.warmup else contextlib.nullcontext():
        loss = step()
        torch.cuda.synchronize()
assert torch.isfinite(loss), "non-finite loss"
print(f"step_gate: {args.layers} layers, {args.extra_adds} extra add(s), loss {loss.item():.3f}")
