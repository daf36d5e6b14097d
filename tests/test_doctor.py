"""roofline doctor: the verdicts by hand, the whole run on an emulated device, and the CLI without a GPU."""

from __future__ import annotations

import contextlib

import pytest

from roofline.gates import doctor as d
# ---- the verdicts ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("share, status", [(0.84, d.FAIL), (0.85, d.PASS), (0.93, d.PASS), (1.05, d.PASS),
                                           (1.06, d.FAIL)])
def test_dram_bandwidth_is_held_between_85_and_105_percent_of_the_datasheet(share, status):
    c = d.dram_check("copy", share * 4.8e12, 4.8e12)
    assert c.status == status
    assert c.limits == (pytest.approx(0.85 * 4.8e12), pytest.approx(1.05 * 4.8e12))
    if status == d.FAIL:
        assert c.fix


def test_a_failed_kernel_fails_its_check_and_says_why():
    c = d.dram_check("triad", None, 4.8e12, error="wrong result at index 7")
    assert c.status == d.FAIL and "wrong result at index 7" in c.note


def test_fma_peak_is_scaled_to_the_observed_clock():
    # 60 TFLOP/s at 1800 MHz against 66.9 at 1980: the peak at 1800 MHz is 60.8, so 98.7 % passes ...
    c = d.fma_check(60e12, 66.9e12, 1.98e9, 1.8e9)
    assert c.status == d.PASS and "1800 MHz" in c.bound
    # ... while against the boost-clock peak it would be 89.7 % and fail.
    assert d.fma_check(60e12, 66.9e12, 1.98e9, None).status == d.FAIL
    # more than the SMs can issue at the clock they ran at is impossible
    assert d.fma_check(64e12, 66.9e12, 1.98e9, 1.8e9).status == d.FAIL


def test_cache_figures_must_lie_between_their_physical_bounds():
    # the shipped bug: an L2 figure of 11.07 PB/s against an L1 bound of 34 TB/s
    bad = d.between_check("L2 bandwidth", 11.07e15, 4.3e12, 34.2e12, "bandwidth")
    assert bad.status == d.FAIL and bad.fix
    assert d.between_check("L2 bandwidth", 10.2e12, 4.3e12, 34.2e12, "bandwidth").status == d.PASS
    assert d.between_check("L2 bandwidth", 3.0e12, 4.3e12, 34.2e12, "bandwidth").status == d.FAIL
    assert d.latency_check(330e-9).status == d.PASS
    assert d.latency_check(2e-9).status == d.FAIL
    assert d.latency_check(None, error="FAILED: the chase ended at 0x0").status == d.FAIL


def test_timers_must_agree_within_ten_percent():
    assert d.timers_check(120e-6, 118e-6, 119e-6).status == d.PASS
    off = d.timers_check(120e-6, 118e-6, 140e-6)
    assert off.status == d.FAIL and "ncu" in off.figure
    # an event pair around a launch on another stream times nothing: the spread is enormous
    assert d.timers_check(0.2e-6, 118e-6, None, "ncu not found").status == d.FAIL
    only_one = d.timers_check(120e-6, None, None, "ncu not found")
    assert only_one.status == d.SKIP


def test_rotation_must_evict_and_residency_must_pay():
    assert d.residency_check(9e12, 4.2e12, 4.8e12).status == d.PASS
    assert d.residency_check(9e12, 8.9e12, 4.8e12).status == d.FAIL  # rotated beats DRAM: served from a cache
    assert d.residency_check(4.3e12, 4.2e12, 4.8e12).status == d.WARN  # resident no faster: L2 flushed or shared


def test_counters_are_held_to_exact_counts():
    assert d.counter_check("bytes", 1.01 * 512e6, 512e6, d.COUNTER_BYTES, "bytes").status == d.PASS
    assert d.counter_check("bytes", 1.03 * 512e6, 512e6, d.COUNTER_BYTES, "bytes").status == d.FAIL
    n = 4096
    assert d.counter_check("flops", 2 * n**3, 2 * n**3, d.COUNTER_FLOPS, "flops").status == d.PASS
    assert d.counter_check("flops", n**3, 2 * n**3, d.COUNTER_FLOPS, "flops").status == d.FAIL  # FMA counted once
    assert d.counter_check("flops", None, 2 * n**3, d.COUNTER_FLOPS, "flops", "ncu not found").status == d.SKIP


