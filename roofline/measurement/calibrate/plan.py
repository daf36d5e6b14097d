"""What every step of the GPU calibration shares: the Plan (sizes and repeat counts; FULL and QUICK), the
measurement policy it implies, the calibration kernels (roofline/measurement/calibrate/kernels.cu) and their loader,
and a float median.

It exists so the harness jobs, the peak figures, the custom probes, the launch overheads and the orchestration in
roofline.measurement.calibrate.gpu can all use these without importing one another. CuPy is reached only through the
backend object passed in; this module imports on any machine.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

from roofline.measurement.policy import MeasurePolicy

KERNELS_FILE = Path(__file__).resolve().parent / "kernels.cu"


@dataclass(frozen=True)
class Plan:
    """Sizes and repeat counts of one calibration. QUICK is for tests and smoke runs."""

    stream_n: int = 2**28  # float32 elements for copy and triad (1 GiB per array)
    matmul_n: int = 8192  # square GEMM for the tensor roofs
    chase_passes: int = 10
    chase_steps: int = 100_000  # dependent loads per timed pass
    chase_min_footprint: int = 1 << 30  # bytes; at least 16 × L2 as well
    l2_bytes_per_launch: float = 2e9
    l2_point_time: float = 0.1  # s of timed runs per working set of the L2 curve (about a dozen points)
    l1_bytes_per_launch: float = 40e9  # the L1 / shared-memory probes: about 1.3 ms a launch at 30 TB/s
    min_time: float = 0.5  # s of timed runs per harness kernel
    blocks_per_sm: int = 16  # fma_peak grid: 16 blocks of 256 threads per SM (the bundled default on an H200)
    sm_probe_bytes: int = 4 << 20  # the per-SM probe's short slice per block (calibrate.sizemodel)

    def policy(self) -> MeasurePolicy:
        """The harness policy of the calibration jobs and probes."""
        return MeasurePolicy(min_time=self.min_time, min_repeats=10, max_time=2.0)


FULL = Plan()
QUICK = Plan(stream_n=2**26, matmul_n=4096, chase_passes=5, chase_steps=50_000, chase_min_footprint=1 << 29,
             l2_bytes_per_launch=5e8, l2_point_time=0.05, l1_bytes_per_launch=10e9, min_time=0.2, sm_probe_bytes=1 << 20)


def load_module(backend: Any) -> Any:
    """The calibration kernels compiled for this GPU (CuPy RawModule, NVRTC)."""
    code = KERNELS_FILE.read_text(encoding="utf-8")
    return backend.cp.RawModule(code=code, options=("--std=c++17",))


def median(samples: Sequence[float]) -> float:
    return float(statistics.median(samples))
