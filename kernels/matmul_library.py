"""C = A B through cuBLAS (cupy.matmul with out=). Inputs, reference and tolerance are shared with the other
matmul variants (_matmul.py)."""
from roofline.kernelapi import sibling

_MM = sibling(__file__, "_matmul.py")

INTERFACE = 1
TOLERANCE = _MM.TOLERANCE
TEST_PARAMS = {"n": 1000}
inputs = _MM.inputs
outputs = _MM.outputs
reference = _MM.reference
cupy = _MM.library
