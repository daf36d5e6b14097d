"""`roofline import torch`: Kineto traces -> results that `report` and `plot` read (synthetic traces made to the
Kineto format; the traces captured on the H200 are in test_kineto_h200.py and test_trace_check.py)."""

from __future__ import annotations

import gzip
import json
import time
from pathlib import Path
from types import SimpleNamespace

import pytest
from click.testing import CliRunner

from roofline.cli import cli
from roofline.errors import InputError
from roofline.kineto import document
from roofline.kineto.attribution import GRAPH_OP, NO_OP, attribute
from roofline.kineto.document import build_document, import_traces, roof_from_name
from roofline.kineto.reader import read_trace
from roofline.records.files import load_results
from roofline.load.specs import SpecCatalog

DATA = Path(__file__).parent / "data" / "kineto"
GEMM_FLOPS = 2 * 64 * 128 * 256
GEMM_BYTES = (256 + 64 * 128 + 128 * 256 + 64 * 256) * 2.0
RELU_BYTES = 2 * 64 * 256 * 2.0


def fake_model(name, inputs, kernel_names=()):
    """Hand-counted work of the fixture's ops (the real models are roofline.model.ops.aten)."""
    if name == "aten::addmm":
        assert [i.dims for i in inputs[:3]] == [(256,), (64, 128), (128, 256)]
        assert inputs[3].value == "1" and inputs[1].dtype == "c10::BFloat16"
        return SimpleNamespace(flops=float(GEMM_FLOPS), bytes=GEMM_BYTES, roof="bf16_tensor", dtype="bfloat16",
                               op_class="gemm", note="")
    if name == "aten::clamp_min":
        return SimpleNamespace(flops=64 * 256.0, bytes=RELU_BYTES, roof=None, dtype="bfloat16",
                               op_class="elementwise", note="")
    return None  # aten::nonzero, aten::copy_ (its memcpy carries its own bytes): no model


def run(paths, group_by="op", model=fake_model):
    return import_traces(paths, None, group_by, model=model, make_input=SimpleNamespace)


def test_attribution_by_correlation_innermost_op_graph_and_no_op() -> None:
    items = {a.event.correlation: a for a in attribute(read_trace(DATA / "step.json"))}
    assert items[11].op_name == "aten::addmm" and items[12].op_name == "aten::addmm"  # inside linear: innermost
    assert items[13].op_name == "aten::clamp_min"  # relu -> clamp_min: the innermost
    assert items[15].op_name == NO_OP and items[15].launch is not None
    assert items[16].event.kind == "memcpy" and items[16].op_name == "aten::copy_"
    graph = [a for a in attribute(read_trace(DATA / "step.json")) if a.event.correlation == 18]
    assert len(graph) == 2 and all(a.graph and a.op_name == GRAPH_OP for a in graph)
    assert items[11].module == "Linear_0" and items[13].module == "ReLU_0" and items[15].module is None


