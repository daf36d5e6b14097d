"""Two programs side by side (issue 40): `roofline diff A B` in each format, read back; groups on one side only
(an eager op named as fused into the compiled program's Triton kernels); the program's change equal to the change
of GPU time; and `report B --baseline A` on grouped profiles of several steps (ProfilerStep#N), which gates an A/A
pair clean and catches a 5 % slowdown of one group, by name. The synthetic traces are made here (times in µs)."""

from __future__ import annotations

import csv
import io
import json
import random
from pathlib import Path
from typing import Any

import pytest

from conftest import DATA
from roofline.kineto.document import import_traces
from roofline.records.diff import DIFF_SCHEMA, Diff, diff, diff_json_schema
from roofline.records.files import ResultsFile

EAGER = DATA / "kineto" / "h200-train.json.gz"
COMPILED = DATA / "kineto" / "compiled" / "llama-train-compiled.json.gz"
GEMM = "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1_execute_kernel__5x_cublas"
ADD = "void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<c10::BFloat16> >(int)"
SIZE = 4096  # a 4096^3 BF16 matmul (137 GFLOP, ~139 µs at the H200's 989 TFLOP/s) and a 4096x4096 BF16 add


# ---- synthetic traces of several steps -----------------------------------------------------------------------------


def _trace(steps: int, seed: int, noise: float, slower: dict[str, float] | None = None) -> dict[str, Any]:
    """A trace of `steps` ProfilerStep ranges, each an aten::mm (one GEMM, ~200 µs) and an aten::add (one
    elementwise kernel, ~40 µs), every kernel's duration off its nominal by up to ±noise (uniform, seeded);
    `slower` stretches an op's kernels by a factor."""
    rng = random.Random(seed)
    slower = slower or {}
    events: list[dict[str, Any]] = []
    bf16 = "c10::BFloat16"
    t = 1_000.0
    corr = 0
    for step in range(1, steps + 1):
        start = t
        gpu = t + 50.0
        for op, kernel, nominal in (("aten::mm", GEMM, 200.0), ("aten::add", ADD, 40.0)):
            corr += 1
            dims = [[SIZE, SIZE], [SIZE, SIZE]]
            args = {"External id": corr, "Input Dims": dims + ([[]] if op == "aten::add" else []),
                    "Input type": [bf16, bf16] + (["Scalar"] if op == "aten::add" else []),
                    "Input Strides": [[SIZE, 1], [SIZE, 1]] + ([[]] if op == "aten::add" else []),
                    "Concrete Inputs": ["", ""] + (["1"] if op == "aten::add" else [])}
            events.append({"ph": "X", "cat": "cpu_op", "name": op, "pid": 1, "tid": 1, "ts": t, "dur": 20.0,
                           "args": args})
            events.append({"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1,
                           "ts": t + 5.0, "dur": 5.0, "args": {"correlation": corr}})
            dur = nominal * slower.get(op, 1.0) * (1.0 + rng.uniform(-noise, noise))
            events.append({"ph": "X", "cat": "kernel", "name": kernel, "pid": 0, "tid": 7, "ts": gpu, "dur": dur,
                           "args": {"correlation": corr, "device": 0, "stream": 7, "grid": [132, 1, 1],
                                    "block": [256, 1, 1]}})
            gpu += dur + 2.0
            t += 25.0
        t = max(t, gpu) + 10.0
        events.append({"ph": "X", "cat": "user_annotation", "name": f"ProfilerStep#{step}", "pid": 1, "tid": 1,
                       "ts": start, "dur": t - start, "args": {}})
    return {"schemaVersion": 1, "deviceProperties": [{"id": 0, "name": "NVIDIA H200"}], "traceEvents": events}


def _profile(tmp_path: Path, name: str, **kwargs: Any) -> Path:
    """The trace imported as `import torch` imports it, written as a results file."""
    trace = tmp_path / f"{name}.trace.json"
    trace.write_text(json.dumps(_trace(**kwargs)), encoding="utf-8")
    doc, _ = import_traces([trace], "h200")
    out = tmp_path / f"{name}.json"
    out.write_text(json.dumps(doc), encoding="utf-8")
    return out


