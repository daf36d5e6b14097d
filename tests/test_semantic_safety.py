"""Issue 15, the semantic cases: inputs that parse but cannot be right. Each gives exit 2 (or the documented exit)
with one line naming the file and field, before anything runs or is allocated."""

from __future__ import annotations

import json
import shutil
import textwrap
from pathlib import Path

import pytest

MEASURE = Path(__file__).resolve().parent / "data" / "measure"
FAST = ("--min-time", "0", "--min-repeats", "2")


def _one_line_error(r) -> str:
    assert "Traceback" not in r.err, r.err
    errors = [line for line in r.err.splitlines() if line.startswith("error:")]
    assert len(errors) == 1, r.err
    return errors[0]


# ---- parameters the kernel cannot take ---------------------------------------------------------------------


def test_a_fractional_size_is_an_input_error_naming_the_parameter(run_cli):
    r = run_cli("measure", "--backend", "numpy", "--kernels", MEASURE, "m_add", "-p", "n=1.5", *FAST)
    assert r.code == 2, r.err
    assert "-p n=1.5" in _one_line_error(r) and "whole number" in r.err


def test_a_size_that_cannot_be_allocated_is_refused_before_anything_is_allocated(run_cli):
    r = run_cli("measure", "--backend", "numpy", "--kernels", MEASURE, "m_add", "-p", "n=2**62", *FAST)
    assert r.code == 2, r.err
    line = _one_line_error(r)
    assert "n=2**62" in line and "host's memory" in line


# ---- implementation: only a file inside the descriptor's folder is ever imported -----------------------------


def _descriptor(folder: Path, implementation: str) -> Path:
    path = folder / "k.yaml"
    path.write_text(textwrap.dedent(f"""\
        name: k
        description: test
        pattern: map
        dtype: float32
        params: {{n: 1000}}
        flops: n
        bytes: 3 * n * itemsize
        implementation: {implementation}
        """), encoding="utf-8")
    return path


def _outside_and_mine(tmp_path: Path) -> tuple[Path, Path, Path]:
    """A folder with a module that leaves a marker when imported, and the user's own (empty) kernel folder."""
    outside, mine = tmp_path / "outside", tmp_path / "mine"
    outside.mkdir()
    mine.mkdir()
    marker = tmp_path / "imported"
    (outside / "evil.py").write_text(f"open({str(marker)!r}, 'w').write('ran')\n", encoding="utf-8")
    return outside / "evil.py", mine, marker


@pytest.mark.parametrize("how, words", [
    ("absolute", "k.yaml: implementation: must be a file name relative"),
    ("dotdot", "outside the descriptor's folder"),
    ("symlink", "outside the descriptor's folder"),
])
def test_an_implementation_outside_the_folder_is_refused_before_import(run_cli, tmp_path, how, words):
    evil, mine, marker = _outside_and_mine(tmp_path)
    if how == "symlink":
        (mine / "k.py").symlink_to(evil)
    _descriptor(mine, {"absolute": str(evil), "dotdot": "../outside/evil.py", "symlink": "k.py"}[how])
    r = run_cli("measure", "--backend", "numpy", "--kernels", mine, "k", *FAST)
    assert r.code == 2, r.err
    assert words in _one_line_error(r)
    assert not marker.exists()


def test_an_implementation_in_a_subfolder_is_accepted(run_cli, tmp_path):
    mine = tmp_path / "mine"
    (mine / "impl").mkdir(parents=True)
    shutil.copy(MEASURE / "m_add.py", mine / "impl" / "k.py")
    _descriptor(mine, "impl/k.py")
    r = run_cli("kernels", "--kernels", mine)
    assert r.code == 0, r.err


# ---- gates: fractions, unknown kernels, unknown ceilings, model errors --------------------------------------

RESULTS = Path(__file__).resolve().parent / "data" / "results"


@pytest.mark.parametrize("value", ["5", "0", "-0.1", "150%", "١٢", "1" * 60, "nan", "inf"])
def test_a_fail_below_outside_0_1_is_refused(run_cli, value):
    r = run_cli("report", str(RESULTS / "h100.json"), "--fail-below", value)
    assert r.code == 2, r.err
    assert "--fail-below" in r.err and "Traceback" not in r.err


