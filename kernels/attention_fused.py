"""Fused FP32 attention (FlashAttention manner, attn_fwd_f32 in attention.cu): one launch, K and V tiles streamed
through shared memory, online softmax, S and P never written to DRAM. attention_fused_causal runs this file too,
its parameter causal = 1 switching the mask on. Inputs, reference and launcher are shared with the other attention
kernels (_attention.py)."""
from roofline.kernelapi import sibling

_AT = sibling(__file__, "_attention.py")

INTERFACE = 1
# Against float64: FP32 products and ex2.approx stay near 1e-6 relative; |O| is about 0.02, so atol 2e-6 still
# fails a TF32 product (about 1e-3 relative in the scores).
TOLERANCE = {"rtol": 1e-4, "atol": 2e-6}


def cupy(p, ctx):
    name = "attention_fused_causal" if "causal" in p else "attention_fused"
    _AT.check_params(p, ctx.folder / f"{name}.yaml")
    return _AT.f32_launcher(ctx.module("attention.cu", _AT.f32_options(p["d"])), p)
