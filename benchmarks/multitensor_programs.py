"""Issue 38: one optimizer step over a model of more tensors than the PyTorch profiler records shapes for (30), so
that `roofline import torch` models its multi-tensor kernels (fused AdamW, SGD and Adagrad, foreach Adam,
GradScaler's unscale, zero_grad's _foreach_zero_) from their launches' grids; benchmarks/multitensor_check.py then
sets the model against the DRAM bytes ncu counts for the same launches.

A stack of --layers Linear(--width, --width) layers (48 tensors by default; 1000 x 1000 weights are 15.26 chunks of
65,536 elements and 1000-element biases under one, so the grid's bound is over by about 11 %), batch 64. Three
warm-up steps (the optimizer's state), then one step:
  --trace PATH   under torch.profiler.profile(record_shapes=True), exported as a Chrome trace (a plain user trace,
                 not through `roofline profile`, which would annotate the parameters' shapes)
  otherwise      between torch.cuda.profiler.start() and stop(), for `roofline profile --with ncu --range
                 start-stop`
Exit 3 when this PyTorch lacks the optimizer's CUDA implementation (fused Adagrad on CUDA is recent)."""

import argparse
import sys

import torch

parser = argparse.ArgumentParser()
parser.add_argument("--optimizer", choices=["adamw-fused", "adam-foreach", "sgd-fused", "adagrad-fused"],
                    default="adamw-fused")
parser.add_argument("--scaler", action="store_true", help="FP16 autocast with GradScaler")
parser.add_argument("--layers", type=int, default=24)
parser.add_argument("--width", type=int, default=1000)
parser.add_argument("--trace", default=None)
args = parser.parse_args()

torch.manual_seed(0)
model = torch.nn.Sequential(*[torch.nn.Linear(args.width, args.width) for _ in range(args.layers)]).cuda()
x = torch.randn(64, args.width, device="cuda")
make = {
    "adamw-fused": lambda p: torch.optim.AdamW(p, lr=1e-4, weight_decay=0.01, fused=True),
    "adam-foreach": lambda p: torch.optim.Adam(p, lr=1e-4, weight_decay=0.01, foreach=True),
    "sgd-fused": lambda p: torch.optim.SGD(p, lr=1e-3, momentum=0.9, fused=True),
    "adagrad-fused": lambda p: torch.optim.Adagrad(p, lr=1e-2, fused=True),
}[args.optimizer]
scaler = torch.amp.GradScaler("cuda") if args.scaler else None


def step() -> None:
    opt.zero_grad(set_to_none=False)  # a _foreach_zero_ over the gradients
    with torch.autocast("cuda", dtype=torch.float16, enabled=scaler is not None):
        loss = model(x).float().pow(2).mean()
    if scaler is not None:
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()
    else:
        loss.backward()
        opt.step()


try:
    opt = make(model.parameters())
    for _ in range(3):
        step()
except (RuntimeError, TypeError, ValueError) as exc:
    print(f"{args.optimizer}: not available in torch {torch.__version__} on CUDA: {exc}", file=sys.stderr)
    sys.exit(3)
torch.cuda.synchronize()
if args.trace:
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA], record_shapes=True) as prof:
        step()
        torch.cuda.synchronize()
    prof.export_chrome_trace(args.trace)
else:
    torch.cuda.profiler.start()
    step()
    torch.cuda.synchronize()
    torch.cuda.profiler.stop()
print(f"{args.optimizer}{' + GradScaler' if scaler else ''}: {sum(1 for _ in model.parameters())} tensors, "
      f"{sum(p.numel() for p in model.parameters()):,} elements")
