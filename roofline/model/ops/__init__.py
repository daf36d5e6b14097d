"""Op physics, one home: the FLOPs, DRAM bytes and compute roof of an ATen op (`aten`) and of a Triton kernel that
torch.compile generated (`triton`), from the arguments a profiler records (`args`). Both import paths use it: the
PyTorch trace (roofline.kineto) and the Nsight Compute one (roofline.ncu.opmodel, from NVTX shapes). Pure: no torch,
no I/O."""