@pytest.mark.parametrize("entry", ["fail_below: 5", "max_regression: 2.5"])
def test_a_gates_file_fraction_outside_0_1_is_refused_naming_the_field(run_cli, tmp_path, entry):
    gates = tmp_path / "gates.yaml"
    gates.write_text(f"default: {{{entry}}}\n", encoding="utf-8")
    r = run_cli("report", str(RESULTS / "h100.json"), "--gates", str(gates))
    assert r.code == 2, r.err
    assert f"{gates}: default.{entry.split(':')[0]}: expected a fraction in (0, 1]" in _one_line_error(r)


def test_a_per_kernel_gate_for_a_kernel_not_in_the_results_is_an_error(run_cli, tmp_path):
    gates = tmp_path / "gates.yaml"
    gates.write_text("kernels:\n  vector_ad: {fail_below: 0.9}\n", encoding="utf-8")
    r = run_cli("report", str(RESULTS / "h100.json"), "--gates", str(gates))
    assert r.code == 2, r.err
    line = _one_line_error(r)
    assert "'vector_ad' is not in the results" in line and "did you mean 'vector_add'" in line


def _no_ceiling(tmp_path: Path) -> Path:
    doc = json.loads((RESULTS / "h100.json").read_text(encoding="utf-8"))
    doc["kernels"][0]["fraction_of_ceiling"] = None
    path = tmp_path / "r.json"
    path.write_text(json.dumps(doc), encoding="utf-8")
    return path


def test_fail_below_on_a_kernel_without_a_ceiling_fails_unless_allowed(run_cli, tmp_path):
    path = _no_ceiling(tmp_path)
    r = run_cli("report", str(path), "--fail-below", "0.01", "--format", "json")
    assert r.code == 1, r.err
    row = json.loads(r.out)["rows"][0]
    assert row["verdict"] == "fail" and "ceiling unknown" in row["failures"][0]
    r = run_cli("report", str(path), "--fail-below", "0.01", "--allow-unknown-ceiling")
    assert r.code == 0, r.err


def test_a_kernel_beyond_its_ceiling_is_a_model_error_and_strict_model_fails_it(run_cli, tmp_path):
    doc = json.loads((RESULTS / "h100.json").read_text(encoding="utf-8"))
    # what matmul_naive showed before its bytes became DRAM traffic: its times 5.11 x faster than its SOL time (the
    # entry's figures agree with each other, as the reader holds them to)
    k = doc["kernels"][1]
    t = k["sol_time"] / 5.11
    k.update(fraction_of_ceiling=5.11, time_median=t, time_min=t, time_max=t, achieved_bandwidth=k["bytes"] / t,
             achieved_flops=k["flops"] / t, **({"time_ci": [t, t]} if k.get("time_ci") else {}))
    path = tmp_path / "r.json"
    path.write_text(json.dumps(doc), encoding="utf-8")
    r = run_cli("report", str(path), "--format", "json")
    assert r.code == 0, r.err
    row = json.loads(r.out)["rows"][1]
    assert any("the model under-counts" in n for n in row["notes"])
    r = run_cli("report", str(path), "--strict-model", "--format", "json")
    assert r.code == 1, r.err
    row = json.loads(r.out)["rows"][1]
    assert row["failed_gates"] == ["model"] and "the model under-counts" in row["failures"][0]


def test_a_switch_parameter_defaulting_to_0_takes_whole_numbers_from_0(run_cli, tmp_path):
    shutil.copy(MEASURE / "m_add.py", tmp_path / "k.py")
    (tmp_path / "k.yaml").write_text(textwrap.dedent("""\
        name: k
        dtype: float32
        params: {n: 1000, causal: 0}
        flops: n
        bytes: 3 * n * itemsize
        implementation: k.py
        """), encoding="utf-8")
    base = ("measure", "--backend", "numpy", "--kernels", tmp_path, "k", *FAST)
    assert run_cli(*base).code == 0
    assert run_cli(*base, "-p", "causal=1").code == 0
    r = run_cli(*base, "-p", "causal=0.5")
    assert r.code == 2 and "causal as a whole number of at least 0" in _one_line_error(r)
