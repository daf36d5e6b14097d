"""profile --with torch (issue 33): the profiled range's joules from NVML's counter of the program's GPU, per step
and per token, read in the capture process around the range (after its sync). A fake torch and a fake nvidia-ml-py
(tests/data/fakenvml: a steady 400 W) stand in for the GPU."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

from roofline.records.energy import step_energy, step_energy_line
from test_profile_torch import FAKE_TORCH, ROOT, START_STOP, faketorch, script  # noqa: F401

FAKE_NVML = Path(__file__).parent / "data" / "fakenvml"


def test_step_energy_by_hand() -> None:
    block = step_energy({"joules": 120.0, "window": 0.3, "gpu": "00000000:19:00.0", "device": 0}, "start-stop", 4096)
    assert block["joules_per_step"] == 120.0 and block["power_mean"] == pytest.approx(400.0)
    assert block["joules_per_token"] == pytest.approx(120.0 / 4096) and block["short_window"]
    line = step_energy_line(block)
    assert "120 J over the profiled range (0.3 s, 400 W mean" in line and "0.0293 J per token (4096 tokens)" in line
    assert "up to 33% off" in line
    whole = step_energy({"joules": 500.0, "window": 2.0, "gpu": "g", "device": 0}, "all", None)
    assert whole["joules_per_step"] is None and whole["joules_per_token"] is None and not whole["short_window"]
    assert step_energy({"why": "no nvml"}, "all", 10) == {"why": "no nvml"}
    # a 4.5 ms step between two counter updates reads 0 J: no figure, never "0 J per token" (H200, 2026-12-04)
    quick = step_energy({"joules": 0.0, "window": 0.0045, "gpu": "g", "device": 0}, "start-stop", 4096)
    assert list(quick) == ["why"] and "4.5 ms" in quick["why"] and "ended before" in quick["why"]
    assert step_energy_line({"why": "no nvml"}) == "energy: not measured (no nvml)"


def test_the_energy_window_is_the_range_not_the_profilers_set_up() -> None:
    """torch.profiler's first start sets up CUPTI for seconds with the GPU idle: the meter opens after it and closes
    before the profiler stops, each after a sync, so the joules are the range's."""
    from roofline.kineto.capture import Window

    events: list[str] = []

    class Recorder:
        def __init__(self, name: str) -> None:
            self.name = name

        def start(self) -> None:
            events.append(f"{self.name}.start")

        def stop(self) -> None:
            events.append(f"{self.name}.stop")

    window = Window(Recorder("profiler"), lambda: events.append("sync"), Recorder("meter"))  # type: ignore[arg-type]
    window.start()
    window.stop()
    assert events == ["sync", "profiler.start", "sync", "meter.start", "sync", "meter.stop", "profiler.stop"]


def test_profile_with_torch_records_the_ranges_energy(run_cli, faketorch, tmp_path: Path,  # noqa: F811
                                                      monkeypatch) -> None:
    monkeypatch.setenv("PYTHONPATH", f"{FAKE_NVML}{os.pathsep}{FAKE_TORCH}{os.pathsep}{ROOT}")
    prog = script(tmp_path, START_STOP)
    out = tmp_path / "step.json"
    code, _, err = run_cli("profile", "--with", "torch", "--range", "start-stop", "--tokens", "1000", "-o", out,
                           "--", sys.executable, prog, "0")
    assert code in (0, None), err
    e = json.loads(out.read_text())["energy"]
    assert e["gpu"] == "00000000:19:00.0" and e["device"] == 0 and e["range"] == "start-stop"
    assert e["joules"] == pytest.approx(400.0 * e["window"], rel=0.05, abs=0.01)  # the fake's 400 W
    assert e["joules_per_step"] == e["joules"] and e["joules_per_token"] == pytest.approx(e["joules"] / 1000)
    assert "energy: " in err and "J per token (1000 tokens)" in err


def test_without_nvidia_ml_py_the_profile_says_why(run_cli, faketorch, tmp_path: Path) -> None:  # noqa: F811
    prog = script(tmp_path, START_STOP)
    out = tmp_path / "step.json"
    code, _, err = run_cli("profile", "--with", "torch", "--range", "start-stop", "-o", out, "--", sys.executable,
                           prog, "0")
    assert code in (0, None), err
    e = json.loads(out.read_text())["energy"]
    assert list(e) == ["why"] and "energy: not measured" in err
