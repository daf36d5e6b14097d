"""benchmarks/predict_validation.py's evaluation on the host (--from): the committed H200 sweep of
vector_add_float4 (tests/data/h200, measured 2026-11-30, a FIT kernel) predicted from its calibrated spec and from
the datasheet spec alone. The held-out validation needs the GPU run (the script's --out); no held-out sweep is
committed yet, so the held-out figures are not pinned here."""

from __future__ import annotations

import importlib.util
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "benchmarks" / "predict_validation.py"
H200 = ROOT / "tests" / "data" / "h200"


def _module():
    spec = importlib.util.spec_from_file_location("predict_validation", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _folder(tmp_path: Path) -> Path:
    folder = tmp_path / "sweeps"
    folder.mkdir()
    shutil.copy(H200 / "sweep-vector_add_float4.json", folder / "vector_add_float4.n.json")
    shutil.copy(H200 / "measured-2026-11-30.yaml", folder / "h200-measured.yaml")
    return folder


def test_the_evaluation_runs_on_saved_sweeps(tmp_path):
    run = subprocess.run([sys.executable, str(SCRIPT), "--from", str(_folder(tmp_path))], capture_output=True,
                         text=True, timeout=120, cwd=ROOT)
    assert run.returncode == 0, run.stderr
    assert "fit       calibrated: 17/17 within 25 % (100%), 0 beyond 50 %" in run.stdout
    assert "no held-out sizes here, so not judged" in run.stdout


def test_the_fit_sweep_is_pinned_at_what_the_model_reaches(tmp_path):
    m = _module()
    result = m.run_evaluation(_folder(tmp_path), None, tmp_path)
    fit = result["summary"]["fit"]
    assert fit["calibrated"]["within"] == 17 and fit["calibrated"]["worst"] == pytest.approx(-0.209, abs=0.005)
    assert fit["datasheet"]["within"] == 17 and fit["datasheet"]["worst"] == pytest.approx(-0.225, abs=0.005)
    assert result["summary"]["held-out"]["calibrated"]["sizes"] == 0
    saved = json.loads((tmp_path / "validation.json").read_text())
    assert saved["split"] == "by kernel" and "vector_add_float4" in saved["fit_kernels"]


def test_the_split_is_by_kernel_and_every_swept_kernel_is_in_the_catalogue():
    from roofline.load.kernels import KernelCatalog

    m = _module()
    swept = {k for k, _, _, _ in m.SWEEPS}
    assert m.FIT < swept and swept - m.FIT  # some kernels held out
    assert len(KernelCatalog.load().select(sorted(swept))) == len(swept)  # each one a catalogue kernel
    assert m.split_of("gemv_batch1") == "held-out" and m.split_of("copy") == "fit"
    assert len({m.tag(*s) for s in m.SWEEPS}) == len(m.SWEEPS)  # one file per sweep


def test_it_asks_for_one_mode():
    run = subprocess.run([sys.executable, str(SCRIPT)], capture_output=True, text=True, timeout=60, cwd=ROOT)
    assert run.returncode == 2 and "--out DIR" in run.stderr
