"""The power roof (roofline.model.power; Choi, Dukhan, Liu, Vuduc, IPDPS 2014, issue 43): a board held at P watts
sustains (P − π0) ÷ (ε_flop + ε_mem ÷ I) FLOP/s at intensity I. Checked against numbers worked out by hand from the
bundled H200 spec's energy block (idle 125.7 W, DRAM 122.5 pJ/B measured at 4.2 TB/s, bf16_tensor 0.8051 pJ/FLOP,
700 W limit) and the toy GPU's."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from conftest import DATA, SPECS
from roofline.errors import InputError
from roofline.load.bundled import bundled_dir
from roofline.load.kernels import load_descriptor
from roofline.load.specs import load_spec
from roofline.model.analysis import analyze
from roofline.model.power import PowerFigures, power_figures, power_limited_rate, power_limited_time
from roofline.model.expr import compile_expr
from roofline.model.workload import evaluate
from roofline.records.clockstate import at_power_limit, power_measured

H200_IDLE, H200_DRAM, H200_BF16, H200_FP32 = 125.7, 122.5e-12, 0.8051e-12, 7.617e-12
# attention_fused_bf16 at its defaults: 137 GFLOP over 67.1 MB, 2048 FLOP/B
ATTENTION_AI = 2048.0


def _choi(limit: float, eps_flop: float, ai: float) -> float:
    return (limit - H200_IDLE) / (eps_flop + H200_DRAM / ai)


@pytest.fixture(scope="module")
def h200():
    return load_spec(bundled_dir("specs") / "h200-sxm.yaml")


def _work(name: str):
    return evaluate(load_descriptor(bundled_dir("kernels") / f"{name}.yaml"))


def _analysis(run_cli, *args: str) -> dict:
    r = run_cli("analyze", *args, "--format", "json")
    assert r.code == 0, r.err
    return json.loads(r.out)


def test_choi_formula_where_the_bytes_stay_under_the_memory_rate() -> None:
    f = PowerFigures(power_limit=700.0, idle_power=100.0, eps_flop=1e-12, eps_mem=100e-12, memory_rate=1e15)
    assert power_limited_rate(50.0, f) == pytest.approx(600.0 / (1e-12 + 100e-12 / 50.0))
    # time of W FLOPs and Q bytes: their dynamic energy over the power left above idle
    assert power_limited_time(2e12, 1e10, f) == pytest.approx((2e12 * 1e-12 + 1e10 * 100e-12) / 600.0)


def test_bytes_are_charged_at_most_at_the_rate_their_energy_was_measured_at() -> None:
    """A stream whose bytes would run faster than the DRAM sustains draws the DRAM's full-speed power, no more."""
    f = PowerFigures(power_limit=700.0, idle_power=100.0, eps_flop=10e-12, eps_mem=100e-12, memory_rate=4e12)
    # Choi's formula would move 0.1 FLOP/B × ... at 600 W / (10 + 1000) pJ = 0.594 TFLOP/s, 5.94 TB/s of bytes:
    # above 4 TB/s, so the bytes draw 400 W and the FLOPs get 200 W: 20 TFLOP/s
    assert power_limited_rate(0.1, f) == pytest.approx(200.0 / 10e-12)
    # continuous at the breakpoint, where the bytes move at exactly 4 TB/s
    ai = 0.5  # Choi: 600 / (10 + 200) pJ = 2.857 TFLOP/s = 5.7 TB/s > 4: the FLOPs' share, 200 W / 10 pJ = 20 TFLOP/s
    assert power_limited_rate(ai, f) == pytest.approx(20e12)
    ai_break = 20e12 / 4e12  # 5 FLOP/B: both rules give 600 W / (10 + 20) pJ = 20 TFLOP/s
    assert power_limited_rate(ai_break, f) == pytest.approx(600.0 / (10e-12 + 100e-12 / ai_break))


