"""Grouping and ranking a profile (roofline.ncu.group), the NVTX stacks ncu writes (roofline.ncu.nvtx), the op
models from recorded shapes (roofline.ncu.opmodel), the groups in the results file, and report's gates on them.
The real capture is a GPT-2 small forward on the H200 (tests/data/ncu/h200_gpt2_profile.csv,
benchmarks/h200_profile_models.sh)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from roofline.errors import InputError
from roofline.ncu.group import add_groups, group_entries, parse_group_by, program_totals
from roofline.ncu.importer import import_csv, short_name
from roofline.ncu.nvtx import op_name, parse_stack, shapes
from roofline.ncu.opmodel import op_model
from roofline.records.document import ResultsDocument
from conftest import NCU

GPT2 = NCU / "h200_gpt2_profile.csv"
RESNET50 = NCU / "h200_resnet50_profile.csv"  # torchvision ResNet-50, batch 64, channels-last, BF16 autocast
SMALL = NCU / "h200_nvtx_small.csv"
HEADER = "thread Domain:Push/Pop_Range:PL_Type:PL_Value:CLR_Type:Color:Msg_Type:Msg"


@pytest.fixture(scope="module")
def gpt2() -> dict:
    doc, _ = import_csv(GPT2)
    add_groups(doc, "op")
    return doc


def test_nvtx_stack_as_ncu_writes_it() -> None:
    cell = ('518  "<default domain>:aten::linear, seq = 3, sizes = [[4, 1024, 768], [2304, 768], [2304]]:none:none:'
            'none:none:none:none"  "<default domain>:aten::addmm, op_id = 9, sizes = [[2304], [4096, 768], '
            '[768, 2304]], input_op_ids = [(0,-1)]:none:none:none:none:none:none" ')
    stack = parse_stack(cell, HEADER)
    assert [op_name(s) for s in stack] == ["aten::linear", "aten::addmm"]
    assert shapes(stack[1]) == [[2304], [4096, 768], [768, 2304]]
    assert parse_stack("", HEADER) == [] and shapes("aten::relu") is None
    assert parse_stack('7  "<default domain>:step:2:none:none:none:none:none:none"', HEADER) == ["step:2"]


def test_small_real_capture_carries_the_ops() -> None:
    doc, _ = import_csv(SMALL)
    stacks = {k["params"]["launch"]: [op_name(s) for s in k.get("nvtx", [])] for k in doc["kernels"]}
    assert stacks[1] == ["aten::matmul", "aten::mm"] and stacks[3] == ["aten::add"]


def test_matmul_models_by_hand() -> None:
    """NVTX shapes through the one op physics (roofline.model.ops.aten): 2*M*N*K, every input and the output once."""
    flops, bytes_ = op_model("aten::addmm", [[2304], [4096, 768], [768, 2304]], 2)
    assert flops == 2 * 4096 * 2304 * 768
    assert bytes_ == (2304 + 4096 * 768 + 768 * 2304 + 4096 * 2304) * 2
    assert op_model("aten::mm", [[4096, 768], [768, 50257]], 2)[0] == 2 * 4096 * 50257 * 768
    assert op_model("aten::bmm", [[48, 1024, 64], [48, 64, 1024]], 2)[0] == 2 * 48 * 1024 * 1024 * 64
    assert op_model("aten::linear", [[4, 1024, 768], [3072, 768], [3072]], 2)[0] == 2 * 4096 * 3072 * 768
    assert op_model("aten::matmul", [[8, 1, 128, 64], [4, 64, 32]], 2)[0] == 2 * 32 * 128 * 32 * 64  # broadcast
    assert op_model("aten::mm", [[4, 5], [6, 7]], 2) == (None, None)  # K does not match: no model, not a wrong one


def test_memory_op_models_by_hand() -> None:
    """The same op models as the trace path: FLOPs now too (issue 30: one home for op physics); bytes each input
    and output once at the program's element size; what NVTX cannot tell (a convolution's stride) stays unmodelled."""
    n = 4 * 1024 * 768
    assert op_model("aten::add", [[4, 1024, 768], [4, 1024, 768], []], 2) == (n, 3 * n * 2)
    assert op_model("aten::mul", [[64, 1], [1, 32]], 4) == (64 * 32, (64 + 32 + 64 * 32) * 4)  # broadcast output
    # layer norm: x in, y out, weight and bias, and the float32 mean and rstd of each row
    assert op_model("aten::native_layer_norm", [[4, 1024, 768], [], [768], [768]], 2)[1] == \
        (2 * n + 2 * 768) * 2 + 2 * 4096 * 4
    assert op_model("aten::_softmax", [[48, 1024, 1024], [], []], 2)[1] == 2 * 48 * 1024 * 1024 * 2
    assert op_model("aten::cudnn_convolution", [[64, 3, 224, 224], [64, 3, 7, 7]], 2) == (None, None)
    qkv = [[4, 12, 1024, 64]] * 3
    full = op_model("aten::_scaled_dot_product_cudnn_attention", qkv + [[]] * 4, 2)[0]
    assert full == 4 * 4 * 12 * 1024 * 1024 * 64
    # NVTX has no is_causal value: a kernel name of the call that says so halves the score matrix
    assert op_model("aten::_scaled_dot_product_cudnn_attention", qkv + [[]] * 4, 2, ["cudnn_causal_fprop"])[0] == \
        full / 2


def test_gpt2_groups_add_up_to_the_launches(gpt2: dict) -> None:
    launches, groups = gpt2["kernels"], gpt2["groups"]
    assert len(launches) == 235 and sum(g["launches"] for g in groups) == 235
    for key, gkey in (("time_median", "time"), ("flops", "flops"), ("bytes", "bytes"), ("sol_time", "sol_time")):
        assert math.isclose(sum(k[key] for k in launches), sum(g[gkey] for g in groups), rel_tol=0.005)
    assert math.isclose(sum(g["share"] for g in groups), 1.0, rel_tol=1e-9)
    for g in groups:
        assert math.isclose(g["recoverable_time"], g["time"] - g["sol_time"])
        assert math.isclose(g["fraction_of_ceiling"], g["sol_time"] / g["time"])


def test_gpt2_ranked_by_recoverable_time(gpt2: dict) -> None:
    recoverable = [g["recoverable_time"] for g in gpt2["groups"]]
    assert recoverable == sorted(recoverable, reverse=True)
    names = [g["name"] for g in gpt2["groups"]]
    assert names[0] == "aten::mm"  # the LM head: N = 50257, 9.6 % of the BF16 roof on the H200
    program = gpt2["program"]
    assert math.isclose(program["time"], sum(k["time_median"] for k in gpt2["kernels"]))
    top5 = sum(recoverable[:5]) / sum(recoverable)
    assert math.isclose(program["top_share_of_recoverable"], top5) and program["top"] == 5


def test_gpt2_gemms_sit_on_bf16_tensor_at_2mnk(gpt2: dict) -> None:
    gemms = {g["name"]: g for g in gpt2["groups"] if g["name"] in ("aten::mm", "aten::addmm")}
    assert set(gemms) == {"aten::mm", "aten::addmm"}
    for g in gemms.values():
        assert g["roof"] == "bf16_tensor" and g["model_itemsize"] == 2
        assert abs(g["flops"] / g["model_flops"] - 1) < 0.02, g["name"]
    assert gemms["aten::addmm"]["model_calls"] == 48  # 12 layers x (qkv, attention out, MLP up, MLP down)
    assert gemms["aten::mm"]["model_flops"] == 2 * 4096 * 50257 * 768


def test_resnet50_groups_add_up_and_convolutions_sit_on_bf16_tensor() -> None:
    doc, _ = import_csv(RESNET50)
    add_groups(doc, "op")
    launches, groups = doc["kernels"], {g["name"]: g for g in doc["groups"]}
    assert len(launches) == 230 == sum(g["launches"] for g in groups.values())
    for key, gkey in (("time_median", "time"), ("flops", "flops"), ("bytes", "bytes")):
        assert math.isclose(sum(k[key] for k in launches), sum(g[gkey] for g in groups.values()), rel_tol=0.005)
    conv = groups["aten::cudnn_convolution"]
    assert conv["roof"] == "bf16_tensor" and conv["launches"] == 55
    assert abs(groups["aten::addmm"]["flops"] / groups["aten::addmm"]["model_flops"] - 1) < 0.02  # the classifier
    assert doc["groups"][0]["name"] == "aten::native_batch_norm"  # most recoverable time: 933 µs of 1.39 ms


def _entry(launch: int, stack: list[str], time: float, sol: float, bytes_: float, roof: str = "fp32",
           kernel: str = "void k<int>(float *)") -> dict:
    return {"name": short_name(kernel), "kernel_name": kernel, "params": {"launch": launch}, "nvtx": stack,
            "time_median": time, "sol_time": sol, "flops": 1e6, "bytes": bytes_, "roof": roof, "work": []}


def test_traffic_over_the_model_is_flagged() -> None:
    add = "aten::add, seq = 1, sizes = [[1024, 1024], [1024, 1024]]"
    model = 3 * 1024 * 1024 * 4  # FP32 program (no tensor work): two inputs and the output, 4 B each
    heavy = group_entries([_entry(0, ["block", add], 2e-5, 1e-5, 2.0 * model)], "op")[0]
    light = group_entries([_entry(0, ["block", add], 2e-5, 1e-5, 1.4 * model)], "op")[0]
    assert heavy["model_bytes"] == model and heavy["bytes_ratio"] == 2.0 and "2.0x" in heavy["flag"]
    assert "flag" not in light and math.isclose(light["bytes_ratio"], 1.4)


def test_group_by_kernel_and_range_levels() -> None:
    entries = [_entry(0, ["layer1", "aten::add, seq = 1"], 3e-5, 1e-5, 1e6, kernel="void ns::add<4, float>(T)"),
               _entry(1, ["layer1", "aten::mul, seq = 2"], 2e-5, 1e-5, 1e6, kernel="void ns::add<8, half>(T)"),
               _entry(2, ["layer2", "aten::add, seq = 3"], 1e-5, 1e-5, 1e6, kernel="ampere_sgemm_128x64_nn"),
               _entry(3, [], 1e-5, 5e-6, 1e6, kernel="ampere_sgemm_128x64_nn")]
    by_kernel = {g["name"]: g["launches"] for g in group_entries(entries, "kernel")}
    assert by_kernel == {"ns::add": 2, "ampere_sgemm_128x64_nn": 2}  # template arguments left out
    by_range = {g["name"]: g["kernels"] for g in group_entries(entries, "range:1")}
    assert by_range == {"layer1": [0, 1], "layer2": [2], "(no NVTX range)": [3]}
    by_op = [g["name"] for g in group_entries(entries, "op")]
    assert by_op == ["aten::add", "aten::mul", "ampere_sgemm_128x64_nn"]  # no range: the kernel's name
    assert group_entries(entries, "none") == []
    for bad in ("range:0", "range", "ops", "range:x"):
        with pytest.raises(ValueError):
            parse_group_by(bad)
    totals = program_totals(group_entries(entries, "kernel"), top=1)
    assert math.isclose(totals["top_share_of_recoverable"], 3e-5 / 3.5e-5)  # ns::add of (ns::add + sgemm)


def test_import_group_by_cli_and_report_gates(run_cli, tmp_path: Path) -> None:
    out = tmp_path / "gpt2.json"
    code, _, err = run_cli("import", "ncu", GPT2, "--group-by", "op", "-o", out, "--format", "json")
    assert code in (0, None), err
    code, stdout, _ = run_cli("report", out)
    assert code in (0, None) and "aten::mm" in stdout
    code, _, err = run_cli("report", out, "--fail-below", "0.09")
    assert code == 1 and "aten::mm" not in err and "aten::cat" in err  # mm at 9.6 %, cat at 5.5 %
    code, _, err = run_cli("report", out, "--fail-below", "0.1")
    assert code == 1 and "aten::mm" in err
    code, _, err = run_cli("report", out, "--fail-below-program", "30%")
    assert code == 1 and "27.9%" in err
    code, stdout, _ = run_cli("report", out, "--fail-below-program", "25%", "--format", "junit")
    assert code in (0, None) and stdout.count("<testcase") == len(json.loads(out.read_text())["groups"]) + 1
    code, stdout, err = run_cli("report", out, "--baseline", out)  # issue 40: a profile against itself gates clean
    assert code in (0, None) and "baseline" in stdout.lower(), err


def test_results_groups_are_checked(gpt2: dict) -> None:
    doc = json.loads(json.dumps(gpt2))
    ResultsDocument.from_json(doc, "gpt2.json")
    doc["groups"][3]["fraction_of_ceiling"] = -0.5
    with pytest.raises(InputError, match=r"gpt2.json: groups\[3\].fraction_of_ceiling"):
        ResultsDocument.from_json(doc, "gpt2.json")
    del doc["groups"][1]["recoverable_time"]
    with pytest.raises(InputError, match=r"groups\[1\].recoverable_time: is missing"):
        ResultsDocument.from_json(doc, "gpt2.json")
