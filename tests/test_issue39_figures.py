"""Issue 39, "Nothing misleading, part 2": every figure of a descriptor, spec, results file or prediction held to
physical ranges and to its neighbours, and every writer's output read back by its own reader.

Each test fails on the code before the issue: a prediction for data no GPU holds, launch figures with no physical
meaning, a falling per-SM curve, an idle power above the board's limit, a results entry whose stored fraction
contradicts its own times, a predicted sweep written with a 300-digit figure, another GPU's datasheet taken as a
calibration, a repeated --spec kept silently, and charts that draw predictions as failures.
"""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

from roofline.load.inputs import parse_json, read_json
from roofline.load.jsonio import dumps
from roofline.load.specs import SpecCatalog, load_spec
from roofline.model.units import format_param
from roofline.records.files import load_results

DATA = Path(__file__).resolve().parent / "data"
RESULTS = DATA / "results"
H200_MEASURED = DATA / "h200-predict" / "h200-measured.yaml"
SPEC_HEAD = """schema_version: 1
id: toy
name: Toy GPU
memory: {bandwidth: 1 TB/s, latency: 500 ns, capacity: 16 GB}
compute: {fp32: 5 TFLOP/s}
sm_count: 10
max_threads_per_sm: 1000
"""


def _error(result) -> str:
    """The one message of an exit-2 refusal: no traceback, one error line."""
    assert result.code == 2, (result.code, result.out, result.err)
    assert "Traceback" not in result.err
    lines = [line for line in result.err.splitlines() if line.startswith("error:") or line.startswith("Error:")]
    assert len(lines) == 1, result.err
    return lines[0]


def _write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    return path


# ---- predictions hold to the memory a GPU has ----------------------------------------------------------------------


def test_a_prediction_for_data_no_gpu_holds_is_refused_naming_kernel_size_and_capacity(run_cli) -> None:
    line = _error(run_cli("analyze", "copy", "-p", "n=2**200", "--predict", "--spec", "h100"))
    assert "'copy'" in line and "n=2**200" in line and "memory.capacity (80 GB)" in line
    assert "e+" not in line  # no raw float: the size as -p takes it, the bytes with an exponent at most


def test_a_predicted_sweep_drops_sizes_larger_than_the_card_with_a_stated_note(run_cli, tmp_path: Path) -> None:
    """The README's own example: 2**12..2**28 rows of 8192 columns reach 17.6 TB on an 80 GB H100."""
    out = tmp_path / "p.json"
    r = run_cli("sweep", "softmax_fused", "--over", "rows", "-p", "cols=8192", "--spec", "h100", "--predict",
                "-o", out)
    assert r.code == 0, r.err
    doc = load_results(out).doc
    capacity = SpecCatalog.bundled().resolve("h100").capacity
    assert all(k["bytes"] <= capacity for k in doc["kernels"])
    assert max(doc["sweep"]["sizes"]) == 2**20  # 2**20 rows x 8192 x 4 B x 2 = 68.7 GB fits; 2**21 does not
    assert "Left out: rows=2**21" in doc["sweep"]["measurement"] and "80 GB" in doc["sweep"]["measurement"]
    assert "Left out: rows=2**21" in r.err


def test_a_spec_without_capacity_is_held_to_the_most_any_gpu_holds(run_cli, tmp_path: Path) -> None:
    spec = _write(tmp_path, "nocap.yaml", SPEC_HEAD.replace(", capacity: 16 GB", ""))
    kernel = _write(tmp_path, "huge.yaml", """\
        name: huge
        dtype: float32
        params: {n: 1024}
        flops: n
        bytes: n**80
        """)
    line = _error(run_cli("sweep", "huge", "--kernels", kernel, "--sizes", "2**10..2**12", "--spec", spec,
                          "--predict", "-o", tmp_path / "p.json"))
    assert "any GPU's memory" in line and "gives no memory.capacity" in line
    assert not (tmp_path / "p.json").exists()


def test_measure_and_predict_share_one_rule_and_print_sizes_as_p_takes_them(run_cli) -> None:
    measured = _error(run_cli("measure", "--backend", "numpy", "copy", "-p", "n=2**45"))
    predicted = _error(run_cli("analyze", "copy", "-p", "n=2**45", "--predict", "--spec", "t4"))
    for line in (measured, predicted):
        assert "kernel 'copy' at n=2**45 needs at least" in line and "e+" not in line
    assert format_param(2**40) == "2**40" and format_param(1e12) == "1,000,000,000,000"


# ---- launch figures with a physical meaning ------------------------------------------------------------------------


