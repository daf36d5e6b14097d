"""`roofline measure` without a GPU (--backend numpy): FAILED kernels, exit codes, the results JSON and its round
trip through `report` and `plot`, the atomic writer, backend selection, and analysis-only kernels.

Sizes are tiny (-p n=1000) and the stop rule is the shortest (--min-time 0 --min-repeats 2)."""

from __future__ import annotations

import dataclasses
import json
import os
import sys
from pathlib import Path

import pytest

from roofline.model.analysis import KernelAnalysis
from roofline.records.files import load_results

MEASURE = Path(__file__).resolve().parent / "data" / "measure"
BROKEN = MEASURE / "broken"
HOST_LACKS = MEASURE / "host_lacks"  # m_bf16: a dtype NumPy has only with ml_dtypes; m_scale: float32
FAST = ("--min-time", "0", "--min-repeats", "2")
TINY = ("-p", "n=1000")

MEASURED_KEYS = ("time_median", "time_min", "time_max", "repeats", "achieved_bandwidth", "achieved_flops",
                 "fraction_of_ceiling", "verified", "status", "error")
# `energy` and `power_roof` are written only where the spec has energy figures (issues 33, 43; tests/test_energy_model.py,
# tests/test_power_roof.py).
ANALYSIS_KEYS = tuple(f.name for f in dataclasses.fields(KernelAnalysis) if f.name not in ("energy", "power_roof"))


def _measure(run_cli, *args):
    return run_cli("measure", "--backend", "numpy", "--kernels", MEASURE, *TINY, *FAST, *args)


def _read(path: Path) -> dict:
    return json.loads(path.read_text(encoding="utf-8"))


@pytest.fixture
def no_cupy(monkeypatch):
    """Make `import cupy` fail, as on a machine without CuPy (whatever this machine has)."""
    monkeypatch.setitem(sys.modules, "cupy", None)


# ---- FAILED kernels ---------------------------------------------------------------------------------


def test_wrong_kernels_are_failed_in_the_table_on_stderr_and_in_the_json(run_cli, tmp_path):
    out = tmp_path / "out.json"
    r = _measure(run_cli, "m_add", "m_unwritten", "m_wrong_value", "m_inputs_raise", "-o", out)
    assert r.code == 1, r.err  # written, then exit 1: a FAILED kernel fails the run
    assert "Traceback" not in r.err
    table_rows = {line.split("│")[1].strip(): line for line in r.out.splitlines() if line.count("│") > 3}
    assert "OK" in table_rows["m_add"]
    for name in ("m_unwritten", "m_wrong_value", "m_inputs_raise"):
        assert "FAILED" in table_rows[name], name
    assert ("FAILED m_unwritten: wrong result: c: 1 of 1000 elements not written (still poisoned), "
            "first at index (999,)") in r.err
    assert "FAILED m_wrong_value: wrong result: c: 1 of 1000 elements outside tolerance" in r.err
    assert "worst at (7,): got " in r.err
    assert ("FAILED m_inputs_raise: the implementation's inputs/outputs/reference raised ValueError: "
            "cannot make inputs for this test kernel") in r.err
    assert "FAILED m_add" not in r.err

    kernels = {k["name"]: k for k in _read(out)["kernels"]}
    assert list(kernels) == ["m_add", "m_unwritten", "m_wrong_value", "m_inputs_raise"]
    ok = kernels["m_add"]
    assert ok["status"] == "OK" and ok["verified"] is True and ok["error"] is None
    assert ok["time_median"] > 0 and ok["repeats"] >= 2
    assert ok["time_min"] <= ok["time_median"] <= ok["time_max"]
    assert ok["params"] == {"n": 1000}
    for name in ("m_unwritten", "m_wrong_value", "m_inputs_raise"):
        k = kernels[name]
        assert k["status"] == "FAILED" and k["verified"] is False, name
        assert k["time_median"] is None and k["time_min"] is None and k["time_max"] is None, name
        assert k["achieved_bandwidth"] is None and k["achieved_flops"] is None, name
        assert k["fraction_of_ceiling"] is None and k["repeats"] == 0, name
    assert "first at index (999,)" in kernels["m_unwritten"]["error"]
    assert "ValueError: cannot make inputs" in kernels["m_inputs_raise"]["error"]