@pytest.fixture(scope="module")
def eager_compiled(tmp_path_factory: pytest.TempPathFactory) -> tuple[ResultsFile, ResultsFile]:
    docs = []
    for path in (EAGER, COMPILED):
        doc, _ = import_traces([path], "h200")
        docs.append(ResultsFile.of(doc, path))
    return docs[0], docs[1]


# ---- the diff ------------------------------------------------------------------------------------------------------


def test_program_change_is_the_change_of_gpu_time_and_the_rows_add_up(eager_compiled):
    a, b = eager_compiled
    d = diff(a, b)
    gpu_a, gpu_b = a.typed.program().gpu_time, b.typed.program().gpu_time
    assert d.delta == pytest.approx(gpu_b - gpu_a, rel=1e-12)
    assert sum(r.delta for r in d.rows) == pytest.approx(d.delta, rel=1e-9)
    assert d.rows[-1].kind == "unmodelled"  # each side's unmodelled time is a row of its own, last
    moved = [abs(r.delta) for r in d.rows[:-1]]
    assert moved == sorted(moved, reverse=True)  # the groups that moved most first
    shares = [r.a.share for r in d.rows if r.a is not None]
    assert sum(shares) == pytest.approx(1.0, rel=1e-9)  # shares of ALL of A's GPU time, the unmodelled row included


def test_an_eager_op_names_the_triton_kernels_it_was_fused_into(eager_compiled):
    d = diff(*eager_compiled)
    rows = {r.name: r for r in d.rows}
    pow_ = rows["aten::pow"]
    assert pow_.kind == "a-only" and pow_.b is None
    assert pow_.fused and all(k.startswith("triton_") and "pow" in k.split("_") for k in pow_.fused)
    assert pow_.where.startswith("fused into triton_")
    kernel = next(r for r in d.rows if r.kind == "b-only" and r.name == "triton_poi_fused__unsafe_view_mul_silu")
    assert set(kernel.fused) == {"aten::mul", "aten::silu"}
    assert rows["aten::copy_"].where == "only in A"  # a copy_ no Triton kernel's words name: said so, not guessed
    assert rows["aten::mm"].kind == "both"


def test_each_format_and_json_read_back(eager_compiled, run_cli, tmp_path):
    a, b = eager_compiled
    for side, result in (("a", a), ("b", b)):
        (tmp_path / f"{side}.json").write_text(json.dumps(result.doc), encoding="utf-8")
    args = ["diff", tmp_path / "a.json", tmp_path / "b.json"]
    r = run_cli(*args, "--format", "json", "-o", tmp_path / "d.json")
    assert r.code == 0, r.err
    written = json.loads((tmp_path / "d.json").read_text(encoding="utf-8"))
    assert written["schema"] == DIFF_SCHEMA
    back = Diff.from_json(written, tmp_path / "d.json")
    from roofline.records.files import load_results

    assert back == diff(load_results(tmp_path / "a.json"), load_results(tmp_path / "b.json"))
    jsonschema = pytest.importorskip("jsonschema")
    jsonschema.validate(written, diff_json_schema())

    r = run_cli(*args, "--format", "markdown")
    assert r.code == 0, r.err
    assert "| GPU time | 6.52 ms | 4 ms | −2.52 ms (−38.6%) |" in r.out
    assert "aten::pow" in r.out and "fused into triton" in r.out.replace("\\_", "_")

    r = run_cli(*args, "--format", "csv")
    rows = list(csv.DictReader(io.StringIO(r.out)))
    assert rows[0]["group"] == "(program)"
    assert float(rows[0]["delta"]) == pytest.approx(back.delta)
    assert rows[-1]["kind"] == "unmodelled"

    r = run_cli(*args)
    assert r.code == 0, r.err
    assert "GPU time" in r.out and "MFU" in r.out and "aten::pow" in r.out


