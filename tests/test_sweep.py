"""`roofline sweep`: the --sizes parser, the time model against hand-computed cases, and the command end to end on
the NumPy backend (its results file loads and `plot --sweep` draws it); on a GPU, a short sweep."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from conftest import TOY_SPEC
from roofline.errors import InputError
from roofline.sizes.fitted import (
    BANDWIDTH_BOUND, LATENCY_BOUND, LAUNCH_BOUND, ModelInputs, annotate, choose_efficiency, efficiency_from,
    fit_model, predict_time, regime, summary,
)
from roofline.sizes.request import parse_sizes

M_ADD = Path(__file__).parent / "data" / "measure" / "m_add.yaml"


# ---- --sizes -------------------------------------------------------------------------------------------


def test_a_power_of_two_range():
    sizes = parse_sizes("2**12..2**28")
    assert sizes == [2**k for k in range(12, 29)]
    assert len(sizes) == 17 and sizes[0] == 4096 and sizes[-1] == 268435456


@pytest.mark.parametrize("text, expected", [
    ("4096,65536,2**20", [4096, 65536, 1048576]),
    ("2^10..2^12", [1024, 2048, 4096]),
    ("2**10..2**14:4", [1024, 4096, 16384]),
    ("1000..8000", [1000, 2000, 4000, 8000]),
    ("1000..7999", [1000, 2000, 4000]),
    ("64..64", [64]),
    (" 2**20 , 4096 ,4096", [4096, 1048576]),  # sorted, without repeats
    ("2**10..2**11,100000", [1024, 2048, 100000]),
    ("3 * 2**20", [3 * 2**20]),
    ("1e6", [1000000]),
])
def test_lists_ranges_and_formulas(text, expected):
    assert parse_sizes(text) == expected


@pytest.mark.parametrize("text, message", [
    ("", "empty"),
    ("   ", "empty"),
    ("4096,,8192", "empty item"),
    ("2**28..2**12", "ends below its start"),
    ("..2**12", "needs a start and an end"),
    ("2**12..", "needs a start and an end"),
    ("0", "at least 1"),
    ("-4", "at least 1"),
    ("1.5", "not a whole number"),
    ("n", "uses names"),
    ("2**12..2**20:1", "2 or more"),
    ("1..2**62,3,5", "more than 64 sizes"),
    ("2**80", "too large"),
    ("abc(", "syntax error"),
    ("__import__('os')", ""),
])
def test_bad_sizes_are_input_errors_naming_the_option(text, message):
    with pytest.raises(InputError) as info:
        parse_sizes(text)
    assert info.value.message.startswith("--sizes") and message in info.value.message


# ---- the model, by hand ---------------------------------------------------------------------------------


def test_predict_time_additive_by_hand():
    # L = 2 µs, λ = 1 µs, BW = 1 TB/s: 3 MB take 3 µs to stream, so 2 + 1 + 3 = 6 µs
    assert predict_time(3e6, 1e12, 1e-6, 2e-6) == pytest.approx(6e-6)
    # 1 kB: the transfer is 1 ns; the launch and one round trip are everything
    assert predict_time(1000, 1e12, 1e-6, 2e-6) == pytest.approx(3.001e-6)
    # an H200-like vector add at 2^28: 3 × 2^28 × 4 B = 3.221 GB at 4.32 TB/s = 745.6 µs, plus 2.5 µs
    b = 3 * 2**28 * 4
    assert predict_time(b, 4.32e12, 0.6e-6, 1.9e-6) == pytest.approx(b / 4.32e12 + 2.5e-6)
    assert predict_time(b, 4.32e12, 0.6e-6, 1.9e-6) == pytest.approx(748.1e-6, rel=1e-3)
    # no bytes: launch plus latency
    assert predict_time(0, 1e12, 1e-6, 2e-6) == pytest.approx(3e-6)


def test_predict_time_max_by_hand():
    assert predict_time(3e6, 1e12, 1e-6, 2e-6, model="max") == pytest.approx(4e-6)  # max(2, 1 + 3)
    assert predict_time(1000, 1e12, 1e-6, 2e-6, model="max") == pytest.approx(2e-6)  # launch-bound: max(2, 1.001)
    assert predict_time(5e5, 1e12, 1e-6, 0.0, model="max") == pytest.approx(1.5e-6)


@pytest.mark.parametrize("bad", [
    dict(bytes_=-1.0), dict(bandwidth=0.0), dict(bandwidth=-1.0), dict(latency=-1e-9), dict(launch_floor=math.nan),
    dict(bandwidth=math.inf),
])
def test_predict_time_refuses_nonsense(bad):
    args = dict(bytes_=1e6, bandwidth=1e12, latency=1e-6, launch_floor=1e-6) | bad
    with pytest.raises(ValueError):
        predict_time(**args)
    with pytest.raises(ValueError):
        predict_time(1e6, 1e12, 1e-6, 1e-6, model="quadratic")


def test_regimes_by_hand():
    # L = 2 µs, λ = 0.5 µs, BW = 1 TB/s: launch-bound while λ + B/BW ≤ 2 µs (B ≤ 1.5 MB)
    assert regime(1e3, 1e12, 0.5e-6, 2e-6) == LAUNCH_BOUND
    assert regime(1.5e6, 1e12, 0.5e-6, 2e-6) == LAUNCH_BOUND
    assert regime(1.6e6, 1e12, 0.5e-6, 2e-6) == BANDWIDTH_BOUND
    # with a small launch floor, transfers below BW × λ = 500 kB are latency-bound
    assert regime(4e5, 1e12, 0.5e-6, 0.1e-6) == LATENCY_BOUND
    assert regime(6e5, 1e12, 0.5e-6, 0.1e-6) == BANDWIDTH_BOUND


def test_efficiency_from_a_bandwidth_bound_anchor_by_hand():
    # 3.2 GB in 800 µs with L + λ = 2.5 µs: streamed at 3.2e9 / 797.5e-6 = 4.0125 TB/s = 0.83594 × 4.8 TB/s
    eta, why = efficiency_from(3.2e9, 800e-6, 4.8e12, 0.5e-6, 2e-6)
    assert eta == pytest.approx((3.2e9 / 4.8e12) / 797.5e-6) and eta == pytest.approx(0.83594, rel=1e-4)
    assert "largest size" in why
    # the anchor is reproduced exactly by the additive model
    assert predict_time(3.2e9, eta * 4.8e12, 0.5e-6, 2e-6) == pytest.approx(800e-6)


def test_efficiency_refuses_an_anchor_that_is_not_bandwidth_bound():
    eta, why = efficiency_from(1e5, 3e-6, 4.8e12, 0.5e-6, 2e-6)
    assert eta == 1.0 and "not bandwidth-bound" in why
    eta, why = efficiency_from(1e9, 0.0, 4.8e12, 0.5e-6, 2e-6)
    assert eta == 1.0


def entries_for(times: dict[int, float | None]) -> list[dict]:
    return [{"bytes": float(b), "time_median": t, "status": "OK" if t else "FAILED"} for b, t in times.items()]


def inputs_for(**kw) -> ModelInputs:
    base = dict(model="additive", bandwidth=1e12, bandwidth_source="spec", latency=1e-6, latency_source="measured",
                launch_floor=2e-6, launch_floor_source="measured", memory_latency=0.5e-6,
                memory_latency_source="spec")
    return ModelInputs(**(base | kw))


def test_annotate_and_summary_by_hand():
    # anchor: 1 GB in 2.003 ms → streaming 2 ms → η = (1 ms)/(2 ms) = 0.5; BW_eff = 0.5 TB/s
    entries = entries_for({1000: 3.0e-6, 1_000_000: 4.0e-6, 1_000_000_000: 2.003e-3, 5000: None})
    inputs = choose_efficiency(entries, inputs_for(), "auto")
    assert inputs.efficiency == pytest.approx(0.5)
    annotate(entries, inputs)
    small, mid, big, failed = entries
    assert small["predicted_time"] == pytest.approx(3e-6 + 1000 / 0.5e12)
    assert small["prediction_error"] == pytest.approx((3e-6 + 2e-9) / 3e-6 - 1)
    assert mid["predicted_time"] == pytest.approx(5e-6) and mid["prediction_error"] == pytest.approx(0.25)
    assert big["prediction_error"] == pytest.approx(0.0, abs=1e-12)
    assert failed["prediction_error"] is None and failed["predicted_time"] == pytest.approx(3e-6 + 1e-8)
    assert small["prediction"]["regime"] == LAUNCH_BOUND and big["prediction"]["regime"] == BANDWIDTH_BOUND
    # the simple model: max(L, λ_spec + B / BW) with the raw bandwidth and the spec's latency
    assert mid["prediction"]["simple_max_time"] == pytest.approx(max(2e-6, 0.5e-6 + 1e-6))
    s = summary(entries)
    assert s["sizes"] == 3 and s["within_target"] == 3 and s["worst_error"] == pytest.approx(0.25)
    assert s["worst_bytes"] == 1_000_000


def test_a_given_efficiency_is_used_as_is():
    inputs = choose_efficiency(entries_for({10**9: 1e-3}), inputs_for(), 0.9)
    assert inputs.efficiency == 0.9 and inputs.streaming_bandwidth == pytest.approx(0.9e12)
    with pytest.raises(InputError):
        choose_efficiency([], inputs, -1)
    d = inputs.to_dict()
    assert d["bytes_in_flight"] == pytest.approx(1e12 * 0.5e-6) and d["streaming_bandwidth"] == pytest.approx(0.9e12)


# ---- the command on the NumPy backend ---------------------------------------------------------------------


def test_sweep_cli_writes_results_that_load_and_plot(tmp_path, run_cli):
    from roofline.records.files import load_results, sweep_groups

    out = tmp_path / "sweep.json"
    result = run_cli("sweep", "m_add", "--kernels", M_ADD, "--backend", "numpy", "--spec", TOY_SPEC,
                     "--sizes", "2**8..2**11", "--min-time", "0", "--min-repeats", "3", "-o", out)
    assert result.code == 0, result.err
    assert "predicted" in result.out and "regime" in result.out
    assert "model: t = Σ over launches of L + max(λk + B/BW' + r·R, ceil(B/F)·(λk + r·R))" in result.err and "HOST CPU" in result.err
    assert "λk = 2 µs: not measured: 2 × the DRAM latency" in result.err  # the toy spec's 1 µs, doubled
    doc = load_results(out).doc
    assert doc["sweep"]["kernel"] == "m_add" and doc["sweep"]["param"] == "n"
    assert doc["sweep"]["sizes"] == [256, 512, 1024, 2048]
    model = doc["sweep"]["model"]
    assert model["model"] == "first-principles" and model["round_trip"] == 2e-6
    assert model["bandwidth"] == 1e12 and model["memory_latency"] == 1e-6
    assert model["launch_floor"] > 0 and "measured" in model["launch_floor_source"]
    assert [k["params"]["n"] for k in doc["kernels"]] == [256, 512, 1024, 2048]
    for k in doc["kernels"]:
        assert k["status"] == "OK" and k["verified"]
        assert k["predicted_time"] > 0
        assert k["prediction_error"] == pytest.approx(k["predicted_time"] / k["time_median"] - 1)
        assert k["prediction"]["regime"] in (LAUNCH_BOUND, LATENCY_BOUND, BANDWIDTH_BOUND, "concurrency-bound")
        assert k["prediction"]["model"] == "first-principles" and len(k["prediction"]["launches"]) == 1
    assert list(sweep_groups(doc)) == ["m_add"]

    png = tmp_path / "sweep.png"
    result = run_cli("plot", "--sweep", out, "-o", png, "--dpi", "50")
    assert result.code == 0, result.err
    assert png.stat().st_size > 1000


def test_sweep_cli_json_output_and_fixed_efficiency(run_cli):
    result = run_cli("sweep", "m_add", "--kernels", M_ADD, "--backend", "numpy", "--spec", TOY_SPEC,
                     "--sizes", "100,200", "--min-time", "0", "--min-repeats", "2", "--format", "json",
                     "--efficiency", "1", "--model", "max")
    assert result.code == 0, result.err
    doc = json.loads(result.out)
    assert doc["sweep"]["model"]["efficiency"] == 1.0 and doc["sweep"]["model"]["model"] == "max"
    assert doc["sweep"]["model"]["efficiency_source"] == "--efficiency (given)"


@pytest.mark.parametrize("args, message", [
    (["--over", "rows"], "--over rows: kernel 'm_add' has no parameter 'rows'"),
    (["--param", "rows"], "--param rows: kernel 'm_add' has no parameter 'rows'"),
    (["--sizes", "2**20..2**10"], "--sizes"),
    (["-p", "n=5"], "-p n=…: n is the swept parameter"),
    (["--param", "m=5"], "no selected kernel has a parameter 'm'"),
    (["--efficiency", "fast"], "--efficiency"),
    (["--efficiency", "0"], "--efficiency"),
])
def test_sweep_cli_input_errors_exit_2(run_cli, args, message):
    result = run_cli("sweep", "m_add", "--kernels", M_ADD, "--backend", "numpy", "--spec", TOY_SPEC,
                     "--sizes", "64,128", "--min-time", "0", *args)
    assert result.code == 2, result.err
    assert message in result.err


def test_sweep_on_the_host_needs_a_spec(run_cli):
    result = run_cli("sweep", "m_add", "--kernels", M_ADD, "--backend", "numpy", "--sizes", "64,128")
    assert result.code == 2 and "--spec" in result.err


def test_sweep_help_states_the_model(run_cli):
    result = run_cli("sweep", "--help")
    assert result.code == 0
    for word in ("t(B) = L + λ + B / (η · BW)", "Little's Law", "--sizes", "--efficiency", "--calibrated"):
        assert word in result.out


# ---- on a GPU ------------------------------------------------------------------------------------------


@pytest.mark.gpu
def test_a_short_gpu_sweep_predicts_within_reason(tmp_path, run_cli):
    from roofline.records.files import load_results

    out = tmp_path / "sweep.json"
    result = run_cli("sweep", "vector_add_float4", "--sizes", "2**12..2**24:4", "--min-time", "0.1", "-o", out)
    assert result.code == 0, result.err
    doc = load_results(out).doc
    overheads = doc["sweep"]["overheads"]
    assert 0 < overheads["launch_floor"] < 20e-6 and overheads["one_element"] >= overheads["launch_floor"] * 0.9
    for k in doc["kernels"]:
        assert k["status"] == "OK", k.get("error")
        assert abs(k["prediction_error"]) < 1.0, k  # sane, not the benchmark's 25 % target


def test_anchor_latency_reads_the_kernels_fixed_cost_off_the_smallest_size():
    from roofline.sizes.fitted import ModelInputs, anchor_latency

    inputs = ModelInputs(model="additive", bandwidth=1e12, bandwidth_source="t", latency=300e-9, latency_source="t",
                         launch_floor=500e-9, launch_floor_source="t", memory_latency=300e-9,
                         memory_latency_source="t")
    entries = [
        {"bytes": 1e3, "time_median": 1.5e-6, "status": "OK"},  # transfer 1 ns: fixed cost 1.5 µs − 0.5 − 0.001
        {"bytes": 1e6, "time_median": 3e-6, "status": "OK"},
        {"bytes": 1e9, "time_median": 1.1e-3, "status": "OK"},
    ]
    anchored = anchor_latency(entries, inputs)
    assert anchored.latency == pytest.approx(1.5e-6 - 500e-9 - 1e-9)
    assert anchored.measured_latency == pytest.approx(300e-9)
    assert inputs.latency == 300e-9 and inputs.measured_latency is None  # the inputs given are not changed
    assert anchor_latency(entries, inputs, "measured") is inputs


def test_anchor_latency_keeps_the_round_trip_when_the_smallest_size_is_not_fixed_cost_bound():
    from roofline.sizes.fitted import ModelInputs, anchor_latency

    inputs = ModelInputs(model="additive", bandwidth=1e12, bandwidth_source="t", latency=300e-9, latency_source="t",
                         launch_floor=500e-9, launch_floor_source="t", memory_latency=300e-9,
                         memory_latency_source="t")
    entries = [{"bytes": b, "time_median": b / 1e12 + 1e-6, "status": "OK"} for b in (1e6, 1e7, 1e8)]
    # at 1 MB the transfer (1 µs) is half the time: not a fixed-cost anchor
    assert anchor_latency(entries, inputs).latency == pytest.approx(300e-9)


# ---- the fit, the options, the progress lines -------------------------------------------------------------


def test_fit_model_takes_bw_from_the_spec_l_from_the_overheads_then_lambda_then_eta(toy_spec):
    # toy spec: 1 TB/s, 1 µs. L = 2 µs; one-element round trip 0.5 µs
    overheads = {"launch_floor": 2e-6, "launch_floor_source": "measured: empty kernel", "kernel_latency": 0.5e-6,
                 "kernel_latency_source": "measured: one_element"}
    entries = entries_for({1000: 4.001e-6, 10**6: 5e-6, 10**9: 2.004e-3})
    before = [dict(e) for e in entries]
    inputs = fit_model(entries, toy_spec, overheads)
    assert entries == before  # pure: nothing measured is changed
    assert inputs.bandwidth == 1e12 and inputs.bandwidth_source == f"datasheet spec {toy_spec.id} (memory.bandwidth)"
    assert inputs.launch_floor == 2e-6 and inputs.memory_latency == 1e-6
    # λ from the smallest size: 4.001 µs − 2 µs − 1 ns = 2 µs; the round trip is kept beside it
    assert inputs.latency == pytest.approx(2e-6) and inputs.measured_latency == pytest.approx(0.5e-6)
    # η given that λ: 1 GB streamed in 2.004 ms − 4 µs = 2 ms at 1 TB/s → 0.5
    assert inputs.efficiency == pytest.approx(0.5)
    measured = fit_model(entries, toy_spec, overheads, latency="measured", efficiency=1.0)
    assert measured.latency == 0.5e-6 and measured.efficiency == 1.0
    no_gpu = fit_model(entries, toy_spec, {**overheads, "kernel_latency": None, "kernel_latency_source": None},
                       latency="measured")
    assert no_gpu.latency == 1e-6 and no_gpu.latency_source == f"datasheet spec {toy_spec.id} (memory.latency)"


def test_over_names_the_swept_parameter_and_param_still_works_with_a_warning(run_cli):
    args = ("sweep", "m_add", "--kernels", M_ADD, "--backend", "numpy", "--spec", TOY_SPEC, "--sizes", "64,128",
            "--min-time", "0", "--min-repeats", "2", "--format", "json")
    result = run_cli(*args, "--over", "n")
    assert result.code == 0, result.err
    assert json.loads(result.out)["sweep"]["param"] == "n" and "deprecated" not in result.err
    result = run_cli(*args, "--param", "n")
    assert result.code == 0, result.err
    assert json.loads(result.out)["sweep"]["param"] == "n"
    assert "warning: --param NAME is deprecated for sweep" in result.err and "use --over NAME" in result.err
    help_text = run_cli("sweep", "--help").out
    assert "-p, --param NAME=VALUE" in help_text and "--set" not in help_text  # -p fixes; --over names the sweep


def test_set_is_a_deprecated_alias_of_param(run_cli):
    """Issue 22: -p/--param NAME=VALUE fixes a parameter, as everywhere else; --set still does, with a note."""
    args = ("sweep", "m_add", "--kernels", M_ADD, "--backend", "numpy", "--spec", TOY_SPEC, "--sizes", "64,128",
            "--min-time", "0", "--min-repeats", "2", "--format", "json")
    new = run_cli(*args, "--over", "n", "-p", "n=3")
    old = run_cli(*args, "--over", "n", "--set", "n=3")
    assert new.code == old.code == 2 and "-p n=…: n is the swept parameter" in old.err
    assert "deprecated" not in new.err
    assert "warning: --set is deprecated" in old.err and "use -p/--param NAME=VALUE" in old.err


def test_off_a_terminal_each_size_is_one_line_as_it_finishes(run_cli):
    result = run_cli("sweep", "m_add", "--kernels", M_ADD, "--backend", "numpy", "--spec", TOY_SPEC,
                     "--sizes", "64,128", "--min-time", "0", "--min-repeats", "2", "--format", "json")
    assert result.code == 0, result.err
    lines = [line for line in result.err.splitlines() if line.startswith("sweep: ")]
    assert [line.split(": OK, ")[0] for line in lines] == [
        "sweep: launch overheads", "sweep: m_add n=64 (1/2)", "sweep: m_add n=128 (2/2)"]
    assert all(line.endswith(" s") for line in lines)


def test_steps_print_plain_lines_only_off_a_terminal():
    import io

    from roofline.cli.progress import Steps

    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    ticks = iter([1.0, 3.5, 4.0, 4.25])
    log = io.StringIO()
    with Steps("calibrate", stream=log, clock=lambda: next(ticks)) as steps:
        steps.start("copy")
        steps.finish("copy", "OK")
        steps.start("bad\x1bname")
        steps.finish("bad\x1bname", "FAILED")
    assert log.getvalue() == "calibrate: copy: OK, 2.50 s\ncalibrate: bad\\x1bname: FAILED, 0.25 s\n"
    tty = Terminal()
    with Steps("calibrate", stream=tty) as steps:
        steps.start("copy")
        steps.finish("copy", "OK")
    assert "copy: OK" not in tty.getvalue()


def test_a_launch_floor_that_cannot_be_measured_is_zero_with_the_reason():
    from roofline.measurement.policy import MeasurePolicy
    from roofline.measurement.sweep import launch_costs
    from roofline.render.tables.sweep import explanation

    class NoKernels:
        name = "cupy"
        info: dict = {}

        @property
        def cp(self):
            raise RuntimeError("no compiler here")

    found = launch_costs(NoKernels(), MeasurePolicy())
    assert found["launch_floor"] == 0.0 and found["kernel_latency"] is None
    assert found["launch_floor_error"] == "RuntimeError: no compiler here"
    assert found["launch_floor_source"] == "not measured (RuntimeError); 0 assumed"
    doc = {"backend": "cupy", "kernels": [], "sweep": {
        "param": "n", "overheads": found, "measurement": "m",
        "summary": {"worst_error": None, "simple_worst_error": None},
        "model": {"model": "additive", "launch_floor": 0.0, "launch_floor_source": found["launch_floor_source"],
                  "latency": 1e-6, "latency_source": "s", "bandwidth": 1e12, "bandwidth_source": "s",
                  "efficiency": 1.0, "efficiency_source": "s", "memory_latency": 1e-6, "memory_latency_source": "s",
                  "bytes_in_flight": 1e6}}}
    assert explanation(doc)[0] == ("warning: measuring the launch floor failed (RuntimeError: no compiler here); "
                                   "the model uses 0 for it and the spec's latency")


def test_a_size_that_cannot_run_is_a_failed_entry_and_the_sweep_goes_on(run_cli):
    result = run_cli("sweep", "m_add", "--kernels", M_ADD, "--backend", "numpy", "--spec", TOY_SPEC,
                     "--sizes", "64,128,2**45", "--min-time", "0", "--min-repeats", "2", "--format", "json")
    assert result.code == 0, result.err
    doc = json.loads(result.out)
    assert [k["status"] for k in doc["kernels"]] == ["OK", "OK", "FAILED"]
    big = doc["kernels"][2]
    assert big["time_median"] is None and big["prediction_error"] is None and big["size"] == 2**45
    assert "more than the host's memory" in big["error"]
    assert f"FAILED n={2**45}: " in result.err and f"sweep: m_add n={2**45} (3/3): FAILED, " in result.err


def test_the_sweep_charts_labels_do_not_overlap(tmp_path, run_cli):
    pytest.importorskip("matplotlib")
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    from roofline.render.charts.sweep import sweep_figure
    from roofline.records.files import load_results

    host = tmp_path / "host.json"  # Little's Law's 1 MB lies right of every size: its note sat on the peak label
    result = run_cli("sweep", "m_add", "--kernels", M_ADD, "--backend", "numpy", "--spec", TOY_SPEC,
                     "--sizes", "2**8..2**11", "--min-time", "0", "--min-repeats", "2", "-o", host)
    assert result.code == 0, result.err
    for doc in (load_results(host).doc, load_results(Path(__file__).parent / "data" / "results" / "sweep.json").doc):
        measured = [{"bandwidth": 0.88 * doc["machine"]["bandwidth"], "name": "measured"}]
        fig = sweep_figure(doc, (), measured)
        canvas = FigureCanvasAgg(fig)
        canvas.draw()
        texts = [t for t in fig.axes[0].texts if t.get_gid() in ("roofline:littles-law-label",
                                                                  "roofline:bandwidth-label")]
        assert len(texts) == 3
        boxes = [t.get_window_extent(canvas.get_renderer()) for t in texts]
        assert not any(a.overlaps(b) for i, a in enumerate(boxes) for b in boxes[i + 1:])