@pytest.mark.parametrize(
    "name, words",
    [("m_bad_interface", "INTERFACE: expected INTERFACE = 1"),
     ("m_no_reference", "reference: the implementation must define a function reference")],
)
def test_broken_implementation_exits_2_naming_the_file(run_cli, tmp_path, name, words):
    out = tmp_path / "out.json"
    r = run_cli("measure", "--backend", "numpy", "--kernels", BROKEN, name, *TINY, *FAST, "-o", out)
    assert r.code == 2
    assert "Traceback" not in r.err
    assert "error: " in r.err
    assert str(BROKEN / f"{name}.py") in r.err
    assert words in r.err
    assert not out.exists()


def test_bad_policy_options_exit_2(run_cli):
    r = run_cli("measure", "--backend", "numpy", "--kernels", MEASURE, "m_add", *TINY, "--min-repeats", "0")
    assert r.code == 2 and "--min-repeats" in r.err
    r = run_cli("measure", "--backend", "numpy", "--kernels", MEASURE, "m_add", *TINY, "--min-time", "-1")
    assert r.code == 2 and "--min-time" in r.err


# ---- the results JSON -------------------------------------------------------------------------------


def test_results_json_without_spec(run_cli, tmp_path):
    out = tmp_path / "out.json"
    r = _measure(run_cli, "m_add", "m_unwritten", "-o", out)
    assert r.code == 1, r.err  # results written, then exit 1 for the FAILED kernel
    assert f"wrote {out}" in r.err
    doc = _read(out)
    assert doc["schema"] == "roofline/results/v1"
    assert doc["backend"] == "numpy"
    assert doc["machine"] is None
    assert doc["device"]["spec_id"] is None and doc["device"]["kind"] == "cpu"
    assert isinstance(doc["device"]["name"], str) and doc["device"]["name"]
    assert doc["policy"]["min_time"] == 0.0 and doc["policy"]["min_repeats"] == 2
    assert isinstance(doc["created"], str) and isinstance(doc["tool_version"], str)
    for k in doc["kernels"]:
        missing = [key for key in (*MEASURED_KEYS, *ANALYSIS_KEYS) if key not in k]
        assert missing == [], (k["name"], missing)
        assert k["fraction_of_ceiling"] is None
        assert k["sol_time"] is None and k["peak_flops"] is None  # no machine, no ceiling
        assert k["flops"] == 1000 and k["bytes"] == 3 * 1000 * 4 and k["intensity"] == pytest.approx(1 / 12)
    assert [k["status"] for k in doc["kernels"]] == ["OK", "FAILED"]


def test_results_json_without_spec_is_accepted_by_the_loader(run_cli, tmp_path):
    out = tmp_path / "out.json"
    r = _measure(run_cli, "m_add", "-o", out)
    assert r.code == 0, r.err
    doc = load_results(out).doc
    assert doc["machine"] is None


def test_results_json_with_spec_loads_and_round_trips_through_report_and_plot(run_cli, tmp_path):
    out = tmp_path / "out.json"
    r = _measure(run_cli, "m_add", "--spec", "h100", "-o", out)
    assert r.code == 0, r.err
    doc = load_results(out).doc  # raises InputError on anything the loader cannot use
    assert doc["schema"] == "roofline/results/v1" and doc["backend"] == "numpy"
    machine = doc["machine"]
    assert machine["id"].startswith("h100")
    assert machine["bandwidth"] > 0 and machine["roofs"]["fp32"] > 0
    assert doc["device"]["spec_id"] == machine["id"] and doc["device"]["spec_derived"] is False
    (k,) = doc["kernels"]
    missing = [key for key in (*MEASURED_KEYS, *ANALYSIS_KEYS) if key not in k]
    assert missing == []
    assert k["status"] == "OK" and k["verified"] is True
    assert isinstance(k["fraction_of_ceiling"], float)
    assert k["fraction_of_ceiling"] == pytest.approx(k["sol_time"] / k["time_median"])
    assert k["sol_time"] == pytest.approx(max(k["flops"] / k["peak_flops"], k["bytes"] / k["bandwidth"]))
    assert k["achieved_bandwidth"] == pytest.approx(k["bytes"] / k["time_median"])
    assert k["achieved_flops"] == pytest.approx(k["flops"] / k["time_median"])

    rep = run_cli("report", out, "--format", "json")
    assert rep.code == 0, rep.err
    assert "m_add" in rep.out
    json.loads(rep.out)

    png = tmp_path / "x.png"
    plot = run_cli("plot", "--results", out, "-o", png)
    assert plot.code == 0, plot.err
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_failed_kernel_in_results_with_spec_loads_and_fails_the_report(run_cli, tmp_path):
    out = tmp_path / "out.json"
    r = _measure(run_cli, "m_add", "m_unwritten", "--spec", "h100", "-o", out)
    assert r.code == 1, r.err  # results written, then exit 1 for the FAILED kernel
    doc = load_results(out).doc
    failed = [k for k in doc["kernels"] if k["status"] == "FAILED"]
    assert [k["name"] for k in failed] == ["m_unwritten"]
    assert failed[0]["fraction_of_ceiling"] is None and failed[0]["time_median"] is None
    assert failed[0]["sol_time"] > 0  # the analysis is still there
    rep = run_cli("report", out, "--format", "json")
    assert rep.code == 1  # a FAILED kernel always fails the report


