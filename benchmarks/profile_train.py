"""One training step of a small Llama (2 decoder layers) as its users run it, for `roofline profile`.

Hugging Face transformers' LlamaForCausalLM from a LlamaConfig (hidden 1024, 16 heads, MLP 2816, vocab 32000,
random weights), BF16 weights, SDPA attention (causal), batch 4 x 1024 tokens; forward, cross-entropy loss,
backward and a fused AdamW step. One warm-up step (optimizer state, cuBLAS handles, kernel choices), then one
profiled step between torch.cuda.profiler.start()/stop() inside emit_nvtx(record_shapes=True):

    roofline profile --range start-stop -o train.json -- python3 benchmarks/profile_train.py
    roofline profile --with torch --range start-stop -o train.json -- python3 benchmarks/profile_train.py
"""

import argparse

import torch
from transformers import LlamaConfig, LlamaForCausalLM

parser = argparse.ArgumentParser()
parser.add_argument("--batch", type=int, default=4)
parser.add_argument("--seq", type=int, default=1024)
parser.add_argument("--layers", type=int, default=2)
args = parser.parse_args()

torch.manual_seed(0)
config = LlamaConfig(hidden_size=1024, intermediate_size=2816, num_hidden_layers=args.layers,
                     num_attention_heads=16, num_key_value_heads=16, vocab_size=32000,
                     max_position_embeddings=args.seq, attn_implementation="sdpa")
model = LlamaForCausalLM(config).to("cuda", torch.bfloat16).train()
opt = torch.optim.AdamW(model.parameters(), lr=1e-4, fused=True)
ids = torch.randint(0, config.vocab_size, (args.batch, args.seq), device="cuda")


def step() -> torch.Tensor:
    opt.zero_grad(set_to_none=True)
    loss = model(input_ids=ids, labels=ids).loss
    loss.backward()
    opt.step()
    return loss.detach()


step()  # warm-up, not profiled
torch.cuda.synchronize()
with torch.autograd.profiler.emit_nvtx(record_shapes=True):
    torch.cuda.profiler.start()
    loss = step()
    torch.cuda.synchronize()
    torch.cuda.profiler.stop()
assert torch.isfinite(loss), "non-finite loss"
print(f"llama train step: {args.layers} layers, loss {loss.item():.3f}, attention {config._attn_implementation}")
