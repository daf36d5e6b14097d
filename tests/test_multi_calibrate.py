"""`calibrate --device all` on the CPU: per-figure host rows (latency signed so that below zero is worse), the spec of
the host's medians, the measured links written into the spec's interconnect block, and the whole command with fake
workers (one GPU slowed: --outlier names it; one worker failing: the others' spec is still written)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
import yaml

from roofline.errors import GateFailed
from roofline.gates.hosts import figure_rows, outliers
from roofline.measurement.calibrate.figures import OK, Figure, skipped
from roofline.measurement.calibrate.links import link_figures, with_interconnect
from roofline.measurement.multi.calibrate import device_figure_lists, host_figures

DATA = Path(__file__).parent.parent / "tests" / "data" / "h200" / "interconnect-two-gpus.json"


def _figures(slow: float = 1.0) -> list[Figure]:
    return [Figure("memory.bandwidth", OK, 4.3e12 * slow, "copy"),
            Figure("memory.latency", OK, 3.3e-7 / slow, "chase"),
            Figure("compute.fp32", OK, 6.4e13 * slow, "fma"),
            skipped("compute.fp8_tensor", "no float8 dtypes in CuPy")]


def fake_calibrate(device: int, payload: Any, send: Any) -> dict[str, Any]:
    """A worker as roofline.measurement.multi.calibrate.calibrate_worker returns (module level: spawn imports it).
    Which GPU fails or runs slow comes from FAKE_GPUS in the environment, which the spawned workers inherit."""
    from roofline.load.specs import SpecCatalog

    if not isinstance(payload, dict):
        fake = json.loads(os.environ.get("FAKE_GPUS", "{}"))
        payload = {"fail": fake.get("fail"), "slow": {int(k): v for k, v in fake.get("slow", {}).items()}}
    bus = f"0000:{device + 0x18:02X}:00.0"
    send("identity", {"index": device, "pci_bus_id": bus})
    send("finished", ("DRAM bandwidth", "OK"))
    if device == payload.get("fail"):
        raise RuntimeError(f"Xid 79 on device {device}")
    return {"device": {"index": device, "device_id": device, "name": "NVIDIA H200", "pci_bus_id": bus,
                       "sm_count": 132, "max_threads_per_sm": 2048, "l2_size": 62914560},
            "datasheet": SpecCatalog.bundled().resolve("h200"),
            "figures": _figures(payload.get("slow", {}).get(device, 1.0))}


def _parts(slow: dict[int, float]) -> list[dict[str, Any]]:
    return [fake_calibrate(d, {"slow": slow}, lambda *a: None) for d in range(3)]


def test_figure_rows_sign_latency_so_that_below_zero_is_worse() -> None:
    rows = {r["field"]: r for r in figure_rows(device_figure_lists(_parts({2: 0.9})))}
    bw, lat = rows["memory.bandwidth"], rows["memory.latency"]
    assert bw["median"] == pytest.approx(4.3e12)
    assert [d["deviation"] for d in bw["devices"]] == pytest.approx([0.0, 0.0, -0.1])
    assert lat["median"] == pytest.approx(3.3e-7)
    assert [d["deviation"] for d in lat["devices"]] == pytest.approx([0.0, 0.0, -0.1])  # 1/0.9 longer: 10 % worse
    assert "compute.fp8_tensor" not in rows  # no device measured it: no row


def test_outliers_over_figures_name_the_device() -> None:
    rows = figure_rows(device_figure_lists(_parts({1: 0.94})))
    found = outliers(rows, 0.05)
    assert {(o["index"], o["pci_bus_id"]) for o in found} == {(1, "0000:19:00.0")}
    assert {o["kernel"] for o in found} == {"DRAM bandwidth", "DRAM latency", "FP32 (FMA)"}
    assert outliers(rows, 0.07) == []


def test_host_figures_are_medians_cited_with_every_gpu() -> None:
    parts = _parts({0: 0.8})
    parts[2]["figures"][2] = skipped("compute.fp32", "the FMA kernel failed its check")
    figures = {f.field: f for f in host_figures(parts)}
    assert figures["memory.bandwidth"].value == pytest.approx(4.3e12)
    assert "median over 3 GPUs" in figures["memory.bandwidth"].method
    assert figures["compute.fp32"].value == pytest.approx((6.4e13 * 0.8 + 6.4e13) / 2)
    assert figures["compute.fp32"].note == "not measured on GPU 2"
    assert not figures["compute.fp8_tensor"].ok


def test_measured_links_go_into_the_spec_in_the_datasheet_convention(tmp_path: Path) -> None:
    from roofline.measurement.calibrate.spec import check_loads, measured_spec, spec_yaml
    from roofline.load.specs import load_spec

    doc = json.loads(DATA.read_text())
    links = link_figures(doc)
    assert links["nvlink"]["bandwidth"] == pytest.approx(767.397e9, rel=1e-5)  # both ways at once, measured
    h = doc["host"][0]
    assert links["pcie"]["bandwidth"] == pytest.approx(
        sorted([h["h2d"] + h["d2h"], doc["host"][1]["h2d"] + doc["host"][1]["d2h"]])[0] / 2
        + sorted([h["h2d"] + h["d2h"], doc["host"][1]["h2d"] + doc["host"][1]["d2h"]])[1] / 2)
    part = _parts({})[0]
    spec_doc, _ = measured_spec(part["figures"], part["device"], part["datasheet"], "2026-11-30", "t")
    text = spec_yaml(with_interconnect(spec_doc, doc, "here"))
    check_loads(text)
    path = tmp_path / "m.yaml"
    path.write_text(text)
    spec = load_spec(path)
    assert spec.interconnect["nvlink"].per_direction == pytest.approx(383.7e9, rel=1e-3)
    cited = [s for s in yaml.safe_load(text)["sources"] if s["for"] == ["interconnect.nvlink.bandwidth"]]
    assert "both ways at once" in cited[0]["cite"]


def test_no_links_measured_leaves_the_block_out() -> None:
    assert link_figures({"peer": {"skipped": "1 GPU"}, "host": [], "allreduce": {"skipped": "1 GPU"}}) == {}
    assert "interconnect" not in with_interconnect({"id": "x", "sources": []}, {"peer": {"skipped": "1 GPU"}}, "h")


def test_calibrate_many_writes_the_medians_and_names_the_slow_gpu(tmp_path: Path, monkeypatch, capsys) -> None:
    import roofline.measurement.multi.calibrate as mc
    from roofline.cli.calibrate_many import calibrate_many

    monkeypatch.setattr(mc, "calibrate_worker", fake_calibrate)
    monkeypatch.setenv("FAKE_GPUS", json.dumps({"slow": {"1": 0.9}}))
    out = tmp_path / "node.yaml"
    with pytest.raises(GateFailed, match=r"GPU 1 \(0000:19:00.0\): DRAM bandwidth 10.0% below the host median"):
        calibrate_many([0, 1, 2], "auto", out, True, 0.05, False, "table", 0.0)
    spec = yaml.safe_load(out.read_text())
    assert spec["memory"]["bandwidth"] == "4.3 TB/s" and spec["measured"] is True
    assert "3 × NVIDIA H200" in spec["measurement"]["device"]
    err = capsys.readouterr()
    assert "across the host's GPUs" in err.out and "-10.0% ✗" in err.out


def test_calibrate_many_keeps_the_others_when_one_worker_fails(tmp_path: Path, monkeypatch) -> None:
    import roofline.measurement.multi.calibrate as mc
    from roofline.cli.calibrate_many import calibrate_many

    monkeypatch.setattr(mc, "calibrate_worker", fake_calibrate)
    monkeypatch.setenv("FAKE_GPUS", json.dumps({"fail": 2}))
    out = tmp_path / "node.yaml"
    with pytest.raises(GateFailed, match=r"GPU 2 \(0000:1A:00.0\): RuntimeError: Xid 79 on device 2"):
        calibrate_many([0, 1, 2], "auto", out, True, None, False, "json", 0.0)
    assert "median over 2 GPUs" in out.read_text()


def test_outlier_needs_several_devices(run_cli) -> None:
    result = run_cli("calibrate", "--device", "0", "--outlier", "5%")
    assert result.code == 2 and "several devices" in result.err and "Traceback" not in result.err


def test_links_that_fail_leave_the_figures_written_and_exit_1(tmp_path: Path, monkeypatch) -> None:
    import roofline.cli.calibrate_many as cm
    import roofline.measurement.multi.host as host
    import roofline.measurement.multi.calibrate as mc

    def broken_links(devices, datasheet, on_step):  # type: ignore[no-untyped-def]
        raise RuntimeError("peer copy GPU 0 -> GPU 1 delivered wrong data")

    monkeypatch.setattr(mc, "calibrate_worker", fake_calibrate)
    monkeypatch.setattr(host, "_links", broken_links)
    monkeypatch.setenv("FAKE_GPUS", "{}")
    out = tmp_path / "node.yaml"
    with pytest.raises(GateFailed, match="links not measured: RuntimeError: peer copy GPU 0 -> GPU 1 delivered"):
        cm.calibrate_many([0, 1], "auto", out, True, None, True, "table", 0.0)
    spec = yaml.safe_load(out.read_text())
    assert spec["memory"]["bandwidth"] == "4.3 TB/s" and "interconnect" not in spec