def test_json_on_stdout_is_the_written_document(run_cli, tmp_path):
    out = tmp_path / "out.json"
    r = _measure(run_cli, "m_add", "--format", "json", "-o", out)
    assert r.code == 0, r.err
    assert json.loads(r.out) == _read(out)


# ---- atomic writes ----------------------------------------------------------------------------------


def _leftovers(folder: Path, keep: str) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name != keep)


def test_write_json_atomic_writes_and_leaves_no_temporary(tmp_path):
    from roofline.load.jsonio import write_json_atomic

    path = tmp_path / "r.json"
    path.write_text("old")
    write_json_atomic(path, {"a": 1, "inf": float("inf"), "nan": float("nan")})
    assert json.loads(path.read_text()) == {"a": 1, "inf": None, "nan": None}  # JSON has no inf/NaN
    assert _leftovers(tmp_path, "r.json") == []


def test_write_json_atomic_keeps_the_old_file_when_serialisation_fails(tmp_path):
    from roofline.load.jsonio import write_json_atomic

    path = tmp_path / "r.json"
    path.write_text('{"old": true}\n')
    with pytest.raises(TypeError):
        write_json_atomic(path, {"kernels": [object()]})
    assert path.read_text() == '{"old": true}\n'
    assert _leftovers(tmp_path, "r.json") == []


def test_write_json_atomic_keeps_the_old_file_when_the_rename_fails(tmp_path, monkeypatch):
    from roofline.load import jsonio
    path = tmp_path / "r.json"
    path.write_text('{"old": true}\n')

    def refuse(src, dst):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", refuse)
    with pytest.raises(OSError):
        jsonio.write_json_atomic(path, {"new": True})
    monkeypatch.undo()
    assert path.read_text() == '{"old": true}\n'
    assert _leftovers(tmp_path, "r.json") == []


def test_measure_output_to_a_missing_folder_exits_2(run_cli, tmp_path):
    r = _measure(run_cli, "m_add", "-o", tmp_path / "no" / "such" / "out.json")
    assert r.code == 2
    assert "cannot write" in r.err and "Traceback" not in r.err


@pytest.mark.parametrize("where, words", [
    ("no/such/out.json", "does not exist"),
    ("file.txt/out.json", "a part of its path is a file"),
    (".", "is a directory"),
])
def test_measure_output_that_cannot_be_written_is_refused_before_anything_runs(run_cli, tmp_path, monkeypatch,
                                                                                  where, words):
    import roofline.measurement.session as session

    ran = []
    monkeypatch.setattr(session, "measure_all", lambda *a, **k: ran.append(1) or [])
    (tmp_path / "file.txt").write_text("x")
    r = _measure(run_cli, "m_add", "-o", tmp_path / where)
    assert r.code == 2, r.err
    assert words in r.err and "Traceback" not in r.err
    assert ran == []  # refused while reading the options, before any kernel ran


def test_profile_save_csv_that_cannot_be_written_is_refused_before_ncu_runs(run_cli, tmp_path, monkeypatch):
    import roofline.ncu.profile

    monkeypatch.setattr(roofline.ncu.profile, "find_ncu", lambda path: pytest.fail("ncu looked for"))
    r = run_cli("profile", "--save-csv", tmp_path / "no" / "x.csv", "--", "true")
    assert r.code == 2 and "--save-csv" in r.err and "does not exist" in r.err
    r = run_cli("profile", "-o", tmp_path / "no" / "x.json", "--", "true")
    assert r.code == 2 and "does not exist" in r.err


