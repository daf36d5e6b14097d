"""Issue 22: one default-spec rule. `--spec auto` (the default of analyze, plot and the API's analyze) is the GPU's
own spec when the driver lists one, otherwise h100-sxm; a line on standard error says which and why; and finding
out costs no CuPy import."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

import roofline.load.autospec
from conftest import TESTS
from roofline.load.autospec import auto_spec, visible_gpu_models


def fake_driver(root: Path, *models: str) -> Path:
    """A /proc/driver/nvidia/gpus look-alike: one folder per GPU with the driver's information file."""
    for i, model in enumerate(models):
        gpu = root / f"0000:{i:02x}:00.0"
        gpu.mkdir(parents=True)
        (gpu / "information").write_text(f"Model: \t\t {model}\nIRQ:   \t\t 42\nGPU UUID: \t GPU-{i}\n")
    return root


@pytest.fixture
def driver(tmp_path, monkeypatch):
    def install(*models: str) -> None:
        monkeypatch.setattr(roofline.load.autospec, "GPU_INFO_DIR", fake_driver(tmp_path / "gpus", *models))

    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    return install


def test_models_are_read_from_the_driver_list(tmp_path, monkeypatch):
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    root = fake_driver(tmp_path, "NVIDIA H200", "NVIDIA H200")
    assert visible_gpu_models(root) == ["NVIDIA H200", "NVIDIA H200"]
    assert visible_gpu_models(tmp_path / "absent") == []
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")
    assert visible_gpu_models(root) == []  # every GPU hidden: none


def test_auto_is_the_gpus_own_spec_or_the_stated_default(driver, bundled_specs):
    assert auto_spec(bundled_specs).machine.id == "h100-sxm"
    assert "no GPU seen, so the default h100-sxm" in auto_spec(bundled_specs).line()
    driver("NVIDIA H200")
    chosen = auto_spec(bundled_specs)
    assert chosen.machine.id == "h200-sxm" and chosen.line() == "spec: h200-sxm (--spec auto: matched GPU NVIDIA H200)"


def test_auto_with_an_unknown_or_mixed_gpu_takes_the_default_and_says_why(driver, bundled_specs, tmp_path):
    driver("NVIDIA Imaginary 9000")
    chosen = auto_spec(bundled_specs)
    assert chosen.machine.id == "h100-sxm" and "GPU NVIDIA Imaginary 9000 has no bundled spec" in chosen.reason


def test_analyze_defaults_to_auto_and_names_the_spec_and_why(run_cli, driver):
    r = run_cli("analyze", "vector_add", "--format", "json")
    assert r.code == 0, r.err
    assert json.loads(r.out)["machine"]["id"] == "h100-sxm"
    assert "spec: h100-sxm (--spec auto: no GPU seen, so the default h100-sxm" in r.err
    driver("NVIDIA H200")
    r = run_cli("analyze", "vector_add", "--format", "json")
    assert json.loads(r.out)["machine"]["id"] == "h200-sxm"
    assert "spec: h200-sxm (--spec auto: matched GPU NVIDIA H200)" in r.err
    named = run_cli("analyze", "vector_add", "--spec", "t4", "--format", "json")
    assert json.loads(named.out)["machine"]["id"] == "t4" and "--spec auto" not in named.err  # named: no line
    assert "'auto' is the GPU's own spec" in run_cli("analyze", "--help").out.replace("\n", " ").replace("  ", " ")


def test_plot_without_results_uses_auto_too(run_cli, driver, tmp_path):
    driver("NVIDIA H200")
    r = run_cli("plot", "vector_add", "-o", tmp_path / "c.svg")
    assert r.code == 0, r.err
    assert "spec: h200-sxm (--spec auto: matched GPU NVIDIA H200)" in r.err
    assert "NVIDIA H200" in (tmp_path / "c.svg").read_text()


def test_api_analyze_follows_the_same_rule(driver):
    import roofline

    base = roofline.analyze(flops=1e9, bytes=1e9)
    driver("NVIDIA H200")
    on_h200 = roofline.analyze(flops=1e9, bytes=1e9)
    assert on_h200.bandwidth > base.bandwidth  # the H200's 4.8 TB/s, not the H100's 3.35 TB/s


def test_finding_the_gpu_imports_no_cupy():
    code = ("import sys, roofline.cli.analyze, roofline.load.autospec as a; from roofline.load.specs import SpecCatalog; "
            "a.auto_spec(SpecCatalog.bundled()); bad = [m for m in ('cupy', 'matplotlib') if m in sys.modules]; "
            "print(bad)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=TESTS.parent)
    assert out.returncode == 0 and out.stdout.strip() == "[]", out.stderr
