"""Issue 32: the size model from a spec alone (`sweep --predict`, `analyze --predict`), the spec's `model:` block,
the regimes it adds (few blocks per SM, a pass re-reading L2, compute), and calibrate's size-model figures (the pure
parts; the per-SM probe itself is a GPU test at the end)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from roofline.model.geometry import LaunchShape
from roofline.sizes.predict import (COMPUTE_BOUND, L2_BOUND, SM_BOUND, MachineFigures, launch_time,
                                    machine_figures)

H200_MEASURED = Path(__file__).parent / "data" / "h200" / "measured-2026-11-30.yaml"
SPEC_HEAD = """schema_version: 1
id: toy
name: Toy GPU
memory: {bandwidth: 1 TB/s, latency: 500 ns}
compute: {fp32: 5 TFLOP/s}
sm_count: 10
max_threads_per_sm: 1000
"""


def _spec(tmp_path: Path, body: str) -> Path:
    path = tmp_path / "toy.yaml"
    path.write_text(SPEC_HEAD + body, encoding="utf-8")
    return path


def figures(**kw) -> MachineFigures:
    base = dict(bandwidth=1e12, bandwidth_source="", memory_latency=5e-7, memory_latency_source="",
                launch_floor=1e-6, launch_floor_source="", round_trip=1e-6, round_trip_source="",
                resident_threads=10_000, sm_count=10)
    return MachineFigures(**{**base, **kw})


# ---- the spec's model: block ----------------------------------------------------------------------------------


def test_the_model_block_loads_in_si_units(tmp_path):
    from roofline.load.specs import load_spec

    spec = load_spec(_spec(tmp_path, "model:\n  launch_floor: 0.5 us\n  round_trip: 840 ns\n  reduction: 211 ns\n"
                                      "  sm_curve:\n    - {sms: 1, bandwidth: 60 GB/s}\n"
                                      "    - {sms: 10, bandwidth: 900 GB/s}\n"
                                      "sources:\n  - {for: [model.launch_floor], cite: measured}\n"))
    assert spec.model.launch_floor == pytest.approx(0.5e-6) and spec.model.round_trip == pytest.approx(840e-9)
    assert spec.model.reduction == pytest.approx(211e-9) and spec.model.sm_bandwidth is None
    assert spec.model.sm_curve == ((1, 60e9), (10, 900e9))


@pytest.mark.parametrize("body, field, words", [
    ("model:\n  launch_floor: 0.5\n", "model.launch_floor", "unit"),
    ("model:\n  launch_floor: 500 s\n", "model.launch_floor", "outside what a GPU has"),
    ("model:\n  reduction: 1 ms\n", "model.reduction", "outside"),
    ("model:\n  sm_bandwidth: 2 TB/s\n", "model.sm_bandwidth", "outside"),
    ("model:\n  sm_bandwidth: 0.9 TB/s\n", None, None),
    ("model:\n  round_trip: 1 us\n  jitter: 1 us\n", "jitter", "unknown"),
    ("model:\n  sm_curve:\n    - {sms: 2, bandwidth: 100 GB/s}\n    - {sms: 1, bandwidth: 50 GB/s}\n",
     "model.sm_curve[1].sms", "increase"),
    ("model:\n  sm_curve:\n    - {sms: 11, bandwidth: 100 GB/s}\n", "model.sm_curve[0].sms", "sm_count"),
    ("model:\n  sm_curve:\n    - {sms: 1, bandwidth: 2 TB/s}\n", "model.sm_curve[0].bandwidth", "1.5"),
    ("model:\n  sm_curve: []\n", "model.sm_curve", "non-empty"),
])
def test_a_bad_model_figure_names_the_file_and_field(tmp_path, body, field, words):
    from roofline.errors import InputError
    from roofline.load.specs import load_spec

    path = _spec(tmp_path, body)
    if field is None:
        assert load_spec(path).model.sm_bandwidth == pytest.approx(0.9e12)
        return
    with pytest.raises(InputError) as exc:
        load_spec(path)
    assert str(path) in str(exc.value) and field in str(exc.value) and words in str(exc.value)


def test_a_bad_model_block_exits_2_from_the_command_line(tmp_path, run_cli):
    result = run_cli("sweep", "copy", "--spec", _spec(tmp_path, "model:\n  round_trip: 3 s\n"), "--predict",
                     "--sizes", "2**20")
    assert result.code == 2 and "model.round_trip" in result.err and "Traceback" not in result.err


# ---- the figures: measured, from the spec, or assumed and named -------------------------------------------------


def test_the_spec_figures_are_used_and_the_missing_ones_named(tmp_path):
    from roofline.load.specs import load_spec

    bare = machine_figures(load_spec(_spec(tmp_path, "")), {})
    assert [a.split(":")[0] for a in bare.assumed] == ["launch floor", "streaming round trip", "block reduction",
                                                       "per-SM bandwidth", "block dispatch"]
    assert bare.launch_floor == 0.5e-6 and bare.round_trip == 1e-6 and bare.reduction == 0.2e-6
    assert "assumed 0.5 µs (not measured" in bare.launch_floor_source
    full = machine_figures(load_spec(_spec(tmp_path, "model:\n  launch_floor: 0.7 us\n  round_trip: 0.9 us\n"
                                                     "  reduction: 100 ns\n  sm_bandwidth: 50 GB/s\n"
                                                     "  block_interval: 40 ns\n")), {})
    assert full.assumed == () and (full.launch_floor, full.round_trip, full.reduction) == pytest.approx(
        (0.7e-6, 0.9e-6, 1e-7))
    assert "model.launch_floor" in full.launch_floor_source and full.sm_bandwidth(4) == pytest.approx(200e9)
    assert full.sm_bandwidth(10) == pytest.approx(500e9)  # 10 SMs × 50 GB/s, under BW
    # a sweep's probes, where they ran, come first
    measured = machine_figures(load_spec(_spec(tmp_path, "model:\n  launch_floor: 0.7 us\n")),
                               {"launch_floor": 2e-6, "launch_floor_source": "measured here",
                                "launch_floor_error": None})
    assert measured.launch_floor == 2e-6 and measured.launch_floor_source == "measured here"


def test_the_per_sm_curve_interpolates_and_never_passes_bw():
    m = figures(sm_curve=((1.0, 50e9), (4.0, 180e9), (8.0, 2e12)))
    assert m.sm_bandwidth(0.5) == pytest.approx(25e9)
    assert m.sm_bandwidth(2) == pytest.approx(50e9 + 130e9 / 3)
    assert m.sm_bandwidth(8) == 1e12 and m.sm_bandwidth(100) == 1e12


# ---- the regimes it adds ---------------------------------------------------------------------------------------


def test_fewer_blocks_than_sms_stream_at_the_active_sms_rate():
    m = figures(sm_curve=((1.0, 50e9), (10.0, 1e12)))
    one = launch_time(LaunchShape(1e6, 1024, 1e6 / 1024, blocks=1), m)  # a row of 1 MB on one SM
    assert one.regime == SM_BOUND and one.active_sms == 1 and one.stream_bandwidth == pytest.approx(50e9)
    assert one.time == pytest.approx(1e-6 + 1e-6 + 1e6 / 50e9)
    many = launch_time(LaunchShape(1e6, 10240, 1e6 / 10240, blocks=10), m)  # every SM: BW
    assert many.stream_bandwidth == 1e12 and many.regime != SM_BOUND
    # blocks not given: threads ÷ 128
    assert launch_time(LaunchShape(1e6, 256, 1e6 / 256), m).active_sms == 2


def test_a_later_pass_re_reading_what_l2_holds_streams_at_the_l2_curve():
    m = figures(l2_curve=((1e6, 5e12), (1e7, 4e12), (4e7, 2e12)))
    hit = launch_time(LaunchShape(8e6, 1e4, 800, blocks=100, reread=4e6), m)
    assert hit.regime == L2_BOUND and 4e12 < hit.stream_bandwidth < 5e12
    miss = launch_time(LaunchShape(8e6, 1e4, 800, blocks=100, reread=1e8), m)  # beyond the curve: DRAM
    assert miss.stream_bandwidth == 1e12
    first = launch_time(LaunchShape(8e6, 1e4, 800, blocks=100), m)  # the first pass reads DRAM
    assert first.stream_bandwidth == 1e12


def test_a_pass_whose_own_traffic_overflows_the_l2_re_reads_from_dram():
    """The L2 holds what the launch touches, not only what it re-reads: a pass that re-reads 30 MB while it writes
    30 MB more needs 60 MB on chip (its writes evict its input), beyond this 40 MB curve, so it streams from DRAM.
    On the H200 (2026-12-04) layernorm_2pass's normalise pass at 1024 x 8192 ran at DRAM speed, not the L2's."""
    m = figures(l2_curve=((1e6, 5e12), (1e7, 4e12), (4e7, 2e12)))
    overflow = launch_time(LaunchShape(6e7, 1e4, 6e3, blocks=100, reread=3e7), m)
    assert overflow.stream_bandwidth == 1e12 and overflow.regime != L2_BOUND
    fits = launch_time(LaunchShape(2e7, 1e4, 2e3, blocks=100, reread=1e7), m)
    assert fits.regime == L2_BOUND and 2e12 < fits.stream_bandwidth < 4e12


def test_each_littles_law_window_pays_the_reductions():
    m = figures(reduction=0.2e-6)
    t = launch_time(LaunchShape(1e6, 1000, 100, reductions=2, blocks=100), m)  # F = 100 kB: 10 windows
    assert t.windows == 10 and t.time == pytest.approx(1e-6 + 10 * (1e-6 + 0.4e-6))


def test_more_blocks_than_the_sms_can_start_in_time_are_block_bound():
    from roofline.sizes.predict import BLOCK_BOUND

    m = figures(block_interval=100e-9)  # 10 SMs: a block every 100 ns each
    t = launch_time(LaunchShape(1e8, 1e4, 1e4, blocks=1e6), m)  # 100,000 blocks per SM: 10 ms to start them
    assert t.regime == BLOCK_BOUND and t.time == pytest.approx(1e-6 + 1e5 * 100e-9 + 1e-6)
    few = launch_time(LaunchShape(1e8, 1e4, 1e4, blocks=100), m)  # 10 per SM: the bytes take longer
    assert few.regime != BLOCK_BOUND and few.time == pytest.approx(1e-6 + 1e-6 + 1e8 / 1e12)
    assert launch_time(LaunchShape(1e8, 1e4, 1e4, blocks=1e6), figures()).regime != BLOCK_BOUND  # not measured


def test_a_kernel_whose_arithmetic_is_longer_is_compute_bound():
    from roofline.sizes.predict import annotate

    entry = {"bytes": 1e6, "status": "SKIPPED", "time_median": None}
    annotate([entry], [(LaunchShape(1e6, 1e5, 10, blocks=1000),)], figures(), compute=[50e-6])
    assert entry["prediction"]["regime"] == COMPUTE_BOUND and entry["predicted_time"] == pytest.approx(51e-6)
    assert entry["prediction_error"] is None


# ---- sweep --predict and analyze --predict ----------------------------------------------------------------------


def test_sweep_predict_needs_no_gpu_and_names_what_it_assumed(run_cli, tmp_path):
    out = tmp_path / "p.json"
    result = run_cli("sweep", "softmax_fused", "--over", "rows", "-p", "cols=8192", "--sizes", "1..4096:4",
                     "--spec", "h100", "--predict", "-o", out)
    assert result.code == 0, result.err
    assert "predicted" in result.out and "sm-bound" in result.out and "measured" not in result.out.split("\n")[3]
    assert "launch floor: assumed 0.5 µs (not measured" in result.err
    doc = json.loads(out.read_text())
    assert doc["backend"] == "model" and doc["sweep"]["predicted"] is True
    assert all(e["status"] == "SKIPPED" and e["time_median"] is None and e["predicted_time"] > 0 and e["predicted"]
               for e in doc["kernels"])
    assert [e["prediction"]["regime"] for e in doc["kernels"]][:2] == ["sm-bound", "sm-bound"]
    assert any(a.startswith("launch floor") for a in doc["sweep"]["model"]["assumed"])
    times = [e["predicted_time"] for e in doc["kernels"]]
    assert times == sorted(times)
    # report and plot read it: nothing measured, nothing gated
    assert run_cli("report", out).code == 0
    assert run_cli("plot", "--sweep", out, "-o", tmp_path / "p.png").code == 0


def test_sweep_predict_with_a_calibrated_spec_uses_its_figures(run_cli, tmp_path):
    cal = tmp_path / "cal.yaml"
    cal.write_text(H200_MEASURED.read_text() + "model:\n  launch_floor: 0.503 us\n  round_trip: 0.84 us\n"
                   "  reduction: 211 ns\n  sm_bandwidth: 60 GB/s\n", encoding="utf-8")
    result = run_cli("sweep", "layernorm_3pass", "--over", "rows", "-p", "cols=8192", "--sizes", "1,64,4096",
                     "--calibrated", cal, "--predict", "--format", "json")
    assert result.code == 0, result.err
    doc = json.loads(result.out)
    m = doc["sweep"]["model"]
    assert m["launch_floor"] == pytest.approx(0.503e-6) and m["round_trip"] == pytest.approx(0.84e-6)
    assert m["assumed"][0].startswith("block dispatch: not modelled (0)")
    assert m["assumed"][1:] == ["L2 bandwidth: assumed: caches.l2.bandwidth 8.37 TB/s up to half of caches.l2.size "
                                "(not measured as a curve)"]
    one, sixty_four, many = doc["kernels"]
    assert len(one["prediction"]["launches"]) == 3 and one["prediction"]["reductions"] == pytest.approx(2 * 211e-9)
    assert one["prediction"]["regime"] == "sm-bound" and many["prediction"]["regime"] == "bandwidth-bound"


def test_predict_refuses_what_it_cannot_do(run_cli):
    no_spec = run_cli("sweep", "copy", "--predict", "--sizes", "2**20")
    assert no_spec.code == 2 and "--spec" in no_spec.err
    fitted = run_cli("sweep", "copy", "--predict", "--spec", "h100", "--model", "fitted", "--sizes", "2**20")
    assert fitted.code == 2 and "first-principles" in fitted.err
    assert run_cli("analyze", "copy", "--calibrated", H200_MEASURED).code == 2


def test_analyze_predict_for_a_gpu_one_does_not_have(run_cli):
    result = run_cli("analyze", "softmax_fused", "copy", "-p", "rows=64", "-p", "cols=32768", "--spec", "h100",
                     "--predict", "--format", "json")
    assert result.code == 0, result.err
    doc = json.loads(result.out)
    soft, copy = doc["kernels"]
    assert soft["prediction"]["regime"] == "sm-bound" and soft["prediction"]["active_sms"] == 64
    assert copy["prediction"]["regime"] == "bandwidth-bound" and soft["status"] == "SKIPPED"
    assert doc["prediction"]["model"]["assumed"]
    alone = run_cli("analyze", "copy", "--calibrated", H200_MEASURED, "--predict", "--format", "json")
    assert alone.code == 0 and json.loads(alone.out)["device"]["spec_id"] == "h200-sxm-measured"
    table = run_cli("analyze", "softmax_fused", "--spec", "h100", "--spec", "h200", "--predict")
    assert table.code == 0 and "H100" in table.out and "H200" in table.out and "assumed" in table.err


def test_predict_imports_no_cupy():
    code = ("import sys\nfrom roofline.cli import main\n"
            "try:\n    main(['sweep', 'copy', '--spec', 'h100', '--predict', '--sizes', '2**20', '--format', 'json'])\n"
            "except SystemExit as e:\n    assert e.code in (0, None), e.code\n"
            "assert 'cupy' not in sys.modules, 'cupy imported'\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


# ---- calibrate: the size model's figures ------------------------------------------------------------------------


def test_the_probes_become_the_model_figures_as_the_model_reduces_them():
    from roofline.measurement.calibrate.sizemodel import overhead_figures

    overheads = {"launch_floor": 0.5e-6, "launch_floor_error": None, "launch_floor_timing": "graph",
                 "stream": {"time": 1.4e-6, "bytes": 1e5, "method": "132 blocks"},
                 "reduction": {"time": 2.0e-6, "base_time": 1.6e-6, "reductions": 2, "method": "m"}}
    floor, lam, red = overhead_figures(overheads, 4e12)
    assert floor.ok and floor.value == 0.5e-6
    assert lam.ok and lam.value == pytest.approx(1.4e-6 - 0.5e-6 - 1e5 / 4e12)
    assert red.ok and red.value == pytest.approx(0.2e-6)
    broken = overhead_figures({"launch_floor": 0.0, "launch_floor_error": "boom", "stream": {"error": "x"},
                               "reduction": {"time": 1e-6, "base_time": 1.1e-6, "reductions": 2}}, 4e12)
    assert [f.status for f in broken] == ["FAILED"] * 3 and "boom" in broken[0].note
    assert "-50 ns" in broken[2].note


def test_the_per_sm_curve_is_the_slope_of_two_slices():
    from roofline.measurement.calibrate.sizemodel import curve_from_times, sm_counts

    assert sm_counts(132) == [1, 2, 4, 8, 16, 32, 64, 128, 132] and sm_counts(1) == [1]
    points = [{"sms": k, "bytes_short": 8e6 * k, "time_short": 2e-6 + 8e6 / 60e9,
               "bytes_long": 16e6 * k, "time_long": 2e-6 + 16e6 / 60e9} for k in (1, 2, 4)]
    fig = curve_from_times(points, 4e12)
    assert fig.ok and fig.value == pytest.approx(60e9)
    assert [c["bandwidth"] for c in fig.details["curve"]] == pytest.approx([60e9, 120e9, 240e9])
    flat = curve_from_times([{**points[0], "time_long": points[0]["time_short"]}], 4e12)
    assert not flat.ok and "not slower" in flat.note
    fast = curve_from_times([{**points[0], "bytes_long": 1e12}], 4e12)
    assert not fast.ok and "1.5" in fast.note


def test_the_block_interval_is_the_slope_over_blocks_per_sm():
    from roofline.measurement.calibrate.sizemodel import interval_from_times

    fig = interval_from_times(132, 64, 1024, 2e-6 + 64 * 50e-9, 2e-6 + 1024 * 50e-9)
    assert fig.ok and fig.value == pytest.approx(50e-9) and fig.details["many"] == 1024
    assert not interval_from_times(132, 64, 1024, 5e-6, 5e-6).ok
    assert "outside" in interval_from_times(132, 64, 1024, 1e-6, 1.0).note


def test_the_measured_spec_carries_the_model_block_and_loads_back():
    from roofline.measurement.calibrate.figures import Figure
    from roofline.measurement.calibrate.spec import check_loads, measured_spec, spec_yaml

    figs = [Figure("memory.bandwidth", "OK", 4.3e12, "triad"), Figure("memory.latency", "OK", 3.4e-7, "chase"),
            Figure("compute.fp32", "OK", 6e13, "fma"), Figure("model.launch_floor", "OK", 5e-7, "empty"),
            Figure("model.round_trip", "OK", 8.4e-7, "stream"), Figure("model.reduction", "FAILED", None, "", "x"),
            Figure("model.sm_bandwidth", "OK", 6e10, "sm_copy",
                   details={"curve": [{"sms": 1, "bandwidth": 6e10}, {"sms": 132, "bandwidth": 4.2e12}]})]
    doc, _ = measured_spec(figs, {"name": "NVIDIA H200", "sm_count": 132, "max_threads_per_sm": 2048}, None,
                           "2026-12-04", "test")
    assert doc["model"] == {"launch_floor": "500 ns", "round_trip": "840 ns", "sm_bandwidth": "60 GB/s",
                            "sm_curve": [{"sms": 1, "bandwidth": "60 GB/s"}, {"sms": 132, "bandwidth": "4.2 TB/s"}]}
    assert any("model.sm_bandwidth" in s["for"] for s in doc["sources"])
    check_loads(spec_yaml(doc))


@pytest.mark.gpu
def test_the_per_sm_probe_on_the_gpu():
    pytest.importorskip("cupy")
    from roofline.measurement.calibrate.plan import QUICK
    from roofline.measurement.calibrate.sizemodel import size_model_figures
    from roofline.measurement.session import open_backend

    backend = open_backend("cupy", 0)
    figs = size_model_figures(backend, QUICK, 4e12)
    assert [f.field for f in figs] == ["model.launch_floor", "model.round_trip", "model.reduction",
                                       "model.sm_bandwidth", "model.block_interval"]
    assert all(f.ok for f in figs), [f.note for f in figs]
    curve = next(f for f in figs if f.field == "model.sm_bandwidth").details["curve"]
    assert curve[0]["sms"] == 1 and curve[-1]["bandwidth"] > curve[0]["bandwidth"]


# ---- the per-SM and block probes' plumbing, on a NumPy stand-in for CuPy ------------------------------------------


class _FakeKernel:
    """sm_copy and block_probe done in NumPy; each launch leaves what a clock would read (60 GB/s per SM; 50 ns per
    block per SM; 2 µs a launch) for the fake backend's timer."""

    def __init__(self, name: str, backend: "_FakeBackend", broken: bool):
        self.name, self.backend, self.broken = name, backend, broken

    def __call__(self, grid, block, args):
        import numpy as np

        (blocks,), sms = grid, self.backend.info["sm_count"]
        if self.name == "block_probe":
            (out,) = args
            out[:blocks] = np.arange(blocks)
            self.backend.last = 2e-6 + blocks / sms * 50e-9
            return
        src, dst, n, offset = args
        s4, d4 = src.reshape(-1, 4), dst.reshape(-1, 4)
        for b in range(blocks):
            idx = int(offset) + b * int(n) + np.arange(int(n))
            assert idx[-1] < len(s4), "a slice beyond the buffer"
            d4[idx] = s4[idx] + (1.0 if self.broken else 0.0)
        self.backend.last = 2e-6 + 32 * int(n) / 60e9  # every block at one SM's rate, side by side


