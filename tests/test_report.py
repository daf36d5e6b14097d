"""`roofline report`: golden Markdown and JUnit, every gate's pass and fail, baseline, merging, bad files."""

from __future__ import annotations

import json
import os
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from roofline.gates.config import GateConfig, Thresholds, gates_from_mapping, load_gates, parse_fraction
from roofline.gates.report import build_report, failure_message
from roofline.errors import InputError
from roofline.records.files import ResultsFile, load_results

HERE = Path(__file__).parent
DATA = HERE / "data" / "results"
GOLDEN = HERE / "golden"




@pytest.fixture
def in_data(monkeypatch):
    """Run in the fixtures folder so file names in reports are short and machine-independent."""
    monkeypatch.chdir(DATA)


def check_golden(name: str, text: str) -> None:
    path = GOLDEN / name
    if os.environ.get("ROOFLINE_UPDATE_GOLDEN"):
        path.write_text(text, encoding="utf-8")
    assert text == path.read_text(encoding="utf-8"), f"differs from {path}; ROOFLINE_UPDATE_GOLDEN=1 regenerates it"


# ---- golden renders ---------------------------------------------------------------------------


def test_markdown_golden(run_cli, in_data):
    code, out, _ = run_cli("report", "h100.json", "a100_failed.json", "--baseline", "h100_baseline.json",
                       "--max-regression", "5%", "--fail-below", "0.5", "--format", "markdown")
    assert code == 1
    check_golden("report.md", out)


def test_markdown_golden_all_pass(run_cli, in_data):
    code, out, _ = run_cli("report", "h100.json", "--baseline", "h100_baseline.json", "--format", "markdown")
    assert code == 0
    check_golden("report_pass.md", out)


def test_junit_golden(run_cli, in_data):
    code, out, _ = run_cli("report", "h100.json", "a100_failed.json", "--fail-below", "0.5",
                       "--format", "junit")
    assert code == 1
    check_golden("report.junit.xml", out)
    root = ET.fromstring(out)
    suites = root.findall("testsuite")
    assert [s.get("name") for s in suites] == ["NVIDIA H100 80GB HBM3", "NVIDIA A100-SXM4-80GB"]
    assert len(root.findall(".//testcase")) == 7
    failures = {c.get("name"): c.find("failure").get("message") for c in root.iter("testcase")
                if c.find("failure") is not None}
    assert set(failures) == {"matmul_tiled[n=2^12]", "softmax_fused[rows=2^13 cols=2^13]", "sum[n=2^28]"}
    assert "FAILED verification" in failures["softmax_fused[rows=2^13 cols=2^13]"]


def test_table_and_json(run_cli, in_data):
    code, out, _ = run_cli("report", "h100.json")
    assert code == 0
    for word in ("vector_add", "88.0%", "2.95 TB/s", "3.35 TB/s", "all gates hold"):
        assert word in out
    code, out, _ = run_cli("report", "h100.json", "--format", "json")
    doc = json.loads(out)
    assert doc["schema"] == "roofline/report/v1"
    assert doc["summary"] == {"kernels": 4, "passed": 4, "failed": 0, "skipped": 0, "ok": True}
    row = doc["rows"][0]
    assert row["fraction_of_ceiling"] == pytest.approx(0.88)
    assert row["gap"] == pytest.approx(0.12)
    assert row["attainable_unit"] == "B/s"


def test_output_file_written_before_gate_fails(run_cli, tmp_path):
    target = tmp_path / "report.md"
    code, out, err = run_cli("report", str(DATA / "a100_failed.json"), "--format", "markdown", "-o", str(target))
    assert code == 1
    assert "softmax_fused" in target.read_text()
    assert "1 of 3 kernels failed a gate" in err


# ---- gates ------------------------------------------------------------------------------------


def rows_by_kernel(report: dict) -> dict[str, dict]:
    return {r["kernel"]: r for r in report["rows"]}


