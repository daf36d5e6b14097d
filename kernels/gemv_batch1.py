"""Skinny GEMM of LLM decode: y[b, :] = W x[b, :] with a square float32 W (gemv.cu), at batch 1. Everything but
the test batch is shared with the other gemv_batch* kernels (_gemv.py); the launcher picks its kernel by batch."""
from roofline.kernelapi import sibling

_GEMV = sibling(__file__, "_gemv.py")

INTERFACE = 1
TOLERANCE = _GEMV.TOLERANCE
TEST_PARAMS = {"n": 1001, "batch": 1}
inputs = _GEMV.inputs
outputs = _GEMV.outputs
reference = _GEMV.reference
cupy = _GEMV.cupy
