"""`roofline calibrate`: this GPU's ceilings measured and written as a spec, by stage:

plan      sizes and repeat counts (FULL, QUICK), the calibration kernels' loader
jobs      the harness job runner (bundled kernels, verified and timed as `roofline measure` does)
peaks     figures from harness results: DRAM bandwidth, FP32/FP64 and tensor FLOP/s
probes    the custom probes: L2 bandwidth and DRAM latency (roofline/measurement/calibrate/kernels.cu)
l1        the L1 / shared-memory bandwidth probe (a per-SM working set, through L1 and from shared memory)
gpu       calibrate(), the orchestration, and the tensor-core helpers that touch CuPy itself
figures   Figure and the datasheet comparison (pure)
spec      the measured spec document and its YAML (pure)
sizemodel the size model's machine figures: launch floor, round trip, reduction (the sweep's probes), per-SM bandwidth
"""
