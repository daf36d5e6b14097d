"""`roofline measure --profile ncu`: the ncu command line, matching launches to kernels by markers, merging counters
into measured entries (a stand-in ncu plays the real one), the target program, and the real H200 capture of the
bundled cuBLAS FP16 kernel (tests/data/ncu/h200_tensor_profiled.csv, benchmarks/h200_ncu_tensor.sh)."""

from __future__ import annotations

import json
import stat
import sys
from pathlib import Path

import pytest

from roofline.ncu.metrics import CORE_METRICS, L1_BYTES, L2_BYTES, TENSOR_METRICS, flop_metric, tensor_metric
from roofline.ncu.profile import (add_profile, attach, finish, find_ncu, make_plan, merge_counters, ncu_command,
                                  split_by_markers, target_command)
from roofline.ncu.table import parse_csv
from roofline.ncu.target import MARKER, main
from conftest import NCU, NCU_PROFILED, NCU_NOPERM

REAL_FP16 = NCU / "h200_tensor_profiled.csv"  # matmul_library_fp16, n = 2048, one launch between the markers
KERNELS = [("vector_add_float4", {"n": 2**24}), ("sum", {"n": 2**24}), ("stencil5_naive", {"n": 2048})]


def _entries(names_params: list[tuple[str, dict]]):
    from roofline.model.analysis import analyze
    from roofline.model.expr import compile_expr
    from roofline.load.kernels import KernelCatalog
    from roofline.load.specs import SpecCatalog
    from roofline.model.workload import evaluate

    machine = SpecCatalog.bundled().resolve("h200")
    descriptors = KernelCatalog.load().select([n for n, _ in names_params])
    entries = []
    for d, (_, params) in zip(descriptors, names_params):
        work = evaluate(d, {k: compile_expr(v) for k, v in params.items()})
        entries.append({**analyze(machine, work).to_dict(), "status": "OK", "verified": True, "warnings": [],
                        "time_median": 6e-5})
    return entries, descriptors


def test_command_line():
    cmd = ncu_command("/opt/ncu", target_command(Path("p.json"), Path("d.json"), 1))
    joined = " ".join(cmd)
    assert cmd[0] == "/opt/ncu"
    for part in ("--clock-control none", "--csv", "--page raw", "--print-units base", "--profile-from-start off",
                 "-m roofline.ncu.target p.json d.json 1"):
        assert part in joined
    metrics = cmd[cmd.index("--metrics") + 1].split(",")
    assert set(CORE_METRICS) <= set(metrics) and L2_BYTES in metrics and L1_BYTES in metrics
    assert all(flop_metric(p, op) in metrics for p in ("fp32", "fp64", "fp16") for op in ("add", "mul", "fma"))
    assert set(TENSOR_METRICS) <= set(metrics) and tensor_metric("fp16") in metrics


def test_markers_split_launches_per_kernel():
    groups = split_by_markers(parse_csv(NCU_PROFILED.read_text()).launches, 3)
    assert [[launch.kernel for launch in g] for g in groups] == [
        ["add_f32"], ["reduce_sum_f32", "reduce_sum_final"], ["stencil5_naive"]]
    assert all(MARKER not in launch.kernel for g in groups for launch in g)


def test_counters_merge_into_entries():
    entries, descriptors = _entries(KERNELS)
    plan = make_plan(entries, descriptors)
    assert [p["name"] for p in plan] == ["vector_add_float4", "sum", "stencil5_naive"]
    merged, notes = attach(entries, plan, parse_csv(NCU_PROFILED.read_text()))
    add, total, stencil = merged
    assert add["counters"]["dram_bytes"] == 134_247_424 + 62_914_560
    assert add["measured_bytes_ratio"] == pytest.approx((134_247_424 + 62_914_560) / (3 * 4 * 2**24))
    assert add["measured_flops_ratio"] == pytest.approx(1.0)
    assert add["counters"]["roof"] == "fp32" and add["counters"]["roof_counters"][0].startswith("sm__sass")
    assert total["counters"]["launches"] == 2 and total["counters"]["kernels"] == ["reduce_sum_f32", "reduce_sum_final"]
    assert total["counters"]["flops"] == 17_047_552 + 1_056
    assert stencil["measured_bytes_ratio"] == pytest.approx(stencil["counters"]["dram_bytes"] / stencil["bytes"])
    assert (stencil["counter_flag"] is None) == (stencil["measured_bytes_ratio"] <= 1.10)
    assert add["status"] == "OK" and add["verified"] is True


def test_excess_traffic_is_flagged_in_the_entry():
    entries, _ = _entries([("vector_add_float4", {"n": 2**22})])  # model: 48 MiB; the launch moved 197 MB
    flagged = merge_counters(entries[0], [parse_csv(NCU_PROFILED.read_text()).launches[1]])
    assert flagged["counter_flag"].startswith("reads 3.9× the model")
    assert flagged["warnings"][-1]["code"] == "traffic-over-model"
    assert flagged["warnings"][-1]["text"] == flagged["counter_flag"]