def test_gpu_state_checks():
    windows = [{"sm_clock_end": 1.98e9, "sm_clock_max": 1.98e9, "thermal_capped": 0.0, "power_capped": 0.0}]
    state = {"nvml": True, "persistence_mode": True, "ecc_mode": True, "ecc_uncorrected": 0, "power_limit": 700.0,
             "power_default_limit": 700.0, "other_processes": []}
    assert {c.status for c in d.state_checks(state, windows)} == {d.PASS}
    hot = [{**windows[0], "sm_clock_end": 1.2e9, "thermal_capped": 0.5}]
    broken = {**state, "ecc_uncorrected": 3, "other_processes": [4242], "power_limit": 400.0}
    by = {c.name: c for c in d.state_checks(broken, hot)}
    assert by["clocks during the windows"].status == d.FAIL
    assert by["ECC"].status == d.FAIL and "3" in by["ECC"].figure
    assert by["other processes on the GPU"].status == d.WARN and "4242" in by["other processes on the GPU"].figure
    assert by["power limit"].status == d.WARN
    assert d.state_checks({"nvml": False, "why": "no NVML"}, windows)[0].status == d.SKIP
    # a GEMM at the power limit, clock down to 1515 MHz: the GPU as designed (seen on the H200, 2026-12-01)
    capped = [{**windows[0], "sm_clock_end": 1.515e9, "power_capped": 0.99, "reasons_end": ["power cap"]}]
    assert d.state_checks(state, capped)[0].status == d.PASS
    slow = [{**windows[0], "sm_clock_end": 1.2e9, "reasons_end": ["application clocks setting"]}]
    assert d.state_checks(state, slow)[0].status == d.WARN


def test_the_verdict_fails_on_any_fail_and_warns_otherwise():
    v = d.Verdict({"name": "x"}, "h200-sxm", [d.Check("a", d.PASS), d.Check("b", d.WARN)])
    assert v.status == d.WARN and v.exit_code == 0
    v.checks.append(d.Check("c", d.FAIL))
    assert v.status == d.FAIL and v.exit_code == 1
    doc = v.to_dict()
    assert doc["schema"] == "roofline/doctor/v1" and doc["counts"] == {"PASS": 1, "WARN": 1, "FAIL": 1, "SKIP": 0}


# ---- the whole doctor on an emulated device ------------------------------------------------------------


def test_the_whole_doctor_runs_on_an_emulated_device():
    from test_calibrate import fake_backend, tiny_plan

    from roofline.measurement.selftest import DoctorPlan
    from roofline.ncu.doctor import doctor as run_doctor
    from roofline.load.specs import SpecCatalog

    h200 = SpecCatalog.bundled().resolve("h200-sxm")

    backend = fake_backend()
    plan = DoctorPlan(stream_n=4096, timer_n=4096, resident_n=1024, gemm_n=32, min_time=0.0, probes=tiny_plan())
    verdict = run_doctor(backend, h200, plan, use_ncu=False)
    by = {c.name.split(" (")[0]: c for c in verdict.checks}
    # the host is no GPU: bandwidths are far below the datasheet and fail, but every check ran and said so
    assert by["DRAM bandwidth: copy"].status == d.FAIL and by["DRAM bandwidth: copy"].value > 0
    assert by["L2 bandwidth"].value is not None and "curve" in by["L2 bandwidth"].note
    assert by["DRAM latency"].status == d.PASS  # the emulated chase reports 300 ns a step
    assert by["ncu DRAM bytes read"].status == d.SKIP and by["ncu DRAM bytes read"].note == "--no-ncu"
    assert by["GPU state"].status == d.SKIP
    assert verdict.exit_code == 1 and verdict.to_dict()["device"]["name"] == "Fake GPU"


