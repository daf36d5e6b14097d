"""PyTorch profiler (Kineto) Chrome traces -> roofline results: `roofline import torch TRACE...`.

reader        the trace's events, bounded and checked (json or json.gz)
attribution   each kernel -> its launch (correlation id) -> the innermost ATen op around the launch
document      the results document `import ncu` writes: kernels, groups, program, and the ranks' straggler
(the op physics, FLOPs and bytes per ATen op and per Triton kernel, lives in roofline.model.ops: the ncu path uses
it too)
timeline      the step: window, GPU busy and idle (HTA's definition), idle gaps and their causes, launch delay,
              overlap across streams, and the step's MFU/HFU and fraction of ceiling over wall time
"""