@pytest.mark.parametrize("field, value, says", [
    ("threads", "1e300", "more threads than one CUDA launch"),
    ("threads", "0.5", "whole count of at least 1"),
    ("blocks", "2**80", "more blocks than one CUDA launch"),
    ("bytes_per_thread", "1e-300", "from 1 B"),
])
def test_launch_figures_outside_cuda_limits_are_refused_naming_the_field(run_cli, tmp_path: Path, field: str,
                                                                          value: str, says: str) -> None:
    kernel = _write(tmp_path, "k.yaml", f"""\
        name: k
        dtype: float32
        params: {{n: 2**20}}
        flops: n
        bytes: 8 * n
        {field}: {value}
        """)
    line = _error(run_cli("analyze", "--kernels", kernel, "k", "--predict", "--spec", "h100"))
    assert f"{kernel}: {field}:" in line and says in line


def test_more_threads_than_1024_a_block_is_refused(run_cli, tmp_path: Path) -> None:
    kernel = _write(tmp_path, "k.yaml", """\
        name: k
        dtype: float32
        params: {n: 2**20}
        flops: n
        bytes: 8 * n
        threads: n
        blocks: 4
        """)
    assert "more than 1024 a block" in _error(run_cli("analyze", "--kernels", kernel, "k", "--predict"))


def test_a_descriptor_of_20000_stages_is_refused_at_load(run_cli, tmp_path: Path) -> None:
    stages = "\n".join(f"  - {{name: s{i}, flops: n, bytes: 8 * n}}" for i in range(20_000))
    kernel = tmp_path / "many.yaml"
    kernel.write_text(f"name: many\ndtype: float32\nparams: {{n: 2**20}}\nstages:\n{stages}\n", encoding="utf-8")
    line = _error(run_cli("sweep", "many", "--kernels", kernel, "--sizes", "2**10", "--spec", "h100", "--predict"))
    assert f"{kernel}: stages: has 20,000 stages" in line and "1,024" in line


def test_the_size_model_is_linear_in_stages() -> None:
    """A later stage's re-read working set is a running maximum: 20,000 stages (beyond what a descriptor may give,
    built here directly) take milliseconds, where the quadratic search took seconds (70 s for a sweep before)."""
    import time

    from roofline.model.geometry import launch_shapes
    from roofline.model.types import KernelDescriptor, Stage, Workload

    d = KernelDescriptor(name="k", description="", pattern="custom", dtype="float32", params={}, roof="fp32")
    stages = tuple(Stage(f"s{i}", 1.0, float(i % 7 + 1)) for i in range(20_000))
    work = Workload(name="k", pattern="custom", dtype="float32", roof="fp32", params={}, flops=20_000.0,
                    bytes=sum(s.bytes for s in stages), access_bytes=4.0, stages=stages)
    start = time.perf_counter()
    shapes = launch_shapes(d, work, 132)
    assert time.perf_counter() - start < 1.0
    assert [s.reread for s in shapes[:9]] == [0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 7.0]


# ---- spec figures against each other ------------------------------------------------------------------------------


def _spec(tmp_path: Path, body: str) -> Path:
    return _write(tmp_path, "toy.yaml", SPEC_HEAD + textwrap.dedent(body))


@pytest.mark.parametrize("body, field, says", [
    ("""\
     model:
       sm_curve:
       - {sms: 1, bandwidth: 100 GB/s}
       - {sms: 4, bandwidth: 400 GB/s}
       - {sms: 8, bandwidth: 200 GB/s}
     """, "model.sm_curve[2].bandwidth", "adding SMs never loses bandwidth"),
    ("""\
     model:
       sm_bandwidth: 50 GB/s
       sm_curve:
       - {sms: 1, bandwidth: 100 GB/s}
     """, "model.sm_curve[0].bandwidth", "contradicts model.sm_bandwidth"),
    ("""\
     caches:
       l2:
         size: 4 MiB
         curve:
         - {working_set: 1 MiB, bandwidth: 900 PB/s}
     """, "caches.l2.curve[0].bandwidth", "the most a cache delivers"),
    ("""\
     power_limit: 700 W
     energy:
       idle_power: 4900 W
       memory: {dram: 120 pJ/B}
       compute: {fp32: 7 pJ/FLOP}
       inputs: random
       source: a test
     """, "energy.idle_power", "not below power_limit"),
])
def test_spec_figures_that_contradict_their_neighbours_are_refused(run_cli, tmp_path: Path, body: str, field: str,
                                                                   says: str) -> None:
    line = _error(run_cli("specs", "show", _spec(tmp_path, body)))
    assert f"{field}:" in line and says in line


