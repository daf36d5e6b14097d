"""roofline.measurement.multi: measure and sweep on every GPU of a host end in one HostRun (the merged document,
the failed devices, the bugs worth a traceback, the host rows and the verdict), so the command line only renders it.
Fake workers in processes, on the CPU (tests/test_multi_gpu.py and tests/test_multi_sweep.py hold them)."""

from __future__ import annotations

from typing import Any

import pytest

from roofline.errors import GateFailed
from roofline.gates.hosts import host_rows
from roofline.measurement.multi.measure import HostRun
from roofline.measurement.multi.pool import Outcome

from test_multi_gpu import _doc, fake_measure
from test_multi_sweep import _args, fake_sweep


def _measure(monkeypatch: Any, devices: list[int], payload: dict) -> HostRun:
    import roofline.measurement.multi.measure as mm

    monkeypatch.setattr(mm, "measure_worker", fake_measure)
    return mm.measure_devices(devices, payload)


def test_measure_devices_merges_and_names_the_failed_device(monkeypatch) -> None:
    run = _measure(monkeypatch, [0, 1, 2], {"fail": 1})
    assert [d["index"] for d in run.doc["devices"]] == [0, 2] and run.count == 3
    assert len(run.failures) == 1 and run.failures[0].startswith("GPU 1 (0000:19:00.0): RuntimeError: HBM error")
    assert len(run.bugs) == 1 and run.bugs[0].startswith("GPU 1: ")  # a RuntimeError is a bug: its traceback
    with pytest.raises(GateFailed) as failed:
        run.verdict()
    assert failed.value.message.startswith("1 of 3 devices failed; the others' results were kept: GPU 1 (")


def test_a_clean_run_passes_and_has_a_host_row_per_kernel(monkeypatch) -> None:
    run = _measure(monkeypatch, [0, 1], {"slow": {1: 1.25}})
    run.verdict()
    assert run.failures == [] and run.bugs == []
    assert [p["device"]["index"] for p in run.parts()] == [0, 1]
    rows = run.host_rows()
    assert [r["kernel"] for r in rows] == ["copy", "triad"]
    assert rows == host_rows([{"label": p["device"]["name"], "index": p["device"]["index"],
                               "pci_bus_id": p["device"].get("pci_bus_id"), "kernels": p["kernels"]}
                              for p in run.parts()])


def test_a_kernel_that_failed_verification_fails_the_run_once_every_device_ran() -> None:
    from roofline.records.devices import merge_documents

    docs = [_doc(0), _doc(1)]
    for d in docs:
        d["kernels"][1] = {**d["kernels"][1], "status": "FAILED", "verified": False}
    run = HostRun(merge_documents(docs), [], {0: Outcome(0, result=docs[0]), 1: Outcome(1, result=docs[1])}, 2)
    with pytest.raises(GateFailed, match=r"^2 kernel entr\(ies\) FAILED verification: triad$"):
        run.verdict()


def test_sweep_devices_keeps_each_devices_model_block(monkeypatch) -> None:
    import roofline.measurement.multi.sweep as ms

    monkeypatch.setattr(ms, "sweep_worker", fake_sweep)
    run = ms.sweep_devices([0, 1], _args())
    assert isinstance(run, HostRun) and run.failures == []
    assert [s["device"] for s in run.doc["sweeps"]] == [0, 1]
    assert [p["sweep"]["kernel"] for p in run.parts()] == ["vector_add", "vector_add"]
    assert {r["kernel"] for r in run.host_rows()} == {"vector_add"}
    run.verdict()


# ---- calibrate --device all: roofline.measurement.multi.host ----------------------------------------------------


def _calibrated(slow: dict[int, float], fail: int | None = None) -> dict[int, Outcome]:
    from test_multi_calibrate import fake_calibrate

    out = {}
    for d in range(3):
        try:
            out[d] = Outcome(d, result=fake_calibrate(d, {"slow": slow, "fail": fail}, lambda *a: None))
        except RuntimeError as exc:
            out[d] = Outcome(d, error=f"RuntimeError: {exc}", kind="RuntimeError", identity={"index": d})
    return out


def test_the_host_spec_carries_the_links_measured_after_the_figures(monkeypatch) -> None:
    import json

    import roofline.measurement.multi.host as host
    from roofline.version import __version__
    from test_multi_calibrate import DATA

    steps: list[str] = []
    monkeypatch.setattr(host, "_links", lambda devices, datasheet, on_step: steps.append(str(devices))
                        or json.loads(DATA.read_text()))
    run = host.host_calibration(_calibrated({}), None, True, 0.0, lambda name, skipped: None)
    assert steps == ["[0, 1, 2]"] and run.link_error is None and run.count == 3
    assert "nvlink" in run.spec_doc["interconnect"] and "interconnect:" in run.text
    date = run.spec_doc["measurement"]["date"]
    cites = [s["cite"] for s in run.spec_doc["sources"] if s["for"] == ["interconnect.nvlink.bandwidth"]]
    assert cites[0].startswith(f"roofline calibrate {__version__} on 3 × NVIDIA H200, {date}")
    run.verdict()
    bare = host.host_calibration(_calibrated({}), None, False, 0.0, lambda name, skipped: None)
    assert bare.link_doc is None and "interconnect" not in bare.spec_doc


def test_the_host_verdict_counts_every_device_asked_for() -> None:
    from roofline.measurement.multi.host import host_calibration

    run = host_calibration(_calibrated({1: 0.9}, fail=2), 0.05, False, 0.0, lambda name, skipped: None)
    assert run.count == 3 and len(run.parts) == 2
    with pytest.raises(GateFailed, match=r"^4 problems across 3 GPUs: GPU 2: RuntimeError: Xid 79") as failed:
        run.verdict()
    assert "GPU 1 (0000:19:00.0): DRAM bandwidth" in failed.value.message
