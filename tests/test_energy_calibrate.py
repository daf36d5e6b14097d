"""calibrate --energy and doctor's energy-counter check (issue 33), on any machine: a fake GPU whose NVML energy
counter runs at a set power while a probe runs and at idle power otherwise, with a fake clock, so every figure is
worked out by hand. The same code on an H200 is the gpu-marked test at the end (and benchmarks/energy_check.py)."""

from __future__ import annotations

import contextlib
import types
from pathlib import Path

import numpy as np
import pytest
import yaml

from conftest import TOY_SPEC
from roofline.gates import doctor as judge
from roofline.load.specs import load_spec
from roofline.measurement.calibrate.energy import (FAILED, OK, SKIPPED, EnergyPlan, EnergyRun, Probe, add_energy,
                                                   calibrate_energy, counter_agreement, derive, energy_block,
                                                   fma_init, fma_reference, gpu_probes, _close)
from roofline.measurement.gpustate import Reading, window_state

IDLE_W = 100.0
PLAN = EnergyPlan(idle_settle=0.5, idle_seconds=1.0, loop_seconds=2.0)


class FakeGPU:
    """Time advances by `dt` per launch at the probe's power, and by the slept time at idle power; the counter
    integrates it. The SM clock reads 1500 MHz busy; the power policy holds the clocks while `capped`."""

    def __init__(self) -> None:
        self.t, self.energy, self.held = 0.0, 5000.0, 0.0
        self.power, self.capped = IDLE_W, False
        self.reported_power: float | None = None

    def sleep(self, s: float) -> None:
        self.t += s
        self.energy += IDLE_W * s

    def run(self, dt: float, power: float) -> None:
        self.t += dt
        self.energy += power * dt
        self.held += dt if self.capped else 0.0

    def clock(self) -> float:
        return self.t

    def read(self) -> Reading:
        return Reading(time=self.t, sm_clock=1500e6, energy=self.energy, power_held=self.held, thermal_held=0.0)

    def window(self, before: Reading, after: Reading) -> dict:
        return window_state(before, after, 1980e6, 700.0)

    def power_usage(self) -> float | None:
        return self.reported_power


def probe(gpu: FakeGPU, name: str, field: str, unit: str, per_run: float, dt: float, power: float,
          problem: str | None = None) -> Probe:
    return Probe(name, field, unit, per_run, lambda: gpu.run(dt, power), lambda: problem, "random normal (fake)")


def _backend(gpu: FakeGPU):
    return types.SimpleNamespace(monitor=gpu, synchronize=lambda: None)


def test_idle_then_each_probe_gives_its_energy_per_unit_by_hand() -> None:
    gpu = FakeGPU()
    probes = [
        # 1 GB a run in 0.25 ms: 4 TB/s at 580 W: (580 - 100) / 4e12 = 120 pJ/B
        probe(gpu, "copy", "memory.dram", "B", 1e9, 2.5e-4, 580.0),
        # 1 TFLOP a run in 2 ms: 500 TFLOP/s at 700 W: 600 / 5e14 = 1.2 pJ/FLOP
        probe(gpu, "GEMM fp16", "compute.fp16_tensor", "FLOP", 1e12, 2e-3, 700.0),
        # 0.1 TFLOP in 2 ms: 50 TFLOP/s, which does not beat the FP32 cores' 60: TF32 did not apply
        probe(gpu, "GEMM tf32", "compute.tf32_tensor", "FLOP", 1e11, 2e-3, 400.0),
    ]
    gpu.capped = False
    runs = calibrate_energy(_backend(gpu), PLAN, fp32_rate=60e12, probes=probes, sleep=gpu.sleep)
    idle, copy, fp16, tf32 = runs
    assert idle.status == OK and idle.power == pytest.approx(IDLE_W) and idle.window == pytest.approx(1.0)
    assert copy.status == OK and copy.rate == pytest.approx(4e12) and copy.power == pytest.approx(580.0)
    assert copy.per_unit == pytest.approx(120e-12) and 2.0 <= copy.window <= 2.1 and copy.runs >= 8000
    assert copy.sm_clock_mean == pytest.approx(1500e6) and copy.capped is False
    assert fp16.per_unit == pytest.approx(1.2e-12) and fp16.rate == pytest.approx(5e14)
    assert tf32.status == SKIPPED and "TF32 did not apply" in tf32.note
    assert all(r.inputs for r in runs)


