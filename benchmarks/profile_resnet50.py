"""One torchvision ResNet-50 forward as its users run it, for `roofline profile`.

Batch 64 of 224 x 224 images, channels-last, BF16 autocast, random weights. One warm-up forward, then one
profiled forward between torch.cuda.profiler.start()/stop() inside emit_nvtx(record_shapes=True):

    roofline profile --range start-stop -o resnet50.json -- python3 benchmarks/profile_resnet50.py
"""

import argparse

import torch
import torchvision

parser = argparse.ArgumentParser()
parser.add_argument("--batch", type=int, default=64)
args = parser.parse_args()

torch.manual_seed(0)
model = torchvision.models.resnet50().cuda().eval().to(memory_format=torch.channels_last)
x = torch.randn(args.batch, 3, 224, 224, device="cuda").to(memory_format=torch.channels_last)
with torch.no_grad(), torch.autocast("cuda", dtype=torch.bfloat16):
    model(x)  # warm-up, not profiled
    torch.cuda.synchronize()
    with torch.autograd.profiler.emit_nvtx(record_shapes=True):
        torch.cuda.profiler.start()
        y = model(x)
        torch.cuda.synchronize()
        torch.cuda.profiler.stop()
assert y.shape == (args.batch, 1000)
assert torch.isfinite(y.float()).all(), "non-finite output"
print(f"resnet50 forward: output {tuple(y.shape)} {y.dtype}")
