"""The step's timeline from a PyTorch trace (roofline.kineto.timeline): window, busy and idle as HTA defines them, the
idle gaps and their causes, launch delay, overlap across streams, the program line's step figures (MFU, HFU, the
fraction of ceiling over wall time), the results block read back, and `report --max-idle`. Every expected value is
worked out by hand from the synthetic traces below (times in µs, as the trace writes them)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from roofline.kineto.document import import_traces
from roofline.kineto.reader import read_trace
from roofline.kineto.timeline import analyze, merge, quantile
from roofline.render.tables.grouped import footer

US = 1e-6
GEMM = "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64"
NCCL = "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevComm*, unsigned long, ncclWork*)"
ELEMENTWISE = "void at::native::vectorized_elementwise_kernel<4, at::native::AddFunctor<float> >(int)"


def _op(name: str, ts: float, dur: float, tid: int = 1, mm: bool = False) -> dict[str, Any]:
    args: dict[str, Any] = {"External id": int(ts)}
    if mm:  # a 64x128 @ 128x256 BF16 matmul: 2·m·n·k = 4,194,304 FLOPs
        args.update({"Input Dims": [[64, 128], [128, 256]], "Input type": ["c10::BFloat16", "c10::BFloat16"],
                     "Input Strides": [[128, 1], [256, 1]], "Concrete Inputs": ["", ""]})
    return {"ph": "X", "cat": "cpu_op", "name": name, "pid": 1, "tid": tid, "ts": ts, "dur": dur, "args": args}


def _call(name: str, ts: float, dur: float, corr: int, tid: int = 1) -> dict[str, Any]:
    return {"ph": "X", "cat": "cuda_runtime", "name": name, "pid": 1, "tid": tid, "ts": ts, "dur": dur,
            "args": {"correlation": corr}}


def _gpu(cat: str, name: str, ts: float, dur: float, stream: int, corr: int | None, device: int = 0
         ) -> dict[str, Any]:
    args: dict[str, Any] = {"device": device, "stream": stream}
    if corr is not None:
        args["correlation"] = corr
    if cat == "gpu_memcpy" or cat == "gpu_memset":
        args["bytes"] = 4096
    return {"ph": "X", "cat": cat, "name": name, "pid": 0, "tid": stream, "ts": ts, "dur": dur, "args": args}


def step_events(shift: float = 0.0, k3: float = 10.0) -> list[dict[str, Any]]:
    """Compute on stream 7, a copy on 13 and an all-reduce on 21 (device 0), then three gaps of known causes.

    GPU:  K1 [100,150] compute · C1 [120,180] copy · N1 [140,180] collective · K2 [200,220] · K3 [300,310]
          · K4 [400,420] · M1 [450,455] memset with no launch in the trace
    window 355, busy 80 + 20 + 10 + 20 + 5 = 135, idle 220; gaps:
      [180,200] 20 launch-bound (K2's launch ran 170-175, before the gap)  in aten::mm [165,190]
      [220,300] 80 host-bound   (K3's launch at 290, after the gap began)  in aten::index [215,280]
      [310,400] 90 synchronisation (cudaStreamSynchronize 305-315 was running when it began)
      [420,450] 30 other        (M1's launch is not in the trace)
    launch delays (start - launch end): 5, 20, 35, 25, 6, 15
    overlap: 120-180 two or more categories (60 of 135 busy); compute beside the all-reduce 140-150 (10 of 40)."""
    s = shift
    return [
        _op("aten::mm", 85 + s, 12, mm=True), _call("cudaLaunchKernel", 90 + s, 5, 1),
        _op("aten::copy_", 96 + s, 4), _call("cudaMemcpyAsync", 96 + s, 4, 2),
        _op("c10d::allreduce_", 101 + s, 4), _call("cudaLaunchKernel", 101 + s, 4, 3),
        _op("aten::mm", 165 + s, 25, mm=True), _call("cudaLaunchKernel", 170 + s, 5, 4),
        _op("aten::index", 215 + s, 65), _op("aten::add", 285 + s, 10), _call("cudaLaunchKernel", 290 + s, 4, 5),
        _call("cudaStreamSynchronize", 305 + s, 10, 7),
        _op("aten::mm", 375 + s, 12, mm=True), _call("cudaLaunchKernel", 380 + s, 5, 6),
        _gpu("kernel", GEMM, 100 + s, 50, 7, 1), _gpu("gpu_memcpy", "Memcpy HtoD (Pinned -> Device)", 120 + s, 60, 13, 2),
        _gpu("kernel", NCCL, 140 + s, 40, 21, 3), _gpu("kernel", GEMM, 200 + s, 20, 7, 4),
        _gpu("kernel", ELEMENTWISE, 300 + s, k3, 7, 5), _gpu("kernel", GEMM, 400 + s, 20, 7, 6),
        _gpu("gpu_memset", "Memset (Device)", 450 + s, 5, 7, None),
    ]


def write_trace(path: Path, events: list[dict[str, Any]], rank: int | None = 0) -> Path:
    doc: dict[str, Any] = {"schemaVersion": 1, "deviceProperties": [{"id": 0, "name": "NVIDIA H200"}],
                           "traceEvents": events}
    if rank is not None:
        doc["distributedInfo"] = {"rank": rank, "world_size": 2}
    path.write_text(json.dumps(doc))
    return path


@pytest.fixture
def step_trace(tmp_path: Path) -> Path:
    return write_trace(tmp_path / "step.json", step_events())


def test_window_busy_idle_and_the_gaps_causes(step_trace: Path) -> None:
    line = analyze([read_trace(step_trace)], [0])
    (d,) = line.devices
    assert d.window == pytest.approx(355 * US) and d.busy == pytest.approx(135 * US)
    assert d.idle == pytest.approx(220 * US) and d.idle_share == pytest.approx(220 / 355)
    assert d.streams == (7, 13, 21) and d.events == 7
    assert {c: round(v / US, 6) for c, v in d.idle_by_cause.items()} == {
        "host-bound": 80, "launch-bound": 20, "synchronisation": 90, "other": 30}
    gaps = [(round(g.start / US, 6), round(g.duration / US, 6), g.cause, g.host_op) for g in d.gaps]
    assert gaps == [(210, 90, "synchronisation", "cudaStreamSynchronize"), (120, 80, "host-bound", "aten::index"),
                    (320, 30, "other", None), (80, 20, "launch-bound", "aten::mm")]
    assert d.gaps[1].launch == "cudaLaunchKernel" and d.gaps[1].launch_lead == pytest.approx(70 * US)
    assert d.gaps[1].launch_op == "aten::add" and d.gaps[0].launch_op == "aten::mm"  # what the host reached
    assert d.gaps[3].launch_lead == pytest.approx(-10 * US)  # the launch began before the GPU ran dry


def test_launch_delay_and_overlap(step_trace: Path) -> None:
    (d,) = analyze([read_trace(step_trace)], [0]).devices
    delay = d.launch_delay
    assert delay is not None and delay.count == 6
    assert delay.mean == pytest.approx(106 / 6 * US) and delay.p50 == pytest.approx(17.5 * US)
    assert delay.p95 == pytest.approx(32.5 * US) and delay.max == pytest.approx(35 * US)
    o = d.overlap
    assert (o.compute, o.copy, o.collective) == pytest.approx((100 * US, 65 * US, 40 * US))
    assert o.concurrent == pytest.approx(60 * US) and o.concurrent_share == pytest.approx(60 / 135)
    assert o.collective_hidden == pytest.approx(0.25)


def test_union_touching_intervals_and_quantiles() -> None:
    assert merge([(5, 7), (0, 2), (2, 3), (6, 9)]) == [(0, 3), (5, 9)]
    assert quantile([1.0], 0.95) == 1.0 and quantile([1.0, 2.0, 3.0, 4.0], 0.5) == 2.5


def test_two_devices_of_one_rank_each_and_their_union(tmp_path: Path) -> None:
    """HTA's rank figure is one union over the rank's devices; each device has its own window."""
    events = [_gpu("kernel", GEMM, 0, 10, 7, None, device=0), _gpu("kernel", GEMM, 30, 10, 7, None, device=0),
              _gpu("kernel", GEMM, 5, 20, 7, None, device=1)]
    line = analyze([read_trace(write_trace(tmp_path / "two.json", events))], [0])
    d0, d1 = line.devices
    assert (d0.device, d0.window, d0.busy) == (0, pytest.approx(40 * US), pytest.approx(20 * US))
    assert (d1.device, d1.window, d1.busy, d1.idle) == (1, pytest.approx(20 * US), pytest.approx(20 * US), 0.0)
    (r,) = line.ranks
    assert r.window == pytest.approx(40 * US) and r.busy == pytest.approx(35 * US)  # [0,25] and [30,40]
    assert d0.idle_by_cause["other"] == pytest.approx(20 * US)  # no launches in this trace


def test_straggler_is_the_rank_with_most_work_outside_collectives(tmp_path: Path) -> None:
    a = write_trace(tmp_path / "r0.json", step_events(), rank=0)
    b = write_trace(tmp_path / "r1.json", step_events(k3=40.0), rank=1)  # its elementwise kernel 30 µs longer
    line = analyze([read_trace(a), read_trace(b)], [0, 1])
    s = line.straggler()
    assert s is not None and s["rank"] == 1 and s["outlier"]
    assert s["busy"] == pytest.approx(165 * US) and s["median"] == pytest.approx(150 * US)
    assert [r.idle_share for r in line.ranks] == pytest.approx([220 / 355, 190 / 355])


def test_program_line_states_all_gpu_time_wall_time_mfu_and_hfu(step_trace: Path) -> None:
    doc, _ = import_traces([step_trace])
    step = doc["timeline"]["step"]
    gpu = sum(k["time_median"] for k in doc["kernels"]) + sum(u["time"] for u in doc["unmodelled"])
    assert step["gpu_time"] == pytest.approx(gpu) == pytest.approx(doc["program"]["gpu_time"])
    assert step["wall_time"] == pytest.approx(355 * US) and step["idle_share"] == pytest.approx(220 / 355)
    sol = sum(k["sol_time"] for k in doc["kernels"])
    assert step["fraction_of_ceiling_wall"] == pytest.approx(sol / (355 * US))
    assert step["fraction_of_ceiling_kernels"] == pytest.approx(doc["program"]["fraction_of_ceiling"])
    # three aten::mm of 2·64·128·256 FLOPs each are the model FLOPs; the peak is the BF16 tensor roof they ran on
    assert step["model_flops"] == 3 * 2 * 64 * 128 * 256
    assert step["peak"] == {"roof": "bf16_tensor", "flops": doc["machine"]["roofs"]["bf16_tensor"]}
    assert step["mfu"] == pytest.approx(3 * 2 * 64 * 128 * 256 / (355 * US) / step["peak"]["flops"])
    assert step["hfu"] == pytest.approx(step["hardware_flops"] / (355 * US) / step["peak"]["flops"])
    assert step["hardware_flops"] >= step["model_flops"] and "2·m·n·k" in step["flop_convention"]
    line = " ".join(footer(doc).split())
    assert "GPU time" in line and "(every GPU event)" in line and "GPU idle 62.0%" in line
    assert "of ceiling over wall time" in line and "MFU" in line and "HFU" in line and "bf16_tensor peak" in line


def test_every_gpu_event_is_an_entry_even_one_of_no_duration(tmp_path: Path) -> None:
    events = step_events() + [_gpu("kernel", ELEMENTWISE, 430, 0, 7, None)]
    doc, notes = import_traces([write_trace(tmp_path / "zero.json", events)])
    assert len(doc["kernels"]) + len(doc["unmodelled"]) == doc["source"]["launches"] == 8
    (zero,) = [u for u in doc["unmodelled"] if u["time"] == 0.0]
    assert "duration of 0 µs" in zero["why"]
    assert any("duration of 0 or less: listed in 'unmodelled'" in n for n in notes)


def _import_cli(run_cli, trace: Path, out: Path) -> None:
    code, _, err = run_cli("import", "torch", str(trace), "-o", str(out))
    assert code in (0, None), err


def test_results_block_reads_back_and_an_edited_one_is_refused(run_cli, step_trace: Path, tmp_path: Path) -> None:
    from roofline.records.files import load_results

    out = tmp_path / "step-results.json"
    _import_cli(run_cli, step_trace, out)
    written = json.loads(out.read_text())
    block = written["timeline"]
    assert block["schema"] == "roofline/timeline/v1" and block["devices"][0]["idle_share"] == pytest.approx(220 / 355)
    again = load_results(out)
    assert again.doc["timeline"] == block and again.typed.to_json()["timeline"] == block
    block["devices"][0]["idle_share"] = 0.1
    out.write_text(json.dumps(written))
    code, _, err = run_cli("report", str(out))
    assert code == 2 and "timeline.devices[0].idle_share" in err
    written["timeline"]["schema"] = "roofline/timeline/v9"
    out.write_text(json.dumps(written))
    code, _, err = run_cli("report", str(out))
    assert code == 2 and "newer than this roofline reads" in err


def test_report_max_idle_gates_the_step(run_cli, step_trace: Path, tmp_path: Path) -> None:
    out = tmp_path / "step-results.json"
    _import_cli(run_cli, step_trace, out)
    code, stdout, err = run_cli("report", str(out), "--max-idle", "50%")
    assert code == 1 and "GPU idle for 62.0% of the step's window, over the 50% gate" in err
    # a quarter of this step has no model: --max-unmodelled 30% lets the idle gate alone decide
    code, stdout, err = run_cli("report", str(out), "--max-idle", "0.7", "--max-unmodelled", "30%", "--format",
                                "json")
    assert code in (0, None), err
    report = json.loads(stdout)
    assert report["gates"]["max_idle"] == 0.7 and report["programs"][0]["step"]["idle_share"] == pytest.approx(
        220 / 355)
    plain = tmp_path / "plain.json"
    plain.write_text(json.dumps({k: v for k, v in json.loads(out.read_text()).items() if k != "timeline"}))
    code, _, err = run_cli("report", str(plain), "--max-idle", "50%")
    assert code == 2 and "has no timeline" in err


def test_report_max_idle_names_the_idle_rank(run_cli, tmp_path: Path) -> None:
    a = write_trace(tmp_path / "r0.json", step_events(), rank=0)
    b = write_trace(tmp_path / "r1.json", step_events(k3=40.0), rank=1)
    out = tmp_path / "ranks.json"
    code, _, err = run_cli("import", "torch", str(a), str(b), "-o", str(out))
    assert code in (0, None), err
    code, _, err = run_cli("report", str(out), "--max-idle", "0.6")
    assert code == 1 and "rank 0: GPU idle for 62.0%" in err and "rank 1" not in err


def test_import_prints_the_timeline_section(run_cli, step_trace: Path) -> None:
    code, stdout, err = run_cli("import", "torch", str(step_trace))
    assert code in (0, None), err
    text = " ".join(stdout.split())
    assert "timeline" in text and "host-bound" in text and "largest idle gaps" in text
    assert "synchronisation in cudaStreamSynchronize" in text


def test_idle_share_agrees_with_hta_where_installed(step_trace: Path, tmp_path: Path) -> None:
    """HTA (not a dependency) on the same trace, its rounding of events to whole microseconds off."""
    pytest.importorskip("hta")
    folder = tmp_path / "hta"
    folder.mkdir()
    (folder / "step.json").write_text(step_trace.read_text())
    code = ("import sys; from hta.trace_analysis import TraceAnalysis\n"
            "row = TraceAnalysis(trace_dir=sys.argv[1], include_last_profiler_step=True)"
            ".get_temporal_breakdown(visualize=False).iloc[0]\n"
            "print(row['idle_time(us)'] / row['kernel_time(us)'])")
    run = subprocess.run([sys.executable, "-c", code, str(folder)], capture_output=True, text=True,
                         env={**os.environ, "HTA_DISABLE_NS_ROUNDING": "1"}, timeout=300)
    assert run.returncode == 0, run.stderr[-2000:]
    hta_idle = float(run.stdout.strip().splitlines()[-1])
    (r,) = analyze([read_trace(step_trace)], [0]).ranks
    assert abs(r.idle_share - hta_idle) <= 0.01


def test_each_rank_table_states_its_own_step(run_cli, tmp_path: Path) -> None:
    a = write_trace(tmp_path / "r0.json", step_events(), rank=0)
    b = write_trace(tmp_path / "r1.json", step_events(k3=40.0), rank=1)
    code, stdout, err = run_cli("import", "torch", str(a), str(b))
    assert code in (0, None), err
    text = " ".join((stdout + err).split())
    # rank 0 idle 220 of 355 µs, rank 1 190 of 355, both 410 of 710
    assert "GPU idle 62.0%" in text and "GPU idle 53.5%" in text and "over 2 devices, GPU idle 57.7%" in text
    assert "straggler by busy time outside collectives: rank 1" in text


def test_html_page_shows_the_step_strip(run_cli, step_trace: Path, tmp_path: Path) -> None:
    out, page = tmp_path / "step-results.json", tmp_path / "step.html"
    _import_cli(run_cli, step_trace, out)
    code, _, err = run_cli("plot", "--results", str(out), "-o", str(page))
    assert code in (0, None), err
    html = page.read_text()
    assert "Timeline: the GPU over the step" in html and 'class="strip"' in html
    # the 90 µs synchronisation gap 210 µs into the 355 µs window, in place
    assert f"left:{100 * 210 / 355:.4f}%;width:{100 * 90 / 355:.4f}%;background:#5b7fd6" in html
    assert "cudaStreamSynchronize" in html


def test_a_selection_of_launches_has_no_timeline(step_trace: Path) -> None:
    from roofline.kineto.select import LaunchScope

    doc, notes = import_traces([step_trace], scope=LaunchScope(kernel="gemm"))
    assert "timeline" not in doc and any("no timeline" in n for n in notes)
