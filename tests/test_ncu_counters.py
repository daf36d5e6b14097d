"""Counter arithmetic: CUDA-core and tensor-core FLOPs, summing launches, the traffic flag, and the placement of a
launch's work under its roofs (hand-computed cases)."""

from __future__ import annotations

import pytest

from roofline.ncu.counters import compare, counters, sum_counters, traffic_flag
from roofline.ncu.metrics import (DRAM_READ, DRAM_WRITE, L1_BYTES, L2_BYTES, METRICS, TENSOR_INST, TIME,
                                  flop_metric, tensor_metric)
from roofline.ncu.placement import place

H200 = {"fp64": 33.5e12, "fp64_tensor": 67e12, "fp32": 66.9e12, "fp16": 133.8e12, "bf16": 133.8e12,
        "tf32_tensor": 494.7e12, "fp16_tensor": 989.4e12, "bf16_tensor": 989.4e12, "fp8_tensor": 1978.9e12,
        "int8_tensor": 1978.9e12}
BASE = {DRAM_READ: 100.0, DRAM_WRITE: 50.0, TIME: 1e-6}


def _cuda(**values: float) -> dict[str, float]:
    return {flop_metric(p, op): v for key, v in values.items() for p, op in [key.split("_")]}


def test_flops_are_add_plus_mul_plus_twice_fma_per_precision():
    m = {**BASE, L2_BYTES: 300.0, L1_BYTES: 600.0, TENSOR_INST: 0.0,
         **_cuda(fp32_add=10, fp32_mul=20, fp32_fma=30, fp64_add=1, fp64_mul=2, fp64_fma=3, fp16_add=4, fp16_mul=5,
                 fp16_fma=6)}
    c = counters(m)
    assert (c["flops_fp32"], c["flops_fp64"], c["flops_fp16"]) == (90, 9, 21)
    assert c["flops"] == 90 + 9 + 21 and c["flops_tensor"] is None
    assert c["work"] == {"fp32": 90, "fp64": 9, "fp16": 21}
    assert c["dram_bytes"] == 150.0 and (c["l1_bytes"], c["l2_bytes"]) == (600.0, 300.0)
    assert not [m for m in c["missing"] if "sass" in m]
    assert tensor_metric("bf16", "fp32") in c["missing"]  # a tensor counter the CSV lacks is named, not zero


def test_tensor_ops_are_flops_and_keep_their_precision():
    m = {**BASE, **_cuda(fp32_add=0, fp32_mul=1000, fp32_fma=0),
         tensor_metric("bf16", "fp32"): 2 * 4096.0**3, tensor_metric("fp64"): 7.0, tensor_metric("int8"): 0.0}
    c = counters(m)
    assert c["flops_tensor"] == 2 * 4096.0**3 + 7.0
    assert c["flops"] == 2 * 4096.0**3 + 7.0 + 1000
    assert c["work"] == {"fp32": 1000, "bf16_tensor": 2 * 4096.0**3, "fp64_tensor": 7.0, "int8_tensor": 0.0}
    assert c["work_counters"]["bf16_tensor"] == [tensor_metric("bf16", "fp32")]
    assert tensor_metric("tf32", "fp32") in c["missing"]


def test_a_split_tensor_path_is_added_up_and_preferred_to_its_total():
    """Chips that split FP16 tensor work by accumulator report dst_fp16 and dst_fp32; sm_90 reports src_fp16."""
    split = counters({**BASE, tensor_metric("fp16", "fp16"): 3.0, tensor_metric("fp16", "fp32"): 5.0})
    assert split["work"] == {"fp16_tensor": 8.0}
    assert split["work_counters"]["fp16_tensor"] == [tensor_metric("fp16", "fp16"), tensor_metric("fp16", "fp32")]
    total = counters({**BASE, tensor_metric("fp16"): 8.0})
    assert total["work"] == {"fp16_tensor": 8.0} and total["work_counters"]["fp16_tensor"] == [tensor_metric("fp16")]
    both = counters({**BASE, tensor_metric("fp8", "fp32"): 5.0, tensor_metric("fp8"): 5.0})
    assert both["work"] == {"fp8_tensor": 5.0}  # never counted twice


def test_tensor_rates_of_a_full_set_capture_become_counts():
    m = {**BASE, "smsp__cycles_elapsed.avg.per_second": 1.98e9,
         tensor_metric("bf16", "fp32") + ".per_cycle_elapsed": 1000.0}
    c = counters(m)
    assert c["work"]["bf16_tensor"] == pytest.approx(1000.0 * 1.98e9 * 1e-6)
    assert c["flops_source"] == "rates"


def test_every_metric_asked_for_is_read():
    """A metric in the list that counters() never reads would cost ncu passes for nothing."""
    c = counters({})
    assert set(METRICS) - {DRAM_READ, DRAM_WRITE, TIME, L1_BYTES, L2_BYTES} <= set(c["missing"])


def test_absent_counters_are_listed_not_zero():
    c = counters({**BASE, **_cuda(fp32_fma=30)})
    assert c["flops_fp32"] == 60  # from the counter present ...
    assert flop_metric("fp32", "add") in c["missing"]  # ... the absent ones named
    assert c["flops_fp64"] is None and flop_metric("fp64", "fma") in c["missing"]
    assert c["l2_bytes"] is None and L2_BYTES in c["missing"]
    assert c["tensor_inst"] is None and TENSOR_INST in c["missing"]
    none = counters(BASE)
    assert none["flops"] is None and none["flops_source"] is None and none["work"] == {}