def test_real_fp16_gemm_counts_its_tensor_flops():
    """The H200 capture: cuBLAS FP16 2048³ reads 2·2048³ FLOPs from sm__ops_path_tensor_src_fp16 (within 1 %),
    and the counters agree with the descriptor's roof, so no warning."""
    entries, descriptors = _entries([("matmul_library_fp16", {"n": 2048})])
    merged, notes = attach(entries, make_plan(entries, descriptors), parse_csv(REAL_FP16.read_text()))
    k = merged[0]
    assert k["counters"]["kernels"][0].startswith("nvjet_sm90_hsh")
    assert k["counters"]["flops"] == pytest.approx(2 * 2048**3, rel=0.01)
    assert k["measured_flops_ratio"] == pytest.approx(1.0, rel=0.01)
    assert k["counters"]["roof"] == "fp16_tensor"
    assert k["counters"]["roof_counters"] == [tensor_metric("fp16")]
    assert k["warnings"] == []


def test_counters_that_disagree_with_the_descriptor_say_so():
    entries, _ = _entries([("matmul_library_fp16", {"n": 2048})])
    entries[0]["roof"] = "bf16_tensor"  # as if the descriptor had claimed BF16
    k = merge_counters(entries[0], parse_csv(REAL_FP16.read_text()).launches[1:2])
    assert any(w["code"] == "roof-from-counters" and "bf16_tensor" in w["text"]
               and "most of its work on fp16_tensor (sm__ops_path_tensor_src_fp16.sum)" in w["text"]
               for w in k["warnings"])


def test_missing_ncu_is_a_plain_note(monkeypatch):
    monkeypatch.setenv("PATH", "")
    monkeypatch.setattr("roofline.ncu.profile._CUDA_NCU", ())
    entries, descriptors = _entries(KERNELS[:1])
    out, notes = add_profile(entries, descriptors, {}, None)
    assert out == entries
    assert len(notes) == 1 and "not on PATH" in notes[0] and "no counters" in notes[0]
    path, why = find_ncu("/nonexistent/ncu")
    assert path is None and "/nonexistent/ncu" in why


def test_counter_permission_is_a_plain_note():
    entries, descriptors = _entries(KERNELS[:1])
    out, notes = finish(entries, make_plan(entries, descriptors), NCU_NOPERM.read_text(), "", 1, None)
    assert out == entries
    assert "ERR_NVGPUCTRPERM" in notes[0] and "no counters" in notes[0]


def _fake_ncu(tmp_path: Path, csv_path: Path, rc: int = 0) -> Path:
    script = tmp_path / "ncu"
    script.write_text(f"#!/bin/sh\ncat '{csv_path}'\nexit {rc}\n")
    script.chmod(script.stat().st_mode | stat.S_IEXEC)
    return script


@pytest.mark.skipif(sys.platform == "win32", reason="a shell script stands in for ncu")
def test_add_profile_end_to_end_with_a_stand_in_ncu(tmp_path):
    entries, descriptors = _entries(KERNELS)
    saved = tmp_path / "saved.csv"
    out, notes = add_profile(entries, descriptors, {}, str(_fake_ncu(tmp_path, NCU_PROFILED)), save_csv=saved)
    assert [e["counters"]["launches"] for e in out] == [1, 2, 1]
    assert notes[-1] == "note: --profile ncu: counters for 3 of 3 kernels"
    assert saved.read_text() == NCU_PROFILED.read_text()
    assert json.loads(json.dumps(out)) == out  # plain JSON, as the results file needs


@pytest.mark.skipif(sys.platform == "win32", reason="a shell script stands in for ncu")
def test_add_profile_when_ncu_fails(tmp_path):
    entries, descriptors = _entries(KERNELS[:1])
    out, notes = add_profile(entries, descriptors, {}, str(_fake_ncu(tmp_path, NCU_NOPERM, rc=1)))
    assert out == entries and "ERR_NVGPUCTRPERM" in notes[0]


def test_failed_kernels_are_not_profiled():
    entries, descriptors = _entries(KERNELS[:2])
    entries[0]["status"] = "FAILED"
    assert [p["name"] for p in make_plan(entries, descriptors)] == ["sum"]


@pytest.mark.parametrize("argv", [[], ["--plan", "p.json"], ["a", "b", "c", "d"], ["p.json", "d.json", "gpu0"]])
def test_target_refuses_a_wrong_command_line(argv, capsys):
    assert main(argv) == 2
    assert "usage: python -m roofline.ncu.target PLAN.json" in capsys.readouterr().err


def test_target_refuses_a_file_that_is_not_a_plan(tmp_path, capsys):
    bad = tmp_path / "plan.json"
    bad.write_text('{"kernel": []}')
    assert main([str(bad)]) == 2
    assert f"{bad}: not a plan" in capsys.readouterr().err
