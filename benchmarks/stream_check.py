"""Which stream is current after the harness ran a kernel? A check of the cause of the 11 PB/s L2 figure (issue 21):
the harness enters `with device, stream:`; if leaving it does not restore the backend's stream, a probe launched
afterwards runs on another stream than the events that time it. Prints one line; run on a GPU."""

from roofline.measurement.backend_cupy import CupyBackend
from roofline.measurement.calibrate.jobs import Job, run_jobs
from roofline.measurement.policy import MeasurePolicy

backend = CupyBackend(0)
cp = backend.cp
before = cp.cuda.get_current_stream()
run_jobs(backend, [Job("copy", "copy", {"n": 2**20})], MeasurePolicy(min_time=0.01, min_repeats=3))
after = cp.cuda.get_current_stream()
print(f"backend stream {backend.stream.ptr:#x}; current before the harness {before.ptr:#x}, after {after.ptr:#x}: "
      f"{'restored' if after.ptr == backend.stream.ptr else 'NOT the backend stream: a later probe escapes its events'}")