class _FakeBackend:
    def __init__(self, broken: bool = False):
        import types

        import numpy as np

        self.info, self.last, self.launches = {"sm_count": 4, "l2_size": 1 << 20}, 0.0, 0
        cp = types.SimpleNamespace(int32=np.int32, int64=np.int64, float32=np.float32, zeros=np.zeros, full=np.full,
                                   arange=np.arange, array_equal=np.array_equal)
        cp.random = types.SimpleNamespace(default_rng=lambda seed: types.SimpleNamespace(
            random=lambda n, dtype: np.random.default_rng(seed).random(n, dtype=dtype)))
        cp.RawKernel = lambda code, name: _FakeKernel(name, self, broken)
        self.cp = cp

    def synchronize(self) -> None:
        pass

    def time_runs(self, run, sets, policy):
        import types

        samples = []
        for s in sets[:3]:
            run(**s)
            samples.append(self.last)
        return types.SimpleNamespace(samples=samples)


def test_the_per_sm_probe_plumbing_on_a_fake_gpu():
    from roofline.measurement.calibrate.plan import Plan
    from roofline.measurement.calibrate.sizemodel import block_interval, curve_from_times, per_sm_points
    from roofline.measurement.policy import MeasurePolicy

    policy = MeasurePolicy(min_time=0.0, min_repeats=1, seed=0)
    points = per_sm_points(_FakeBackend(), Plan(sm_probe_bytes=4096), policy)
    assert [p["sms"] for p in points] == [1, 2, 4]
    assert points[0]["bytes_long"] == 2 * points[0]["bytes_short"] == 2 * 2 * 4096
    fig = curve_from_times(points, 4e12)
    assert fig.ok and fig.value == pytest.approx(60e9)
    assert [c["bandwidth"] for c in fig.details["curve"]] == pytest.approx([60e9, 120e9, 240e9])
    with pytest.raises(RuntimeError, match="differs from its source"):
        per_sm_points(_FakeBackend(broken=True), Plan(sm_probe_bytes=4096), policy)
    interval = block_interval(_FakeBackend(), policy)
    assert interval.ok and interval.value == pytest.approx(50e-9)


def test_calibrate_reports_each_size_model_figure_even_when_a_probe_cannot_run():
    from roofline.measurement.calibrate.plan import Plan
    from roofline.measurement.calibrate.sizemodel import size_model_figures

    backend = _FakeBackend()
    backend.name = "cupy"  # the launch probes need CuPy's RawModule, which the stand-in lacks: they fail, reported
    figs = size_model_figures(backend, Plan(sm_probe_bytes=4096, min_time=0.0), 4e12)
    assert [f.field for f in figs] == ["model.launch_floor", "model.round_trip", "model.reduction",
                                       "model.sm_bandwidth", "model.block_interval"]
    assert [f.status for f in figs] == ["FAILED", "FAILED", "FAILED", "OK", "OK"]
