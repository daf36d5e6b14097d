"""Programs of each kind users compile, written here (no downloaded model), for checking the whole-program model of
`roofline import torch` / `profile --with torch` against Nsight Compute (issue 38).

One small decoder-only transformer (token embedding, --layers blocks of RMS norm, QKV projection, causal attention,
output projection, SiLU-gated MLP, a vocabulary head, cross-entropy), random weights, batch --batch x --seq tokens,
run as one of:
  default     train step, torch.compile default mode, BF16 weights, fused AdamW
  cudagraph   inference forward, torch.compile(mode="reduce-overhead"): the kernels replay inside CUDA graphs
  autotune    inference forward, torch.compile(mode="max-autotune-no-cudagraphs") with Triton GEMM templates only
              (max_autotune_gemm_backends="TRITON"), so the matrix products are Inductor's Triton templates
  flex        train step, attention through flex_attention (a causal block mask), compiled
  mix         train step, FP16 autocast + GradScaler over FP32 weights, the blocks compiled and the embedding and
              head eager, SGD with momentum (foreach): the optimizer's and GradScaler's multi-tensor kernels
--compile none runs any kind eagerly (the same model: the eager side of a diff).

How the measured step is marked (after --warmup steps: compilation, graph capture, optimizer state):
  default      torch.cuda.profiler.start()/stop() around one step (roofline profile --range start-stop; ncu
               --profile-from-start off)
  --trace F    instead, the program records F itself with a plain torch.profiler (record_shapes=True, nothing
               else): one step after the warm-up; with --trace-warmup the recording starts before the first step,
               so warm-up, graph capture and replays are all in it
The output (loss or logits) is checked finite before the program exits 0.
"""

from __future__ import annotations

import argparse
import contextlib
import json

import torch
import torch.nn.functional as F
from torch import nn

parser = argparse.ArgumentParser()
parser.add_argument("--kind", choices=["default", "cudagraph", "autotune", "flex", "mix"], default="default")
parser.add_argument("--compile", choices=["kind", "none"], default="kind")
parser.add_argument("--layers", type=int, default=4)
parser.add_argument("--dim", type=int, default=1024)
parser.add_argument("--heads", type=int, default=16)
parser.add_argument("--vocab", type=int, default=16384)
parser.add_argument("--batch", type=int, default=4)
parser.add_argument("--seq", type=int, default=1024)
parser.add_argument("--warmup", type=int, default=3)
parser.add_argument("--steps", type=int, default=1, help="measured steps")
parser.add_argument("--trace", help="record this plain torch.profiler trace (JSON) instead of the start/stop range")
parser.add_argument("--trace-warmup", action="store_true", help="the trace starts before the first warm-up step")
args = parser.parse_args()

torch.manual_seed(0)
KIND = args.kind
TRAIN = KIND in ("default", "flex", "mix")
DTYPE = torch.float32 if KIND == "mix" else torch.bfloat16


class RMSNorm(nn.Module):
    def __init__(self, dim: int) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * torch.rsqrt(x.float().pow(2).mean(-1, keepdim=True) + 1e-6).to(x.dtype) * self.weight


_block_mask = None


def attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    if KIND != "flex":
        return F.scaled_dot_product_attention(q, k, v, is_causal=True)
    from torch.nn.attention.flex_attention import flex_attention

    return flex_attention(q, k, v, block_mask=_block_mask)