def test_model_split_by_time_and_unmodelled_time() -> None:
    doc, notes = run([DATA / "step.json"])
    gemm = [k for k in doc["kernels"] if k["op"] == "aten::addmm" and "graph" not in k]
    assert len(gemm) == 2
    assert sum(k["flops"] for k in gemm) == pytest.approx(GEMM_FLOPS)
    assert gemm[0]["bytes"] / gemm[1]["bytes"] == pytest.approx(10.5 / 2.0)  # bytes by time
    # the FLOPs on the GEMM kernel, none on the split-K reduction beside it (its roof from its name, not the model's)
    assert gemm[0]["flops"] == pytest.approx(GEMM_FLOPS) and gemm[1]["flops"] == 0
    assert gemm[0]["model"]["flops_share"] == 1.0 and "1 matrix kernel" in gemm[0]["model"]["note"]
    assert gemm[1]["roof"] == "bf16" and gemm[1]["bound"] == "memory"
    assert gemm[0]["roof"] == "bf16_tensor" and "proportion to their GPU time" in gemm[0]["model"]["note"]
    assert gemm[0]["time_median"] == pytest.approx(10.5e-6) and gemm[0]["status"] == "IMPORTED"
    assert gemm[0]["verified"] is None and gemm[0]["op_inputs"]["dims"][1] == [64, 128]
    relu = next(k for k in doc["kernels"] if k["op"] == "aten::clamp_min")
    assert relu["roof"] == "bf16"  # no roof from the model: the kernel name's BFloat16, not a tensor kernel
    copy = next(k for k in doc["kernels"] if k["kineto"]["kind"] == "memcpy")
    assert copy["bytes"] == 4096 and copy["flops"] == 0 and copy["warnings"][0]["code"] == "host-link"
    memset = next(k for k in doc["kernels"] if k["kineto"]["kind"] == "memset")
    assert memset["op"] == NO_OP and memset["bytes"] == 8192
    # the CUDA graph replay's two kernels are the same kernels (name, grid, block) as the eager addmm's GEMM and
    # clamp_min's: each takes its op and the share its eager launch had
    replayed = {k["op"]: k for k in doc["kernels"] if "graph" in k}
    assert set(replayed) == {"aten::addmm", "aten::clamp_min"}
    assert replayed["aten::addmm"]["flops"] == pytest.approx(GEMM_FLOPS)
    assert replayed["aten::addmm"]["bytes"] == pytest.approx(gemm[0]["bytes"])
    assert replayed["aten::addmm"]["graph"]["matched"] == "kernel"
    assert ("matched to the launch of the same kernel (name, grid, block) outside the graph at ts "
            "1733000000002000.000" in replayed["aten::addmm"]["model"]["note"])
    why = {u["op"]: u["why"] for u in doc["unmodelled"]}
    assert set(why) == {"aten::nonzero", NO_OP}
    assert "no model" in why["aten::nonzero"]
    lost = (4.0 + 2.5) * 1e-6
    assert doc["program"]["unmodelled_time"] == pytest.approx(lost)
    everything = sum(k["time_median"] for k in doc["kernels"]) + lost
    assert doc["program"]["unmodelled_share"] == pytest.approx(lost / everything)
    assert any("aten::nonzero" in n for n in notes) and any("CUDA graph" in n for n in notes)
    line = document.summary_line(doc)  # the unmodelled are imported (kept in the file), not dropped from the count
    assert f"without a model (in 'unmodelled'" in line
    assert f"imported {len(doc['kernels']) + len(doc['unmodelled'])} GPU events" in line


def test_roof_from_kernel_name() -> None:
    roofs = SpecCatalog.bundled().resolve("h200").roofs
    assert roof_from_name("ampere_sgemm_tf32_128x64_nn", roofs)[0] == "tf32_tensor"
    assert roof_from_name("void at::native::reduce_kernel<float>", roofs)[0] == "fp32"
    assert roof_from_name("cutlass_80_tensorop_f16_s16816gemm_relu_f16_256x128", roofs)[0] == "fp16_tensor"
    # a cast is no convolution: cuDNN attention's dQ conversion runs on the CUDA cores
    assert roof_from_name("void cudnn::fusion::convert_dq_to_16bits<__nv_bfloat16>(float*)", roofs)[0] == "bf16"


def test_gzip_and_two_ranks_with_a_straggler() -> None:
    doc, _ = run([DATA / "rank0.json", DATA / "rank1.json.gz"])
    assert {k["rank"] for k in doc["kernels"]} == {0, 1}
    assert [r["rank"] for r in doc["ranks"]] == [0, 1]
    s = doc["straggler"]
    assert s["rank"] == 1 and s["outlier"] and s["max_over_min"] > 1.2
    assert s["groups"][0]["name"] == "aten::addmm" and s["groups"][0]["rank"] == 1
    line = document.straggler_line(s)
    assert line.startswith("straggler: rank 1")
    launches = [k["params"]["launch"] for k in doc["kernels"]]
    assert len(launches) == len(set(launches))


def test_same_rank_twice_is_refused(tmp_path: Path) -> None:
    other = json.loads((DATA / "step.json").read_text(encoding="utf-8"))
    other["traceName"] = "another run"  # another trace (not the same one twice), with rank 0 as well
    copy = tmp_path / "other.json"
    copy.write_text(json.dumps(other), encoding="utf-8")
    with pytest.raises(InputError, match="distributedInfo.rank"):
        run([DATA / "rank0.json", copy])