def test_the_h200_spec_gives_the_power_roof_its_figures(h200) -> None:
    f = power_figures(h200, "bf16_tensor")
    assert f is not None and f.power_limit == 700.0 and f.idle_power == pytest.approx(H200_IDLE)
    assert f.memory_rate == pytest.approx(4.2e12) and f.eps_mem == pytest.approx(H200_DRAM)
    assert power_figures(h200, "fp64") is None  # no energy figure for FP64: the time roofline alone
    assert power_figures(replace(h200, power_limit=None), "bf16_tensor") is None
    assert power_figures(replace(h200, energy=None), "bf16_tensor") is None


def test_analyze_says_a_bf16_gemm_is_power_bound_on_the_h200_with_its_capped_rate(run_cli) -> None:
    doc = _analysis(run_cli, "attention_fused_bf16", "--spec", "h200")
    k = doc["kernels"][0]
    capped = _choi(700.0, H200_BF16, ATTENTION_AI)  # 664 TFLOP/s
    assert k["bound"] == "power" and k["intensity"] == pytest.approx(ATTENTION_AI)
    assert k["attainable_flops"] == pytest.approx(capped) and 660e12 < capped < 668e12
    assert k["sol_time"] == pytest.approx(k["flops"] / capped)
    roof = k["power_roof"]
    assert roof["binds"] and roof["power_limit"] == 700.0 and roof["flops"] == pytest.approx(capped)
    assert roof["time_roof_bound"] == "compute" and roof["time_roof_sol_time"] == pytest.approx(k["flops"] / 989.4e12)
    assert "power_limit_what_if" not in doc["machine"]
    table = run_cli("analyze", "attention_fused_bf16", "--spec", "h200", "--wide")
    assert table.code == 0 and "power roof (Choi et al. 2014): 700 W (the spec's power_limit)" in table.out
    assert "664 TFLOP/s" in table.out and "power" in table.out.splitlines()[-2]


def test_halving_the_power_limit_lowers_the_roof_as_the_formula_says(run_cli) -> None:
    full = _analysis(run_cli, "attention_fused_bf16", "matmul_library_fp16", "--spec", "h200")
    half = _analysis(run_cli, "attention_fused_bf16", "matmul_library_fp16", "--spec", "h200", "--power-limit",
                     "350W")
    assert half["machine"]["power_limit"] == 350.0 and half["machine"]["power_limit_what_if"] is True
    for a, b in zip(full["kernels"], half["kernels"]):
        ai = a["intensity"]
        eps = H200_BF16 if a["roof"] == "bf16_tensor" else 0.8521e-12
        assert a["attainable_flops"] == pytest.approx(_choi(700.0, eps, ai))
        assert b["attainable_flops"] == pytest.approx(_choi(350.0, eps, ai))
        # the power above idle halves less than the limit: (350 - 125.7) / (700 - 125.7) of the rate
        assert b["attainable_flops"] / a["attainable_flops"] == pytest.approx((350 - H200_IDLE) / (700 - H200_IDLE))
    text = run_cli("analyze", "attention_fused_bf16", "--spec", "h200", "--power-limit", "0.35 kW")
    assert text.code == 0 and "350 W (--power-limit, a what-if)" in text.out


MEMORY_BOUND = ("copy", "vector_add", "vector_add_float4", "triad", "scale", "sum", "softmax_fused", "softmax_5pass",
                "layernorm_fused", "layernorm_2pass", "relu", "bias_add_relu_fused", "fma_relu_fused", "gemv_batch1",
                "stencil5_reuse")


def test_memory_bound_kernels_do_not_move_on_the_h200(h200) -> None:
    """Their SOL time stays bytes ÷ 4.8 TB/s: the DRAM energy is charged at the 4.2 TB/s it was measured at (a copy at
    its full speed drew 641-648 W of 700 with its clock up), so their power roof stays above the bandwidth roof."""
    for name in MEMORY_BOUND:
        work = _work(name)
        a = analyze(h200, work)
        assert a.bound == "memory", name
        assert a.sol_time == pytest.approx(work.bytes / h200.bandwidth), name
        assert a.power_roof is not None and not a.power_roof.binds, name


