"""`calibrate` on one GPU, on the CPU: roofline.measurement.calibrate.one with a fake backend whose figures are given
(the probes themselves are tested in tests/test_calibrate.py and, on an H200, by its gpu-marked test), and the
command that renders it: the spec written, the JSON, --energy, and exit 3 with calibrate's own fix."""

from __future__ import annotations

import contextlib
import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from roofline.errors import BackendUnavailable
from roofline.load.specs import SpecCatalog, load_spec
from roofline.measurement.calibrate.one import calibrate_one, open_gpu
from roofline.measurement.progress import SILENT

from test_calibrate import H200_DEVICE, figures
from test_energy_calibrate import _runs


class FakeBackend:
    """What calibrate reads off a CupyBackend: the device's properties and the NVML monitor."""

    monitor: Any = object()
    info = {"clock_monitor": "nvml"}

    def __init__(self, device_id: int = 0) -> None:
        self.device_id = device_id

    def device_info(self) -> dict[str, Any]:
        return dict(H200_DEVICE)


@pytest.fixture
def fake_gpu(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, Any]]:
    """CupyBackend, the datasheet choice and the probes stand-ins; each call to the probes is recorded."""
    import roofline.measurement.backend_cupy as backend_cupy
    import roofline.measurement.calibrate.energy as energy
    import roofline.measurement.calibrate.gpu as gpu
    import roofline.measurement.calibrate.probes as probes

    calls: list[tuple[str, Any]] = []
    h200 = SpecCatalog.bundled().resolve("h200-sxm")
    monkeypatch.setattr(backend_cupy, "CupyBackend", FakeBackend)
    monkeypatch.setattr("roofline.measurement.session.choose_machine", lambda name, backend, catalog: h200)

    def calibrate(backend: Any, datasheet: Any, plan: Any, progress: Any) -> list:
        calls.append(("figures", (backend.device_id, datasheet.id, plan.name if hasattr(plan, "name") else plan)))
        return figures()

    def calibrate_energy(backend: Any, plan: Any, progress: Any, fp32_rate: float | None = None) -> list:
        calls.append(("energy", fp32_rate))
        return _runs()

    monkeypatch.setattr(gpu, "calibrate", calibrate)
    monkeypatch.setattr(energy, "calibrate_energy", calibrate_energy)
    monkeypatch.setattr(probes, "current", lambda backend: contextlib.nullcontext())
    return calls


def test_one_gpu_gives_a_spec_that_loads_and_its_comparison(fake_gpu) -> None:
    one = calibrate_one(open_gpu(1, "auto", False), True, False, SILENT, 0.0)
    assert [c[0] for c in fake_gpu] == ["figures"] and fake_gpu[0][1][:2] == (1, "h200-sxm")
    assert one.spec.doc["id"] == "h200-sxm-measured" and one.energy_runs == []
    assert yaml.safe_load(one.spec.text) == one.spec.doc
    assert [r["field"] for r in one.comparison][:1] == ["memory.bandwidth"] and one.wall > 0
    doc = one.document()
    assert doc["spec"] == one.spec.doc and "energy" not in doc


def test_energy_runs_after_the_figures_and_go_into_the_spec(fake_gpu) -> None:
    one = calibrate_one(open_gpu(0, "auto", True), False, True, SILENT, 0.0)
    assert fake_gpu[1] == ("energy", 64.1e12)  # the FP32 figure just measured
    assert "energy" in one.spec.doc and one.document()["energy"] == [r.to_dict() for r in _runs()]


def test_a_machine_without_a_gpu_exits_3_with_calibrates_fix(monkeypatch) -> None:
    import roofline.measurement.backend_cupy as backend_cupy

    def no_gpu(device_id: int = 0) -> None:
        raise BackendUnavailable("no CUDA device")

    monkeypatch.setattr(backend_cupy, "CupyBackend", no_gpu)
    with pytest.raises(BackendUnavailable) as exc:
        open_gpu(0, "auto", False)
    assert exc.value.reason == "calibrate measures a GPU: no CUDA device" and "--backend numpy" not in exc.value.fix


def test_the_command_writes_the_spec_and_prints_the_comparison(fake_gpu, run_cli, tmp_path: Path) -> None:
    out = tmp_path / "m.yaml"
    r = run_cli("calibrate", "--quick", "-o", out)
    assert r.code == 0, r.err
    assert load_spec(out).id == "h200-sxm-measured"
    assert f"wrote {out} (spec id h200-sxm-measured)" in r.err and "DRAM bandwidth" in r.out
    r = run_cli("calibrate", "--format", "json", "--energy")
    assert r.code == 0, r.err
    doc = json.loads(r.out)
    assert "energy" in doc["spec"] and len(doc["energy"]) == len(_runs())
    assert "the measured spec was not saved" in r.err
