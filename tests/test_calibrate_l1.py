"""`roofline calibrate`'s L1 / shared-memory bandwidth: the probe's arithmetic by hand (blocks per SM, repeats, the
128 B/clock sanity figure), both variants on an emulated device (NumPy emulations of l1_read and smem_read, checked
and timed through calibrate's own code), a wrong sum failing its variant, the figure in the table, the JSON and the
measured spec, and `plot --hierarchy` drawing the L1 roof from that spec where the datasheet has none."""

from __future__ import annotations

import io
import json
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
from test_calibrate import H200_DEVICE, FakeCupy, FakeKernels, Recorder, figures, tiny_plan, write

from roofline.measurement.calibrate import l1
from roofline.measurement.calibrate.figures import FAILED, KINDS, OK, Figure, calibration_document, comparison_rows
from roofline.measurement.calibrate.spec import measured_spec, spec_yaml
from roofline.measurement.policy import MeasurePolicy
from roofline.load.specs import SpecCatalog, load_spec

PROFILED = Path(__file__).parent / "data" / "results" / "h200_ncu_profiled.json"
POLICY = MeasurePolicy(min_time=0.0, min_repeats=3, warmup_time=0.0)


@pytest.fixture(scope="module")
def h200():
    return SpecCatalog.bundled().resolve("h200-sxm")


# ---- arithmetic ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("shared_per_sm, uses_shared, blocks", [
    (233_472, True, 4),   # H100/H200: 228 KiB per SM, 6 × 33 KiB would fit; the register limit keeps 4
    (102_400, True, 3),   # sm_86: 100 KiB // 33 KiB
    (65_536, True, 1),    # sm_75: 64 KiB
    (20_000, True, 1),    # never fewer than one
    (None, True, 4),      # unknown: the register limit alone
    (65_536, False, 4),   # the L1 variant uses no shared memory
])
def test_blocks_per_sm(shared_per_sm, uses_shared, blocks):
    assert l1.blocks_per_sm(shared_per_sm, uses_shared) == blocks


def test_repeats_and_theoretical_peak_by_hand():
    # an H200 launch: 132 SMs × 4 blocks, 32 KiB each; 40 GB a launch → 40e9 / (528 × 32768) = 2311.9 → 2312
    assert l1.repeats_for(528, 40e9) == 2312
    assert l1.repeats_for(528, 1.0) == 1
    # the sanity figure: 132 SMs × 128 B/clock × 1.98 GHz = 33.45 TB/s
    assert l1.theoretical(132, 1.98e9) == pytest.approx(33.454e12, rel=1e-4)
    assert l1.theoretical(0, 1.98e9) is None and l1.theoretical(132, None) is None


# ---- the probe on an emulated device --------------------------------------------------------------------


