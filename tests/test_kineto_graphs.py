"""CUDA graph replays in `import torch`: each replayed kernel matched to the op that launched it at the graph's
capture (by capture order) or to a launch of the same kernel outside the graph (name, grid, block), and modelled
through that op; what finds no op keeps why. The synthetic traces follow the committed H200 trace
(tests/data/kineto/compiled/llama-infer-cudagraph.json.gz): the replay's kernels carry the cudaGraphLaunch's
correlation id, grid and block; a capture records ops and launch calls but no GPU activity."""

from __future__ import annotations

import dataclasses
import gzip
import json
import os
from pathlib import Path
from typing import Any

import pytest

from roofline.errors import InputError
from roofline.kineto.attribution import GRAPH_OP, attribute
from roofline.kineto.document import import_traces
from roofline.kineto.graphs import call_kind, captures_in, match_replays
from roofline.kineto.reader import CAPTURES_KEY, Capture, CaptureLaunch, captures_block, read_trace
from roofline.kineto.timeline import launch_delay
from test_profile_torch import fake, run_capture, script

DATA = Path(__file__).parent / "data" / "kineto"
CPU, GPU = 100, 7
GEMM = "nvjet_sm90_tst_256x128_64x4_1x2_h_bz_coopA_TNT"
SILU = "triton_poi_fused_mul_silu_0"
GEMM_FLOPS = 2 * 64 * 128 * 256


class Trace:
    """A Kineto trace made by hand: CPU ops and calls on one thread, GPU events on one stream."""

    def __init__(self) -> None:
        self.events: list[dict[str, Any]] = []
        self.corr = 0
        self.head: dict[str, Any] = {}

    def op(self, name: str, ts: float, dur: float, dims: list, types: list, concrete: list | None = None,
           **extra: Any) -> None:
        self.events.append({"ph": "X", "cat": "cpu_op", "name": name, "pid": CPU, "tid": CPU, "ts": ts, "dur": dur,
                            "args": {"Input Dims": dims, "Input type": types,
                                     "Concrete Inputs": concrete or [""] * len(dims), **extra}})

    def call(self, name: str, ts: float, dur: float = 4.0, cat: str = "cuda_runtime") -> int:
        self.corr += 1
        self.events.append({"ph": "X", "cat": cat, "name": name, "pid": CPU, "tid": CPU, "ts": ts, "dur": dur,
                            "args": {"correlation": self.corr}})
        return self.corr

    def gpu(self, name: str, corr: int, ts: float, dur: float, grid: list[int], block: list[int],
            cat: str = "kernel", **extra: Any) -> None:
        self.events.append({"ph": "X", "cat": cat, "name": name, "pid": 0, "tid": GPU, "ts": ts, "dur": dur,
                            "args": {"correlation": corr, "device": 0, "stream": GPU, "grid": grid, "block": block,
                                     **extra}})

    def annotate(self, name: str, ts: float, dur: float) -> None:
        self.events.append({"ph": "X", "cat": "user_annotation", "name": name, "pid": CPU, "tid": CPU, "ts": ts,
                            "dur": dur, "args": {}})

    def write(self, path: Path) -> Path:
        doc = {"schemaVersion": 1, "deviceProperties": [{"id": 0, "name": "NVIDIA H200"}], **self.head,
               "traceEvents": self.events}
        text = json.dumps(doc).encode()
        path.write_bytes(gzip.compress(text) if path.name.endswith(".gz") else text)
        return path


def mm(t: Trace, ts: float) -> None:
    t.op("aten::mm", ts, 30, [[64, 128], [128, 256]], ["c10::BFloat16", "c10::BFloat16"])


def silu(t: Trace, ts: float) -> None:
    t.op(SILU, ts, 20, [[64, 256], [64, 256], []], ["c10::BFloat16", "c10::BFloat16", "Scalar"],
         ["", "", "16384"], kernel_backend="triton", kernel_file="/nowhere/c.py")


def eager(t: Trace, at: float, gpu_at: float) -> None:
    """The graph's kernels run one by one (Inductor's warm-up): the GEMM in aten::mm, then the Triton kernel."""
    mm(t, at)
    t.gpu(GEMM, t.call("cudaLaunchKernel", at + 5), gpu_at, 10.0, [2, 64, 1], [384, 1, 1])
    silu(t, at + 50)
    t.gpu(SILU, t.call("cuLaunchKernel", at + 55, cat="cuda_driver"), gpu_at + 12, 3.0, [64, 1, 1], [256, 1, 1])