def test_a_compute_probes_own_dram_bytes_are_charged_to_memory_not_to_its_flops() -> None:
    """Choi's split: ε_flop = (P - π0 - ε_mem·Q/s) / FLOP rate, so the model applied to the probe gives back the
    probe's own energy over idle instead of counting its bytes twice."""
    gpu = FakeGPU()
    gemm = Probe("GEMM fp16", "compute.fp16_tensor", "FLOP", 1e12, lambda: gpu.run(2e-3, 700.0), lambda: None,
                 "random normal (fake)", dram_bytes=0.5e9)
    runs = calibrate_energy(_backend(gpu), PLAN, probes=[
        probe(gpu, "copy", "memory.dram", "B", 1e9, 2.5e-4, 580.0), gemm], sleep=gpu.sleep)
    copy, fp16 = runs[1], runs[2]
    # 0.5 GB a run, 500 runs a second: 250 GB/s at 120 pJ/B = 30 W of the 600 W over idle
    assert fp16.memory_power == pytest.approx(30.0)
    assert fp16.per_unit == pytest.approx(570.0 / 5e14)
    one_run = 1e12 * fp16.per_unit + 0.5e9 * copy.per_unit
    assert one_run == pytest.approx((700.0 - IDLE_W) * 2e-3)
    # without a copy before it there is no ε_mem to charge: the figure keeps the bytes, as a lone probe must
    alone = calibrate_energy(_backend(gpu), PLAN, probes=[gemm], sleep=gpu.sleep)[1]
    assert alone.memory_power is None and alone.per_unit == pytest.approx(1.2e-12)


def test_a_power_capped_loop_says_so() -> None:
    gpu = FakeGPU()
    gpu.capped = True
    run = calibrate_energy(_backend(gpu), PLAN, probes=[probe(gpu, "GEMM fp16", "compute.fp16_tensor", "FLOP",
                                                              1e12, 2e-3, 700.0)], sleep=gpu.sleep)[1]
    assert run.capped is True and run.power_capped == pytest.approx(1.0, abs=0.01)


def test_a_wrong_result_or_a_dead_counter_fails_the_probe() -> None:
    gpu = FakeGPU()
    runs = calibrate_energy(_backend(gpu), PLAN, probes=[
        probe(gpu, "copy", "memory.dram", "B", 1e9, 2.5e-4, 580.0, problem="b differs from a"),
        probe(gpu, "FMA fp32", "compute.fp32", "FLOP", 1e10, 1e-3, 90.0)], sleep=gpu.sleep)
    assert runs[1].status == FAILED and runs[1].note == "wrong result: b differs from a"
    assert runs[2].status == FAILED and "not above idle 100 W" in runs[2].note

    dead = FakeGPU()
    dead.sleep = lambda s: setattr(dead, "t", dead.t + s)  # the counter never moves
    idle = calibrate_energy(_backend(dead), PLAN, probes=[], sleep=dead.sleep)[0]
    assert idle.status == FAILED and "did not advance" in idle.note


def test_an_implausible_energy_is_refused_with_the_range() -> None:
    idle = EnergyRun("idle", "idle_power", OK, power=100.0)
    run = derive(EnergyRun("copy", "memory.dram", OK, "B", window=2.0, power=600.0, rate=1e6), idle)
    assert run.status == FAILED and "outside 0.1 pJ/B to 5 nJ/B" in run.note


def _runs() -> list[EnergyRun]:
    return [EnergyRun("idle", "idle_power", OK, window=1.0, power=101.0),
            EnergyRun("copy", "memory.dram", OK, "B", window=2.5, power=583.0, rate=4.2e12, per_unit=482 / 4.2e12),
            EnergyRun("triad", "memory.triad", OK, "B", window=2.5, power=590.0, rate=4.1e12, per_unit=489 / 4.1e12),
            EnergyRun("FMA fp32", "compute.fp32", OK, "FLOP", window=2.5, power=500.0, rate=60e12,
                      per_unit=399 / 60e12),
            EnergyRun("GEMM fp16", "compute.fp16_tensor", OK, "FLOP", window=2.5, power=688.0, rate=646e12,
                      per_unit=587 / 646e12, capped=True, power_capped=0.97),
            EnergyRun("GEMM bf16", "compute.bf16_tensor", FAILED, "FLOP", note="raised")]