def test_fail_below_pass_and_fail():
    doc = load_results(DATA / "h100.json")
    assert build_report([doc], GateConfig(Thresholds(fail_below=0.3)))["summary"]["ok"]
    report = build_report([doc], GateConfig(Thresholds(fail_below=0.6)))
    rows = rows_by_kernel(report)
    assert not report["summary"]["ok"]
    assert rows["matmul_tiled"]["verdict"] == "fail" and rows["matmul_tiled"]["failed_gates"] == ["fail_below"]
    assert rows["sum"]["verdict"] == "pass"  # 0.62 >= 0.6


def test_a_gate_that_fails_while_the_gpu_was_power_capped_says_so():
    from roofline.render.tables.report import to_junit, to_markdown

    results = load_results(DATA / "h100.json")
    doc = results.doc
    capped = {"window": 0.6, "sm_clock_start": 1.98e9, "sm_clock_end": 1.515e9, "sm_clock_max": 1.98e9,
              "power_mean": 641.0, "power_limit": 700.0, "power_capped": 0.93, "thermal_capped": 0.0,
              "reasons_end": ["power cap"]}
    for k in doc["kernels"]:
        if k["name"] in ("matmul_tiled", "sum"):
            k["gpu_state"] = capped
    results = ResultsFile.of(doc, results.path)  # gates read the typed form: an edited document is checked again
    report = build_report([results], GateConfig(Thresholds(fail_below=0.6)))
    rows = rows_by_kernel(report)
    assert rows["matmul_tiled"]["verdict"] == "fail" and rows["matmul_tiled"]["throttled"].startswith("power-capped")
    assert rows["sum"]["verdict"] == "pass" and any(n.startswith("power-capped for 93%") for n in rows["sum"]["notes"])
    assert rows["triad"]["throttled"] is None
    md = to_markdown(report)
    fail_line = next(line for line in md.splitlines() if line.startswith("- `matmul_tiled`"))
    assert "below" in fail_line and "power-capped for 93%" in fail_line and "1515 of 1980 MHz" in fail_line
    failures = ET.fromstring(to_junit(report).split("\n", 1)[1]).findall(".//failure")
    assert len(failures) == 1 and "power-capped for 93%" in failures[0].get("message")


def test_fail_below_cli_exit_codes(run_cli):
    assert run_cli("report", str(DATA / "h100.json"), "--fail-below", "30%")[0] == 0
    assert run_cli("report", str(DATA / "h100.json"), "--fail-below", "0.7")[0] == 1


def test_failed_kernel_always_fails(run_cli):
    report = build_report([load_results(DATA / "a100_failed.json")], GateConfig())
    rows = rows_by_kernel(report)
    assert rows["softmax_fused"]["verdict"] == "fail"
    assert rows["softmax_fused"]["failed_gates"] == ["verified"]
    assert rows["vector_add"]["verdict"] == "pass"
    assert run_cli("report", str(DATA / "a100_failed.json"))[0] == 1


def test_baseline_change_and_regression_gate(run_cli):
    h100, base = load_results(DATA / "h100.json"), load_results(DATA / "h100_baseline.json")
    report = build_report([h100], GateConfig(Thresholds(max_regression=0.05)), [base])
    rows = rows_by_kernel(report)
    assert rows["vector_add"]["change"] == pytest.approx(0.97 / 0.88 - 1)
    assert rows["vector_add"]["verdict"] == "fail" and rows["vector_add"]["failed_gates"] == ["max_regression"]
    assert rows["triad"]["change"] < 0 and rows["triad"]["verdict"] == "pass"
    assert rows["sum"]["verdict"] == "pass"  # 1.6% slower, under 5%
    assert rows["matmul_tiled"]["change"] is None and "not in baseline" in rows["matmul_tiled"]["notes"]
    # a looser limit passes
    assert build_report([h100], GateConfig(Thresholds(max_regression=0.15)), [base])["summary"]["ok"]
    args = ["report", str(DATA / "h100.json"), "--baseline", str(DATA / "h100_baseline.json")]
    assert run_cli(*args)[0] == 0  # without --max-regression the change is shown, not gated
    assert run_cli(*args, "--max-regression", "5%")[0] == 1
    assert run_cli(*args, "--max-regression", "0.2")[0] == 0


