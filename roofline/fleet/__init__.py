"""Many GPUs on many hosts: the same per-GPU work on every rank of a distributed job, one results file from rank 0.

The work (roofline.fleet.work) is a function from a selection to a results document and knows nothing of the
engine; the engine (roofline.fleet.mpi, MPI through mpi4py, imported only there) places one rank per GPU, gathers
the documents point to point and merges them with the same merge `--device all` uses (roofline.fleet.merge).
"""
