"""A stand-in for PyTorch in CPU tests of roofline.kineto.capture and `profile --with torch`, as
tests/data/ncu/fake/ncu stands in for Nsight Compute. Only what the capture touches is here:

  torch.profiler.profile      start, stop, export_chrome_trace: writes the committed trace tests/data/kineto/step.json
                              (or $FAKE_TORCH_TRACE) with what happened added under "fakeTorch": the profiler's
                              options, how often it started, and the labels the program marked while it recorded
  torch.cuda                  is_available ($FAKE_TORCH_CUDA=0: no device), synchronize, profiler.start/stop,
                              nvtx.range_push/range_pop/range, CUDAGraph (capture_begin/capture_end/replay mark)
  torch.profiler.record_function  a labelled range, marked 'NAME begins' and 'NAME ends'; $FAKE_TORCH_TRACES (paths joined by
                              os.pathsep): the k-th export writes the k-th (the last for the rest)
  torch.autograd.profiler     emit_nvtx, which refuses to run beside the Kineto profiler, as the real one cannot

A test program marks points with torch.mark(label). Put tests/data/faketorch first on PYTHONPATH to use it."""

from torch import autograd, cuda, profiler

__version__ = "0.0+fake"


def mark(label: str) -> None:
    """Record `label` in every profiler that is recording now (the fake's stand-in for a kernel launch)."""
    profiler._mark(label)

__all__ = ["autograd", "cuda", "profiler", "mark"]
