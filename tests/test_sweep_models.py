"""`roofline sweep --model`: the first-principles default and the fitted model end to end on the NumPy backend, the
prediction line on the sweep chart, and benchmarks/h200_sweep_predict.py's plumbing (--backend numpy --dry, and
--recheck of the real H200 sweep)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import TOY_SPEC

ROOT = Path(__file__).resolve().parent.parent
M_ADD = Path(__file__).parent / "data" / "measure" / "m_add.yaml"
SCRIPT = ROOT / "benchmarks" / "h200_sweep_predict.py"
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
        want = m["launch_floor"] + max(2e-6 + k["bytes"] / 1e12, launch["windows"] * 2e-6)
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


def _script(*args: str, tmp_path: Path) -> subprocess.CompletedProcess:
    """The script with the committed H200 spec of tests/data (tests read nothing under docs/)."""
    if "--calibrated" not in args:
        args = (*args, "--calibrated", str(ROOT / "tests" / "data" / "h200" / "measured-2026-11-30.yaml"))
    return subprocess.run([sys.executable, str(SCRIPT), *args], cwd=tmp_path, capture_output=True, text=True,
                          timeout=120)


def test_the_h200_script_runs_end_to_end_on_the_host(tmp_path):
    out = tmp_path / "out"
    run = _script("--backend", "numpy", "--dry", "--only", "sum,softmax_fused", "--out", str(out),
                  tmp_path=tmp_path)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "sum: OK" in run.stdout and "softmax_fused: OK" in run.stdout and "elapsed:" in run.stdout
    summary = json.loads((out / "summary.json").read_text(encoding="utf-8"))
    assert [r["status"] for r in summary["runs"]] == ["OK", "OK"]
    assert len(summary["rows"]) == 6  # 3 sizes each
    assert {r["kernel"] for r in summary["rows"]} == {"sum", "softmax_fused"}
    assert all(r["measured"] and r["predicted"] > 0 for r in summary["rows"])
    assert "verdict: first-principles within 25 % at" in (out / "summary.txt").read_text(encoding="utf-8")
    import tarfile

    with tarfile.open(out / "sweeps.tgz") as tar:  # packed: a device call returns at most 8 files
        names = set(tar.getnames())
        assert {"sweeps/sum.json", "sweeps/sum.log", "sweeps/softmax_fused.json"} <= names
        assert b"--model first-principles" in tar.extractfile("sweeps/sum.log").read()
    assert sorted(p.name for p in out.iterdir()) == ["summary.json", "summary.txt", "sweeps.tgz"]


def test_the_h200_script_stops_starting_kernels_when_out_of_time(tmp_path):
    run = _script("--backend", "numpy", "--dry", "--only", "sum,copy", "--budget", "1", "--out",
                  str(tmp_path / "o"), tmp_path=tmp_path)
    assert run.returncode == 1
    runs = json.loads((tmp_path / "o" / "summary.json").read_text(encoding="utf-8"))["runs"]
    assert [r["status"] for r in runs] == ["skipped: out of time"] * 2


def test_the_h200_script_rechecks_the_recorded_sweep_without_a_device(tmp_path):
    run = _script("--recheck", str(ROOT / "tests" / "data" / "h200" / "sweep-vector_add_float4.json"),
                  "--calibrated", str(ROOT / "tests" / "data" / "h200" / "measured-2026-11-30.yaml"), tmp_path=tmp_path)
    assert run.returncode == 0, run.stderr
    assert "verdict: first-principles within 25 % at 17 of 17 sizes (0 FAILED); worst -21.1%; PASS" in run.stdout