def test_the_energy_block_takes_only_measured_figures_of_roofs_the_spec_has() -> None:
    block, notes = energy_block(_runs(), ["fp32", "fp16_tensor"], "test")
    assert block["idle_power"] == "101 W" and block["memory"] == {"dram": "114.8 pJ/B"}
    assert block["compute"] == {"fp32": "6.65 pJ/FLOP", "fp16_tensor": "0.9087 pJ/FLOP"}
    assert block["inputs"] == "random" and "Choi et al." in block["source"]
    assert "power-capped: GEMM fp16" in block["source"] and "<= 10% of a window" in block["source"]
    assert any("GEMM bf16: failed: raised" in n for n in notes)
    none, why = energy_block(_runs()[1:], ["fp32"], "test")  # no idle power
    assert none is None and any("needs the idle power" in n for n in why)
    left_out = energy_block(_runs(), ["fp32"], "test")[1]
    assert any("no fp16_tensor roof" in n for n in left_out)


def test_the_measured_spec_with_its_energy_block_loads(tmp_path: Path) -> None:
    doc = yaml.safe_load(TOY_SPEC.read_text())
    doc["notes"] = "measured"
    add_energy(doc, _runs(), "roofline calibrate --energy test")
    assert list(doc).index("energy") == list(doc).index("notes") - 1
    assert doc["sources"][-1]["for"] == ["energy.idle_power", "energy.memory.dram", "energy.dram_bandwidth",
                                         "energy.compute.fp32", "energy.compute.fp16_tensor"]
    path = tmp_path / "measured.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    e = load_spec(path).energy
    assert e.idle_power == pytest.approx(101.0) and e.dram == pytest.approx(114.8e-12)
    # the copy's rate, which the power roof charges DRAM bytes at most at (roofline.model.power)
    assert e.dram_bandwidth == pytest.approx(4.2e12)
    assert e.compute["fp16_tensor"] == pytest.approx(0.9087e-12) and e.inputs == "random"


def test_the_fma_probe_reference_catches_a_wrong_step_count() -> None:
    init = fma_init(512, 3)
    assert init[:, 0].min() >= 0.1 and init[:, 0].max() < 1.9
    want = fma_reference(init, 64)
    assert np.all(np.isfinite(fma_reference(init, 20000)))  # bounded: the map preserves area for |h| < 2
    assert _close(want.astype(np.float32), want, 1e-3) is None
    assert "max error" in _close(fma_reference(init, 63).astype(np.float32), want, 1e-3)


# ---- doctor ---------------------------------------------------------------------------------------------------


def test_counter_agreement_compares_the_counter_with_the_power_samples() -> None:
    gpu = FakeGPU()
    gpu.reported_power = 500.0
    found = counter_agreement(gpu, lambda: gpu.run(1e-3, 520.0), lambda: None, seconds=2.0, warmup=1.0)
    assert found["counter_power"] == pytest.approx(520.0) and found["sampled_power"] == 500.0
    assert found["samples"] >= 19 and found["window"] >= 2.0
    check = judge.energy_counter_check(found)
    assert check.status == judge.PASS and check.value == pytest.approx(0.04)


@pytest.mark.parametrize(("found", "why", "status", "text"), [
    ({"counter_power": 600.0, "sampled_power": 500.0, "samples": 20, "window": 2.0, "energy": 1200.0}, None,
     judge.WARN, "they differ by +20.0%"),
    ({"counter_power": None, "sampled_power": 500.0, "samples": 20, "window": 2.0, "energy": None}, None,
     judge.FAIL, "read no energy"),
    (None, "none: nvidia-ml-py is not installed", judge.SKIP, "nvidia-ml-py"),
])
def test_the_energy_counter_check(found, why, status, text) -> None:
    check = judge.energy_counter_check(found, why)
    assert check.status == status and text in check.note


def test_calibrate_energy_without_nvml_exits_3(monkeypatch, run_cli) -> None:
    import roofline.measurement.backend_cupy as backend_cupy

    class NoNVML:
        monitor = None
        info = {"clock_monitor": "none: clocks and power are not recorded"}

        def __init__(self, device_id: int = 0) -> None:
            pass

    monkeypatch.setattr(backend_cupy, "CupyBackend", NoNVML)
    monkeypatch.setattr("roofline.measurement.session.choose_machine", lambda *a: None)
    r = run_cli("calibrate", "--energy")
    assert r.code == 3 and "--energy reads NVML's energy counter" in r.err and "nvidia-ml-py" in r.err