def test_baseline_never_matches_another_device():
    report = build_report([load_results(DATA / "a100_failed.json")], GateConfig(Thresholds(max_regression=0.01)),
                          [load_results(DATA / "h100_baseline.json")])
    assert all(r["change"] is None for r in report["rows"])


def test_merge_two_devices(capsys):
    report = build_report([load_results(DATA / "h100.json"), load_results(DATA / "a100_failed.json")])
    assert [d["label"] for d in report["devices"]] == ["NVIDIA H100 80GB HBM3", "NVIDIA A100-SXM4-80GB"]
    keys = [(r["device"], r["kernel"]) for r in report["rows"]]
    assert ("NVIDIA H100 80GB HBM3", "vector_add") in keys and ("NVIDIA A100-SXM4-80GB", "vector_add") in keys
    assert len(keys) == len(set(keys)) == 7


def test_gates_yaml(tmp_path, run_cli):
    gates = tmp_path / "gates.yaml"
    gates.write_text("default:\n  fail_below: 70%\nkernels:\n  sum: {fail_below: 0.5}\n"
                     "  matmul_tiled: {fail_below: null}\n")
    config = load_gates(gates)
    assert config.for_kernel("vector_add") == Thresholds(0.7, None)
    assert config.for_kernel("sum") == Thresholds(0.5, None)
    assert config.for_kernel("matmul_tiled").fail_below is None
    assert run_cli("report", str(DATA / "h100.json"), "--gates", str(gates))[0] == 0
    gates.write_text("default:\n  fail_below: 0.7\n")
    code, out, err = run_cli("report", str(DATA / "h100.json"), "--gates", str(gates))
    assert code == 1 and "2 of 4 kernels failed" in err
    # the command line replaces the file's default, per-kernel entries still win
    assert config.with_options(0.9, None).for_kernel("sum").fail_below == 0.5
    assert config.with_options(0.9, None).for_kernel("triad").fail_below == 0.9


@pytest.mark.parametrize("text, message", [
    ("default: {fail_under: 0.5}\n", "default.fail_under: unknown gate"),
    ("default: {fail_below: lots}\n", "default.fail_below: expected a fraction"),
    ("thresholds: {}\n", "thresholds: unknown key"),
    ("schema_version: 9\n", "newer than this roofline reads"),
    ("kernels: [sum]\n", "kernels: expected a mapping"),
])
def test_gates_yaml_errors(tmp_path, text, message):
    path = tmp_path / "gates.yaml"
    path.write_text(text)
    with pytest.raises(InputError, match=message):
        load_gates(path)


def test_parse_fraction():
    assert parse_fraction("5%", "x") == pytest.approx(0.05)
    assert parse_fraction(0.7, "x") == 0.7
    for bad in ("-1", "abc", True):
        with pytest.raises(InputError):
            parse_fraction(bad, "x")
    assert gates_from_mapping({}).default == Thresholds()


# ---- bad input: exit 2, one line, no traceback ------------------------------------------------


@pytest.mark.parametrize("name, message", [
    ("not_json.json", "is not valid JSON"),
    ("wrong_schema_v2.json", "newer than this roofline reads"),
    ("absent.json", "no such file"),
])
def test_bad_files_exit_2(run_cli, name, message):
    code, out, err = run_cli("report", str(DATA / name))
    assert code == 2
    assert message in err and "Traceback" not in err
    assert out == ""


