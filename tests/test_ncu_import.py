"""`roofline import ncu`: any program's capture -> results, one entry per launch under the roof of its work; the
real H200 capture of GEMMs of known FLOPs (tests/data/ncu/h200_tensor_*, benchmarks/h200_ncu_tensor.sh); and the
hierarchical roofline drawn from counters."""

from __future__ import annotations

import json

import pytest

from roofline.errors import InputError
from roofline.ncu.importer import import_csv, short_name
from roofline.ncu.metrics import flop_metric, tensor_metric
from roofline.ncu.profile import attach, make_plan, split_by_markers
from roofline.ncu.table import parse_csv
from conftest import NCU, NCU_PYTORCH, NCU_UNITS, NCU_FULL, NCU_PROFILED, NCU_NOPERM

TENSOR = NCU / "h200_tensor_capture.csv"
CASES = json.loads((NCU / "h200_tensor_cases.json").read_text())["cases"]


@pytest.fixture(scope="module")
def tensor_doc() -> dict:
    """The real capture imported, with each entry keyed by the case of benchmarks/h200_ncu_tensor.py it belongs to."""
    doc, _ = import_csv(TENSOR)
    groups = split_by_markers(parse_csv(TENSOR.read_text()).launches, len(CASES))
    by_launch = {int(k["params"]["launch"]): k for k in doc["kernels"]}
    doc["cases"] = {case["name"]: [by_launch[int(launch.id)] for launch in group]
                    for case, group in zip(CASES, groups)}
    return doc


def test_import_pytorch_capture():
    doc, notes = import_csv(NCU_PYTORCH)
    assert doc["backend"] == "ncu" and doc["machine"]["id"] == "h200-sxm"  # matched by the CSV's device name
    assert doc["device"]["name"] == "NVIDIA H200"
    kernels = doc["kernels"]
    assert [k["params"]["launch"] for k in kernels] == [0, 1, 2, 3, 5, 6]  # launch 4 has no DRAM read bytes
    assert len(notes) == 1 and "launch 4" in notes[0] and "dram__bytes_read.sum" in notes[0]
    assert doc["source"]["skipped"][0]["id"] == "4"
    add = kernels[0]
    assert add["name"] == "at::native::vectorized_elementwise_kernel"
    assert add["kernel_name"].startswith("void at::native::vectorized_elementwise_kernel<4")
    assert add["status"] == "IMPORTED" and add["verified"] is None
    assert add["bytes"] == 134_250_112 + 58_720_384
    assert add["flops"] == 16_777_216
    assert add["time_median"] == pytest.approx(57_312e-9)
    assert add["achieved_bandwidth"] == pytest.approx(add["bytes"] / add["time_median"])
    assert add["intensity"] == pytest.approx(add["flops"] / add["bytes"])
    assert add["sol_time"] == pytest.approx(add["bytes"] / 4.8e12)
    assert add["fraction_of_ceiling"] == pytest.approx(add["sol_time"] / add["time_median"])
    assert add["roof"] == "fp32" and add["bound"] == "memory" and add["roof_counters"][0].startswith("sm__sass")
    sgemm = kernels[2]
    assert sgemm["flops"] == 1_048_576 + 2 * 1_073_741_824 and sgemm["bound"] == "compute"
    double = kernels[-1]
    assert double["roof"] == "fp64" and double["dtype"] == "float64"
    tensor = kernels[4]  # an FP16 GEMM captured without the tensor-path metrics
    assert any(w["code"] == "flops-unknown" and "tensor-pipe instructions but no sm__ops_path_tensor_*" in w["text"]
               for w in tensor["warnings"])


def test_real_bf16_gemm_is_counted_and_placed(tensor_doc):
    """A cuBLAS BF16 4096³ GEMM from a PyTorch capture read 0 FLOPs before tensor counters were read; now 2·4096³ within 1 %, under bf16_tensor."""
    (gemm,) = tensor_doc["cases"]["bf16_gemm_4096"]
    assert gemm["name"].startswith("nvjet_sm90")
    assert gemm["flops"] == pytest.approx(2 * 4096**3, rel=0.01)
    assert gemm["roof"] == "bf16_tensor" and gemm["dtype"] == "bfloat16"
    assert gemm["roof_counters"] == [tensor_metric("bf16", "fp32")]
    assert gemm["peak_flops"] == 989.4e12 and gemm["bound"] == "compute"
    assert gemm["compute_time"] == pytest.approx(2 * 4096**3 / 989.4e12, rel=0.01)
    assert 0.5 < gemm["fraction_of_ceiling"] <= 1.0  # cuBLAS at 4096³ under ncu's replay
    assert not gemm["warnings"]


