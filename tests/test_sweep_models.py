"""`roofline sweep --model`: the first-principles default and the fitted model end to end on the NumPy backend, the
prediction line on the sweep chart (benchmarks/tests/test_bench_h200_sweep_predict.py tests the H200 script)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import TOY_SPEC

M_ADD = Path(__file__).parent / "data" / "measure" / "m_add.yaml"
ARGS = ("sweep", "m_add", "--kernels", M_ADD, "--backend", "numpy", "--spec", TOY_SPEC, "--sizes", "64,4096",
        "--min-time", "0", "--min-repeats", "2", "--format", "json")


@pytest.mark.parametrize("model, form", [("fitted", "additive"), ("additive", "additive"), ("max", "max")])
def test_the_fitted_model_is_still_there(run_cli, model, form):
    result = run_cli(*ARGS, "--model", model)
    assert result.code == 0, result.err
    doc = json.loads(result.out)
    assert doc["sweep"]["model"]["model"] == form and "efficiency" in doc["sweep"]["model"]
    assert all(k["prediction"]["model"] == form for k in doc["kernels"])


def test_first_principles_is_the_default_and_records_each_launch(run_cli):
    result = run_cli(*ARGS)
    assert result.code == 0, result.err
    doc = json.loads(result.out)
    m = doc["sweep"]["model"]
    assert m["model"] == "first-principles" and m["resident_threads"] == 10_000  # toy: 20 SMs × 500
    assert m["round_trip"] == 2e-6 and "not measured" in m["round_trip_source"]  # the host has no stream probe
    for k in doc["kernels"]:
        (launch,) = k["prediction"]["launches"]
        # m_add gives no geometry: one 4-byte access per thread (itemsize), all 10,000 resident ones in flight
        assert launch["in_flight"] == min(k["bytes"] / 4, 10_000) * 4
        # BW' is BW, or the assumed per-SM share × active SMs where the launch has fewer blocks than the 20 SMs
        blocks = -(-launch["threads"] // 128)
        bw = 1e12 if blocks >= 20 else min(1e12, blocks * 2 * 1e12 / 20)
        assert launch["stream_bandwidth"] == pytest.approx(bw) and launch["active_sms"] == min(blocks, 20)
        want = m["launch_floor"] + max(2e-6 + k["bytes"] / bw, launch["windows"] * 2e-6)
        assert k["predicted_time"] == pytest.approx(want)
        assert k["prediction_error"] == pytest.approx(k["predicted_time"] / k["time_median"] - 1)


def test_an_unknown_model_is_refused(run_cli):
    result = run_cli(*ARGS, "--model", "magic")
    assert result.code == 2 and "--model" in result.err


def test_the_sweep_chart_draws_the_prediction_beside_the_measurements(tmp_path, run_cli):
    pytest.importorskip("matplotlib")
    from roofline.render.charts.sweep import sweep_figure

    out = tmp_path / "s.json"
    result = run_cli(*ARGS[:-2], "-o", out)
    assert result.code == 0, result.err
    doc = json.loads(out.read_text(encoding="utf-8"))
    fig = sweep_figure(doc)
    (line,) = [ln for ln in fig.axes[0].lines if ln.get_gid() == "roofline:sweep-prediction"]
    xs, ys = line.get_data()
    assert list(xs) == [k["bytes"] for k in doc["kernels"]]
    assert list(ys) == pytest.approx([k["bytes"] / k["predicted_time"] for k in doc["kernels"]])
    labels = [t.get_text() for t in fig.axes[0].get_legend().get_texts()]
    assert "m_add predicted (first-principles)" in labels