class Block(nn.Module):
    def __init__(self, dim: int, heads: int) -> None:
        super().__init__()
        self.heads = heads
        self.norm1, self.norm2 = RMSNorm(dim), RMSNorm(dim)
        self.qkv = nn.Linear(dim, 3 * dim, bias=True)
        self.out = nn.Linear(dim, dim, bias=True)
        hidden = 8 * dim // 3 // 64 * 64
        self.gate = nn.Linear(dim, hidden, bias=False)
        self.up = nn.Linear(dim, hidden, bias=False)
        self.down = nn.Linear(hidden, dim, bias=True)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, s, d = x.shape
        q, k, v = self.qkv(self.norm1(x)).view(b, s, 3, self.heads, d // self.heads).permute(2, 0, 3, 1, 4)
        x = x + self.out(attention(q, k, v).transpose(1, 2).reshape(b, s, d))
        h = self.norm2(x)
        return x + self.down(F.silu(self.gate(h)) * self.up(h))


class Model(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.embed = nn.Embedding(args.vocab, args.dim)
        self.blocks = nn.ModuleList(Block(args.dim, args.heads) for _ in range(args.layers))
        self.norm = RMSNorm(args.dim)
        self.head = nn.Linear(args.dim, args.vocab, bias=False)

    def body(self, x: torch.Tensor) -> torch.Tensor:
        for block in self.blocks:
            x = block(x)
        return self.norm(x)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        return self.head(self.body(self.embed(ids)))


model = Model().to("cuda", DTYPE)
model.train(TRAIN)
ids = torch.randint(0, args.vocab, (args.batch, args.seq), device="cuda")
labels = torch.roll(ids, -1, dims=1)
if KIND == "flex":
    from torch.nn.attention.flex_attention import create_block_mask

    _block_mask = create_block_mask(lambda b, h, q, kv: q >= kv, None, None, args.seq, args.seq, device="cuda")

if args.compile == "none":
    run = model
elif KIND == "mix":  # the blocks compiled, embedding and head eager
    model.body = torch.compile(model.body)
    run = model
elif KIND == "cudagraph":
    run = torch.compile(model, mode="reduce-overhead")
elif KIND == "autotune":
    import torch._inductor.config as inductor_config

    inductor_config.max_autotune_gemm_backends = "TRITON"
    run = torch.compile(model, mode="max-autotune-no-cudagraphs")
else:
    run = torch.compile(model)

if KIND == "mix":
    opt = torch.optim.SGD(model.parameters(), lr=1e-3, momentum=0.9, foreach=True)
    scaler = torch.amp.GradScaler("cuda")
elif TRAIN:
    opt, scaler = torch.optim.AdamW(model.parameters(), lr=1e-4, fused=True), None
else:
    opt, scaler = None, None


def autocast():
    return torch.autocast("cuda", dtype=torch.float16) if KIND == "mix" else contextlib.nullcontext()


def step() -> torch.Tensor:
    if not TRAIN:
        with torch.no_grad():
            out = run(ids)
        return out.clone() if KIND == "cudagraph" else out  # a graph's output is overwritten by the next replay
    opt.zero_grad(set_to_none=True)
    with autocast():
        logits = run(ids)
        loss = F.cross_entropy(logits.view(-1, args.vocab).float(), labels.view(-1))
    if scaler is None:
        loss.backward()
        opt.step()
    else:
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()
    return loss.detach()


def measured() -> torch.Tensor:
    out = None
    for _ in range(args.steps):
        out = step()
    torch.cuda.synchronize()
    return out


if args.trace:
    from torch.profiler import ProfilerActivity, profile

    activities = [ProfilerActivity.CPU, ProfilerActivity.CUDA]
    if args.trace_warmup:
        with profile(activities=activities, record_shapes=True) as prof:
            for _ in range(args.warmup):
                step()
            out = measured()
    else:
        for _ in range(args.warmup):
            step()
        torch.cuda.synchronize()
        with profile(activities=activities, record_shapes=True) as prof:
            out = measured()
    prof.export_chrome_trace(args.trace)
else:
    for _ in range(args.warmup):
        step()
    torch.cuda.synchronize()
    torch.cuda.profiler.start()
    out = measured()
    torch.cuda.profiler.stop()
assert torch.isfinite(out.float()).all(), "non-finite output"
params = sum(p.numel() for p in model.parameters())
print(json.dumps({"kind": KIND, "compile": args.compile, "layers": args.layers, "params": params,
                  "tensors": len(list(model.parameters())), "out": list(out.shape)}))