@pytest.mark.parametrize("case, roof, metric", [
    ("fp16_gemm_4096", "fp16_tensor", tensor_metric("fp16")),
    ("bf16_gemm_2048", "bf16_tensor", tensor_metric("bf16", "fp32")),
    ("fp16_gemm_2048", "fp16_tensor", tensor_metric("fp16")),
    ("tf32_gemm_2048", "tf32_tensor", tensor_metric("tf32", "fp32")),
    ("fp64_gemm_1024", "fp64_tensor", tensor_metric("fp64")),
    ("fp8_gemm_2048", "fp8_tensor", tensor_metric("fp8")),
    ("int8_gemm_2048", "int8_tensor", tensor_metric("int8")),
])
def test_real_gemms_of_every_precision(tensor_doc, case, roof, metric):
    expected = next(c["flops"] for c in CASES if c["name"] == case)
    (gemm,) = tensor_doc["cases"][case]
    assert gemm["flops"] == pytest.approx(expected, rel=0.005)
    assert gemm["counters"]["work"][roof] == pytest.approx(expected, rel=1e-4)
    assert gemm["roof"] == roof and gemm["roof_counters"] == [metric]


def test_real_fp8_gemm_is_mixed_work_placed_by_the_sum_of_times(tensor_doc):
    """cuBLAS's FP8 GEMM also does 6.7e7 FP32 FLOPs (scaling): two parts, each at its roof, times added."""
    (gemm,) = tensor_doc["cases"]["fp8_gemm_2048"]
    parts = {p["roof"]: p for p in gemm["work"]}
    assert set(parts) == {"fp8_tensor", "fp32"}
    t8 = parts["fp8_tensor"]["flops"] / 1978.9e12
    t32 = parts["fp32"]["flops"] / 66.9e12
    assert gemm["compute_time"] == pytest.approx(t8 + t32)
    assert gemm["peak_flops"] == pytest.approx(gemm["flops"] / (t8 + t32))
    assert gemm["peak_flops"] < 1978.9e12
    assert gemm["work"][0]["roof"] == "fp8_tensor"  # the part that needs the most time comes first


def test_real_fp32_elementwise_sits_under_fp32(tensor_doc):
    (mul,) = tensor_doc["cases"]["fp32_mul_2^24"]
    assert mul["flops"] == 2**24 and mul["roof"] == "fp32" and mul["bound"] == "memory"
    assert set(mul["roof_counters"]) == {flop_metric("fp32", op) for op in ("add", "mul", "fma")}
    (addcmul,) = tensor_doc["cases"]["fp32_addcmul_2^24"]
    assert addcmul["flops"] == 2 * 2**24 and addcmul["roof"] == "fp32"


def test_real_fp16_and_bf16_cuda_core_loops(tensor_doc):
    """CUDA-core FP16 and BF16 count alike as h instructions; a packed HFMA2 counts once although it does two
    FMAs, so packed code reads half its FLOPs (documented in docs/ncu.md) and scalar HFMA reads them all. The BF16
    loop's name says bf16, so it sits under the bf16 roof; the FP16 loops' names ('hfma') say neither, so they stay
    under fp16, labelled as not distinguishable (issue 21 §5)."""
    flops = {c["name"]: c["flops"] for c in CASES}
    for case, share, roof, dtype in (("hfma2_loop", 0.5, "fp16", "float16/bfloat16"),
                                     ("bf16fma2_loop", 0.5, "bf16", "bfloat16"),
                                     ("hfma_loop", 1.0, "fp16", "float16/bfloat16")):
        (loop,) = tensor_doc["cases"][case]
        assert (loop["roof"], loop["dtype"]) == (roof, dtype), case
        assert loop["flops"] == pytest.approx(share * flops[case], rel=0.01)
        assert loop["half_precision"]["dtype"] == dtype
        ambiguous = [w for w in loop["warnings"] if w["code"] == "precision-ambiguous"]
        assert bool(ambiguous) == (dtype == "float16/bfloat16")
    (bf16,) = tensor_doc["cases"]["bf16fma2_loop"]
    assert bf16["half_precision"]["from"] == "the kernel name says 'bf16'"
    assert bf16["roof_counters"][0].startswith("sm__sass_thread_inst_executed_op_h")  # the counters still decided


def test_import_lists_absent_flop_counters():
    doc, _ = import_csv(NCU_UNITS, "h200")
    triad = doc["kernels"][0]
    assert triad["flops"] == 0.0
    assert flop_metric("fp32", "fma") in triad["counters"]["missing"]
    assert any(w["code"] == "flops-unknown" and "no FLOP counters" in w["text"] for w in triad["warnings"])
    assert doc["device"]["spec_id"] == "h200-sxm"