def test_bad_baseline_and_options(run_cli, tmp_path):
    assert run_cli("report", str(DATA / "h100.json"), "--baseline", str(DATA / "not_json.json"))[0] == 2
    code, _, err = run_cli("report", str(DATA / "h100.json"), "--max-regression", "5%")
    assert code == 2 and "needs --baseline" in err
    assert run_cli("report", str(DATA / "h100.json"), "--fail-below", "much")[0] == 2
    assert run_cli("report")[0] == 2  # no files


def test_help_has_examples(run_cli):
    code, out, _ = run_cli("report", "--help")
    assert code == 0 and "Examples:" in out and "--fail-below" in out and "GITHUB_STEP_SUMMARY" in out


def test_report_help_shows_percent_signs_not_doubled(run_cli):
    """Issue 22: click does not %-format help text, so '%%' showed literally."""
    r = run_cli("report", "--help")
    assert r.code == 0 and "%%" not in r.out and "95% bootstrap" in r.out.replace("\n", " ").replace("  ", " ")


# ---- a baseline that compared nothing (issue 31) -----------------------------------------------------------------


def test_a_baseline_that_matches_no_kernel_fails_the_report(run_cli, tmp_path):
    """Every row 'new' and exit 0 switched the regression gate off without a word; now the report fails (exit 1, as
    any gate) and says why, in the table title, the error line and the JSON summary."""
    args = ["report", str(DATA / "h100.json"), "--baseline", str(DATA / "a100_failed.json")]
    for extra in ([], ["--max-regression", "5%"]):
        code, out, err = run_cli(*args, *extra)
        assert code == 1
        assert "Traceback" not in out + err
        assert "the baseline matched none of the 4 kernel results, so nothing was compared" in out
        assert err.startswith(f"error: {DATA / 'a100_failed.json'}: the baseline matched none of the 4 kernel "
                              "results")
    code, out, _ = run_cli(*args, "--format", "junit")
    assert code == 1
    root = ET.fromstring(out)
    assert root.get("failures") == "1"  # the kernels passed; the comparison did not, and a CI page must show it
    failure = root.find("testsuite[@name='baseline']/testcase/failure")
    assert failure is not None and "matched none of the 4" in failure.get("message")
    code, out, _ = run_cli(*args, "--format", "json")
    assert code == 1
    summary = json.loads(out)["summary"]
    assert summary["ok"] is False and summary["failed"] == 0
    assert summary["baseline"] == {"compared": 0, "of": 4, "new": 0, "other_device": 4, "ok": False}


def test_a_baseline_of_the_same_device_with_other_kernels_fails_too(tmp_path):
    h100 = load_results(DATA / "h100.json")
    other = load_results(DATA / "h100_baseline.json")
    for k in other.doc["kernels"]:
        k["params"] = {**k["params"], "n": 12345}  # same device and kernels, other sizes: nothing to compare
    other = ResultsFile.of(other.doc, other.path)  # gates read the typed form: an edited document is checked again
    report = build_report([h100], GateConfig(Thresholds(max_regression=0.05)), [other])
    assert report["summary"]["baseline"] == {"compared": 0, "of": 4, "new": 4, "other_device": 0, "ok": False}
    assert not report["summary"]["ok"]
    assert "baseline matched none of the 4" in failure_message(report)


def test_a_partial_baseline_says_how_many_kernels_it_compared(run_cli):
    code, out, _ = run_cli("report", str(DATA / "h100.json"), "--baseline", str(DATA / "h100_baseline.json"))
    assert code == 0
    assert "compared 3 of 4 kernels with the baseline; 1 new" in out
    report = build_report([load_results(DATA / "h100.json")], GateConfig(), [load_results(DATA / "h100_baseline.json")])
    assert report["summary"]["baseline"] == {"compared": 3, "of": 4, "new": 1, "other_device": 0, "ok": True}
    assert "baseline" not in build_report([load_results(DATA / "h100.json")])["summary"]  # none given, none said
