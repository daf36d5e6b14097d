"""A verified kernel whose figures no GPU of its kind can reach is FAILED with the reason (issue 21 §1)."""

from __future__ import annotations

from roofline.measurement.bounds import bound_entry
from roofline.load.specs import SpecCatalog

H200 = SpecCatalog.bundled().resolve("h200-sxm")
GPU = {"kind": "gpu", "sm_count": 132, "name": "NVIDIA H200"}


def entry(**kw):
    base = {"name": "k", "params": {"n": 1}, "dtype": "float32", "roof": "fp32", "flops": 1e9, "bytes": 4e9,
            "intensity": 0.25, "status": "OK",
            "verified": True, "error": None, "time_median": 1e-3, "time_min": 1e-3, "time_max": 1e-3, "repeats": 10,
            "achieved_bandwidth": 4.0e12, "achieved_flops": 1e12, "fraction_of_ceiling": 0.83, "warnings": [],
            "gpu_state": {"sm_clock_end": 1.98e9}}
    return {**base, **kw}


def test_a_possible_result_is_unchanged():
    e = entry()
    assert bound_entry(e, H200, GPU) is e


def test_bandwidth_above_the_datasheet_is_failed_with_the_figures_kept():
    # matmul_naive's old byte model: 5.1 × the ceiling of the H200, "verified"
    out = bound_entry(entry(achieved_bandwidth=24.5e12, fraction_of_ceiling=5.1), H200, GPU)
    assert out["status"] == "FAILED" and out["verified"] is False
    assert "physically impossible" in out["error"] and "datasheet" in out["error"]
    assert out["time_median"] is None and out["impossible"]["achieved_bandwidth"] == 24.5e12


def test_flops_above_the_sms_at_the_observed_clock_are_failed():
    # 132 SMs × 256 FLOP/clk × 1.5 GHz × 1.02 = 51.7 TFLOP/s: 60 at a clock held to 1.5 GHz is impossible
    out = bound_entry(entry(achieved_flops=60e12, gpu_state={"sm_clock_end": 1.5e9}), H200, GPU)
    assert out["status"] == "FAILED" and "fp32" in out["error"]
    assert bound_entry(entry(achieved_flops=60e12), H200, GPU)["status"] == "OK"  # at 1.98 GHz it is possible


def test_the_host_backend_and_failed_results_are_not_judged():
    host = {"kind": "cpu", "name": "host"}
    assert bound_entry(entry(achieved_bandwidth=50e12), H200, host)["status"] == "OK"
    failed = entry(status="FAILED", achieved_bandwidth=None)
    assert bound_entry(failed, H200, GPU) is failed
    assert bound_entry(entry(achieved_bandwidth=50e12), None, GPU)["status"] == "OK"  # no spec: nothing to hold to