def skip_if_numpy_has_bfloat16() -> None:
    """The host_lacks kernels need a NumPy that cannot make bfloat16 (ml_dtypes, once imported, teaches it)."""
    import numpy as np

    try:
        np.dtype("bfloat16")
    except TypeError:
        return
    pytest.skip("this process's NumPy has bfloat16 (ml_dtypes was imported)")


def test_kernels_the_host_cannot_make_are_skipped_listed_and_the_rest_written(run_cli, no_bundled_kernels, tmp_path):
    skip_if_numpy_has_bfloat16()
    out = tmp_path / "out.json"
    r = run_cli("measure", "--backend", "numpy", "--kernels", HOST_LACKS, "--spec", "h100", *TINY, *FAST, "-o", out)
    assert r.code == 0, r.err  # a kernel not run here is no failure
    assert "note: m_bf16 skipped: it has dtype bfloat16, which NumPy cannot make here" in r.err
    assert "pip install ml_dtypes" in r.err
    assert "SKIPPED m_bf16: not run: it has dtype bfloat16" in r.err
    rows = {line.split("│")[1].strip(): line for line in r.out.splitlines() if line.count("│") > 3}
    assert "SKIPPED" in rows["m_bf16"] and "OK" in rows["m_scale"]
    kernels = {k["name"]: k for k in _read(out)["kernels"]}
    assert kernels["m_scale"]["status"] == "OK"
    skipped = kernels["m_bf16"]
    assert skipped["status"] == "SKIPPED" and skipped["verified"] is None and skipped["time_median"] is None
    assert skipped["sol_time"] > 0 and "bfloat16" in skipped["error"]  # the analysis is there, the run is not
    report = run_cli("report", out, "--format", "json")
    assert report.code == 0, report.err  # reported, never gated
    assert {row["kernel"]: row["verdict"] for row in json.loads(report.out)["rows"]}["m_bf16"] == "skip"
    assert run_cli("plot", "--results", out, "-o", tmp_path / "chart.png").code == 0


def test_naming_a_kernel_the_host_cannot_make_is_refused_before_anything_runs(run_cli, tmp_path, monkeypatch):
    skip_if_numpy_has_bfloat16()
    import roofline.measurement.session as session

    ran = []
    monkeypatch.setattr(session, "measure_all", lambda *a, **k: ran.append(1) or [])
    r = run_cli("measure", "--backend", "numpy", "--kernels", HOST_LACKS, "m_scale", "m_bf16", *TINY, *FAST)
    assert r.code == 2 and "error: kernel 'm_bf16' has dtype bfloat16" in r.err
    assert ran == []


def test_a_kernel_that_stops_the_run_keeps_the_results_of_those_before_it(run_cli, tmp_path):
    out = tmp_path / "out.json"
    r = run_cli("measure", "--backend", "numpy", "--kernels", MEASURE, "--kernels", BROKEN, "m_add", "m_inputs_list",
                *TINY, *FAST, "-o", out)
    assert r.code == 2, r.err
    assert "m_inputs_list.py: inputs: must return a dict" in r.err and "Traceback" not in r.err
    assert f"wrote {out}: the 1 kernel measured before the error" in r.err
    assert [k["name"] for k in _read(out)["kernels"]] == ["m_add"]


# ---- backends ---------------------------------------------------------------------------------------


def test_backend_cupy_without_cupy_exits_3_with_the_install_hint(run_cli, no_cupy, tmp_path):
    out = tmp_path / "out.json"
    r = run_cli("measure", "--backend", "cupy", "--kernels", MEASURE, "m_add", *TINY, *FAST, "-o", out)
    assert r.code == 3
    assert "Traceback" not in r.err
    assert "pip install cupy-cuda12x" in r.err and "gpu-roofline[" not in r.err  # a published package
    assert "--backend numpy" in r.err
    assert not out.exists()


def test_backend_auto_without_cupy_exits_3_with_the_fix_and_writes_nothing(run_cli, no_cupy, tmp_path):
    out = tmp_path / "out.json"
    r = run_cli("measure", "--backend", "auto", "--kernels", MEASURE, "m_add", *TINY, *FAST, "-o", out)
    assert r.code == 3, r.err
    assert "pip install cupy-cuda12x" in r.err and "--backend numpy" in r.err  # both fixes named
    assert "Traceback" not in r.err
    assert not out.exists()


def test_backend_numpy_says_it_runs_on_the_host_and_at_what_size(run_cli):
    r = _measure(run_cli, "m_add")
    assert r.code == 0, r.err
    assert "HOST CPU" in r.err and "m_add n=1000" in r.err


