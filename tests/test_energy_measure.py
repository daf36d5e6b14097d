"""Measured energy (issue 33): a timed window's NVML energy turned into joules per run, power, FLOP/J and the share
of the energy ceiling (roofline.records.energy), through the harness with a fake NVML window, into results files
(old ones still load) and the report's --min-energy-fraction gate."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from conftest import DATA, SPECS
from roofline.load.specs import load_spec
from roofline.measurement.energy import input_kind
from roofline.measurement.gpustate import Reading, window_state
from roofline.records.energy import COUNTER_PERIOD, measured_energy, short_window_note

RESULTS = DATA / "results"


def test_joules_per_run_power_and_the_share_of_the_ceiling_by_hand() -> None:
    # 2 s window, 1400 J (700 W), 1000 runs: 1.4 J a run; 1 GFLOP and 4 GB a run; the ceiling says 0.7 J.
    state = {"window": 2.0, "energy": 1400.0, "power_mean": 700.0}
    e = measured_energy(state, 1000, 1e9, 4e9, 0.7, "random")
    assert e["joules_per_run"] == pytest.approx(1.4) and e["power_mean"] == pytest.approx(700.0)
    assert e["flops_per_joule"] == pytest.approx(1e9 / 1.4) and e["bytes_per_joule"] == pytest.approx(4e9 / 1.4)
    assert e["fraction_of_energy_ceiling"] == pytest.approx(0.5)
    assert e["uncertainty"] == pytest.approx(COUNTER_PERIOD / 2.0) and not e["short_window"]
    assert e["inputs"] == "random" and e["runs"] == 1000 and e["window"] == 2.0
    assert short_window_note(e) is None


def test_a_short_window_is_flagged_with_its_uncertainty() -> None:
    e = measured_energy({"window": 0.5, "energy": 350.0}, 100, 1e9, 1e9, None, "random")
    assert e["short_window"] and e["uncertainty"] == pytest.approx(0.2)
    assert e["fraction_of_energy_ceiling"] is None  # no energy figures in the spec
    note = short_window_note(e)
    assert "0.5 s window" in note and "up to 20% off" in note and "20-100 ms" in note


def test_no_energy_without_a_counter_reading() -> None:
    assert measured_energy(None, 10, 1, 1, None, None) is None
    assert measured_energy({"window": 1.0, "energy": None, "power_mean": None}, 10, 1, 1, None, None) is None
    assert measured_energy({"window": 1.0, "energy": 0.0}, 10, 1, 1, None, None) is None  # counter did not move
    assert measured_energy({"window": 1.0, "energy": 5.0}, 0, 1, 1, None, None) is None
    # a gpu_state from before `energy` was recorded: the mean power times the window
    legacy = measured_energy({"window": 2.0, "power_mean": 300.0}, 10, 1e6, 1e6, None, None)
    assert legacy["joules_per_run"] == pytest.approx(60.0) and legacy["inputs"] == "unknown"


def test_the_window_state_keeps_the_joules() -> None:
    state = window_state(Reading(time=1.0, energy=100.0), Reading(time=3.0, energy=1500.0), None, None)
    assert state["energy"] == pytest.approx(1400.0) and state["power_mean"] == pytest.approx(700.0)
    assert window_state(Reading(time=1.0), Reading(time=2.0), None, None)["energy"] is None


def test_input_kind_tells_random_from_constant() -> None:
    rng = np.random.default_rng(0)
    assert input_kind({"a": rng.standard_normal(1000), "b": rng.uniform(size=(30, 30))}) == "random"
    assert input_kind({"a": rng.standard_normal(1000), "b": np.ones(1000)}) == "constant"
    assert input_kind({"z": np.zeros((4096, 4096), np.float32)}) == "constant"
    assert input_kind({}) == "none" and input_kind({"s": np.float32(2.0)}) == "none"


# ---- through the harness, with a fake NVML window -------------------------------------------------------------


def _measure_copy_with_energy(monkeypatch, energy_j: float, window: float, runs_extra: int = 0) -> dict:
    from roofline.load.kernels import KernelCatalog
    from roofline.measurement.backend_numpy import NumpyBackend
    from roofline.measurement.harness import measure_kernel
    from roofline.measurement.implementation import load_implementation
    from roofline.measurement.policy import MeasurePolicy
    from roofline.model.analysis import analyze
    from roofline.model.expr import compile_expr
    from roofline.model.workload import evaluate

    backend = NumpyBackend()
    plain = backend.time_runs

    def with_energy(run, sets, policy):
        timing = plain(run, sets, policy)
        timing.gpu_state = window_state(Reading(time=0.0, energy=1000.0), Reading(time=window, energy=1000 + energy_j),
                                        None, 700.0)
        timing.window_runs = timing.repeats + runs_extra
        return timing

    monkeypatch.setattr(backend, "time_runs", with_energy)
    d = KernelCatalog.load().select(["copy"])[0]
    work = evaluate(d, {"n": compile_expr("4096")})
    spec = load_spec(SPECS / "toy-energy.yaml")
    return measure_kernel(d, work, analyze(spec, work), load_implementation(d), backend, MeasurePolicy(min_time=0.0))


def test_a_measured_entry_records_joules_per_run_and_its_share_of_the_energy_ceiling(monkeypatch) -> None:
    entry = _measure_copy_with_energy(monkeypatch, energy_j=600.0, window=2.0)
    e = entry["energy_measured"]
    runs = entry["repeats"]
    assert e["runs"] == runs and e["joules_per_run"] == pytest.approx(600.0 / runs)
    assert e["power_mean"] == pytest.approx(300.0)
    assert e["fraction_of_energy_ceiling"] == pytest.approx(entry["energy"]["min_energy"] / (600.0 / runs))
    assert e["flops_per_joule"] is None  # a copy does no FLOPs
    assert e["bytes_per_joule"] == pytest.approx(entry["bytes"] / (600.0 / runs))
    assert e["inputs"] == "random"  # the bundled copy kernel draws its input from the seeded generator
    assert not e["short_window"]


def test_the_runs_in_the_window_include_a_graphs_upload_launch(monkeypatch) -> None:
    entry = _measure_copy_with_energy(monkeypatch, energy_j=600.0, window=2.0, runs_extra=50)
    assert entry["energy_measured"]["runs"] == entry["repeats"] + 50


def test_a_numpy_run_has_no_measured_energy() -> None:
    from test_gpustate import measure_copy
    from roofline.measurement.backend_numpy import NumpyBackend

    assert "energy_measured" not in measure_copy(NumpyBackend(), 4096, 0.0)


def test_constant_inputs_warn(monkeypatch) -> None:
    import roofline.measurement.harness as harness

    monkeypatch.setattr(harness, "input_kind", lambda inputs: "constant")
    entry = _measure_copy_with_energy(monkeypatch, energy_j=600.0, window=2.0)
    assert entry["energy_measured"]["inputs"] == "constant"
    assert any(w["code"] == "energy-constant-inputs" and "2x low" in w["text"] for w in entry["warnings"])


def test_a_kernel_under_the_specs_minimum_energy_is_warned_not_celebrated(monkeypatch) -> None:
    """A share of the energy ceiling above 1 + the counter's uncertainty means the spec's energy figures are not
    this GPU's at this data: a warning with the fix. Within the uncertainty it is the counter's resolution."""
    fair = _measure_copy_with_energy(monkeypatch, energy_j=600.0, window=2.0)
    runs, minimum = fair["repeats"], fair["energy"]["min_energy"]
    low = _measure_copy_with_energy(monkeypatch, energy_j=0.5 * minimum * runs, window=2.0)
    assert low["energy_measured"]["fraction_of_energy_ceiling"] == pytest.approx(2.0, rel=0.05)
    (w,) = [w for w in low["warnings"] if w["code"] == "energy-beyond-ceiling"]
    assert "not this GPU's" in w["text"] and "calibrate --energy" in w["fix"]
    near = _measure_copy_with_energy(monkeypatch, energy_j=minimum * runs / 1.04, window=2.0)  # 104 %, counter 5 %
    assert 1.0 < near["energy_measured"]["fraction_of_energy_ceiling"] < 1.05
    assert not any(w["code"] == "energy-beyond-ceiling" for w in near["warnings"])


# ---- results files and the report gate ----------------------------------------------------------------------


def _with_energy(tmp_path: Path, shares: list[float | None], short: bool = False) -> Path:
    """h100.json with an energy_measured block on each kernel (None: a kernel without one)."""
    doc = json.loads((RESULTS / "h100.json").read_text(encoding="utf-8"))
    for k, share in zip(doc["kernels"], shares):
        if share is not None:
            k["energy_measured"] = {
                "joules_per_run": 1e-3, "power_mean": 500.0, "flops_per_joule": k["flops"] / 1e-3,
                "bytes_per_joule": k["bytes"] / 1e-3, "fraction_of_energy_ceiling": share,
                "window": 0.5 if short else 2.0, "runs": 1000, "energy": 1.0, "counter_period": 0.1,
                "uncertainty": 0.2 if short else 0.05, "short_window": short, "inputs": "random"}
    path = tmp_path / "energy.json"
    path.write_text(json.dumps(doc), encoding="utf-8")
    return path


def test_results_with_energy_load_and_old_files_still_do(tmp_path) -> None:
    from roofline.records.files import load_results

    f = load_results(_with_energy(tmp_path, [0.5, 0.6, 0.7, 0.8]))
    assert f.doc["kernels"][0]["energy_measured"]["fraction_of_energy_ceiling"] == 0.5
    assert load_results(RESULTS / "h100.json").doc["kernels"][0].get("energy_measured") is None


def test_a_negative_joule_is_refused_naming_the_field(tmp_path, run_cli) -> None:
    path = _with_energy(tmp_path, [0.5, 0.6, 0.7, 0.8])
    doc = json.loads(path.read_text())
    doc["kernels"][1]["energy_measured"]["joules_per_run"] = -1.0
    path.write_text(json.dumps(doc))
    r = run_cli("report", path)
    assert r.code == 2 and "Traceback" not in r.err
    assert "kernels[1] (triad).energy_measured.joules_per_run: is -1.0; it cannot be negative" in r.err


def test_report_gates_on_the_energy_fraction(tmp_path, run_cli) -> None:
    path = _with_energy(tmp_path, [0.5, 0.6, 0.7, 0.8])
    assert run_cli("report", path, "--min-energy-fraction", "40%").code == 0
    r = run_cli("report", path, "--min-energy-fraction", "0.65", "--format", "json")
    assert r.code == 1
    rows = json.loads(r.out)["rows"]
    assert [row["verdict"] for row in rows] == ["fail", "fail", "pass", "pass"]
    assert rows[0]["failures"] == ["50.0% of the energy ceiling, below the 65% gate"]
    assert rows[0]["failed_gates"] == ["energy"] and rows[2]["fraction_of_energy_ceiling"] == 0.7


def test_the_energy_gate_cannot_hold_without_a_measured_energy(tmp_path, run_cli) -> None:
    path = _with_energy(tmp_path, [0.9, None, 0.9, 0.9])
    r = run_cli("report", path, "--min-energy-fraction", "0.5", "--format", "json")
    assert r.code == 1
    row = json.loads(r.out)["rows"][1]
    assert row["verdict"] == "fail" and "no energy was measured" in row["failures"][0]
    ok = run_cli("report", path, "--min-energy-fraction", "0.5", "--allow-unknown-ceiling", "--format", "json")
    assert ok.code == 0 and "not checked" in json.loads(ok.out)["rows"][1]["notes"][-1]


def test_a_short_window_is_said_in_the_gate_failure(tmp_path, run_cli) -> None:
    path = _with_energy(tmp_path, [0.5, 0.9, 0.9, 0.9], short=True)
    rows = json.loads(run_cli("report", path, "--min-energy-fraction", "0.6", "--format", "json").out)["rows"]
    assert rows[0]["failures"] == ["50.0% of the energy ceiling, below the 60% gate (a 0.5 s window: up to 20% off)"]


def test_the_measure_table_shows_energy_columns_only_with_energy(tmp_path) -> None:
    from rich.console import Console

    from roofline.render.tables.measure import kernel_table, problems

    doc = json.loads(_with_energy(tmp_path, [0.5, 0.6, 0.7, 0.8], short=True).read_text())
    console = Console(width=250, record=True)
    console.print(kernel_table(doc["kernels"], "t"))
    text = console.export_text()
    assert "energy/run" in text and "~1 mJ" in text and "500 W" in text and "50.0%" in text
    assert any(line.startswith("note: the energy of 4 kernels") for line in problems(doc))
    plain = json.loads((RESULTS / "h100.json").read_text())
    console = Console(width=250, record=True)
    console.print(kernel_table(plain["kernels"], "t"))
    assert "energy/run" not in console.export_text()


@pytest.mark.gpu
def test_on_a_gpu_a_measured_kernel_records_its_energy() -> None:
    pytest.importorskip("pynvml", reason="nvidia-ml-py is not installed")
    from test_gpustate import measure_copy
    from roofline.measurement.backend_cupy import CupyBackend

    backend = CupyBackend(0)
    entry = measure_copy(backend, 2**26, 1.0)
    e = entry.get("energy_measured")
    if entry["gpu_state"]["energy"] is None:
        pytest.skip("this GPU or driver does not report the energy counter")
    assert e is not None and e["window"] >= 1.0 and not e["short_window"]
    assert 20 < e["power_mean"] < 2000 and e["inputs"] == "random"
    assert e["joules_per_run"] == pytest.approx(e["energy"] / e["runs"])


def test_report_table_and_markdown_show_the_energy_gate(tmp_path, run_cli) -> None:
    path = _with_energy(tmp_path, [0.5, 0.6, 0.7, 0.8])
    md = run_cli("report", path, "--min-energy-fraction", "0.65", "--format", "markdown")
    assert md.code == 1 and "of energy ceiling" in md.out and "**FAIL: energy below gate**" in md.out
    assert "50.0% of the energy ceiling, below the 65% gate" in md.out
    table = run_cli("report", path, "--min-energy-fraction", "0.65", "--wide")
    assert table.code == 1 and "FAIL: energy below gate" in table.out and "Traceback" not in table.err
    plain = run_cli("report", RESULTS / "h100.json", "--format", "markdown")
    assert plain.code == 0 and "energy" not in plain.out


def test_strict_model_failure_renders_in_the_table(tmp_path, run_cli) -> None:
    """A kernel failing --strict-model is drawn with its short verdict (it once raised KeyError 'model')."""
    doc = json.loads((RESULTS / "h100.json").read_text())
    k = doc["kernels"][0]
    k["time_median"] = k["time_min"] = k["time_max"] = k["sol_time"] / 1.5
    k["fraction_of_ceiling"] = 1.5
    path = tmp_path / "fast.json"
    path.write_text(json.dumps(doc))
    r = run_cli("report", path, "--strict-model", "--wide")
    assert r.code == 1 and "FAIL: above ceiling (model)" in r.out and "Traceback" not in r.err


def test_short_windows_are_one_note_for_the_run_not_one_per_kernel(tmp_path) -> None:
    """measure's default windows (0.5 s) are all short for NVML's counter: the run says so once, with the count and
    the worst uncertainty, instead of a line per kernel under the table."""
    from roofline.render.tables.measure import problems

    doc = json.loads(_with_energy(tmp_path, [0.5, 0.6, 0.7, 0.8], short=True).read_text(encoding="utf-8"))
    notes = [line for line in problems(doc) if "NVML" in line]
    assert len(notes) == 1 and "4 kernels" in notes[0] and "20%" in notes[0] and "--min-time 1" in notes[0]
    doc["kernels"] = doc["kernels"][:1]
    one = [line for line in problems(doc) if "NVML" in line]
    assert len(one) == 1 and one[0].startswith(f"note {doc['kernels'][0]['name']}:")
