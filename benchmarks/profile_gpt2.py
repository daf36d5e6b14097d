"""One GPT-2 small forward as its users run it, for `roofline profile` (docs/ncu.md, docs/measurements/).

Hugging Face transformers' GPT2LMHeadModel built from GPT2Config() (random weights), BF16, batch 4 x 1024 tokens.
One warm-up forward (cuBLAS handles, kernel choices, lazy allocations), then one profiled forward between
torch.cuda.profiler.start()/stop() inside emit_nvtx(record_shapes=True), so each launch carries its aten op
and input shapes:

    roofline profile --range start-stop -o gpt2.json -- python3 benchmarks/profile_gpt2.py
"""

import argparse

import torch
from transformers import GPT2Config, GPT2LMHeadModel

parser = argparse.ArgumentParser()
parser.add_argument("--batch", type=int, default=4)
parser.add_argument("--seq", type=int, default=1024)
args = parser.parse_args()

torch.manual_seed(0)
model = GPT2LMHeadModel(GPT2Config()).to("cuda", torch.bfloat16).eval()
ids = torch.randint(0, model.config.vocab_size, (args.batch, args.seq), device="cuda")
with torch.no_grad():
    model(ids)  # warm-up, not profiled
    torch.cuda.synchronize()
    with torch.autograd.profiler.emit_nvtx(record_shapes=True):
        torch.cuda.profiler.start()
        logits = model(ids).logits
        torch.cuda.synchronize()
        torch.cuda.profiler.stop()
assert logits.shape == (args.batch, args.seq, model.config.vocab_size)
assert torch.isfinite(logits.float()).all(), "non-finite logits"
print(f"gpt2 forward: logits {tuple(logits.shape)}, attention {model.config._attn_implementation}")