def test_the_table_fits_80_columns_and_keeps_names_whole(eager_compiled, run_cli, tmp_path, monkeypatch):
    a, b = eager_compiled
    (tmp_path / "a.json").write_text(json.dumps(a.doc), encoding="utf-8")
    (tmp_path / "b.json").write_text(json.dumps(b.doc), encoding="utf-8")
    monkeypatch.setenv("COLUMNS", "80")
    r = run_cli("diff", tmp_path / "a.json", tmp_path / "b.json")
    assert r.code == 0, r.err
    assert max(len(line) for line in r.out.splitlines()) <= 80
    assert "…" not in r.out
    # a long kernel name wraps over lines at its underscores, every character kept: read back from the first column
    firsts = [line.split()[0] for line in r.out.splitlines() if line.split()]
    joined = "".join(firsts)
    name = ("triton_red_fused__log_softmax__log_softmax_backward_data__to_copy_add_arange_clone_eq_expand_nll_loss_"
            "backward_nll_loss_forward_scalar_tensor_slice_view_where")
    assert name in joined


def test_a_trace_is_imported_on_the_way(run_cli):
    r = run_cli("diff", EAGER, COMPILED, "--format", "json")
    assert r.code == 0, r.err
    assert json.loads(r.out)["a"]["gpu_time"] == pytest.approx(6.523041e-3, rel=1e-6)


def test_a_newer_diff_is_refused_naming_the_field(tmp_path):
    from roofline.errors import InputError

    with pytest.raises(InputError, match="schema.*upgrade"):
        Diff.from_json({"schema": "roofline/diff/v9"}, tmp_path / "d.json")


def test_differently_grouped_sides_are_refused(tmp_path, run_cli):
    a = _profile(tmp_path, "a", steps=2, seed=1, noise=0.0)
    r = run_cli("diff", a, EAGER, "--group-by", "kernel")
    assert r.code == 2 and "grouped by op" in r.err and "kernel" in r.err


# ---- several steps: per-step times and the noise-aware gate ---------------------------------------------------------


def test_steps_give_per_step_times_and_samples(tmp_path):
    a = _profile(tmp_path, "a", steps=6, seed=1, noise=0.0)
    b = _profile(tmp_path, "b", steps=3, seed=2, noise=0.0)
    from roofline.records.files import load_results

    d = diff(load_results(a), load_results(b))
    assert d.per_step and (d.a.steps, d.b.steps) == (6, 3)
    mm = next(r for r in d.rows if r.name == "aten::mm")
    assert mm.a_time == pytest.approx(200e-6) and mm.b_time == pytest.approx(200e-6)  # per step, not 6x vs 3x
    assert len(mm.a.samples) == 6 and len(mm.b.samples) == 3
    assert d.delta == pytest.approx(0.0, abs=1e-12)


def test_an_a_a_pair_of_several_steps_gates_clean(tmp_path, run_cli):
    a = _profile(tmp_path, "a", steps=8, seed=1, noise=0.005)
    b = _profile(tmp_path, "b", steps=8, seed=2, noise=0.005)
    r = run_cli("report", b, "--baseline", a, "--max-regression", "3%", "--format", "json")
    assert r.code == 0, r.err
    doc = json.loads(r.out)
    assert doc["summary"]["baseline"]["compared"] == 2 and doc["summary"]["ok"]
    assert all(len(row["time_ci"] or []) in (0, 2) for row in doc["rows"])


def test_noise_inside_the_intervals_is_not_a_regression(tmp_path, run_cli):
    """Two runs of the same program with ±30 % jitter per step: the medians may differ by more than the limit,
    yet the bootstrap intervals overlap, so the 'ci' test passes where comparing medians alone fails."""
    a = _profile(tmp_path, "a", steps=6, seed=3, noise=0.3)
    b = _profile(tmp_path, "b", steps=6, seed=11, noise=0.3)
    median = run_cli("report", b, "--baseline", a, "--max-regression", "3%", "--regression-test", "median")
    ci = run_cli("report", b, "--baseline", a, "--max-regression", "3%", "--format", "json")
    assert median.code == 1, median.out  # the medians moved by more than 3 %
    assert ci.code == 0, ci.err
    notes = [n for row in json.loads(ci.out)["rows"] for n in row.get("notes", [])]
    assert any("within noise" in n for n in notes)


