"""`sweep --device all` on the CPU: each worker runs a real sweep on the NumPy backend (fake devices 0 and 1), the
merged document keeps each device's own model block, splits back per GPU, reads as results, and plots one series
per GPU; a failing device is named and the other's sweep is written."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from roofline.errors import GateFailed
from roofline.measurement.multi.sweep import SweepArgs, sweep_args_request, sweep_on
from roofline.measurement.policy import MeasurePolicy


def fake_sweep(device: int, args: SweepArgs, send: Any) -> dict[str, Any]:
    """A real sweep on the host CPU standing in for GPU `device` (module level: spawn imports it)."""
    from roofline.measurement.progress import SILENT
    from roofline.measurement.session import open_backend

    send("identity", {"index": device, "pci_bus_id": f"0000:{device + 0x18:02X}:00.0"})
    if device == int(os.environ.get("FAKE_FAIL", "-1")):
        raise RuntimeError(f"CUDA error: an illegal memory access on device {device}")
    doc = sweep_on(sweep_args_request(args), open_backend("numpy", 0), "h200", args.policy, SILENT)
    doc["device"].update(device_id=device, pci_bus_id=f"0000:{device + 0x18:02X}:00.0")
    return doc


def _args(**kw: Any) -> SweepArgs:
    base = dict(kernel="vector_add", kernel_paths=(), param="n", sizes_text="2**10..2**12", fixed=(),
                model="first-principles", latency="auto", efficiency="auto", calibrated_path=None,
                param_option="--over", spec_name="h200", policy=MeasurePolicy(min_time=0.001, min_repeats=3))
    base.update(kw)
    return SweepArgs(**base)


def test_sweep_many_merges_each_device_with_its_own_model(tmp_path: Path, monkeypatch, capsys) -> None:
    import roofline.measurement.multi.sweep as ms
    from roofline.cli.multi import sweep_many
    from roofline.records.devices import split_devices
    from roofline.records.files import load_results, sweep_groups

    monkeypatch.setattr(ms, "sweep_worker", fake_sweep)
    out = tmp_path / "s.json"
    sweep_many([0, 1], _args(), out, "table")
    doc = json.loads(out.read_text())
    assert [d["index"] for d in doc["devices"]] == [0, 1]
    assert [k["device"] for k in doc["kernels"]] == [0, 1, 0, 1, 0, 1]  # size by size, each GPU in turn
    assert [s["device"] for s in doc["sweeps"]] == [0, 1]
    parts = split_devices(doc)
    assert [p["sweep"]["kernel"] for p in parts] == ["vector_add", "vector_add"]
    assert parts[1]["sweep"]["overheads"] == doc["sweeps"][1]["overheads"]
    assert list(sweep_groups(load_results(out).doc)) == ["vector_add (GPU 0)", "vector_add (GPU 1)"]
    err = capsys.readouterr()
    assert "Across the host's GPUs" in err.out and "GPU 1: model: t =" in err.err


def test_sweep_many_names_the_failed_device_and_keeps_the_other(tmp_path: Path, monkeypatch) -> None:
    import roofline.measurement.multi.sweep as ms
    from roofline.cli.multi import sweep_many

    monkeypatch.setattr(ms, "sweep_worker", fake_sweep)
    monkeypatch.setenv("FAKE_FAIL", "1")
    out = tmp_path / "s.json"
    with pytest.raises(GateFailed, match=r"GPU 1 \(0000:19:00.0\): RuntimeError: CUDA error: an illegal memory access"):
        sweep_many([0, 1], _args(), out, "json")
    assert {k["device"] for k in json.loads(out.read_text())["kernels"]} == {0}


def test_plot_draws_one_series_per_gpu(tmp_path: Path, monkeypatch, run_cli) -> None:
    pytest.importorskip("matplotlib")
    import roofline.measurement.multi.sweep as ms
    from roofline.cli.multi import sweep_many

    monkeypatch.setattr(ms, "sweep_worker", fake_sweep)
    out = tmp_path / "s.json"
    sweep_many([0, 1], _args(), out, "json")
    svg = tmp_path / "s.svg"
    result = run_cli("plot", "--sweep", out, "-o", svg)
    assert result.code == 0, result.err
    text = svg.read_text()
    assert text.count('id="roofline:sweep-line') == 2 and "vector_add (GPU 1)" in text
    result = run_cli("plot", "--sweep", out, "vector_add", "-o", svg)
    assert result.code == 0, result.err


def test_bad_sweep_options_exit_2_before_any_device(run_cli) -> None:
    result = run_cli("sweep", "vector_add", "--device", "all", "--over", "rows")
    assert result.code == 2 and "has no parameter 'rows'" in result.err