def test_charging_the_copy_at_the_datasheet_bandwidth_would_call_it_power_bound(h200) -> None:
    """Why the rate matters: 125.7 W + 122.5 pJ/B × 4.8 TB/s = 714 W > 700 W; charged so, a stream could move only
    (700 − 125.7) W ÷ 122.5 pJ/B = 4.69 TB/s, and every streaming kernel would read power-bound."""
    datasheet = replace(h200, energy=replace(h200.energy, dram_bandwidth=None))
    copy = _work("copy")
    a = analyze(datasheet, copy)
    assert a.bound == "power" and copy.bytes / a.sol_time == pytest.approx((700 - H200_IDLE) / H200_DRAM)
    assert analyze(h200, copy).bound == "memory"


def test_a_compute_bound_fp32_kernel_stays_under_the_limit(h200) -> None:
    """matmul_tiled at 683 FLOP/B: 125.7 + 7.617 pJ × 66.9 TFLOP/s + DRAM = 648 W < 700 W (FMA measured 616 W)."""
    a = analyze(h200, _work("matmul_tiled"))
    assert a.bound == "compute" and not a.power_roof.binds


@pytest.mark.parametrize("value,words", [("350", "has no unit"), ("9 MW", "outside 1 W to 5 kW"),
                                         ("fast", "expected a power")])
def test_a_bad_power_limit_is_exit_2_naming_the_option(run_cli, value, words) -> None:
    r = run_cli("analyze", "attention_fused_bf16", "--spec", "h200", "--power-limit", value)
    assert r.code == 2 and "--power-limit" in r.err and words in r.err


def test_a_power_limit_at_or_below_idle_or_without_an_energy_block_is_refused(run_cli) -> None:
    r = run_cli("analyze", "attention_fused_bf16", "--spec", "h200", "--power-limit", "120W")
    assert r.code == 2 and "--power-limit" in r.err and "idle power 125.7 W" in r.err
    r = run_cli("analyze", "vector_add", "--spec", "h100", "--power-limit", "350W")
    assert r.code == 2 and "--power-limit" in r.err and "no energy block" in r.err


def test_a_spec_without_energy_figures_says_once_it_has_no_power_roof(run_cli) -> None:
    r = run_cli("analyze", "vector_add", "--spec", "h100")
    assert r.code == 0 and r.out.count("no power roof") == 1
    assert "power_roof" not in json.loads(run_cli("analyze", "vector_add", "--spec", "h100", "--format",
                                                  "json").out)["kernels"][0]


def test_the_spec_dram_bandwidth_is_held_to_the_plausible_range(tmp_path) -> None:
    text = (SPECS / "toy-energy.yaml").read_text()
    assert "energy:" in text
    bad = tmp_path / "bad.yaml"
    bad.write_text(text.replace("energy:\n", "energy:\n  dram_bandwidth: 4.2 PB/s\n", 1))
    with pytest.raises(InputError) as exc:
        load_spec(bad)
    assert "energy.dram_bandwidth" in exc.value.message


# ---- the measured side: a window's recorded clock and power against the limit ----------------------------------

# gpu_state as measure records it (roofline.measurement.gpustate), with the H200's 2026-12-04 figures
GEMM_AT_CAP = {"window": 2.55, "sm_clock_end": 1459e6, "sm_clock_max": 1980e6, "power_mean": 699.0,
               "power_limit": 700.0, "power_capped": 1.0, "thermal_capped": 0.0}
COPY_FREE = {"window": 2.5, "sm_clock_end": 1980e6, "sm_clock_max": 1980e6, "power_mean": 648.0,
             "power_limit": 700.0, "power_capped": 0.0, "thermal_capped": 0.0}


def test_a_window_at_the_limit_with_its_clock_lowered_is_power_bound() -> None:
    assert at_power_limit(GEMM_AT_CAP) is True and at_power_limit(COPY_FREE) is False
    # no violation counters: the mean power at the limit and the lowered clock decide
    no_counter = {k: v for k, v in GEMM_AT_CAP.items() if k != "power_capped"}
    assert at_power_limit(no_counter) is True
    assert at_power_limit({**no_counter, "power_mean": 500.0}) is False
    assert at_power_limit(None) is None and at_power_limit({"window": 1.0}) is None
    # the controller's share decides, however little the clock fell (gelu_erf on the H200, 2026-12-04)
    assert at_power_limit({**COPY_FREE, "power_capped": 0.785, "sm_clock_end": 1950e6, "power_mean": 707.0})