class L1Kernels(FakeKernels):
    """l1_read and smem_read as kernels.cu computes them: thread t of every block sums the words of
    vectors t + 256 m of the first half, rotated by rot each repeat. `slow` scales a variant's emulated time."""

    def _per_thread(self, threads, buf, repeats, rot, out, name):
        vec = np.asarray(buf).view(np.uint32).reshape(-1, 4).sum(axis=1, dtype=np.uint64)
        assert vec.size == 4096 and np.array_equal(vec[:2048], vec[2048:]) and threads % 256 == 0
        assert int(rot) % 256 == 0
        # repeat r reads vectors o + t + 256k (k = 0..7), o = (r × rot) & 2047, as the kernels do; grouped by o
        starts = np.bincount(((np.arange(int(repeats)) * int(rot)) & 2047) // 256, minlength=8)
        t = np.arange(256)
        acc = np.zeros(256, dtype=np.uint64)
        for o, count in enumerate(starts):
            window = sum(vec[256 * o + t + 256 * k] for k in range(8))
            acc = (acc + np.uint64(count) * window) % 2**32
        sums = np.tile(acc, threads // 256) % 2**32
        out[:] = sums + (1 if self.corrupt == name else 0)

    def l1_read(self, threads, buf, repeats, rot, out):
        self._per_thread(threads, buf, repeats, rot, out, "l1_read")

    def smem_read(self, threads, buf, repeats, rot, out):
        self._per_thread(threads, buf, repeats, rot, out, "smem_read")


class L1Cupy(FakeCupy):
    def __init__(self, corrupt=None, shared_per_sm=None):
        super().__init__(corrupt)
        if shared_per_sm is not None:
            self.cuda = SimpleNamespace(runtime=SimpleNamespace(deviceGetAttribute=lambda attr, dev: shared_per_sm))

    def RawModule(self, code, options):  # noqa: N802 - CuPy's name
        assert "l1_read" in code and "smem_read" in code
        return L1Kernels(self, self.corrupt)


def backend(corrupt=None, shared_per_sm=None, times=None):
    """The NumPy backend with the emulated CuPy; `times` maps a variant to the seconds its launches report."""
    from roofline.measurement.backend_numpy import NumpyBackend
    from roofline.measurement.harness import Timing

    b = NumpyBackend()
    b.cp = L1Cupy(corrupt, shared_per_sm)
    b.info = {"name": "Fake GPU", "compute_capability": "9.0", "sm_count": 2, "max_threads_per_sm": 2048,
              "l2_size": 1 << 20, "sm_clock": None}  # no clock: the emulation's own timing is not judged
    b.free_bytes = lambda: 1 << 34
    if times is not None:
        launched: list[str] = []
        real = b.cp.RawModule

        def module(code, options):
            kernels = real(code, options)
            get = kernels.get_function
            kernels.get_function = lambda name: (launched.append(name), get(name))[1]
            return kernels

        b.cp.RawModule = module

        def time_runs(run, sets, policy):
            run()
            t = times[launched[-1]]
            return Timing([t, t * 1.01, t * 0.99], "events", 3, 1, gpu_state={"sm_clock_end": 1.98e9})

        b.time_runs = time_runs
    return b


def probe(b):
    from roofline.measurement.calibrate.plan import load_module

    return l1.l1_bandwidth(b, load_module(b), tiny_plan(), POLICY)


def test_both_variants_checked_and_the_faster_reported():
    b = backend(shared_per_sm=102_400, times={"l1_read": 0.2, "smem_read": 0.1})
    fig = probe(b)
    assert fig.ok, fig.note
    runs = fig.details["variants"]
    assert runs["l1_read"]["blocks"] == 2 * 4 and runs["smem_read"]["blocks"] == 2 * 3  # 2 SMs
    plan = tiny_plan()
    for name, t in (("l1_read", 0.2), ("smem_read", 0.1)):
        r = runs[name]
        assert r["status"] == OK and r["repeats"] == l1.repeats_for(r["blocks"], plan.l1_bytes_per_launch)
        assert r["bytes"] == r["blocks"] * r["repeats"] * 32768
        assert r["bandwidth"] == pytest.approx(r["bytes"] / t)
    assert fig.value == pytest.approx(runs["smem_read"]["bandwidth"])
    assert fig.note.startswith("the shared memory (ld.shared) variant; L1 (ld.global.ca) ")
    # the sanity figure at the clock of the timed window: 2 SMs × 128 B × 1.98 GHz
    assert fig.details["theoretical"] == pytest.approx(2 * 128 * 1.98e9)
    assert fig.details["fraction_of_theoretical"] == pytest.approx(fig.value / (2 * 128 * 1.98e9))
    assert "4 per SM through L1, 3 per SM from shared memory" in fig.method and "32 KiB" in fig.method


def test_the_l1_variant_wins_when_it_is_faster_and_real_timing_works():
    fig = probe(backend(times={"l1_read": 0.1, "smem_read": 0.15}))
    assert fig.ok and fig.note.startswith("the L1 (ld.global.ca) variant")
    fig = probe(backend())  # the NumPy backend's own timing of the emulation: positive, finite, checked
    assert fig.ok and fig.value > 0 and fig.details["shared_per_sm"] is None


def test_a_wrong_sum_fails_its_variant_and_the_other_stands():
    fig = probe(backend(corrupt="smem_read"))
    assert fig.ok and fig.details["variants"]["smem_read"]["status"] == FAILED
    assert "shared memory (ld.shared) FAILED: smem_read: wrong sum" in fig.note
    assert fig.value == pytest.approx(fig.details["variants"]["l1_read"]["bandwidth"])


def test_both_wrong_is_a_failed_figure():
    b = backend(corrupt="l1_read")  # l1_read's sum is off by one; smem_read is missing from the module
    from roofline.measurement.calibrate.plan import load_module

    module = load_module(b)
    module.smem_read = None
    fig = l1.l1_bandwidth(b, module, tiny_plan(), POLICY)
    assert fig.status == FAILED and fig.value is None
    assert "l1_read: wrong sum" in fig.note and "TypeError" in fig.note


def test_a_figure_above_the_data_path_is_refused():
    # 2 SMs × 128 B × 1.98 GHz = 507 GB/s; 32 KiB × blocks × repeats in 1 µs is far above it: what the first H200
    # build reported when ptxas had hoisted the loads out of the loop (444 TB/s, 13× the data path)
    fig = probe(backend(times={"l1_read": 1e-6, "smem_read": 1e-6}))
    assert fig.status == FAILED and fig.value is None
    assert fig.note.startswith("implausible: ") and "loads hoisted" in fig.note
    assert fig.details["fraction_of_theoretical"] > 1.1


def test_no_sm_count_is_skipped():
    b = backend()
    b.info = {**b.info, "sm_count": None}
    assert l1.l1_bandwidth(b, None, tiny_plan(), POLICY).status == "SKIPPED"


def test_the_whole_calibration_reports_l1_in_kinds_order(h200):
    from roofline.measurement.calibrate.gpu import calibrate

    steps = Recorder()
    figs = calibrate(backend(), h200, tiny_plan(), steps)
    assert [f.field for f in figs] == [k.field for k in KINDS]
    by = {f.field: f for f in figs}
    assert ("L1 bandwidth", OK) in steps.finished  # the probe ran and its sums checked ...
    # ... but the host-timed figure is far above 2 SMs × 128 B/clock: refused by the physical bounds, not written
    l1_fig = by["caches.l1.bandwidth"]
    assert l1_fig.status == FAILED and "physically impossible" in l1_fig.note and "2 SMs" in l1_fig.note
    assert steps.started.index("L1 bandwidth") == steps.started.index("L2 bandwidth") + 1


# ---- where the figure goes ------------------------------------------------------------------------------


def with_l1(value=31.5e12):
    return figures() + [Figure("caches.l1.bandwidth", OK, value, "l1_read and smem_read kernels", "the shared "
                               "memory (ld.shared) variant", {"variants": {"smem_read": {"bandwidth": value}}})]


def test_the_spec_carries_l1_bandwidth_and_round_trips(tmp_path, h200):
    doc, warnings = measured_spec(with_l1(), H200_DEVICE, h200, "2026-11-30", "0.1.0")
    assert warnings == [] and doc["caches"]["l1"] == {"bandwidth": "31.5 TB/s"}
    spec = load_spec(write(tmp_path, spec_yaml(doc)))
    assert spec.caches["l1"].bandwidth == pytest.approx(31.5e12, rel=5e-4)
    assert spec.caches["l2"].bandwidth == pytest.approx(10.5e12, rel=5e-4)
    cite = next(s.cite for s in spec.sources if "caches.l1.bandwidth" in s.fields)
    assert cite.startswith("roofline calibrate 0.1.0 on NVIDIA H200, 2026-11-30: l1_read and smem_read")
    # not measured: no L1 entry at all (never a guess)
    doc, _ = measured_spec(figures(), H200_DEVICE, h200, "2026-11-30", "0.1.0")
    assert "l1" not in doc["caches"]


def test_the_table_and_the_json_show_l1(h200):
    from rich.console import Console

    from roofline.render.tables.calibrate import calibration_notes, comparison_table

    rows = comparison_rows(with_l1(), h200)
    row = next(r for r in rows if r["field"] == "caches.l1.bandwidth")
    assert row["label"] == "L1 / shared bandwidth" and row["measured"] == 31.5e12
    assert row["datasheet"] is None and row["ratio"] is None  # the bundled H200 gives an L1 size, no bandwidth
    console = Console(width=200, record=True, file=io.StringIO())
    console.print(comparison_table(rows, h200, H200_DEVICE, 31.2, True, 0.10))
    text = console.export_text()
    assert "L1 / shared bandwidth" in text and "31.5 TB/s" in text
    assert "note caches.l1.bandwidth: the shared memory (ld.shared) variant" in calibration_notes(rows, [])
    doc = json.loads(json.dumps(calibration_document(with_l1(), h200, H200_DEVICE, None, 1.0)))
    fig = next(f for f in doc["figures"] if f["field"] == "caches.l1.bandwidth")
    assert fig["value"] == 31.5e12 and fig["details"]["variants"]["smem_read"]["bandwidth"] == 31.5e12


def test_plot_hierarchy_draws_the_l1_roof_from_the_measured_spec(tmp_path, h200, run_cli):
    pytest.importorskip("matplotlib")
    results = PROFILED  # a real `measure --profile ncu` on the H200: machine h200-sxm, no cache bandwidths
    svg = tmp_path / "hier.svg"
    result = run_cli("plot", "--hierarchy", "--results", results, "-o", svg)
    assert result.code == 0, result.err
    assert 'id="roofline:hier-roof:l1"' not in svg.read_text()  # the datasheet has no L1 bandwidth
    doc, _ = measured_spec(with_l1(), H200_DEVICE, h200, "2026-11-30", "0.1.0")
    measured = write(tmp_path, spec_yaml(doc))
    result = run_cli("plot", "--hierarchy", "--results", results, "--measured-spec", measured, "-o", svg)
    assert result.code == 0, result.err
    text = svg.read_text()
    assert 'id="roofline:hier-roof:l1"' in text and 'id="roofline:hier-roof:l2"' in text


def test_a_roof_from_the_measured_spec_says_so():
    pytest.importorskip("matplotlib")
    from test_ncu_import import _profiled_doc

    from roofline.render.charts.hierarchy import hierarchy_figure

    fig = hierarchy_figure([_profiled_doc()], {"l1": 31.5e12})
    labels = {t.get_gid().rsplit(":", 1)[1]: t.get_text() for t in fig.axes[0].texts
              if (t.get_gid() or "").startswith("roofline:hier-roof-label:")}
    assert labels["l1"] == "L1 31.5 TB/s (measured spec)"
    assert "measured spec" not in labels["dram"]
    table = next(t for t in fig.texts if t.get_gid() == "roofline:hier-table").get_text()
    assert "No roof drawn for L2" in table and "--measured-spec" in table


# ---- on a GPU ------------------------------------------------------------------------------------------


@pytest.mark.gpu
def test_l1_probe_on_the_gpu():
    from roofline.measurement.backend_cupy import CupyBackend
    from roofline.measurement.calibrate.plan import QUICK, load_module

    b = CupyBackend(0)
    fig = l1.l1_bandwidth(b, load_module(b), QUICK, QUICK.policy())
    assert fig.ok, fig.note
    runs = fig.details["variants"]
    assert runs["l1_read"]["status"] == OK and runs["smem_read"]["status"] == OK, runs
    peak = fig.details.get("theoretical")
    if peak:  # never above SMs × 128 B/clock at the clock it ran at (5 % for the clock reading)
        assert 0.3 * peak <= fig.value <= 1.05 * peak, (fig.value, peak)


H200_CURVE = [(1.5 * 2**20, 12.78e12), (4 * 2**20, 10.68e12), (30 * 2**20, 8.5e12), (60 * 2**20, 6.9e12),
              (120 * 2**20, 5.05e12)]  # the shape measured on the H200, 2026-12-01


def with_curve():
    l2 = Figure("caches.l2.bandwidth", OK, 12.78e12, "l2_read kernel", "plateau at 1.5 MiB",
                {"curve": [{"working_set": w, "bandwidth": b} for w, b in H200_CURVE]})
    return [l2 if f.field == "caches.l2.bandwidth" else f for f in with_l1()]


def test_the_l2_curve_goes_into_the_measured_spec_and_back(tmp_path, h200):
    doc, _ = measured_spec(with_curve(), H200_DEVICE, h200, "2026-12-01", "0.1.0")
    assert doc["caches"]["l2"]["curve"][1] == {"working_set": "4 MiB", "bandwidth": "10.68 TB/s"}
    spec = load_spec(write(tmp_path, spec_yaml(doc)))
    assert spec.caches["l2"].curve == tuple((pytest.approx(w), pytest.approx(b, rel=1e-3)) for w, b in H200_CURVE)


@pytest.mark.parametrize("curve, field", [
    ("[{working_set: 4 MiB, bandwidth: 10 TB/s}, {working_set: 2 MiB, bandwidth: 11 TB/s}]",
     "caches.l2.curve[1].working_set"),
    ("[{working_set: 4 MiB}]", "caches.l2.curve[0].bandwidth"),
    ("[{working_set: 4 MiB, bandwidth: 10 TB/s, colour: red}]", "caches.l2.curve[0].colour"),
    ("4 MiB", "caches.l2.curve"),
])
def test_a_broken_curve_is_refused_naming_the_point(tmp_path, run_cli, curve, field):
    spec = tmp_path / "curve.yaml"
    spec.write_text("schema_version: 1\nid: c\nname: C\nmemory: {bandwidth: 4 TB/s, latency: 300 ns}\n"
                    "compute: {fp32: 60 TFLOP/s}\nsm_count: 132\n"
                    f"caches:\n  l2: {{size: 60 MiB, bandwidth: 10 TB/s, curve: {curve}}}\n"
                    "sources: [{for: [memory.bandwidth], cite: test}]\n", encoding="utf-8")
    result = run_cli("specs", "show", spec)
    assert result.code == 2 and field in result.err and "Traceback" not in result.err, result.err


def test_plot_hierarchy_draws_the_l2_curve_panel_from_the_measured_spec(tmp_path, h200, run_cli):
    pytest.importorskip("matplotlib")
    doc, _ = measured_spec(with_curve(), H200_DEVICE, h200, "2026-12-01", "0.1.0")
    measured = write(tmp_path, spec_yaml(doc))
    svg = tmp_path / "hier.svg"
    result = run_cli("plot", "--hierarchy", "--results", PROFILED, "--measured-spec", measured, "-o", svg)
    assert result.code == 0, result.err
    text = svg.read_text()
    assert 'id="roofline:hier-l2-curve"' in text and "L2 bandwidth by working set" in text
    plain = tmp_path / "plain.svg"  # without a curve, no panel
    assert run_cli("plot", "--hierarchy", "--results", PROFILED, "-o", plain).code == 0
    assert 'id="roofline:hier-l2-curve"' not in plain.read_text()