def test_the_h200_curve_with_its_measurement_noise_still_loads() -> None:
    """3.984 TB/s at 128 SMs and 3.98 at 132: noise, not a falling curve."""
    spec = SpecCatalog.bundled().resolve("h200")
    assert spec.model.sm_curve[-1] == (132, pytest.approx(3.98e12))


@pytest.mark.parametrize("spec_id, watts", [("h200-sxm", 700), ("h100-sxm", 700), ("a100-sxm4-80gb", 400),
                                            ("t4", 70), ("b200", 1000), ("l4", 72)])
def test_every_bundled_spec_carries_its_boards_power_limit_cited(spec_id: str, watts: float) -> None:
    spec = SpecCatalog.bundled().resolve(spec_id)
    assert spec.power_limit == watts
    assert any("power_limit" in s.fields and "hardware.md" in s.cite for s in spec.sources)


def test_every_bundled_spec_has_a_capacity_and_a_power_limit() -> None:
    for spec in SpecCatalog.bundled().specs:
        assert spec.capacity and spec.power_limit, spec.id


# ---- results entries against their own figures ------------------------------------------------------------------


def _edited(tmp_path: Path, **fields) -> Path:
    doc = json.loads((RESULTS / "h100.json").read_text(encoding="utf-8"))
    doc["kernels"][0].update(fields)
    path = tmp_path / "r.json"
    path.write_text(json.dumps(doc), encoding="utf-8")
    return path


def test_a_stored_fraction_its_own_times_contradict_is_refused_by_report(run_cli, tmp_path: Path) -> None:
    path = _edited(tmp_path, fraction_of_ceiling=0.95)
    line = _error(run_cli("report", path))
    assert f"{path}: kernels[0]" in line and ".fraction_of_ceiling: is 0.95" in line and "sol_time / time_median" in line


def test_time_min_above_time_max_is_refused(run_cli, tmp_path: Path) -> None:
    doc = json.loads((RESULTS / "h100.json").read_text(encoding="utf-8"))
    k = doc["kernels"][0]
    path = _edited(tmp_path, time_min=k["time_median"] * 2, time_max=k["time_median"] / 2)
    line = _error(run_cli("report", path))
    assert "kernels[0]" in line and ("time_min" in line or "time_max" in line)


def test_a_machine_power_limit_no_board_has_is_refused(run_cli, tmp_path: Path) -> None:
    doc = json.loads((RESULTS / "h100.json").read_text(encoding="utf-8"))
    doc["machine"]["power_limit"] = 700_000.0  # mW written as W
    path = tmp_path / "r.json"
    path.write_text(json.dumps(doc), encoding="utf-8")
    assert "machine.power_limit:" in _error(run_cli("report", path))


def test_a_zero_ceiling_is_refused(run_cli, tmp_path: Path) -> None:
    path = _edited(tmp_path, bandwidth=0.0)
    line = _error(run_cli("report", path))
    assert "kernels[0]" in line and ".bandwidth: is 0.0" in line


# ---- every writer's output read back by its reader ---------------------------------------------------------------


def test_a_predicted_sweep_reads_back_and_reports(run_cli, tmp_path: Path) -> None:
    out = tmp_path / "sweep.json"
    assert run_cli("sweep", "vector_add_float4", "--sizes", "2**12..2**26:4", "--spec", "h200", "--predict",
                   "-o", out).code == 0
    assert len(load_results(out).typed.kernels) == 8
    assert run_cli("report", out).code == 0


def test_an_analyze_prediction_reads_back_as_results(run_cli, tmp_path: Path) -> None:
    out = tmp_path / "pred.json"
    assert run_cli("analyze", "copy", "sum", "--predict", "--spec", "h100", "--format", "json", "-o", out).code == 0
    assert [k.name for k in load_results(out).typed.kernels] == ["copy", "sum"]


def test_the_analysis_json_reads_back_with_the_strict_reader(run_cli, tmp_path: Path) -> None:
    out = tmp_path / "a.json"
    assert run_cli("analyze", "--format", "json", "--spec", "h200", "-o", out).code == 0
    doc = read_json(out, 10**8)
    assert doc["schema"] == "roofline/analysis/v1" and doc["machine"]["power_limit"] == 700


def test_the_json_writer_never_writes_a_number_its_reader_refuses() -> None:
    """A 300-digit whole number (the `windows` a predicted sweep once wrote) becomes a float, one past a float's range
    null, as inf is."""
    back = parse_json(dumps({"windows": 10**300, "beyond": 10**400, "small": 7}), "test")
    assert back == {"windows": 1e300, "beyond": None, "small": 7}