def test_every_kernel_the_h200_held_at_its_limit_is_power_bound_in_the_model(h200) -> None:
    """The recorded windows of the 2026-12-04 H200 catalogue run (copied from its results file into
    tests/data/h200/catalogue-windows-2026-12-04.json, not new measurements): each kernel whose window the GPU held
    at its power limit is power-bound in the model, and each kernel the model leaves memory- or compute-bound drew
    less than the limit with its clock free."""
    doc = json.loads((DATA / "h200" / "catalogue-windows-2026-12-04.json").read_text())
    held, free = [], []
    for entry in doc["kernels"]:
        state = entry.get("gpu_state")
        path = bundled_dir("kernels") / f"{entry['name']}.yaml"
        if not state or not path.exists() or entry["roof"] not in h200.energy.compute:
            continue
        a = analyze(h200, evaluate(load_descriptor(path), {k: compile_expr(v) for k, v in entry["params"].items()}))
        if at_power_limit(state):
            held.append(entry["name"])
            assert a.bound == "power", entry["name"]
        elif a.bound != "power":
            free.append(entry["name"])
            assert state["power_mean"] < 700.0 and not state["power_capped"], entry["name"]
    assert {"matmul_library_fp16", "gelu_erf", "gemv_batch16"} <= set(held) and "copy" in free


def test_power_measured_gives_the_fraction_of_both_ceilings() -> None:
    roof = {"power_limit": 700.0, "time": 2.0e-4, "flops": 6.6e14, "binds": True, "time_roof_sol_time": 1.4e-4,
            "time_roof_bound": "compute", "memory_rate": 4.2e12}
    m = power_measured(GEMM_AT_CAP, roof, 2.1e-4)
    assert m["power_bound"] is True and m["sm_clock"] == 1459e6 and m["power_mean"] == 699.0
    assert m["fraction_of_time_roof"] == pytest.approx(1.4e-4 / 2.1e-4)
    assert m["fraction_of_power_roof"] == pytest.approx(2.0e-4 / 2.1e-4)
    free = power_measured(COPY_FREE, None, 5e-4)
    assert free["power_bound"] is False and free["fraction_of_power_roof"] is None
    assert power_measured(None, roof, 1e-3) is None


# ---- the charts ---------------------------------------------------------------------------------------------------

def _h200_doc(*names: str, limit: float | None = None) -> dict:
    from roofline.model.analysis import analysis_document

    spec = load_spec(bundled_dir("specs") / "h200-sxm.yaml")
    if limit is not None:
        spec = replace(spec, power_limit=limit)
    return analysis_document(spec, [analyze(spec, _work(n)) for n in names], power_limit_what_if=limit is not None)


def _ys(line) -> list[tuple[float, float]]:
    import math

    return [(x, y) for x, y in zip(line.get_xdata(), line.get_ydata()) if not math.isnan(y)]


def test_plot_draws_the_bf16_power_roof_at_the_formula_and_under_the_time_roof() -> None:
    pytest.importorskip("matplotlib")
    from roofline.render.charts.plot import roofline_figure

    fig = roofline_figure([_h200_doc("attention_fused_bf16", "vector_add")])
    lines = {a.get_gid(): a for a in fig.axes[0].lines if a.get_gid()}
    bf16 = _ys(lines["roofline:power-roof:bf16_tensor"])
    assert bf16, "the BF16 power roof is drawn"
    for x, y in bf16:
        assert y == pytest.approx(_choi(700.0, H200_BF16, x) if H200_DRAM * y / x <= H200_DRAM * 4.2e12
                                  else (700 - H200_IDLE - H200_DRAM * 4.2e12) / H200_BF16, rel=1e-9)
        assert y < min(989.4e12, 4.8e12 * x)
    labels = [t.get_text() for t in fig.axes[0].texts if t.get_gid() == "roofline:roof-label"]
    assert any("BF16 tensor at the 700 W limit" in t and "(power roof)" in t for t in labels)
    # under a what-if limit the curve is lower, as the formula says, and its label says what-if
    half = roofline_figure([_h200_doc("attention_fused_bf16", limit=350.0)])
    low = dict(_ys({a.get_gid(): a for a in half.axes[0].lines}["roofline:power-roof:bf16_tensor"]))
    x = max(low)
    assert low[x] == pytest.approx(_choi(350.0, H200_BF16, x))
    assert any("350 W what-if" in t.get_text() for t in half.axes[0].texts)