def test_backend_numpy_says_nothing_about_falling_back(run_cli):
    r = _measure(run_cli, "m_add")
    assert r.code == 0, r.err
    assert "no usable CUDA device" not in r.err


# ---- analysis-only kernels --------------------------------------------------------------------------


def test_naming_an_analysis_only_kernel_exits_2(run_cli):
    r = run_cli("measure", "--backend", "numpy", "--kernels", MEASURE, "m_analysis_only", *FAST)
    assert r.code == 2
    assert "error: kernel 'm_analysis_only' has no implementation (analysis only)" in r.err
    # named next to a measurable kernel: still an error, not a silent skip
    r = run_cli("measure", "--backend", "numpy", "--kernels", MEASURE, "m_add", "m_analysis_only", *TINY, *FAST)
    assert r.code == 2
    assert "error: kernel 'm_analysis_only' has no implementation (analysis only)" in r.err
    assert "skipped" not in r.err


def test_selecting_all_bundled_kernels_skips_analysis_only_with_a_note(run_cli, monkeypatch):
    import roofline.measurement.session as session

    measured: list[str] = []

    def fake_measure_all(kernels, overrides, backend, machine, policy, progress=lambda name: None, done=None):
        measured.extend(d.name for d in kernels)  # the full bundled sizes are far too big to run here
        return []

    monkeypatch.setattr(session, "measure_all", fake_measure_all)
    r = run_cli("measure", "--backend", "numpy", "--kernels", MEASURE, *FAST)  # the bundled ones and tests/data's
    assert r.code == 0, r.err
    assert "note: m_analysis_only skipped: it has no implementation (analysis only)" in r.err
    assert "m_analysis_only" not in measured
    assert "vector_add" in measured and "attention_fused" in measured


def test_selecting_all_measures_the_rest_and_skips_analysis_only(run_cli, no_bundled_kernels, tmp_path):
    out = tmp_path / "out.json"
    r = _measure(run_cli, "-o", out)  # every kernel in tests/data/measure (the bundled ones hidden)
    assert r.code == 1, r.err  # results written, then exit 1 for the FAILED kernel
    assert "note: m_analysis_only skipped: it has no implementation (analysis only)" in r.err
    statuses = {k["name"]: k["status"] for k in _read(out)["kernels"]}
    assert statuses == {"m_add": "OK", "m_inputs_raise": "FAILED", "m_unwritten": "FAILED",
                        "m_wrong_value": "FAILED"}


def test_results_without_spec_fail_a_fraction_gate_and_plot_asks_for_a_spec(run_cli, tmp_path):
    out = tmp_path / "out.json"
    assert _measure(run_cli, "m_add", "-o", out).code == 0
    r = run_cli("report", out, "--fail-below", "0.5", "--format", "json")
    assert r.code == 1, r.err  # a fraction gate that cannot be evaluated does not hold
    row = json.loads(r.out)["rows"][0]
    assert row["fraction_of_ceiling"] is None and "ceiling unknown" in row["failures"][0]
    assert run_cli("report", out, "--fail-below", "0.5", "--allow-unknown-ceiling").code == 0
    r = run_cli("plot", "--results", out, "-o", tmp_path / "x.png")
    assert r.code == 2
    assert "measured without a spec" in r.err and not (tmp_path / "x.png").exists()


def test_a_ci_log_gets_one_plain_line_per_kernel_as_it_finishes(run_cli):
    r = _measure(run_cli, "m_add", "m_unwritten")
    lines = [line for line in r.err.splitlines() if line.startswith("measure: ")]
    assert [line.rsplit(",", 1)[0] for line in lines] == ["measure: m_add n=1000: OK", "measure: m_unwritten n=1000: FAILED"]


def test_the_measure_table_has_a_gpu_column_only_for_several_gpus():
    import io

    from rich.console import Console

    from roofline.render.tables.measure import kernel_table

    row = {"name": "k", "status": "OK", "time_median": 1e-3, "time_min": 1e-3, "time_max": 1e-3,
           "achieved_bandwidth": 1e12, "achieved_flops": 1e9, "fraction_of_ceiling": 0.5}

    def text(kernels):
        out = io.StringIO()
        Console(file=out, width=200).print(kernel_table(kernels, "t"))
        return out.getvalue()

    assert "GPU" not in text([row])
    both = text([{**row, "device": 0}, {**row, "device": 1}])
    assert "GPU" in both and "0 │ k" in both and "1 │ k" in both
