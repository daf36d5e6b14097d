"""Compiled programs as their users run them, for `roofline profile` and the timeline (issue 34).

Hugging Face transformers' models from a config (random weights), one step of:
  --model llama   LlamaForCausalLM, hidden 1024, 16 heads, MLP 2816, vocab 32000, --layers (2)
  --model gpt2    GPT2LMHeadModel, GPT2Config(n_layer=--layers), vocab 50257
  --mode train    forward, cross-entropy loss, backward, fused AdamW step (--scaler: FP16 autocast + GradScaler,
                  FP32 master weights; otherwise the weights are in --dtype)
  --mode infer    one forward under no_grad
  --compile none|default|reduce-overhead   torch.compile of the model (reduce-overhead: CUDA-graph replay)
Batch 4 x 1024 tokens (--batch, --seq). Three warm-up steps (compilation, graph capture, optimizer state), then one
step between torch.cuda.profiler.start()/stop() inside emit_nvtx(record_shapes=True); the loss (or logits) is
checked finite before the program exits 0.

    roofline profile --with torch --range start-stop --save-trace t.json.gz -o t.json -- \
        python3 benchmarks/profile_compiled.py --model llama --mode train --compile default
"""

import argparse
import contextlib

import torch

parser = argparse.ArgumentParser()
parser.add_argument("--model", choices=["llama", "gpt2"], default="llama")
parser.add_argument("--mode", choices=["train", "infer"], default="train")
parser.add_argument("--compile", choices=["none", "default", "reduce-overhead"], default="default")
parser.add_argument("--dtype", choices=["bf16", "fp16"], default="bf16")
parser.add_argument("--scaler", action="store_true", help="FP16 autocast with GradScaler (FP32 weights)")
parser.add_argument("--layers", type=int, default=2)
parser.add_argument("--batch", type=int, default=4)
parser.add_argument("--seq", type=int, default=1024)
args = parser.parse_args()

torch.manual_seed(0)
dtype = {"bf16": torch.bfloat16, "fp16": torch.float16}[args.dtype]
if args.model == "llama":
    from transformers import LlamaConfig, LlamaForCausalLM

    config = LlamaConfig(hidden_size=1024, intermediate_size=2816, num_hidden_layers=args.layers,
                         num_attention_heads=16, num_key_value_heads=16, vocab_size=32000,
                         max_position_embeddings=args.seq, attn_implementation="sdpa")
    model = LlamaForCausalLM(config)
else:
    from transformers import GPT2Config, GPT2LMHeadModel

    config = GPT2Config(n_layer=args.layers, n_positions=args.seq, attn_implementation="sdpa")
    model = GPT2LMHeadModel(config)
model = model.to("cuda", torch.float32 if args.scaler else dtype)
model.train(args.mode == "train")
ids = torch.randint(0, config.vocab_size, (args.batch, args.seq), device="cuda")
run = model if args.compile == "none" else torch.compile(model, mode=None if args.compile == "default" else args.compile)
opt = torch.optim.AdamW(model.parameters(), lr=1e-4, fused=True) if args.mode == "train" else None
scaler = torch.amp.GradScaler("cuda") if args.scaler else None


def autocast():
    return torch.autocast("cuda", dtype=torch.float16) if args.scaler else contextlib.nullcontext()


def step() -> torch.Tensor:
    if args.mode == "infer":
        with torch.no_grad():
            return run(input_ids=ids).logits
    opt.zero_grad(set_to_none=True)
    with autocast():
        loss = run(input_ids=ids, labels=ids).loss
    if scaler is None:
        loss.backward()
        opt.step()
    else:
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()
    return loss.detach()


for _ in range(3):  # warm-up: compilation, graph capture, optimizer state; not profiled
    step()
torch.cuda.synchronize()
with torch.autograd.profiler.emit_nvtx(record_shapes=True):
    torch.cuda.profiler.start()
    out = step()
    torch.cuda.synchronize()
    torch.cuda.profiler.stop()
assert torch.isfinite(out.float()).all(), "non-finite output"
print(f"{args.model} {args.mode} {args.compile} {args.dtype}{' scaler' if args.scaler else ''}: "
      f"{args.layers} layers, out {tuple(out.shape)}")
