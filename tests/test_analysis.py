"""The roofline model against hand-computed cases (toy spec with round numbers, and the bundled T4) and properties."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from conftest import KERNELS
from roofline.model.analysis import (
    ANALYSIS_SCHEMA,
    analysis_document,
    analyze,
    attainable,
    intensity,
    ridge_point,
    sol_time,
)
from roofline.errors import InputError
from roofline.load.kernels import load_descriptor, parse_overrides
from roofline.model.types import MachineSpec, Stage, Workload
from roofline.load.selection import analyze_selection
from roofline.model.workload import evaluate


def work(flops: float, bytes_: float, roof: str = "fp32", access: float = 4.0, stages=()) -> Workload:
    return Workload(name="w", pattern="map", dtype="float32", roof=roof, params={}, flops=flops, bytes=bytes_,
                    access_bytes=access, stages=tuple(stages))


def vadd(n: int) -> Workload:
    d = load_descriptor(KERNELS / "t_vadd.yaml")
    return evaluate(d, parse_overrides([f"n={n}"], [d]))


# ---- the pure functions ----------------------------------------------------------------------------


def test_pure_functions_by_hand() -> None:
    assert ridge_point(10e12, 1e12) == pytest.approx(10)
    assert intensity(1, 12) == pytest.approx(1 / 12)
    assert attainable(1.0, 10e12, 1e12) == pytest.approx(1e12)  # memory side: AI x BW
    assert attainable(100.0, 10e12, 1e12) == pytest.approx(10e12)  # compute side: the peak
    assert sol_time(10e12, 1e12, 10e12, 1e12) == pytest.approx(1.0)
    assert sol_time(1e12, 4e12, 10e12, 1e12) == pytest.approx(4.0)
    assert sol_time(40e12, 1e12, 10e12, 1e12) == pytest.approx(4.0)


# ---- toy spec: 1 TB/s, 10 TFLOP/s, 1 us -------------------------------------------------------------


def test_toy_ridge_and_littles_law(toy_spec: MachineSpec) -> None:
    a = analyze(toy_spec, work(1e9, 1e9))
    assert a.ridge == pytest.approx(10)
    assert a.peak_flops == 10e12 and a.bandwidth == 1e12
    assert toy_spec.bytes_in_flight == pytest.approx(1e6)  # 1 TB/s x 1 us = 1 MB
    assert a.threads_needed == pytest.approx(250_000)  # 1 MB / 4 B


@pytest.mark.parametrize(
    ("flops", "bytes_", "bound", "attainable_flops", "memory_time", "compute_time"),
    [
        (1e9, 1e9, "memory", 1e12, 1e-3, 1e-4),  # AI 1 < 10
        (9.99e9, 1e9, "memory", 9.99e12, 1e-3, 9.99e-4),  # just below the ridge
        (10e9, 1e9, "compute", 10e12, 1e-3, 1e-3),  # at the ridge: both times equal
        (100e9, 1e9, "compute", 10e12, 1e-3, 1e-2),  # AI 100 > 10
        (0, 1e9, "memory", 0.0, 1e-3, 0.0),  # no arithmetic at all
    ],
)
def test_toy_bound_attainable_and_times(toy_spec, flops, bytes_, bound, attainable_flops, memory_time, compute_time):
    a = analyze(toy_spec, work(flops, bytes_))
    assert a.intensity == pytest.approx(flops / bytes_)
    assert a.bound == bound
    assert a.attainable_flops == pytest.approx(attainable_flops)
    assert a.memory_time == pytest.approx(memory_time)
    assert a.compute_time == pytest.approx(compute_time)
    assert a.sol_time == pytest.approx(max(memory_time, compute_time))
    assert a.launches == 1 and a.stages == []


def test_toy_uses_the_kernels_roof(toy_spec) -> None:
    a = analyze(toy_spec, work(1000e9, 1e9, roof="fp16_tensor"))
    assert a.peak_flops == 100e12
    assert a.ridge == pytest.approx(100)
    assert a.bound == "compute"
    assert a.sol_time == pytest.approx(1e-2)


def test_missing_roof_is_an_input_error(toy_spec) -> None:
    with pytest.raises(InputError, match="needs the fp64 roof, which toy does not have"):
        analyze(toy_spec, work(1, 1, roof="fp64"))


def test_latency_bound_tiny_versus_big(toy_spec) -> None:
    tiny = analyze(toy_spec, vadd(1000))  # 12 kB < 1 MB in flight
    big = analyze(toy_spec, vadd(2**28))  # 3 GiB
    assert tiny.bytes == 12_000 and tiny.latency_bound is True
    assert big.latency_bound is False


def test_stages_totals_launches_and_per_stage_times(toy_spec) -> None:
    a = analyze(toy_spec, evaluate(load_descriptor(KERNELS / "t_pipeline.yaml")))
    assert a.launches == 3
    assert [s.name for s in a.stages] == ["scale", "bias", "heavy"]
    assert a.flops == pytest.approx(102e6)
    assert a.bytes == pytest.approx(24.004e6)
    assert a.flops == pytest.approx(sum(s.flops for s in a.stages))
    assert a.bytes == pytest.approx(sum(s.bytes for s in a.stages))
    # per stage: max(flops / 10 TFLOP/s, bytes / 1 TB/s)
    assert [s.sol_time for s in a.stages] == pytest.approx([8e-6, 8.004e-6, 10e-6])
    assert a.sol_time == pytest.approx(max(24.004e6 / 1e12, 102e6 / 10e12))


def test_stage_analysis_from_a_workload(toy_spec) -> None:
    stages = [Stage("a", 1e6, 1e6), Stage("b", 1e9, 1e6)]
    a = analyze(toy_spec, work(1e6 + 1e9, 2e6, stages=stages))
    assert a.launches == 2
    assert [s.sol_time for s in a.stages] == pytest.approx([1e-6, 1e-4])


# ---- T4 (bundled): 320 GB/s, 8.1 TFLOP/s FP32, 400 ns ---------------------------------------------------


def test_t4_fp32_ridge(t4) -> None:
    a = analyze(t4, vadd(2**20))
    assert a.ridge == pytest.approx(8.1e12 / 320e9)
    assert a.ridge == pytest.approx(25.3, abs=0.05)


def test_t4_vector_add(t4) -> None:
    n = 2**24
    a = analyze(t4, vadd(n))
    assert a.flops == n and a.bytes == 3 * n * 4
    assert a.intensity == pytest.approx(1 / 12)
    assert a.bound == "memory"
    assert a.attainable_flops == pytest.approx(320e9 / 12)
    assert a.memory_time == pytest.approx(12 * n / 320e9)
    assert a.sol_time == pytest.approx(a.memory_time)


def test_t4_littles_law(t4) -> None:
    assert t4.bytes_in_flight == pytest.approx(128_000)  # 320 GB/s x 400 ns = 128 kB
    a = analyze(t4, vadd(2**20))
    assert a.access_bytes == 4
    assert a.threads_needed == pytest.approx(32_000)
    assert t4.resident_threads == 40_960  # enough threads exist on a T4 to keep 128 kB in flight


def test_t4_latency_bound(t4) -> None:
    assert analyze(t4, vadd(1000)).latency_bound is True  # 12 kB < 128 kB
    assert analyze(t4, vadd(2**24)).latency_bound is False


def test_t4_compute_bound_kernel(t4) -> None:
    a = analyze(t4, evaluate(load_descriptor(KERNELS / "t_fma.yaml")))
    assert a.intensity == pytest.approx(250)
    assert a.bound == "compute"
    assert a.attainable_flops == pytest.approx(8.1e12)
    assert a.threads_needed == pytest.approx(128_000 / 16)  # access_bytes 16


def test_analyze_selection_skips_kernels_without_their_roof(toy_spec) -> None:
    selected = [load_descriptor(KERNELS / f"{n}.yaml") for n in ("t_vadd", "t_dgemv")]
    results, skipped = analyze_selection(toy_spec, selected, {})
    assert [r.name for r in results] == ["t_vadd"]
    assert skipped == [("t_dgemv", "the fp64 roof")]


def test_analysis_document_shape(toy_spec) -> None:
    doc = analysis_document(toy_spec, [analyze(toy_spec, vadd(1000))])
    assert doc["schema"] == ANALYSIS_SCHEMA == "roofline/analysis/v1"
    assert doc["machine"]["bytes_in_flight"] == pytest.approx(1e6)
    assert doc["machine"]["resident_threads"] == 10_000
    assert doc["kernels"][0]["params"] == {"n": 1000}


# ---- properties ---------------------------------------------------------------------------------------

positive = st.floats(min_value=1e-3, max_value=1e18, allow_nan=False, allow_infinity=False)


@given(flops=st.floats(min_value=0, max_value=1e18), bytes_=positive, peak=positive, bw=positive)
def test_roofline_properties(flops: float, bytes_: float, peak: float, bw: float) -> None:
    machine = MachineSpec(id="m", name="m", bandwidth=bw, latency=1e-6, roofs={"fp32": peak})
    a = analyze(machine, work(flops, bytes_))
    assert a.attainable_flops <= a.peak_flops
    assert a.attainable_flops <= a.intensity * a.bandwidth
    assert a.attainable_flops == pytest.approx(min(peak, flops / bytes_ * bw))
    assert a.sol_time >= a.memory_time
    assert a.sol_time >= a.compute_time
    assert a.bound == ("memory" if a.intensity < a.ridge else "compute")
    assert a.latency_bound == (bytes_ < machine.bytes_in_flight)