def test_a_probe_runs_on_the_backends_own_stream():
    """The 11 PB/s L2 figure: a probe launched outside the stream its events were recorded on. Every read probe
    now runs inside backend.current()."""
    from test_calibrate import fake_backend

    from roofline.measurement.calibrate.plan import load_module
    from roofline.measurement.calibrate.probes import l2_bandwidth
    from roofline.measurement.policy import MeasurePolicy
    from test_calibrate import tiny_plan

    backend = fake_backend()
    inside = []
    launches = []

    @contextlib.contextmanager
    def current():
        inside.append(True)
        try:
            yield
        finally:
            inside.pop()

    backend.current = current
    module = load_module(backend)
    real = module.get_function

    def spy(name):
        fn = real(name)

        def launch(*a):
            launches.append(bool(inside))
            return fn(*a)
        return launch

    module.get_function = spy
    fig = l2_bandwidth(backend, module, tiny_plan(), MeasurePolicy(min_time=0.0, min_repeats=3, warmup_time=0.0))
    assert fig.ok and launches and all(launches)


# ---- the CLI without a GPU -------------------------------------------------------------------------------


def test_doctor_without_a_gpu_exits_3_with_the_fix(run_cli, monkeypatch):
    import roofline.measurement.backend_cupy as bc
    from roofline.errors import BackendUnavailable

    def no_cupy():
        raise BackendUnavailable("CuPy is not installed (No module named 'cupy')")

    monkeypatch.setattr(bc, "import_cupy", no_cupy)
    r = run_cli("doctor")
    assert r.code == 3
    assert "doctor checks a GPU" in r.err and "pip install" in r.err and "Traceback" not in r.err


def test_the_ncu_replay_uses_the_ncu_that_ncu_path_names(monkeypatch, tmp_path):
    """doctor --ncu-path: the ncu found there is the one the replay runs (it was looked up, then the replay searched
    PATH again and said 'ncu not found' on a machine whose ncu is only at the given path)."""
    from roofline.measurement.selftest import FULL
    from roofline.ncu import doctor as ncu_doctor

    given = tmp_path / "ncu"
    given.write_text("#!/bin/sh\n")
    given.chmod(0o755)
    seen = {}

    def add_profile(picked, catalog, ncu_path=None, device_id=0, timeout=0.0):
        seen["ncu_path"] = ncu_path
        return [dict(e, counters={"time": 1e-4, "dram_read": 8.0, "dram_write": 8.0}) for e in picked], []

    monkeypatch.setattr(ncu_doctor, "add_profile", add_profile)

    class Backend:
        info = {"device_id": 0}

    from roofline.measurement.progress import SILENT

    results = {"timer_graph": {"status": "OK", "name": "copy"}, "gemm": {"status": "OK", "name": "matmul_library_fp16"}}
    time, why, counted = ncu_doctor._replay(str(given), results, FULL, SILENT, Backend())
    assert seen["ncu_path"] == str(given) and why is None and time == 1e-4 and counted["dram_read"] == 8.0


def _no_cupy(monkeypatch):
    import roofline.measurement.backend_cupy as bc
    from roofline.errors import BackendUnavailable

    def no_cupy():
        raise BackendUnavailable("CuPy is not installed (No module named 'cupy')")

    monkeypatch.setattr(bc, "import_cupy", no_cupy)


def test_doctor_json_without_a_gpu_prints_a_verdict_and_exits_3(run_cli, monkeypatch):
    """A script that runs `doctor --format json > doctor.json` on a machine without a GPU gets a document that
    says why (it got an empty file), and still exit 3."""
    import json

    _no_cupy(monkeypatch)
    r = run_cli("doctor", "--format", "json")
    assert r.code == 3
    verdict = json.loads(r.out)
    assert verdict["schema"] == "roofline/doctor/v1" and verdict["status"] == "UNAVAILABLE"
    assert verdict["error"]["exit_code"] == 3 and "CuPy is not installed" in verdict["error"]["reason"]
    assert "pip install" in verdict["error"]["fix"] and verdict["checks"] == []
    assert "doctor checks a GPU" in r.err


@pytest.mark.parametrize("argv", [("--spec", "no-such-gpu"), ("--spec", "no-such-gpu", "--format", "json"),
                                  ("--ncu-path", "/no/such/ncu"), ("--timeout", "5")])
def test_doctor_input_errors_win_over_a_missing_gpu(run_cli, monkeypatch, argv):
    """Bad input is exit 2 on any machine: it is checked before the GPU is looked for (exit 3 hid it)."""
    _no_cupy(monkeypatch)
    r = run_cli("doctor", *argv)
    assert r.code == 2, r.err
    assert r.out == "" and "Traceback" not in r.err
