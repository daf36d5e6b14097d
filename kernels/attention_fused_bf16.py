"""Fused BF16 attention on the tensor cores (attn_fwd_bf16 in attention.cu: mma.sync m16n8k16, FP32 accumulation
and softmax, P rounded to BF16 for P V, O written in BF16). Inputs, reference and launcher are shared with the other
attention kernels (_attention.py); BF16 host arrays come from ml_dtypes (installed with CuPy's bfloat16 support)."""
from roofline.kernelapi import sibling

try:  # registers numpy's 'bfloat16' dtype; without it the harness says NumPy has no dtype 'bfloat16'
    import ml_dtypes  # noqa: F401
except ImportError:
    pass

_AT = sibling(__file__, "_attention.py")

INTERFACE = 1
# Against float64 on the same BF16-rounded inputs: O rounded to BF16 (2^-9 relative), P rounded to BF16 before
# P V (about 1e-4 absolute on |O| about 0.02).
TOLERANCE = {"rtol": 1e-2, "atol": 5e-4}
TEST_PARAMS = {**_AT.TEST_PARAMS, "causal": 1}
inputs = _AT.inputs
outputs = _AT.outputs
reference = _AT.reference


def cupy(p, ctx):
    _AT.check_params(p, ctx.folder / "attention_fused_bf16.yaml")
    return _AT.bf16_launcher(ctx.module("attention.cu", _AT.bf16_options(p["d"])), p)