def test_a_five_percent_slowdown_of_one_group_is_caught_and_named(tmp_path, run_cli):
    a = _profile(tmp_path, "a", steps=8, seed=1, noise=0.005)
    b = _profile(tmp_path, "b", steps=8, seed=2, noise=0.005, slower={"aten::add": 1.05})
    for fmt in ("table", "junit"):
        r = run_cli("report", b, "--baseline", a, "--max-regression", "3%", "--format", fmt)
        assert r.code == 1, r.out
        assert "aten::add" in r.err and "aten::mm" not in r.err
    junit = run_cli("report", b, "--baseline", a, "--max-regression", "3%", "--format", "junit").out
    import xml.etree.ElementTree as ET

    cases = {c.get("name"): c for c in ET.fromstring(junit).iter("testcase")}
    failed = [name for name, c in cases.items() if c.find("failure") is not None]
    assert len(failed) == 1 and failed[0].endswith("aten::add")
    assert "slower than baseline" in cases[failed[0]].find("failure").get("message")


def test_max_regression_without_baseline_and_an_ungrouped_baseline_are_refused(tmp_path, run_cli):
    a = _profile(tmp_path, "a", steps=2, seed=1, noise=0.0)
    r = run_cli("report", a, "--max-regression", "5%")
    assert r.code == 2 and "--baseline" in r.err
    flat = tmp_path / "flat.json"
    doc = json.loads(a.read_text(encoding="utf-8"))
    doc.pop("groups"), doc.pop("program")
    flat.write_text(json.dumps(doc), encoding="utf-8")
    r = run_cli("report", a, "--baseline", flat)
    assert r.code == 2 and "has no groups" in r.err