def capture(t: Trace, at: float) -> None:
    """The same two kernels captured: ops and launch calls, no GPU activity."""
    t.call("cudaStreamBeginCapture", at)
    mm(t, at + 10)
    t.call("cudaLaunchKernel", at + 15)
    t.call("cudaStreamIsCapturing", at + 40)  # no GPU event of its own: not a node
    silu(t, at + 50)
    t.call("cuLaunchKernel", at + 55, cat="cuda_driver")
    t.call("cudaStreamEndCapture", at + 90)


def replay(t: Trace, at: float, gpu_at: float, gemm_grid: tuple[int, ...] = (2, 64, 1), nodes: bool = False,
           swap: bool = False) -> int:
    corr = t.call("cudaGraphLaunch", at, dur=80.0)
    gemm_at, silu_at = (gpu_at + 5, gpu_at) if swap else (gpu_at, gpu_at + 11)
    t.gpu(GEMM, corr, gemm_at, 9.0, list(gemm_grid), [384, 1, 1],
          **({"graph id": 3, "graph node id": 41} if nodes else {}))
    t.gpu(SILU, corr, silu_at, 4.0, [64, 1, 1], [256, 1, 1], **({"graph id": 3, "graph node id": 42} if nodes else {}))
    return corr


def graph_entries(doc: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {k["kernel_name"]: k for k in doc["kernels"] if "graph" in k}


def test_replayed_kernels_matched_to_the_warm_up_launch_and_modelled(tmp_path: Path) -> None:
    t = Trace()
    eager(t, 1000, 5000)
    replay(t, 3000, 6000)
    doc, notes = import_traces([t.write(tmp_path / "t.json.gz")], "h200")
    replayed = graph_entries(doc)
    assert set(replayed) == {GEMM, SILU} and not doc["unmodelled"]
    gemm, triton = replayed[GEMM], replayed[SILU]
    assert gemm["op"] == "aten::mm" and gemm["flops"] == pytest.approx(GEMM_FLOPS)
    assert gemm["graph"]["matched"] == "kernel" and gemm["op_inputs"]["dims"] == [[64, 128], [128, 256]]
    assert "matched to the launch of the same kernel (name, grid, block) outside the graph at ts 5000.000" in \
        gemm["model"]["note"]
    assert triton["op"] == SILU and triton["model"]["op_class"] == "triton" and triton["bytes"] > 0
    assert gemm["time_median"] == pytest.approx(9e-6)  # the replay's own time, not the warm-up's
    assert any("2 GPU events of CUDA graph replays modelled" in n for n in notes)
    assert doc["timeline"]["step"]["mfu"] > 0  # the replayed GEMM's FLOPs count


def test_replayed_kernels_matched_by_capture_order(tmp_path: Path) -> None:
    """No warm-up in the trace: the capture alone gives each replayed kernel its op, the k-th node the k-th call."""
    t = Trace()
    capture(t, 1000)
    replay(t, 3000, 6000)
    replay(t, 4000, 7000)
    doc, _ = import_traces([t.write(tmp_path / "t.json.gz")], "h200")
    entries = [k for k in doc["kernels"] if "graph" in k]
    assert len(entries) == 4 and not doc["unmodelled"]
    assert [k["op"] for k in entries] == ["aten::mm", SILU, "aten::mm", SILU]
    assert all(k["graph"]["matched"] == "capture" for k in entries)
    assert "matched by capture order: node 1 of 2 of the graph's capture at ts 1000.000" in entries[0]["model"]["note"]
    # each replay's GEMM carries the whole of its op's work (one kernel per op in each replay)
    assert [k["flops"] for k in entries if k["op"] == "aten::mm"] == [pytest.approx(GEMM_FLOPS)] * 2


def test_graph_node_ids_give_the_capture_order(tmp_path: Path) -> None:
    """With CUPTI's graph node ids the replay's events are put in node order before they meet the capture's calls:
    a kernel that ran first on the GPU but was captured second still gets its own op."""
    t = Trace()
    capture(t, 1000)
    replay(t, 3000, 6000, nodes=True, swap=True)
    items = match_replays(read_trace(t.write(tmp_path / "t.json.gz")), attribute(read_trace(tmp_path / "t.json.gz")))
    ops = {a.event.name: a.match.op.name for a in items if a.match is not None}
    assert ops == {GEMM: "aten::mm", SILU: SILU}


def test_a_replay_on_several_streams_without_node_ids_is_not_matched_by_order(tmp_path: Path) -> None:
    """A graph captured across streams runs its branches side by side: without CUPTI's node ids the order they ran
    in says nothing of the order they were captured in, so the capture is not used, and the reason says so."""
    t = Trace()
    capture(t, 1000)
    corr = t.call("cudaGraphLaunch", 3000, dur=80.0)
    t.gpu(GEMM, corr, 6000, 9.0, [2, 64, 1], [384, 1, 1], stream=8)
    t.gpu(SILU, corr, 6001, 4.0, [64, 1, 1], [256, 1, 1])
    trace = read_trace(t.write(tmp_path / "t.json.gz"))
    items = [a for a in match_replays(trace, attribute(trace)) if a.graph]
    assert all(a.match is None for a in items)
    assert "ran on 2 streams and the trace has no graph node ids" in items[0].unmatched


def test_a_capture_that_does_not_line_up_is_not_used(tmp_path: Path) -> None:
    """A capture with one more kernel launch than the replay has kernels is no evidence of order: the replay falls
    back to launches of the same kernel, and a kernel with none says why, naming the capture that did not fit."""
    t = Trace()
    capture(t, 1000)
    t.call("cudaStreamBeginCapture", 1500)  # a second capture of three kernels
    mm(t, 1510)
    t.call("cudaLaunchKernel", 1515)
    t.call("cudaLaunchKernel", 1516)
    t.call("cudaLaunchKernel", 1517)
    t.call("cudaStreamEndCapture", 1590)
    replay(t, 3000, 6000, gemm_grid=(4, 64, 1))
    corr = t.call("cudaGraphLaunch", 3500, dur=80.0)  # a replay of three kernels: only the first capture is too short
    for k in range(3):
        t.gpu(SILU, corr, 6500 + 10 * k, 4.0, [64, 1, 1], [256, 1, 1])
    trace = read_trace(t.write(tmp_path / "t.json.gz"))
    assert [len(c.launches) for c in captures_in(trace)] == [2, 3]
    items = match_replays(trace, attribute(trace))
    three = [a for a in items if a.launch is not None and a.launch.correlation == corr]
    # the second capture lines up kind for kind, but its first call ran in aten::mm, not the Triton op the
    # replay's kernel names: not this graph's capture either
    assert all(a.match is None for a in three)
    assert "none of the 2 captures in the trace lines up with its 3 GPU events" in three[0].unmatched
    first = [a for a in items if a.graph and a.launch.correlation != corr]
    assert [a.match.how for a in first] == ["capture", "capture"]  # the first capture fits the first replay


def test_unmatched_replayed_kernels_keep_their_reason(tmp_path: Path) -> None:
    t = Trace()
    eager(t, 1000, 5000)
    replay(t, 3000, 6000, gemm_grid=(4, 64, 1))  # another grid: another GEMM, not the warm-up's
    doc, notes = import_traces([t.write(tmp_path / "t.json.gz")], "h200")
    why = {u["kernel_name"]: u for u in doc["unmodelled"]}
    assert set(why) == {GEMM} and why[GEMM]["op"] == GRAPH_OP
    assert why[GEMM]["why"].startswith("a CUDA graph replay: no launch of this kernel (name, grid, block) outside "
                                       "the graph in this trace; record the warm-up")
    assert "roofline profile --with torch" in why[GEMM]["why"] and why[GEMM]["graph"]["matched"] is None
    assert graph_entries(doc)[SILU]["graph"]["matched"] == "kernel"
    assert any("1 GPU event ran in CUDA graph replays with no op found" in n for n in notes)


def test_a_kernel_run_more_often_in_the_graph_than_outside_it_for_different_ops_is_not_guessed(tmp_path: Path
                                                                                                 ) -> None:
    t = Trace()
    for k, n in enumerate((128, 512)):  # the same GEMM kernel and grid for two shapes (only K differs)
        t.op("aten::mm", 1000 + 100 * k, 30, [[64, n], [n, 256]], ["c10::BFloat16", "c10::BFloat16"])
        t.gpu(GEMM, t.call("cudaLaunchKernel", 1005 + 100 * k), 5000 + 20 * k, 10.0, [2, 64, 1], [384, 1, 1])
    corr = t.call("cudaGraphLaunch", 3000, dur=80.0)
    for k in range(3):
        t.gpu(GEMM, corr, 6000 + 20 * k, 10.0, [2, 64, 1], [384, 1, 1])
    doc, _ = import_traces([t.write(tmp_path / "t.json.gz")], "h200")
    assert len(doc["unmodelled"]) == 3
    assert "runs 3 times in the graph but 2 times outside it, for different ops" in doc["unmodelled"][0]["why"]


def test_profiles_record_of_a_capture_outside_its_range_is_read_back_and_used(tmp_path: Path) -> None:
    """`profile --with torch` records a capture made before its range in the trace's head (captures_block) and
    annotates each replay with the capture it runs: the replay is matched to that capture by order."""
    t = Trace()
    ops = read_trace(_eager_only(tmp_path)).ops
    launches = (CaptureLaunch("cudaLaunchKernel", ops[0]), CaptureLaunch("cudaStreamIsCapturing", None),
                CaptureLaunch("cuLaunchKernel", ops[1]))
    t.head[CAPTURES_KEY] = captures_block([Capture("7", launches, None, None, "profile"),
                                           Capture("8", launches[:1], None, None, "profile")])
    t.annotate("roofline.graph 7", 2990, 100)
    replay(t, 3000, 6000)
    trace = read_trace(t.write(tmp_path / "t.json.gz"))
    assert [(c.key, [c2.call for c2 in c.launches], c.origin) for c in trace.captures] == [
        ("7", ["cudaLaunchKernel", "cudaStreamIsCapturing", "cuLaunchKernel"], "profile"),
        ("8", ["cudaLaunchKernel"], "profile")]
    assert trace.captures[0].launches[0].op.dims == ([64, 128], [128, 256])  # as the reader keeps an op's
    assert trace.graph_marks[0].key == "7"
    doc, _ = import_traces([tmp_path / "t.json.gz"], "h200")
    entries = graph_entries(doc)
    assert entries[GEMM]["op"] == "aten::mm" and entries[GEMM]["flops"] == pytest.approx(GEMM_FLOPS)
    assert "recorded by profile outside its range" in entries[GEMM]["model"]["note"]
    assert entries[SILU]["op"] == SILU and not doc["unmodelled"]


def _eager_only(tmp_path: Path) -> Path:
    t = Trace()
    eager(t, 1000, 5000)
    return t.write(tmp_path / "eager.json.gz")


@pytest.mark.parametrize("block, field", [
    ({"version": 2, "captures": []}, f"{CAPTURES_KEY}.version"),
    ({"version": 1, "captures": [{"key": "1", "launches": [{"call": 5}]}]}, f"{CAPTURES_KEY}.captures[0].launches[0]"),
    ({"version": 1, "captures": [{"launches": []}]}, f"{CAPTURES_KEY}.captures[0].key"),
    ({"version": 1, "captures": [{"key": "1", "launches": [{"call": "cuLaunchKernel", "op": {"dims": []}}]}]},
     f"{CAPTURES_KEY}.captures[0].launches[0].op.name"),
])
def test_a_broken_capture_record_is_refused_naming_the_field(tmp_path: Path, block: dict, field: str) -> None:
    t = Trace()
    eager(t, 1000, 5000)
    t.head[CAPTURES_KEY] = block
    with pytest.raises(InputError, match=field.replace("[", r"\[").replace("]", r"\]")):
        read_trace(t.write(tmp_path / "t.json.gz"))


def test_the_committed_cudagraph_trace_says_why_its_replay_is_unmodelled() -> None:
    """The H200 trace of a reduce-overhead Llama forward holds the replay alone (no warm-up, no capture): each
    replayed kernel says so and how to get a model, and the graph launch's delay is measured from the call's start
    (49 µs to the first kernel), not from its end (-62 µs: the call enqueues the whole graph)."""
    doc, notes = import_traces([DATA / "compiled" / "llama-infer-cudagraph.json.gz"])
    kernels = [u for u in doc["unmodelled"] if u["op"] == GRAPH_OP]
    assert len(kernels) == 31
    assert all("no launch of this kernel (name, grid, block) outside the graph in this trace" in u["why"]
               and "roofline profile --with torch" in u["why"] for u in kernels)
    device = doc["timeline"]["devices"][0]
    graph = device["graph_launch_delay"]
    assert graph["count"] == 1 and graph["p50"] == pytest.approx(49.36e-6, abs=0.01e-6)
    assert device["launch_delay"]["count"] == 1  # the one cudaLaunchKernel, measured as HTA does


CAPTURED_BEFORE_THE_RANGE = """\
import torch
g = torch.cuda.CUDAGraph()
g.replay()  # never captured by the recorder's count: not annotated
g.capture_begin()
torch.mark("captured")
g.capture_end()
torch.cuda.profiler.start()
g.replay()
torch.cuda.profiler.stop()
"""


def test_profile_records_a_capture_before_its_range_and_annotates_the_replays(tmp_path: Path) -> None:
    """`profile --with torch` (roofline.kineto.capture) around a program that captures a graph before its range and
    replays it inside: the capture gets a profiler session of its own (the fake's first export: a trace holding
    the capture's ops and calls), its calls and ops go into the written trace's head, the replay in the range is
    annotated with its capture, and the import models the replayed kernels through the captured ops."""
    side = Trace()
    capture(side, 1000)
    main = Trace()
    main.annotate("roofline.graph 1", 2990, 100)  # what the fake's trace cannot make itself: the real annotation
    replay(main, 3000, 6000)
    traces = os.pathsep.join(str(p) for p in (side.write(tmp_path / "side.json"), main.write(tmp_path / "main.json")))
    proc, out, _ = run_capture(tmp_path, script(tmp_path, CAPTURED_BEFORE_THE_RANGE), "--range", "start-stop",
                               trace="t.json.gz", FAKE_TORCH_TRACES=traces)
    assert proc.returncode == 0, proc.stderr
    assert "CUDA graphs: 1 capture before the range recorded" in proc.stderr
    assert fake(out)["marks"] == ["roofline.graph 1 begins", "replay", "roofline.graph 1 ends"]
    trace = read_trace(out)
    assert [(c.key, [launch.call for launch in c.launches]) for c in trace.captures] == [
        ("1", ["cudaLaunchKernel", "cuLaunchKernel"])]
    assert [launch.op.name for launch in trace.captures[0].launches] == ["aten::mm", SILU]
    doc, _ = import_traces([out], "h200")
    entries = graph_entries(doc)
    assert entries[GEMM]["graph"]["matched"] == "capture" and entries[GEMM]["flops"] == pytest.approx(GEMM_FLOPS)
    assert "recorded by profile outside its range" in entries[GEMM]["model"]["note"] and not doc["unmodelled"]


def test_a_capture_inside_the_range_is_left_to_the_trace(tmp_path: Path) -> None:
    """Recording the whole run, the capture is in the trace itself: no session of its own, no head block."""
    proc, out, _ = run_capture(tmp_path, script(tmp_path, CAPTURED_BEFORE_THE_RANGE), trace="t.json")
    assert proc.returncode == 0, proc.stderr
    assert fake(out)["marks"] == ["replay", "capture_begin", "captured", "capture_end", "roofline.graph 1 begins",
                                  "replay", "roofline.graph 1 ends"]
    assert CAPTURES_KEY not in json.loads(out.read_text()) and "CUDA graphs" not in proc.stderr


# ---- the H100 run of benchmarks/h200_cudagraph_capture.py (2026-12-06, torch 2.11, Inductor's cudagraph trees) ----

H100 = DATA / "compiled"
H100_PROFILE = H100 / "cudagraph-trees-h100-profile.json.gz"  # `profile --with torch --range start-stop`, as saved
H100_QKV = "nvjet_sm90_tst_192x128_64x5_1x2_h_bz_coopB_TNT"  # the 2048x1024 @ 1024x3072 GEMM
REPLAY_KINDS = ["kernel"] * 2 + ["memset"] + ["kernel"] * 9 + ["memset"] + ["kernel"] * 8


def _load(path: Path) -> dict[str, Any]:
    with gzip.open(path, "rt") as f:
        return json.load(f)


def _written(doc: dict[str, Any], path: Path) -> Path:
    path.write_text(json.dumps(doc))
    return path


def test_the_h100_profile_of_cudagraph_trees_models_every_replayed_kernel() -> None:
    """The trace `profile --with torch` saved on the H100: one replay of 21 GPU events, annotated `roofline.graph 2`;
    the capture it names was recorded with the whole session, so its 23 calls begin with the two fill_ kernels
    CUDAGraph::capture_begin runs before the stream capture (the generator's seed and offset). Each replayed event
    is matched to its node (21 of the 23 calls, the last ones) and modelled: the step's FLOPs are the two layers'
    GEMMs and attention, MFU over the replay's 0.558 ms window ~19.8 % of the BF16 peak."""
    doc, _ = import_traces([H100_PROFILE], "h100-sxm")
    replayed = [e for e in doc["kernels"] + doc["unmodelled"] if "graph" in e]
    assert len(replayed) == 21 and not doc["unmodelled"]
    assert {e["graph"]["matched"] for e in replayed} == {"capture"}
    qkv = [e for e in replayed if e["kernel_name"] == H100_QKV]
    assert [e["op"] for e in qkv] == ["aten::mm", "aten::mm"]
    assert qkv[0]["flops"] == pytest.approx(2 * 2048 * 1024 * 3072)
    assert "node 2 of 21" in qkv[0]["model"]["note"] and "the record's first 2 calls ran before" in \
        qkv[0]["model"]["note"]
    step = doc["timeline"]["step"]
    assert step["model_flops"] == pytest.approx(2 * (2 * 2048 * 1024 * (3072 + 1024 + 3 * 2816)
                                                     + 4 * 16 * 512 * 512 * 64 * 2), rel=1e-3)
    assert step["mfu"] == pytest.approx(0.198, abs=0.002)
    delay = doc["timeline"]["devices"][0]["graph_launch_delay"]
    assert delay["count"] == 1 and delay["p50"] == pytest.approx(30.74e-6, abs=0.01e-6)


def test_without_the_annotation_a_replay_is_matched_to_a_recorded_capture_by_its_kernel_sequence(
        tmp_path: Path) -> None:
    """A replay made through a call the recorder did not wrap has no `roofline.graph` annotation: the recorded
    capture whose calls line up with its events (kinds, Triton kernel names) is used, and the note says so."""
    raw = _load(H100_PROFILE)
    raw["traceEvents"] = [e for e in raw["traceEvents"] if not str(e.get("name", "")).startswith("roofline.graph")]
    trace = read_trace(_written(raw, tmp_path / "t.json"))
    assert not trace.graph_marks and len(trace.captures) == 2
    doc, _ = import_traces([tmp_path / "t.json"], "h100-sxm")
    replayed = [e for e in doc["kernels"] + doc["unmodelled"] if "graph" in e]
    assert len(replayed) == 21 and not doc["unmodelled"]
    assert all("found by its kernel sequence" in e["graph"]["note"] for e in replayed)


def test_recorded_captures_that_fit_a_replay_with_different_ops_are_not_guessed(tmp_path: Path) -> None:
    """Two recorded captures line up with an unannotated replay (cudagraph trees capture one graph per input shape:
    same kernels, other shapes): which one it ran is not known, and the import says so rather than pick one."""
    t = Trace()
    ops = read_trace(_eager_only(tmp_path)).ops
    wide = dataclasses.replace(ops[0], dims=([64, 128], [128, 512]))
    t.head[CAPTURES_KEY] = captures_block([
        Capture("1", (CaptureLaunch("cudaLaunchKernel", ops[0]), CaptureLaunch("cuLaunchKernel", ops[1])), None,
                None, "profile"),
        Capture("2", (CaptureLaunch("cudaLaunchKernel", wide), CaptureLaunch("cuLaunchKernel", ops[1])), None,
                None, "profile")])
    replay(t, 3000, 6000)
    trace = read_trace(t.write(tmp_path / "t.json.gz"))
    items = [a for a in match_replays(trace, attribute(trace)) if a.graph]
    assert len(items) == 2 and all(a.match is None for a in items)
    assert all("2 captures profile recorded line up with its 2 GPU events but launched different ops, and no "
               "`roofline.graph` annotation says which one it replays" in a.unmatched for a in items)


def test_a_capture_session_keeps_only_the_graphs_nodes() -> None:
    """The capture sessions' events as the H100 run recorded them (cut from its plain trace, the same calls a
    session of profile's own sees): capture_begin's two fill_ kernels run on the GPU before
    cudaStreamBeginCapture and are no nodes; the 21 calls between the markers are. The first capture of
    cudagraph trees has no node at all and is kept empty."""
    second = read_trace(H100 / "cudagraph-trees-h100-capture2.json.gz")
    assert sum(1 for e in second.gpu if e.kind == "kernel") == 2  # the two fills ran
    (capture,) = captures_in(second, whole=True)
    assert [call_kind(c.call) for c in capture.launches] == REPLAY_KINDS
    assert capture.launches[0].op.name == "triton_per_fused__to_copy_add_mean_mul_pow_rsqrt_0"
    assert [len(c.launches) for c in captures_in(read_trace(H100 / "cudagraph-trees-h100-capture1.json.gz"),
                                                 whole=True)] == [0]


def test_a_capture_session_without_markers_drops_the_calls_that_ran(tmp_path: Path) -> None:
    """A session whose trace holds no cudaStreamBeginCapture/EndCapture: the calls that put work on the GPU in
    it ran (capture_begin's fills), a captured call only adds a node; the rest are the graph's nodes."""
    raw = _load(H100 / "cudagraph-trees-h100-capture2.json.gz")
    raw["traceEvents"] = [e for e in raw["traceEvents"] if "StreamBeginCapture" not in e["name"]
                          and "StreamEndCapture" not in e["name"]]
    (capture,) = captures_in(read_trace(_written(raw, tmp_path / "s.json")), whole=True)
    assert [call_kind(c.call) for c in capture.launches] == REPLAY_KINDS


CUDAGRAPH_TREES = """\
import torch
empty = torch.cuda.CUDAGraph()  # cudagraph trees' first capture: an empty graph
empty.capture_begin()
empty.capture_end()
g = torch.cuda.CUDAGraph()  # the compiled forward's
g.capture_begin()
g.capture_end()
torch.cuda.profiler.start()
g.replay()
torch.cuda.profiler.stop()
"""


def test_profile_records_the_real_captures_nodes_and_models_the_replay(tmp_path: Path) -> None:
    """`profile --with torch` with the H100's two capture sessions and its replay (the saved trace without its
    head): the recorded captures hold 0 and 21 calls (not 2 and 23), and the replay annotated with the second is
    matched node for node, every event modelled."""
    sessions = [_written(_load(H100 / f"cudagraph-trees-h100-capture{n}.json.gz"), tmp_path / f"s{n}.json")
                for n in (1, 2)]
    main = _load(H100_PROFILE)
    del main[CAPTURES_KEY]
    traces = os.pathsep.join(str(p) for p in (*sessions, _written(main, tmp_path / "main.json")))
    proc, out, _ = run_capture(tmp_path, script(tmp_path, CUDAGRAPH_TREES), "--range", "start-stop",
                               trace="t.json.gz", FAKE_TORCH_TRACES=traces)
    assert proc.returncode == 0, proc.stderr
    assert "CUDA graphs: 2 captures before the range recorded for their replays' ops (calls by capture: 1: 0, " \
           "2: 21)" in proc.stderr
    trace = read_trace(out)
    assert [(c.key, len(c.launches)) for c in trace.captures] == [("1", 0), ("2", 21)]
    doc, _ = import_traces([out], "h100-sxm")
    replayed = [e for e in doc["kernels"] + doc["unmodelled"] if "graph" in e]
    assert len(replayed) == 21 and not doc["unmodelled"]
    assert all(e["graph"]["matched"] == "capture" and "ran before" not in e["graph"]["note"] for e in replayed)


def test_a_capture_session_with_markers_on_one_thread_ignores_the_others(tmp_path: Path) -> None:
    """A graph captured on one thread (autograd's, for a backward graph) while another thread launched work in the
    same session: only the calls between the markers are the graph's."""
    raw = _load(H100 / "cudagraph-trees-h100-capture2.json.gz")
    raw["traceEvents"].append({"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 999,
                               "ts": raw["traceEvents"][0]["ts"], "dur": 3.0, "args": {"correlation": 99999999}})
    (capture,) = captures_in(read_trace(_written(raw, tmp_path / "s.json")), whole=True)
    assert [call_kind(c.call) for c in capture.launches] == REPLAY_KINDS


def test_an_annotated_replay_without_its_record_takes_no_other_record(tmp_path: Path) -> None:
    """profile annotated the replay with capture 9, which it did not record (more captures than it records): the
    record of capture 7 lines up kind for kind but is another graph; the replay falls back to the same kernel."""
    t = Trace()
    ops = read_trace(_eager_only(tmp_path)).ops
    wide = dataclasses.replace(ops[0], dims=([64, 128], [128, 512]))
    t.head[CAPTURES_KEY] = captures_block([Capture(
        "7", (CaptureLaunch("cudaLaunchKernel", wide), CaptureLaunch("cuLaunchKernel", ops[1])), None, None,
        "profile")])
    eager(t, 1000, 5000)
    t.annotate("roofline.graph 9", 2990, 100)
    replay(t, 3000, 6000)
    doc, _ = import_traces([t.write(tmp_path / "t.json.gz")], "h200")
    entries = graph_entries(doc)
    assert entries[GEMM]["graph"]["matched"] == "kernel" and entries[GEMM]["flops"] == pytest.approx(GEMM_FLOPS)


def test_a_graph_launched_while_its_stream_is_busy_is_delayed_from_the_end_of_that_work(tmp_path: Path) -> None:
    """Back-to-back replays (the H100's whole-run trace: a replay launched while the previous one still ran took
    124 µs from its call to its first kernel, 4 µs after the previous work ended): the second graph's delay runs
    from the end of the work before it on its stream, not from its call, which waited in the queue."""
    t = Trace()
    replay(t, 3000, 3030)  # the first kernel 30 µs after the call; the graph's events end at 3045
    replay(t, 3035, 3049)  # the call at 3035, while the first graph runs: 4 µs after it ended, not 14
    trace = read_trace(t.write(tmp_path / "t.json"))
    delay = launch_delay(trace.gpu, trace.launches, graphs=True)
    assert delay is not None and delay.count == 2
    assert delay.max == pytest.approx(30e-6) and delay.p50 == pytest.approx(17e-6)


def test_a_captures_record_too_large_for_the_trace_head_is_refused_not_a_traceback(run_cli, tmp_path, monkeypatch):
    """profile writes its captures' record before traceEvents; a record longer than the stretch the batch reader
    searches for the array (MAX_BATCH, made 1 MiB here) raised a bare ValueError out of EventStream's constructor
    (internal error, exit 101). Now the text is parsed whole where it is short enough, else refused naming it."""
    import roofline.kineto.chunks as chunks
    import roofline.kineto.reader as reader

    monkeypatch.setattr(chunks, "MAX_BATCH", 1 << 20)
    monkeypatch.setattr(reader, "STREAM_FROM", 1 << 16)
    step = json.loads((Path(__file__).parent / "data" / "kineto" / "step.json").read_text())
    op = {"name": "aten::mm", "dims": [[64, 64], [64, 64]], "types": ["float", "float"]}
    head = {"version": 1, "captures": [{"key": "1", "launches": [{"call": "cudaLaunchKernel", "op": op}] * 40_000}]}
    path = tmp_path / "t.json"
    path.write_text(json.dumps({CAPTURES_KEY: head, **step}))
    assert path.stat().st_size > 2 << 20
    trace = read_trace(path)  # short enough to parse whole: read, the record kept
    assert len(trace.captures) == 1 and len(trace.captures[0].launches) == 40_000
    monkeypatch.setattr(reader, "MAX_WHOLE_TEXT", 1 << 20)
    r = run_cli("import", "torch", path, "--spec", "h200", "-o", tmp_path / "r.json")
    assert r.code == 2 and "traceEvents" in r.err and "Traceback" not in r.err, r.err


def test_profile_leaves_out_the_captures_past_what_the_trace_head_holds(monkeypatch, capsys):
    """64 recorded graphs of thousands of calls would write a head the reader cannot get past: the captures past
    MAX_HEAD_BYTES are counted as not recorded (the note says so), and what is written is readable."""
    import roofline.kineto.capture as capture

    monkeypatch.setattr(capture, "MAX_HEAD_BYTES", 4000)
    op = __import__("roofline.kineto.reader", fromlist=["Op"]).Op("aten::mm", 0.0, 1.0, "1", ((64, 64),), ("float",),
                                                                 (), (), None)
    recorder = capture.GraphRecorder(None, None, None)
    recorder.captures = [Capture(str(i), (CaptureLaunch("cudaLaunchKernel", op),) * 10, None, None, "profile")
                         for i in range(6)]
    head = recorder.head()
    assert 0 < len(head["captures"]) < 6 and len(json.dumps(head)) <= 4000 + 100
    assert recorder.skipped == [str(i) for i in range(len(head["captures"]), 6)]
    assert "not recorded" in capsys.readouterr().err
    assert recorder.head() == head  # asked again (the note after the write): the same record