@pytest.mark.gpu
def test_on_a_gpu_calibrate_energy_measures_every_probe() -> None:
    pytest.importorskip("pynvml", reason="nvidia-ml-py is not installed")
    from roofline.measurement.backend_cupy import CupyBackend
    from roofline.measurement.calibrate.energy import QUICK_ENERGY
    from roofline.measurement.calibrate.probes import current

    backend = CupyBackend(0)
    if backend.monitor is None:
        pytest.skip(backend.info["clock_monitor"])
    with current(backend):
        runs = calibrate_energy(backend, QUICK_ENERGY)
    by = {r.name: r for r in runs}
    assert by["idle"].status == OK and 10 < by["idle"].power < 400
    for name in ("copy", "triad", "FMA fp32", "GEMM fp16"):
        assert by[name].status == OK, (name, by[name].note)
        assert by[name].window >= QUICK_ENERGY.loop_seconds and by[name].sm_clock_mean
    assert 1e-12 < by["copy"].per_unit < 2e-9
    assert by["GEMM fp16"].per_unit < by["FMA fp32"].per_unit  # a tensor-core FLOP costs less than an FMA's


# ---- the GPU probes' own code, with NumPy standing in for CuPy ---------------------------------------------------


class FakeCupy:
    """The part of CuPy the probes use, on NumPy: arrays, the random state, copyto, matmul, an elementwise kernel and
    the FMA RawKernel (stepped in float32, as the kernel does with fmaf)."""

    float16, float32 = np.float16, np.float32
    asarray, empty, empty_like, copyto = staticmethod(np.asarray), staticmethod(np.empty), \
        staticmethod(np.empty_like), staticmethod(np.copyto)
    all, any, isfinite, zeros = staticmethod(np.all), staticmethod(np.any), staticmethod(np.isfinite), \
        staticmethod(np.zeros)

    class random:  # noqa: N801 - CuPy's module name
        class RandomState:
            def __init__(self, seed: int) -> None:
                self.rng = np.random.default_rng(seed)

            def standard_normal(self, shape, dtype=np.float64):
                return self.rng.standard_normal(shape).astype(dtype)

    @staticmethod
    def asnumpy(a):
        return np.asarray(a)

    @staticmethod
    def matmul(a, b, out):
        out[...] = (a.astype(np.float32) @ b.astype(np.float32)).astype(out.dtype)

    @staticmethod
    def ElementwiseKernel(inputs, outputs, body, name):  # noqa: N802 - CuPy's name
        assert body == "a = b + s * c"

        def run(b, c, s, a):
            a[...] = b + s * c
        return run

    @staticmethod
    def RawKernel(source, name):  # noqa: N802 - CuPy's name
        assert name == "energy_fma" and "fmaf(h, y[j], x[j])" in source

        def run(grid, block, args):
            init, out, iters = args
            p = init.reshape(-1, 17)
            h, x, y = p[:, :1], p[:, 1::2].copy(), p[:, 2::2].copy()
            for _ in range(int(iters)):
                x = (x + h * y).astype(np.float32)
                y = (y - h * x).astype(np.float32)
            o = out.reshape(-1, 16)
            o[:, 0::2], o[:, 1::2] = x, y
        return run


def test_the_gpu_probes_count_their_work_and_check_their_output(monkeypatch) -> None:
    import roofline.measurement.calibrate.gpu as gpu

    monkeypatch.setattr(gpu, "bf16_probe", lambda cp: "no bfloat16 here")
    plan = EnergyPlan(stream_n=4096, fma_iters=8, check_iters=16, gemm_n=64)
    backend = types.SimpleNamespace(cp=FakeCupy, info={"sm_count": 2, "compute_capability": "9.0"},
                                    synchronize=lambda: None)
    monkeypatch.setattr(gpu, "tf32_compute_type", lambda cp: contextlib.nullcontext())
    probes = {p.name: p for p in gpu_probes(backend, plan)}
    assert list(probes) == ["copy", "triad", "FMA fp32", "GEMM fp16", "GEMM tf32"]  # no bf16 without CuPy's dtype
    assert probes["copy"].per_run == 2 * 4096 * 4 and probes["triad"].per_run == 3 * 4096 * 4
    assert probes["FMA fp32"].per_run == 2 * 2 * 8 * 8 * (8 * 2 * 256)  # FLOP/FMA x FMAs/step x pairs x iters x threads
    assert probes["GEMM fp16"].per_run == 2 * 64**3
    for p in probes.values():
        p.launch()
        assert p.check() is None, (p.name, p.check())
        assert "random" in p.inputs
    assert probes["copy"].field == "memory.dram" and probes["FMA fp32"].field == "compute.fp32"