def test_plot_draws_no_power_roof_without_energy_figures() -> None:
    pytest.importorskip("matplotlib")
    from roofline.model.analysis import analysis_document
    from roofline.render.charts.plot import roofline_figure

    spec = load_spec(bundled_dir("specs") / "h100-sxm.yaml")
    fig = roofline_figure([analysis_document(spec, [analyze(spec, _work("vector_add"))])])
    assert not [a for a in fig.axes[0].lines if (a.get_gid() or "").startswith("roofline:power-roof")]


def test_plot_energy_holds_model_points_at_the_limit_and_says_so_above_it() -> None:
    pytest.importorskip("matplotlib")
    from roofline.render.charts.energy import energy_figure, energy_points

    doc = _h200_doc("attention_fused_bf16", "matmul_library_fp16", "gelu_erf")
    points = energy_points([], [doc])
    assert all(p["power"] <= 700.0 * (1 + 1e-9) for p in points)  # the power roof holds them at the limit
    assert points[0]["power"] == pytest.approx(700.0)
    fig = energy_figure([doc["machine"]], [doc], [])
    gids = [a.get_gid() for ax in fig.axes for a in (*ax.lines, *ax.collections) if a.get_gid()]
    assert "roofline:power-limit" in gids and not [g for g in gids if "over-limit" in g]
    # an analysis made without the power roof (as before issue 43) puts the BF16 attention at 1,000+ W: drawn, and
    # said to be a power it cannot run at
    old = json.loads(json.dumps(doc))
    k = old["kernels"][0]
    k["energy"]["power"] = 1050.0
    fig = energy_figure([old["machine"]], [old], [])
    gids = [a.get_gid() for ax in fig.axes for a in ax.collections if a.get_gid()]
    assert "roofline:model-power-over-limit:1" in gids
    texts = [t.get_text() for t in fig.axes[1].texts]
    assert any("above the 700 W limit: cannot run here" in t and "attention_fused_bf16" in t for t in texts)


def test_measure_marks_a_gemm_at_the_cap_power_bound_with_its_clock_and_both_fractions(h200) -> None:
    """A timed entry as measure builds it (roofline.measurement.harness.timed_result) from a window recorded at the
    cap: the 4096³ FP16 GEMM's 210 µs of 2026-12-04, which beats the power roof's 225 µs by 7 %."""
    from roofline.measurement.harness import Timing, timed_result
    from roofline.records.document import as_result
    from roofline.render.tables.measure import problems

    work = _work("matmul_library_fp16")
    a = analyze(h200, work)
    timing = Timing(samples=[210e-6] * 5, repeats=5, mode="events", gpu_state=dict(GEMM_AT_CAP))
    entry = timed_result(a.to_dict(), work, a.sol_time, timing, 1, {}).to_json()
    m = entry["power_measured"]
    assert m["power_bound"] and m["sm_clock"] == 1459e6
    assert m["fraction_of_time_roof"] == pytest.approx(work.flops / 989.4e12 / 210e-6)
    assert m["fraction_of_power_roof"] == pytest.approx(a.power_roof.time / 210e-6) == entry["fraction_of_ceiling"]
    assert [w["code"] for w in entry["warnings"]].count("above-power-roof") == 1
    assert "model-under-counts" not in [w["code"] for w in entry["warnings"]]
    lines = problems({"kernels": [entry]})
    assert any("note matmul_library_fp16: ran power-bound" in line and "SM clock 1459 of 1980 MHz" in line
               and "699 W of 700 W" in line for line in lines)
    assert as_result(entry).extra["power_measured"]["power_bound"] is True


def test_specs_show_prints_the_rate_the_dram_energy_was_measured_at(run_cli) -> None:
    r = run_cli("specs", "show", "h200")
    assert r.code == 0 and "energy.dram_bandwidth" in r.out and "4.2 TB/s" in r.out
