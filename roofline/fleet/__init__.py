"""Many GPUs on many hosts: the same per-GPU work on every rank of a distributed job, one results file from rank 0.

The work (roofline.fleet.work) is a function from a selection to a results document and knows nothing of the
engine; the engine (roofline.fleet.mpi, MPI through mpi4py) places one rank per GPU, gathers
the documents point to point and merges them with the same merge `--device all` uses (roofline.fleet.merge).

`roofline fleet links` (roofline.fleet.links) measures the links between the ranks: nccl-tests' conventions in
roofline.fleet.collectives, a sweep that drives any engine in roofline.fleet.collective_sweep, MPI with NumPy
buffers in roofline.fleet.mpi_links (the other home of mpi4py) and NCCL through CuPy in roofline.fleet.nccl.
"""