def test_a_calibrated_spec_round_trips_through_the_loader(tmp_path: Path) -> None:
    """What calibrate writes (tests/data/h200-predict, calibrate -o) loads, and is accepted as this GPU's calibration."""
    from roofline.sizes.request import check_calibrated

    measured = load_spec(H200_MEASURED)
    assert measured.measured
    check_calibrated(measured, SpecCatalog.bundled().resolve("h200"))


# ---- options that would mislead --------------------------------------------------------------------------------


def test_another_gpus_datasheet_as_calibrated_is_refused(run_cli) -> None:
    datasheet = SpecCatalog.bundled().resolve("t4").path
    line = _error(run_cli("analyze", "copy", "--predict", "--spec", "h100", "--calibrated", datasheet))
    assert "is not a measured spec" in line
    line = _error(run_cli("sweep", "copy", "--predict", "--spec", "h100", "--calibrated", H200_MEASURED))
    assert "not on NVIDIA H100 SXM5 80GB" in line
    assert run_cli("analyze", "copy", "--predict", "--spec", "h200", "--calibrated", H200_MEASURED).code == 0


def test_a_repeated_spec_on_a_one_spec_command_is_refused(run_cli) -> None:
    line = _error(run_cli("sweep", "copy", "--predict", "--spec", "h100", "--spec", "t4"))
    assert "given 2 times" in line


@pytest.mark.parametrize("option", [("--efficiency", "0.9"), ("--latency", "measured"), ("--backend", "numpy"),
                                    ("--device", "1"), ("--min-time", "2")])
def test_predict_refuses_the_options_it_would_ignore(run_cli, option: tuple[str, str]) -> None:
    line = _error(run_cli("sweep", "copy", "--predict", "--spec", "h100", *option))
    assert option[0] in line and "ignored" in line


# ---- what a new user reads -----------------------------------------------------------------------------------------


def test_a_prediction_states_its_accuracy_and_names_measured_figures_as_measured(run_cli) -> None:
    r = run_cli("analyze", "copy", "--predict", "--spec", "h200")
    assert r.code == 0
    assert "accuracy: with a spec whose model: block was measured" in r.err and "93 %" in r.err
    assert "datasheet spec h200-sxm (model." not in r.err and "spec h200-sxm, measured (model.launch_floor)" in r.err
    r = run_cli("analyze", "copy", "--predict", "--spec", "t4")
    assert "with a datasheet spec alone" in r.err and "76 %" in r.err


def test_a_predicted_sweep_chart_draws_predictions_not_failures(run_cli, tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    from roofline.render.charts.sweep import sweep_figure

    out = tmp_path / "sweep.json"
    assert run_cli("sweep", "copy", "--sizes", "2**12..2**24:4", "--spec", "h100", "--predict", "-o", out).code == 0
    fig = sweep_figure(load_results(out).doc)
    ax = fig.axes[0]
    assert not [line for line in ax.lines if line.get_gid() == "roofline:point-failed"]
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert labels and all("achieved" not in t and "FAILED" not in t for t in labels)
    assert any("predicted" in t and "not measured" in t for t in labels)
    assert "Predicted" in ax.get_ylabel()


def test_the_energy_chart_draws_the_power_limit_and_labels_model_points() -> None:
    pytest.importorskip("matplotlib")
    from roofline.load.selection import analysis_documents, load_selection
    from roofline.model.analysis import machine_summary
    from roofline.render.charts.energy import energy_figure

    h200 = SpecCatalog.bundled().resolve("h200")
    selected, overrides = load_selection(["copy", "attention_fused_bf16"], [], [])
    docs, _ = analysis_documents([h200], selected, overrides)
    fig = energy_figure([machine_summary(h200)], docs, [])
    right = fig.axes[1]
    assert [ln for ln in right.lines if ln.get_gid() == "roofline:power-limit"]
    for line in right.lines:
        if str(line.get_gid()).startswith("roofline:power-line:"):
            assert max(line.get_ydata()) <= 700 + 1e-6
    assert right.get_ylim()[1] <= 700 * 1.3 + 1e-6
    assert "model" in right.get_title() and "measured mean power" not in right.get_title()


def test_the_docs_agree_on_which_bundled_spec_has_an_energy_block() -> None:
    root = DATA.parent.parent
    for doc in ("README.md", "docs/energy.md"):
        text = (root / doc).read_text(encoding="utf-8")
        assert "carry no energy block" not in text and "carry none yet" not in text, doc
    energetic = [s.id for s in SpecCatalog.bundled().specs if s.energy is not None]
    assert energetic == ["h200-sxm"]