def test_import_needs_a_spec_when_the_csv_names_no_gpu():
    with pytest.raises(InputError, match="--spec"):
        import_csv(NCU_UNITS)


def test_import_full_set():
    doc, _ = import_csv(NCU_FULL)
    assert [k["name"] for k in doc["kernels"]] == ["add_f32", "reduce_sum_f32"]
    assert doc["kernels"][0]["counters"]["flops_source"] == "rates"
    assert doc["machine"]["caches"]["l2"]["size"] == 60 * 2**20


def test_import_without_counters_says_why():
    with pytest.raises(InputError, match="ERR_NVGPUCTRPERM"):
        import_csv(NCU_NOPERM)


def test_import_profiled_capture_skips_markers_with_no_traffic():
    doc, notes = import_csv(NCU_PROFILED, "h200")
    assert "roofline_ncu_marker" not in {k["name"] for k in doc["kernels"]}
    (note,) = [n for n in notes if "no DRAM traffic" in n]  # one line for the six, naming the first five
    assert note.startswith("note: 6 launch rows not imported") and note.endswith("and 1 more")


def test_short_names():
    assert short_name("void foo<int, 4>(float*, int)") == "foo"
    assert short_name("ampere_sgemm_128x64_nn") == "ampere_sgemm_128x64_nn"
    assert short_name("void a::(anonymous namespace)::k<1>(int)") == "a::k"
    assert len(short_name("x" * 200)) == 80


def test_cli_import_writes_results(run_cli, tmp_path):
    out = tmp_path / "model.json"
    code, stdout, stderr = run_cli("import", "ncu", str(TENSOR), "-o", str(out), "--group-by", "none")
    assert code == 0, stderr
    assert "imported 42 of 42 launches on h200-sxm" in stderr
    assert "bf16_tensor" in stdout and "fp8_tensor +" in stdout  # + marks mixed work
    doc = json.loads(out.read_text())
    assert doc["schema"] == "roofline/results/v1" and len(doc["kernels"]) == 42


def test_import_groups_by_op_by_default_as_profile_does(run_cli, tmp_path):
    """Issue 22: one --group-by default (op) in 'import ncu' and 'profile'; --group-by none keeps launch by launch."""
    from roofline.cli.importer import ncu_command
    from roofline.cli.profile import profile

    defaults = {cmd.name: next(p.default for p in cmd.params if p.name == "group_by") for cmd in (ncu_command, profile)}
    assert defaults == {"ncu": "op", "profile": "op"}
    out = tmp_path / "grouped.json"
    code, stdout, err = run_cli("import", "ncu", str(TENSOR), "-o", str(out))
    assert code == 0, err
    doc = json.loads(out.read_text())
    assert doc["groups"] and {g["by"] for g in doc["groups"]} == {"op"} and len(doc["kernels"]) == 42
    assert "grouped by op" in stdout
    code, launches, err = run_cli("import", "ncu", str(TENSOR), "--group-by", "none", "--format", "json")
    assert code == 0 and "groups" not in json.loads(launches) and "grouped" not in err


def test_import_without_nvtx_groups_by_kernel_name_and_says_so(run_cli):
    code, out, err = run_cli("import", "ncu", str(NCU_UNITS), "--spec", "h200", "--format", "json")
    assert code == 0, err
    doc = json.loads(out)
    assert not any(k.get("nvtx") for k in doc["kernels"])
    assert doc["groups"] and "the capture has no NVTX ranges" in err and "grouped by kernel name instead" in err


def test_cli_import_errors(run_cli):
    code, _, err = run_cli("import", "ncu", str(NCU_UNITS))
    assert code == 2 and "--spec" in err
    code, out, _ = run_cli("import", "ncu", str(NCU_UNITS), "--spec", "h200", "--format", "json")
    assert code == 0 and json.loads(out)["backend"] == "ncu"


def test_cli_lists_the_metrics_for_ncu(run_cli):
    from roofline.ncu.metrics import DEVICE_NAME, IMPORT_METRICS, TIME

    code, out, _ = run_cli("import", "ncu", "--list-metrics")
    assert code == 0
    metrics = out.strip().split(",")
    assert metrics == list(IMPORT_METRICS) and " " not in out.strip()
    assert DEVICE_NAME in metrics and TIME in metrics and tensor_metric("bf16", "fp32") in metrics


def test_imported_results_go_through_report_and_plot(run_cli, tmp_path):
    results = tmp_path / "model.json"
    assert run_cli("import", "ncu", str(TENSOR), "-o", str(results), "--group-by", "none")[0] == 0
    code, out, err = run_cli("report", str(results), "--format", "markdown")
    assert code == 0, out + err
    assert "IMPORTED" in out and "nvjet_sm90" in out
    small = tmp_path / "small.json"  # the chart of 6 launches: plotting all 42 takes seconds
    assert run_cli("import", "ncu", str(NCU_PYTORCH), "-o", str(small))[0] == 0
    png = tmp_path / "model.png"
    code, _, err = run_cli("plot", "--results", str(small), "-o", str(png))
    assert code == 0, err
    assert png.read_bytes()[:4] == b"\x89PNG"


