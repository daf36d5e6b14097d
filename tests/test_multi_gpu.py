"""Several GPUs of a host, on the CPU: --device parsing, worker processes (fake workers, one of them failing),
merging per-device documents, the schema of the merged file, the host median and the --outlier gate, and the
interconnect arithmetic (nccl-tests bus bandwidth)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from roofline.errors import BackendUnavailable, GateFailed, InputError
from roofline.gates.hosts import host_rows, outliers
from roofline.measurement.interconnect import ALLREDUCE_SIZES, MiB, bus_bandwidth
from roofline.measurement.multi.pool import failure_lines, parse_devices, resolve_devices, run_workers
from roofline.records.devices import merge_documents, split_devices
from roofline.measurement.multi.measure import merged_or_raise
from roofline.records.document import ResultsDocument

# ---- fake workers (module level: a spawned process imports them by name) ------------------------------------


def fake_measure(device: int, payload: Any, send: Any) -> dict[str, Any]:
    send("identity", {"index": device, "pci_bus_id": f"0000:{device + 0x18:02X}:00.0"})
    send("progress", "k")
    if device == payload.get("fail"):
        raise RuntimeError(f"HBM error on device {device}")
    if device == payload.get("die"):
        os._exit(7)
    return _doc(device, payload.get("slow", {}).get(device, 1.0))


def _kernel(name: str, time: float) -> dict[str, Any]:
    return {"name": name, "params": {"n": 1024}, "dtype": "float32", "roof": "fp32", "flops": 1024.0,
            "bytes": 12288.0, "intensity": 1 / 12, "peak_flops": 6.7e13, "bandwidth": 4.8e12, "ridge": 14.0,
            "bound": "memory", "attainable_flops": 4e11, "sol_time": 2.56e-9, "time_median": time,
            "achieved_bandwidth": 12288.0 / time, "achieved_flops": 1024.0 / time,
            "fraction_of_ceiling": 2.56e-9 / time, "verified": True, "status": "OK"}


def _doc(device: int, slow: float = 1.0) -> dict[str, Any]:
    return {"schema": "roofline/results/v1", "created": "2026-11-30T00:00:00+00:00", "tool_version": "t",
            "backend": "cupy",
            "device": {"name": "NVIDIA H200", "device_id": device, "driver": "13.0", "cuda_runtime": "13.0",
                       "cupy_version": "14", "spec_id": "h200-sxm", "spec_derived": False,
                       "pci_bus_id": f"0000:{device + 0x18:02X}:00.0", "uuid": f"GPU-{device}", "serial": None},
            "machine": {"id": "h200-sxm", "name": "H200", "bandwidth": 4.8e12, "latency": 3.3e-7,
                        "bytes_in_flight": 1.6e6, "roofs": {"fp32": 6.69e13}},
            "kernels": [_kernel("copy", 1e-6 * slow), _kernel("triad", 2e-6 * slow)]}


# ---- --device ----------------------------------------------------------------------------------------------


def test_parse_devices() -> None:
    assert parse_devices("0") == [0]
    assert parse_devices(" 0, 2,3 ") == [0, 2, 3]
    assert parse_devices("ALL") is None
    for bad in ("", "-1", "0,,1", "1.5", "٣", "0,0"):
        with pytest.raises(InputError):
            parse_devices(bad)


def test_resolve_devices() -> None:
    assert resolve_devices(None, 3) == [0, 1, 2]
    assert resolve_devices([2, 0], 3) == [2, 0]
    with pytest.raises(BackendUnavailable, match="no device 4"):
        resolve_devices([0, 4], 2)


# ---- workers -----------------------------------------------------------------------------------------------


def test_workers_run_concurrently_and_report() -> None:
    seen: list[tuple[int, str]] = []
    outcomes = run_workers([0, 1], fake_measure, {}, lambda d, k, v: seen.append((d, k)))
    assert all(o.ok for o in outcomes.values())
    assert {o.result["device"]["device_id"] for o in outcomes.values()} == {0, 1}
    assert {(0, "progress"), (1, "progress")} <= set(seen)


def test_a_failing_worker_keeps_the_others_and_is_named() -> None:
    outcomes = run_workers([0, 1, 2], fake_measure, {"fail": 1, "die": 2})
    assert outcomes[0].ok and not outcomes[1].ok and not outcomes[2].ok
    assert "HBM error on device 1" in outcomes[1].error and outcomes[1].kind == "RuntimeError"
    assert "exited with code 7" in outcomes[2].error
    lines = failure_lines(outcomes)
    assert lines[0].startswith("GPU 1 (0000:19:00.0): ") and lines[1].startswith("GPU 2 (0000:1A:00.0): ")
    doc, lines = merged_or_raise(outcomes)
    assert [k["device"] for k in doc["kernels"]] == [0, 0]
    assert [e["index"] for e in doc["device_errors"]] == [1, 2]
    ResultsDocument.from_json(doc)  # the survivors' file is a valid results file


def test_when_every_worker_fails_the_error_class_is_kept() -> None:
    from roofline.measurement.multi.pool import Outcome

    both = {d: Outcome(d, error="--spec nope: unknown", kind="InputError") for d in (0, 1)}
    with pytest.raises(InputError):
        merged_or_raise(both)
    mixed = {0: Outcome(0, error="x", kind="InputError"), 1: Outcome(1, error="y", kind="RuntimeError")}
    with pytest.raises(GateFailed, match="every device failed"):
        merged_or_raise(mixed)


def test_measure_many_exits_1_naming_the_device_and_writes_the_others(tmp_path: Path, monkeypatch, capsys) -> None:
    import roofline.measurement.multi.measure as mm
    from roofline.cli.multi import measure_many

    monkeypatch.setattr(mm, "measure_worker", fake_measure)
    out = tmp_path / "r.json"
    with pytest.raises(GateFailed, match=r"GPU 1 \(0000:19:00.0\).*HBM error"):
        measure_many([0, 1], {"fail": 1}, out, "table")
    doc = json.loads(out.read_text())
    assert [d["index"] for d in doc["devices"]] == [0] and doc["device_errors"][0]["index"] == 1


# ---- merging and the schema --------------------------------------------------------------------------------


def test_merge_lists_devices_and_orders_kernels_side_by_side() -> None:
    doc = merge_documents([_doc(1), _doc(0)])
    assert [(k["name"], k["device"]) for k in doc["kernels"]] == [("copy", 0), ("copy", 1), ("triad", 0),
                                                                  ("triad", 1)]
    assert [d["index"] for d in doc["devices"]] == [0, 1]
    assert doc["devices"][1]["pci_bus_id"] == "0000:19:00.0" and doc["devices"][1]["uuid"] == "GPU-1"
    assert doc["device"]["name"] == "NVIDIA H200" and doc["device"]["count"] == 2
    assert doc["machine"]["id"] == "h200-sxm"
    back = ResultsDocument.from_json(doc).to_json()
    assert back["devices"] == doc["devices"]  # kept as written


def test_schema_refuses_a_kernel_naming_an_unknown_device() -> None:
    doc = merge_documents([_doc(0), _doc(1)])
    doc["kernels"][0]["device"] = 5
    with pytest.raises(InputError, match=r"kernels\[0\]\.device: is 5"):
        ResultsDocument.from_json(doc, "r.json")
    doc = merge_documents([_doc(0), _doc(1)])
    del doc["devices"][0]["name"]
    with pytest.raises(InputError, match=r"devices\[0\]\.name: is missing"):
        ResultsDocument.from_json(doc, "r.json")


def test_old_single_device_files_still_read() -> None:
    old = _doc(0)
    assert "devices" not in old
    assert ResultsDocument.from_json(old, "old.json").to_json() == old


def test_split_gives_one_document_per_gpu() -> None:
    parts = split_devices(merge_documents([_doc(0), _doc(1)]))
    assert [p["device"]["name"] for p in parts] == ["NVIDIA H200 (GPU 0)", "NVIDIA H200 (GPU 1)"]
    assert all(len(p["kernels"]) == 2 for p in parts)


# ---- host median and the outlier gate ----------------------------------------------------------------------


def _devices(times: list[float]) -> list[dict[str, Any]]:
    return [{"label": f"g{i}", "index": i, "pci_bus_id": f"bus{i}", "kernels": [_kernel("copy", t)]}
            for i, t in enumerate(times)]


def test_deviation_is_speed_against_the_median() -> None:
    (row,) = host_rows(_devices([1.0, 1.0, 1.25]))
    assert row["median_time"] == 1.0
    assert [round(d["deviation"], 6) for d in row["devices"]] == [0.0, 0.0, -0.2]
    (row,) = host_rows(_devices([1.0, 1.1]))  # two GPUs: the median is the mean speed
    slow = row["devices"][1]["deviation"]
    assert slow == pytest.approx((1 / 1.1) / ((1 + 1 / 1.1) / 2) - 1)


def test_outliers_beyond_the_limit_only() -> None:
    rows = host_rows(_devices([1.0, 1.0, 1.0, 1.06, 1.2]))
    found = outliers(rows, 0.05)
    assert [o["index"] for o in found] == [4, 3]  # worst first
    assert outliers(rows, 0.2) == []


def test_a_failed_kernel_is_not_a_speed() -> None:
    devices = _devices([1.0, 1.0])
    devices[1]["kernels"][0] = {**devices[1]["kernels"][0], "status": "FAILED", "time_median": None}
    assert host_rows(devices) == []  # one timed device: no median to compare with


def test_report_outlier_names_the_slow_gpu(tmp_path: Path, run_cli) -> None:
    path = tmp_path / "host.json"
    path.write_text(json.dumps(merge_documents([_doc(0), _doc(1, slow=1.3)])))
    code, out, err = run_cli("report", path, "--outlier", "5%", "--format", "json")
    assert code == 1
    report = json.loads(out)
    failed = [r for r in report["rows"] if r["verdict"] == "fail"]
    assert {r["device"] for r in failed} == {"NVIDIA H200 (GPU 1)"}
    assert "GPU 1 (0000:19:00.0)" in failed[0]["failures"][0]
    assert report["hosts"][0]["devices"][1]["deviation"] < -0.05
    code, out, _ = run_cli("report", path, "--outlier", "20%")
    assert code == 0 and "GPU 1 0000:19:00.0" in out


def test_outlier_needs_a_several_gpu_file(tmp_path: Path, run_cli) -> None:
    path = tmp_path / "one.json"
    path.write_text(json.dumps(_doc(0)))
    code, _, err = run_cli("report", path, "--outlier", "5%")
    assert code == 2 and "--device all" in err


# ---- interconnect arithmetic -------------------------------------------------------------------------------


def test_bus_bandwidth_is_nccl_tests_definition() -> None:
    assert bus_bandwidth(1e9, 0.01, 2) == (1e11, 1e11)  # 2(n-1)/n = 1 for two GPUs
    algbw, busbw = bus_bandwidth(1e9, 0.01, 8)
    assert busbw == pytest.approx(algbw * 14 / 8)
    assert ALLREDUCE_SIZES[0] == MiB and ALLREDUCE_SIZES[-1] == 4 << 30


def test_interconnect_steps_skip_with_one_gpu() -> None:
    from roofline.measurement.interconnect import allreduce, peer_copies

    assert "need two" in peer_copies([0])["skipped"]
    assert "needs two" in allreduce([0])["skipped"]


@pytest.mark.parametrize("fmt", ["table", "markdown", "junit"])
def test_a_failed_outlier_renders_in_every_format(tmp_path: Path, run_cli, fmt: str) -> None:
    path = tmp_path / "host.json"
    path.write_text(json.dumps(merge_documents([_doc(0), _doc(1, slow=1.3)])))
    code, out, err = run_cli("report", path, "--outlier", "5%", "--format", fmt)
    assert code == 1 and "GPU 1" in out + err  # this crashed (exit 101) on the H200 pair before _SHORT knew it


def test_each_worker_gets_its_share_of_the_cores_for_blas() -> None:
    from roofline.measurement.multi.pool import thread_caps

    assert thread_caps(2, 32, {}) == {"OMP_NUM_THREADS": "16", "OPENBLAS_NUM_THREADS": "16", "MKL_NUM_THREADS": "16",
                                      "ROOFLINE_HOST_THREADS": "16"}
    assert thread_caps(8, 4, {"OMP_NUM_THREADS": "3"}) == {"OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1",
                                                           "ROOFLINE_HOST_THREADS": "1"}


def test_the_host_reference_pool_takes_its_share_and_gives_the_same_numbers(monkeypatch) -> None:
    import numpy as np

    from roofline import kernelapi

    monkeypatch.delenv(kernelapi.HOST_THREADS, raising=False)
    full = kernelapi.uniform(np.random.default_rng(7), 3 * kernelapi.CHUNK + 5, -1, 1)
    monkeypatch.setenv(kernelapi.HOST_THREADS, "1")
    assert kernelapi._workers() == 1
    np.testing.assert_array_equal(kernelapi.uniform(np.random.default_rng(7), 3 * kernelapi.CHUNK + 5, -1, 1), full)
    monkeypatch.setenv(kernelapi.HOST_THREADS, "zero")
    assert kernelapi._workers() == max(1, os.cpu_count() or 1)


def env_worker(device: int, payload: Any, send: Any) -> dict[str, Any]:
    return {k: os.environ.get(k) for k in ("OPENBLAS_NUM_THREADS", "NCCL_NVLS_ENABLE")}


def test_workers_start_with_the_caps_and_the_parent_is_left_as_it_was(monkeypatch) -> None:
    monkeypatch.delenv("OPENBLAS_NUM_THREADS", raising=False)
    outcomes = run_workers([0, 1], env_worker, None)
    share = str(max(1, (os.cpu_count() or 1) // 2))
    assert [o.result["OPENBLAS_NUM_THREADS"] for o in outcomes.values()] == [share, share]
    assert all(o.result["NCCL_NVLS_ENABLE"] == "0" for o in outcomes.values())
    assert "OPENBLAS_NUM_THREADS" not in os.environ