def test_the_chart_draws_both_sides_and_the_page_hovers_both(eager_compiled, run_cli, tmp_path):
    pytest.importorskip("matplotlib")
    a, b = eager_compiled
    (tmp_path / "a.json").write_text(json.dumps(a.doc), encoding="utf-8")
    (tmp_path / "b.json").write_text(json.dumps(b.doc), encoding="utf-8")
    r = run_cli("diff", tmp_path / "a.json", tmp_path / "b.json", "--format", "csv", "--chart", tmp_path / "d.png")
    assert r.code == 0, r.err
    assert (tmp_path / "d.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    r = run_cli("diff", tmp_path / "a.json", tmp_path / "b.json", "--format", "csv", "--chart", tmp_path / "d.html")
    assert r.code == 0, r.err
    page = (tmp_path / "d.html").read_text(encoding="utf-8")
    import re

    data = json.loads(re.search(r'id="roofline-data">(.*?)</script>', page, re.S).group(1))
    ids = {p["id"] for p in data["points"]}
    assert ids and all(f'id="{i}"' in page for i in ids)  # every hover target is a drawn point
    mm = next(p for p in data["points"] if p["name"] == "aten::mm")
    assert "A: 1.95 ms" in mm["tooltip"] and "B: 1.94 ms" in mm["tooltip"] and "change:" in mm["tooltip"]
    assert f'id="{mm["id"]}-a"' in page  # A's point too, with the arrow between them
    r = run_cli("diff", tmp_path / "a.json", tmp_path / "b.json", "--chart", tmp_path / "d.txt")
    assert r.code == 2 and ".png" in r.err


def test_kernels_are_matched_by_name_and_an_eager_kernel_names_where_its_ops_went(run_cli):
    """--group-by kernel: the unit is the kernel; an eager kernel's ATen ops (its launches' op) lead to the Triton
    kernels that fused them, and a kernel on both sides is one row."""
    r = run_cli("diff", EAGER, COMPILED, "--group-by", "kernel", "--format", "json")
    assert r.code == 0, r.err
    rows = {row["name"]: row for row in json.loads(r.out)["rows"]}
    assert rows["at::native::vectorized_elementwise_kernel"]["kind"] == "both"
    softmax = rows["at::native::cunn_SoftMaxForward"]
    assert softmax["kind"] == "a-only" and softmax["role"] == "fused into"
    assert softmax["fused"] and all("_log_softmax_" in k for k in softmax["fused"])


def test_each_side_is_named_on_a_line_of_its_own_never_broken_mid_path(run_cli, monkeypatch):
    """The title gives each side a line as wide as the terminal allows: at 80 columns a 72-character path is whole."""
    monkeypatch.chdir(Path(__file__).resolve().parent.parent)
    monkeypatch.setenv("COLUMNS", "80")
    b = "tests/data/kineto/compiled/llama-train-compiled.json.gz"
    r = run_cli("diff", "tests/data/kineto/h200-train.json.gz", b, "--spec", "h200")
    assert r.code == 0, r.err
    assert f"B: {b} (NVIDIA H200)" in r.out.splitlines()[1]


# ---- hostile and mismatched inputs (review) -----------------------------------------------------------------------


def test_the_same_gpu_judged_against_another_spec_is_said(tmp_path):
    """A trace imported with --spec h100 on one side: the device name is the trace's on both, but every fraction
    of ceiling is of other ceilings; the diff must say so rather than show a +3.8 pp 'change' of an identical run."""
    from roofline.records.diff import diff as diff_of
    from roofline.records.files import load_results
    a = _profile(tmp_path, "a", steps=2, seed=1, noise=0.0)
    doc, _ = import_traces([tmp_path / "a.trace.json"], "h100")
    b = tmp_path / "b.json"
    b.write_text(json.dumps(doc), encoding="utf-8")
    d = diff_of(load_results(a), load_results(b))
    assert any("spec h200-sxm" in n and "h100-sxm" in n for n in d.notes), d.notes


def test_sides_of_different_step_counts_say_the_wall_figures_move_with_it(tmp_path):
    """The same program, 1 step against 4: GPU time per step agrees, but the window of 4 steps holds 3 gaps
    between steps, so wall time, idle and MFU per step differ with the count alone; the diff says so."""
    from roofline.records.diff import diff as diff_of
    from roofline.records.files import load_results
    one = _profile(tmp_path, "one", steps=1, seed=1, noise=0.0)
    four = _profile(tmp_path, "four", steps=4, seed=1, noise=0.0)
    d = diff_of(load_results(one), load_results(four))
    assert d.delta == pytest.approx(0.0, abs=1e-12)
    assert any("A holds 1 step and B 4" in n for n in d.notes), d.notes
    same = diff_of(load_results(four), load_results(four))
    assert not same.notes


def test_one_step_against_ten_of_the_same_kernels_changes_nothing(tmp_path, run_cli, monkeypatch):
    """A mean over 10 steps of the same kernels is a float sum's rounding off one step's time: no group moved, so
    none reads '+0.0000000542 ps' or '+0.0%', none sorts first for it, and the 80-column table keeps its columns."""
    from roofline.records.diff import diff as diff_of
    from roofline.records.files import load_results
    one = _profile(tmp_path, "one", steps=1, seed=1, noise=0.0)
    ten = _profile(tmp_path, "ten", steps=10, seed=1, noise=0.0)
    d = diff_of(load_results(one), load_results(ten))
    assert [r.delta for r in d.rows] == [0.0] * len(d.rows)
    assert [r.change for r in d.rows[:-1]] == [0.0] * (len(d.rows) - 1)
    monkeypatch.setenv("COLUMNS", "80")
    r = run_cli("diff", one, ten)
    assert r.code == 0, r.err
    assert " ps" not in r.out and "+0.0%" not in r.out, r.out
    left_out = [line for line in (r.out + r.err).splitlines() if "Left out" in line]
    assert all("ceil" not in line and "recov" not in line for line in left_out), left_out


def test_a_baseline_of_one_step_is_said_as_such_and_unchanged_reads_zero(tmp_path, run_cli, monkeypatch):
    """B of 10 steps against a baseline of 1 step of the same kernels: both mark their steps, so the report must not
    claim 'no ProfilerStep ranges'; it compares per-step means without an interval, and the unchanged groups read
    0.0%, not '+0.0%' or '−0.0%' from a float sum's rounding."""
    one = _profile(tmp_path, "one", steps=1, seed=1, noise=0.0)
    ten = _profile(tmp_path, "ten", steps=10, seed=1, noise=0.0)
    monkeypatch.setenv("COLUMNS", "200")
    r = run_cli("report", ten, "--baseline", one, "--max-regression", "5%")
    assert r.code == 0, r.err
    words = " ".join(r.out.split())  # the table's title wraps to the table's width
    assert "no ProfilerStep ranges" not in words, r.out
    assert "means per step of 10 vs 1 steps" in words, r.out
    assert "+0.0%" not in r.out and "−0.0%" not in r.out, r.out


def test_a_limit_under_one_percent_is_printed_as_given(tmp_path, run_cli, monkeypatch):
    """--max-regression 0.5% printed as '0%' reads 'no slowdown allowed' and contradicts the failures it names."""
    a = _profile(tmp_path, "a", steps=4, seed=1, noise=0.0)
    b = _profile(tmp_path, "b", steps=4, seed=2, noise=0.0, slower={"aten::add": 1.2})
    monkeypatch.setenv("COLUMNS", "200")
    r = run_cli("report", b, "--baseline", a, "--max-regression", "0.5%")
    assert r.code == 1
    assert "--max-regression 0.5%" in " ".join(r.out.split()) and "over the 0.5% limit" in r.err, (r.out, r.err)
    assert "0% limit" not in r.err.replace("0.5% limit", "")


def test_gate_limits_are_printed_as_given(tmp_path, run_cli, monkeypatch):
    """--max-unmodelled 0.5% and --fail-below-program 66.9% name the limit the user gave: rounded to whole percent
    they read '0%' and 'a program at 66.6% is below the 67% gate' / '... below the 66% gate' (which contradicts)."""
    trace = _trace(steps=2, seed=1, noise=0.0)
    for e in trace["traceEvents"]:
        if e["name"] == "aten::add":
            e["name"] = "myext::unknown_op"  # no model: its kernel's time is unmodelled
    path = tmp_path / "t.json"
    path.write_text(json.dumps(trace), encoding="utf-8")
    doc, _ = import_traces([path], "h200")
    res = tmp_path / "r.json"
    res.write_text(json.dumps(doc), encoding="utf-8")
    monkeypatch.setenv("COLUMNS", "300")
    r = run_cli("report", res, "--max-unmodelled", "0.5%")
    assert r.code == 1
    assert "over the 0.5% --max-unmodelled gate" in " ".join(r.err.split()), r.err
    a = _profile(tmp_path, "a", steps=2, seed=1, noise=0.0)  # its program at 66.6% of ceiling
    r = run_cli("report", a, "--fail-below-program", "66.9%")
    assert r.code == 1
    assert "below the 66.9% gate" in " ".join(r.err.split()), r.err


def test_two_ranks_against_one_is_said_by_diff_and_refused_by_the_baseline_gate(tmp_path, run_cli, monkeypatch):
    """Rank 0 alone against ranks 0 and 1 together: every time of B sums two GPUs, so each group 'regressed'
    by ~100-170 %. diff says so; report --baseline refuses (exit 2) rather than fail every group on it."""
    ranks = [DATA / "kineto" / "rank0.json", DATA / "kineto" / "rank1.json.gz"]
    for name, traces in (("one", ranks[:1]), ("both", ranks)):
        doc, _ = import_traces(traces, "h200")
        (tmp_path / f"{name}.json").write_text(json.dumps(doc), encoding="utf-8")
    monkeypatch.setenv("COLUMNS", "300")
    r = run_cli("diff", tmp_path / "one.json", tmp_path / "both.json")
    assert r.code == 0, r.err
    assert "A holds 1 rank and B 2" in " ".join(r.out.split()), r.out
    assert "1 steps" not in r.out
    r = run_cli("report", tmp_path / "both.json", "--baseline", tmp_path / "one.json", "--max-regression", "5%")
    assert r.code == 2, (r.code, r.err)
    assert "holds 2 ranks and the baseline" in r.err and "Traceback" not in r.err
    r = run_cli("report", tmp_path / "both.json", "--baseline", tmp_path / "both.json", "--max-regression", "5%",
                "--max-unmodelled", "50%")
    assert r.code == 0, r.err


def test_an_ncu_profile_against_a_trace_is_said_by_diff_and_refused_by_the_baseline_gate(tmp_path, run_cli,
                                                                                          monkeypatch):
    """The same training step as ncu replayed it and as the trace timed it: 16 of 32 groups 'regressed' by the
    measurement alone. diff says whose times are whose; report --baseline refuses the pair (exit 2)."""
    import gzip
    csv_path = tmp_path / "train.ncu.csv"
    csv_path.write_bytes(gzip.decompress((DATA / "kineto" / "h200-train.ncu.csv.gz").read_bytes()))
    r = run_cli("import", "ncu", csv_path, "--spec", "h200", "--group-by", "op", "-o", tmp_path / "ncu.json")
    assert r.code == 0, r.err
    doc, _ = import_traces([EAGER], "h200")
    (tmp_path / "trace.json").write_text(json.dumps(doc), encoding="utf-8")
    monkeypatch.setenv("COLUMNS", "300")
    r = run_cli("diff", tmp_path / "trace.json", tmp_path / "ncu.json")
    assert r.code == 0, r.err
    assert "B's times are ncu's" in " ".join(r.out.split()), r.out
    r = run_cli("report", tmp_path / "ncu.json", "--baseline", tmp_path / "trace.json", "--max-regression", "5%")
    assert r.code == 2, (r.code, r.err)
    assert "the baseline's a trace's" in r.err and "Traceback" not in r.err


@pytest.mark.parametrize("key, value", [("mfu", 5.0), ("hfu", 0.9), ("unmodelled_share", 0.5),
                                        ("fraction_of_ceiling_wall", 0.99)])
def test_a_hand_edited_step_ratio_is_refused_naming_the_field(tmp_path, run_cli, key, value):
    """An edited 'mfu': 5.0 read as MFU 500 % (+451.9 pp) in diff and report; each of the step's ratios must agree
    with the figures it is made of, or the reader refuses the file (exit 2, the field named)."""
    a = _profile(tmp_path, "a", steps=2, seed=1, noise=0.0)
    doc = json.loads(a.read_text(encoding="utf-8"))
    doc["timeline"]["step"][key] = value
    edited = tmp_path / "edited.json"
    edited.write_text(json.dumps(doc), encoding="utf-8")
    for argv in (("diff", a, edited), ("report", edited)):
        r = run_cli(*argv)
        assert r.code == 2, (argv, r.code, r.out[-300:])
        assert f"edited.json: timeline.step.{key}" in r.err and "Traceback" not in r.err


def test_a_grouped_profile_as_a_kernel_results_baseline_is_refused(tmp_path, run_cli):
    """Kernel results against a grouped profile matched nothing and exited 1 as a failed gate; it is bad input."""
    a = _profile(tmp_path, "a", steps=2, seed=1, noise=0.0)
    r = run_cli("report", DATA / "results" / "h100.json", "--baseline", a, "--max-regression", "5%")
    assert r.code == 2, (r.code, r.err)
    assert "a.json: is a grouped profile" in r.err