# ---- hierarchical roofline -------------------------------------------------------------------------------------


def _profiled_doc() -> dict:
    from roofline.model.analysis import analyze
    from roofline.model.expr import compile_expr
    from roofline.load.kernels import KernelCatalog
    from roofline.load.specs import SpecCatalog
    from roofline.model.workload import evaluate

    machine = SpecCatalog.bundled().resolve("h200")
    kernels = [("vector_add_float4", {"n": 2**24}), ("sum", {"n": 2**24}), ("stencil5_naive", {"n": 2048})]
    descriptors = KernelCatalog.load().select([n for n, _ in kernels])
    entries = [{**analyze(machine, evaluate(d, {k: compile_expr(v) for k, v in p.items()})).to_dict(),
                "status": "OK", "verified": True, "warnings": [], "time_median": 6e-5}
               for d, (_, p) in zip(descriptors, kernels)]
    merged, _ = attach(entries, make_plan(entries, descriptors), parse_csv(NCU_PROFILED.read_text()))
    return {"schema": "roofline/results/v1", "created": "2026-11-30T00:00:00+00:00", "tool_version": "0",
            "backend": "cupy", "device": {"name": "NVIDIA H200", "spec_id": "h200-sxm"},
            "machine": {"id": "h200-sxm", "name": "H200", "bandwidth": 4.8e12, "latency": 3.3e-7,
                        "bytes_in_flight": 1.6e6, "roofs": {"fp32": 6.69e13}},
            "kernels": merged}


def _gids(fig) -> list[str]:
    return [a.get_gid() for ax in fig.axes for a in ax.get_children() if a.get_gid()] + \
           [t.get_gid() for t in fig.texts if t.get_gid()]


def test_hierarchy_three_linked_points_per_kernel():
    from roofline.render.charts.hierarchy import hierarchy_figure, hierarchy_points
    from roofline.render.charts.plot import figure_bytes

    doc = _profiled_doc()
    points, skipped = hierarchy_points([doc])
    assert skipped == [] and len(points) == 9
    by_level = {p.level: p for p in points if p.name == "vector_add_float4"}
    assert by_level["dram"].x == pytest.approx(16_777_216 / (134_247_424 + 62_914_560))
    assert by_level["l2"].x == pytest.approx(16_777_216 / 268_435_456)
    assert len({p.y for p in by_level.values()}) == 1  # one performance, three intensities
    gids = _gids(hierarchy_figure([doc], {"l1": 30e12, "l2": 10e12}))
    assert sum(g.startswith("roofline:hier-point:") for g in gids) == 9
    assert sum(g.startswith("roofline:hier-link:") for g in gids) == 3
    assert {g for g in gids if g.startswith("roofline:hier-roof:")} == {
        "roofline:hier-roof:l1", "roofline:hier-roof:l2", "roofline:hier-roof:dram"}
    assert figure_bytes(hierarchy_figure([doc], {"l1": 30e12, "l2": 10e12}), "png", 60)[:4] == b"\x89PNG"


def test_hierarchy_without_cache_bandwidths_says_so():
    from roofline.render.charts.hierarchy import hierarchy_figure

    gids = _gids(fig := hierarchy_figure([_profiled_doc()]))  # the bundled H200 spec gives no cache bandwidths
    assert "roofline:hier-roof:dram" in gids and "roofline:hier-roof:l2" not in gids
    table = next(t for t in fig.texts if t.get_gid() == "roofline:hier-table").get_text()
    assert "No roof drawn for L1 and L2" in table


def test_hierarchy_needs_counters():
    from roofline.render.charts.hierarchy import hierarchy_figure

    doc = _profiled_doc()
    for k in doc["kernels"]:
        del k["counters"]
    with pytest.raises(InputError, match="counters"):
        hierarchy_figure([doc])


def test_hierarchy_of_real_tensor_capture_uses_tensor_flops(tensor_doc):
    from roofline.render.charts.hierarchy import hierarchy_points

    points, _ = hierarchy_points([tensor_doc])
    gemm = tensor_doc["cases"]["bf16_gemm_4096"][0]
    mine = [p for p in points if p.name == gemm["name"] and p.level == "dram"]
    assert any(p.x == pytest.approx(gemm["flops"] / gemm["bytes"]) for p in mine)
    assert {p.level for p in points} == {"l1", "l2", "dram"}