def test_the_same_trace_twice_is_refused_by_content() -> None:
    """rank0.json and step.json hold one trace: two ranks with identical times before, now refused by content."""
    with pytest.raises(InputError, match=r"step\.json: is the same trace as .*rank0\.json \(identical content\)"):
        run([DATA / "rank0.json", DATA / "step.json"])


@pytest.mark.parametrize("name", ["broken.json", "not_a_trace.json"])
def test_not_a_trace_exits_2_naming_the_file(tmp_path: Path, run_cli, name: str) -> None:
    out = tmp_path / "out.json"
    result = run_cli("import", "torch", DATA / name, "--spec", "h200", "-o", out)
    assert result.code == 2, result.err
    assert name in result.err and "Traceback" not in result.err
    assert not out.exists()


def test_bad_gzip_exits_2(tmp_path: Path, run_cli) -> None:
    bad = tmp_path / "cut.json.gz"
    bad.write_bytes(gzip.compress(b'{"traceEvents": []}')[:12])
    result = run_cli("import", "torch", bad, "--spec", "h200")
    assert result.code == 2 and "cut.json.gz" in result.err


@pytest.mark.parametrize("group_by", ["op", "kernel", "module", "none"])
def test_cli_writes_what_report_reads(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, group_by: str) -> None:
    monkeypatch.setattr(document, "_default_model", lambda: (fake_model, SimpleNamespace))
    out = tmp_path / "step.json"
    runner = CliRunner()
    result = runner.invoke(cli, ["import", "torch", str(DATA / "step.json"), "--group-by", group_by, "-o", str(out)])
    assert result.exit_code == 0, result.output
    assert "without a model (in 'unmodelled'" in result.output
    doc = load_results(out).doc
    assert doc["backend"] == "torch"
    if group_by != "none":
        assert doc["groups"][0]["by"] == group_by
        names = {g["name"] for g in doc["groups"]}
        assert {"op": "aten::addmm", "kernel": "splitKreduce_kernel", "module": "Linear_0"}[group_by] in names
        # half this step's GPU time has no model (fake_model): the default 5% --max-unmodelled gate fails it
        report = runner.invoke(cli, ["report", str(out), "--format", "json"])
        assert report.exit_code == 1 and "--max-unmodelled gate" in report.output, report.output
        report = runner.invoke(cli, ["report", str(out), "--format", "json", "--max-unmodelled", "100%"])
        assert report.exit_code == 0, report.output
        program = json.loads(report.stdout)["programs"][0]
        assert program["time"] == pytest.approx(doc["program"]["time"])
        assert program["groups"] == len(doc["groups"])
        failing = runner.invoke(cli, ["report", str(out), "--fail-below-program", "0.99", "--max-unmodelled", "1"])
        assert failing.exit_code == 1, failing.output


