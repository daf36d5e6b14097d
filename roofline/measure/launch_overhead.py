"""The launch floor and one-element latency that `roofline sweep` needs for its model: an empty kernel and a
one-element kernel timed like every kernel (graph replay) on the GPU, or the NumPy backend's empty-call floor.

It exists because `roofline sweep` uses these and nothing else of the calibration, so they stand apart from
calibrate() and its figures. CuPy is reached only through the backend object passed in.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from roofline.measure.calibrate.plan import load_module, median
from roofline.measure.policy import MeasurePolicy


def launch_overheads(backend: Any, policy: MeasurePolicy, sets: int = 4096) -> dict[str, Any]:
    """Seconds per launch, timed like every kernel (graph replay): an empty kernel (the launch floor) and a
    one-element kernel that loads one float from a line not in L2 and stores one (launch + one round trip).
    Both are checked: the noop must not have written its flag, every one_element set must hold src + 1."""
    cp, info = backend.cp, backend.info
    module = load_module(backend)
    try:
        flag = cp.zeros(32, dtype=cp.int32)
        noop = module.get_function("noop")

        def run_noop() -> None:
            noop((1,), (32,), (flag, np.int32(0)))

        floor = backend.time_runs(run_noop, [{}], policy)
        if int(cp.count_nonzero(flag).get()) != 0:
            raise RuntimeError("the empty kernel wrote to its flag")

        l2 = int(info.get("l2_size") or (64 << 20))
        stride = max(64 << 10, -(-4 * l2 // sets) // 4096 * 4096 + 4096)  # bytes between sets: ≥ 4 × L2 in all
        stride_el = stride // 4
        src = cp.arange(sets * stride_el, dtype=cp.float32) % 1024
        dst = cp.full(sets * stride_el, np.nan, dtype=cp.float32)
        one = module.get_function("one_element")
        buffers = [{"src": src[i * stride_el:], "dst": dst[i * stride_el:]} for i in range(sets)]

        def run_one(src: Any, dst: Any) -> None:
            one((1,), (32,), (src, dst))

        single = backend.time_runs(run_one, buffers, policy)
        backend.synchronize()
        got = dst[::stride_el][:sets]
        want = src[::stride_el][:sets] + 1
        if not bool(cp.all(got == want).get()):
            raise RuntimeError("the one-element kernel did not write src + 1 in every set")
    finally:
        backend.release()
    t_floor, t_one = median(floor.samples), median(single.samples)
    return {
        "launch_floor": t_floor,
        "one_element": t_one,
        "kernel_latency": max(0.0, t_one - t_floor),
        "launch_floor_timing": floor.mode,
        "one_element_timing": single.mode,
        "one_element_sets": sets,
        "one_element_footprint": sets * stride,
    }


def host_call_floor(backend: Any, policy: MeasurePolicy) -> float:
    """The NumPy backend's floor: the wall time of calling an empty run function through its timing loop."""
    def run() -> None:
        return None

    return median(backend.time_runs(run, [{}], policy).samples)