def test_summing_launches():
    a = counters({DRAM_READ: 100.0, DRAM_WRITE: 0.0, TIME: 1e-6, **_cuda(fp32_add=10),
                  tensor_metric("fp16"): 400.0})
    b = counters({DRAM_READ: 10.0, DRAM_WRITE: 5.0, TIME: 2e-6, **_cuda(fp32_add=1)})
    s = sum_counters([a, b])
    assert s["dram_bytes"] == 115.0 and s["time"] == pytest.approx(3e-6) and s["flops_fp32"] == 11
    assert s["flops_fp64"] is None and s["launches"] == 2
    assert s["work"] == {"fp32": 11.0, "fp16_tensor": 400.0} and s["flops_tensor"] == 400.0
    assert s["flops"] == 411.0
    assert s["work_counters"]["fp16_tensor"] == [tensor_metric("fp16")]


# ---- placement --------------------------------------------------------------------------------------------------


def test_a_bf16_gemm_sits_under_bf16_tensor():
    p = place({"bf16_tensor": 2 * 4096.0**3, "fp32": 0.0}, {"bf16_tensor": ["x.sum"]}, H200)
    assert (p.roof, p.peak, p.dtype, p.counters) == ("bf16_tensor", 989.4e12, "bfloat16", ["x.sum"])
    assert p.compute_time == pytest.approx(2 * 4096.0**3 / 989.4e12)
    assert [q["work"] for q in p.parts] == ["bf16_tensor"]  # zero work is no part


def test_mixed_work_is_placed_by_the_sum_of_its_times():
    """1e12 FP8 tensor FLOPs (0.505 ms at 1978.9 TFLOP/s) and 1e11 FP32 FLOPs (1.495 ms at 66.9 TFLOP/s):
    FP32 needs more time, so it names the roof; the launch is placed at 1.1e12 / 2.0 ms."""
    p = place({"fp8_tensor": 1e12, "fp32": 1e11}, {"fp8_tensor": ["a"], "fp32": ["b", "c"]}, H200)
    t8, t32 = 1e12 / 1978.9e12, 1e11 / 66.9e12
    assert p.compute_time == pytest.approx(t8 + t32)
    assert p.peak == pytest.approx(1.1e12 / (t8 + t32))
    assert p.roof == "fp32" and p.counters == ["b", "c"]
    assert [(q["roof"], q["time"]) for q in p.parts] == [("fp32", pytest.approx(t32)),
                                                        ("fp8_tensor", pytest.approx(t8))]


def test_roofs_a_spec_lacks():
    t4 = {"fp32": 8.1e12, "fp16_tensor": 65e12}
    p = place({"bf16_tensor": 1e9}, {}, t4)
    assert p.roof == "fp16_tensor" and "no bf16_tensor roof" in p.notes[0]
    q = place({"fp8_tensor": 1e9}, {}, t4)
    assert q.roof == "fp16_tensor" and "fastest roof" in q.notes[0] and "upper bound" in q.notes[0]
    nothing = place({}, {}, t4)
    assert (nothing.roof, nothing.compute_time, nothing.counters) == ("fp32", 0.0, [])


# ---- the flag rule ----------------------------------------------------------------------------------------------


def test_flag_only_above_ten_percent():
    model = 1_000_000.0
    assert traffic_flag({"dram_bytes": 1_100_000.0, "dram_read": 1_100_000.0, "dram_write": 0.0}, model) is None
    flag = traffic_flag({"dram_bytes": 2_100_000.0, "dram_read": 2_000_000.0, "dram_write": 100_000.0}, model)
    assert flag is not None and flag.startswith("reads 2.1× the model") and "uncoalesced" in flag
    assert "\n" not in flag
    writes = traffic_flag({"dram_bytes": 1_500_000.0, "dram_read": 100_000.0, "dram_write": 1_400_000.0}, model)
    assert writes.startswith("writes 1.5× the model")
    assert traffic_flag({"dram_bytes": 1_110_001.0, "dram_read": 1.0, "dram_write": 1.0}, model) is not None


def test_flag_needs_both_figures():
    assert traffic_flag({"dram_bytes": None}, 1.0) is None
    assert traffic_flag({"dram_bytes": 5.0}, None) is None
    assert traffic_flag({"dram_bytes": 5.0}, 0.0) is None


def test_compare_ratios():
    cmp = compare({"dram_bytes": 90.0, "flops": 300.0, "dram_read": 90.0, "dram_write": 0.0}, 200.0, 100.0)
    assert cmp == {"measured_bytes_ratio": 0.9, "measured_flops_ratio": 1.5, "flag": None}


def test_the_counters_block_has_every_field_the_results_schema_checks():
    """The importer writes the block the results format (roofline.records.schema) defines: each field it checks and
    the hierarchical chart reads is there, for one launch and for launches added up."""
    from roofline.records.schema import COUNTER_FIELDS

    one = counters({**BASE, **_cuda(fp32_add=1, fp32_mul=1, fp32_fma=1)})
    assert set(COUNTER_FIELDS) <= set(one)
    assert set(COUNTER_FIELDS) <= set(sum_counters([one, one]))