def test_cli_two_ranks_prints_tables_and_straggler(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(document, "_default_model", lambda: (fake_model, SimpleNamespace))
    out = tmp_path / "all.json"
    result = CliRunner().invoke(cli, ["import", "torch", str(DATA / "rank0.json"), str(DATA / "rank1.json.gz"),
                                      "-o", str(out), "--wide"])
    assert result.exit_code == 0, result.output
    assert "rank 0 (NVIDIA H200)" in result.output and "all 2 ranks" in result.output
    assert "straggler: rank 1" in result.output
    assert load_results(out).doc["straggler"]["rank"] == 1


def test_no_model_at_all_is_refused() -> None:
    with pytest.raises(InputError, match="nothing to put on the roofline"):
        traces = [read_trace(DATA / "step.json")]
        trace = traces[0]
        no_copies = type(trace)(trace.path, trace.devices, trace.rank, trace.world_size, trace.ops, trace.launches,
                                [e for e in trace.gpu if e.kind == "kernel"], trace.modules)
        build_document([no_copies], SpecCatalog.bundled().resolve("h200"), "NVIDIA H200", "op",
                       model=lambda *a: None, make_input=SimpleNamespace)


def _big_trace(path: Path, n: int) -> None:
    events = [{"ph": "X", "cat": "python_function", "name": "nn.Module: Block_0", "pid": 1, "tid": 1, "ts": 0,
               "dur": 40.0 * n + 100}]
    for i in range(n):
        t = 10.0 + 40.0 * i
        events.append({"ph": "X", "cat": "cpu_op", "name": "aten::addmm", "pid": 1, "tid": 1, "ts": t, "dur": 30.0,
                       "args": {"External id": i, "Input Dims": [[256], [64, 128], [128, 256], [], []],
                                "Input type": ["c10::BFloat16"] * 3 + ["Scalar"] * 2,
                                "Input Strides": [[1], [128, 1], [1, 128], [], []],
                                "Concrete Inputs": ["", "", "", "1", "1"]}})
        events.append({"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1,
                       "ts": t + 5, "dur": 4.0, "args": {"External id": i, "cbid": 211, "correlation": 10 + i}})
        events.append({"ph": "X", "cat": "kernel", "name": "sm90_xmma_gemm_bf16bf16_bf16f32", "pid": 0, "tid": 7,
                       "ts": 1e6 + 20.0 * i, "dur": 12.0,
                       "args": {"device": 0, "stream": 7, "correlation": 10 + i, "grid": [4, 1, 1],
                                "block": [128, 1, 1]}})
    doc = {"schemaVersion": 1, "deviceProperties": [{"id": 0, "name": "NVIDIA H200"}], "traceEvents": events}
    with gzip.open(path, "wt") as f:
        json.dump(doc, f)


def test_ten_thousand_kernels_import_quickly(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(document, "_default_model", lambda: (fake_model, SimpleNamespace))
    path = tmp_path / "big.json.gz"
    _big_trace(path, 10_000)
    out = tmp_path / "big.json"
    start = time.process_time()
    result = CliRunner().invoke(cli, ["import", "torch", str(path), "--group-by", "module", "-o", str(out),
                                      "--format", "json"])
    elapsed = time.process_time() - start
    assert result.exit_code == 0, result.output[-2000:]
    doc = json.loads(out.read_text())
    assert len(doc["kernels"]) == 10_000 and doc["groups"][0]["name"] == "Block_0"
    assert elapsed < 10.0, f"{elapsed:.1f} s"


def test_the_real_op_models_count_the_step_by_hand(tmp_path) -> None:
    """End to end with roofline.model.ops.aten, not a fake: the BF16 addmm of step.json (bias [256], A [64, 128],
    B [128, 256]) is 2·64·256·128 = 4,194,304 FLOPs and (256 + 64·128 + 128·256 + 64·256) × 2 B = 115,200 B on the
    BF16 tensor roof; the clamp_min of [64, 256] BF16 is 16,384 FLOPs and 2 × 16,384 × 2 B = 65,536 B."""
    out = tmp_path / "step.json"
    result = CliRunner().invoke(cli, ["import", "torch", str(DATA / "step.json"), "-o", str(out)])
    assert result.exit_code == 0, result.output
    groups = {g["name"]: g for g in json.loads(out.read_text())["groups"]}
    addmm, clamp = groups["aten::addmm"], groups["aten::clamp_min"]
    # each runs twice: eagerly, then its kernels again in the CUDA graph replay, which takes the eager GEMM's share
    # (10.5 of the op's 12.5 µs of kernels) and clamp_min's whole work
    assert addmm["flops"] == 2 * 4_194_304 and addmm["roof"] == "bf16_tensor"
    assert addmm["bytes"] == pytest.approx(115_200 * (1 + 10.5 / 12.5))
    assert clamp["flops"] == 2 * 16_384 and clamp["bytes"] == 2 * 65_536
    assert load_results(out)  # report and plot read it back


def test_a_trace_of_cpu_events_alone_says_it_has_no_gpu_events(tmp_path) -> None:
    """A trace recorded without ProfilerActivity.CUDA said '0 GPU events, but none of them is a kernel...'."""
    doc = json.loads((DATA / "step.json").read_text())
    doc["traceEvents"] = [e for e in doc["traceEvents"] if e.get("cat") not in ("kernel", "gpu_memcpy", "gpu_memset")]
    (tmp_path / "cpu.json").write_text(json.dumps(doc))
    result = CliRunner().invoke(cli, ["import", "torch", str(tmp_path / "cpu.json"), "--spec", "h200"])
    assert isinstance(result.exception, InputError)  # exit 2 through the CLI's entry point
    message = str(result.exception)
    assert "no GPU events (kernels, copies, fills)" in message and "0 GPU events" not in message
    assert "ProfilerActivity.CUDA" in message
