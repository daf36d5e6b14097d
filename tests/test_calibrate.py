"""`roofline calibrate`: the measured spec round-trips through the spec loader, the comparison table's values, the
host-checkable parts of the GPU code (the pointer-chase cycle, the L2 checksum, the harness jobs on the NumPy
backend), and on a GPU the whole command with sane bounds."""

from __future__ import annotations

import io
import json
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from roofline.errors import InputError
from roofline.measurement.calibrate.figures import (
    FAILED, KINDS, OK, SKIPPED, Figure, comparison_rows, datasheet_value, ratio,
)
from roofline.measurement.calibrate.spec import measured_spec, spec_id, spec_yaml
from roofline.load.specs import SpecCatalog, load_spec
from roofline.model.units import parse_quantity, quantity_text

H200_DEVICE = {
    "name": "NVIDIA H200", "kind": "gpu", "compute_capability": "9.0", "sm_count": 132, "max_threads_per_sm": 2048,
    "l2_size": 62914560, "total_memory": 150_107_062_272, "cupy_version": "14.2.0", "driver": "13.0",
    "cuda_runtime": "13.0",
}


def figures(**overrides: Figure) -> list[Figure]:
    base = [
        Figure("memory.bandwidth", OK, 4.2126e12, "copy kernel, 2^28 float32, best of copy/triad"),
        Figure("caches.l2.bandwidth", OK, 10.5e12, "l2_read kernel"),
        Figure("memory.latency", OK, 341.2e-9, "pointer chase"),
        Figure("compute.fp32", OK, 64.1e12, "fma_peak"),
        Figure("compute.fp64", OK, 32.6e12, "fma_peak_fp64"),
        Figure("compute.fp16_tensor", OK, 794e12, "cuBLAS fp16"),
        Figure("compute.bf16_tensor", SKIPPED, None, "", "not reachable from CuPy"),
        Figure("compute.tf32_tensor", FAILED, None, "cuBLAS tf32", "wrong result"),
        Figure("compute.fp8_tensor", SKIPPED, None, "", "not reachable from CuPy"),
    ]
    return [overrides.get(f.field.replace(".", "_"), f) for f in base]


@pytest.fixture(scope="module")
def h200():
    return SpecCatalog.bundled().resolve("h200-sxm")


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "measured.yaml"
    path.write_text(text, encoding="utf-8")
    return path


# ---- the written spec ----------------------------------------------------------------------------


def test_measured_spec_round_trips_through_the_loader(tmp_path, h200):
    doc, warnings = measured_spec(figures(), H200_DEVICE, h200, "2026-11-30", "0.1.0")
    assert warnings == []
    spec = load_spec(write(tmp_path, spec_yaml(doc)))
    assert spec.id == "h200-sxm-measured" and spec.name == "NVIDIA H200 SXM 141GB (measured)"
    assert spec.measured is True and not spec.derived
    assert spec.measurement == {"device": "NVIDIA H200", "date": "2026-11-30", "tool_version": "0.1.0",
                                "method": "roofline calibrate"}
    assert spec.bandwidth == pytest.approx(4.2126e12, rel=5e-4)
    assert spec.latency == pytest.approx(341.2e-9, rel=5e-4)
    # only the measured roofs: the failed TF32 and the unreachable BF16/FP8 are not copied from the datasheet
    assert set(spec.roofs) == {"fp32", "fp64", "fp16_tensor"}
    assert spec.roofs["fp32"] == pytest.approx(64.1e12, rel=5e-4)
    assert spec.roofs["fp16_tensor"] == pytest.approx(794e12, rel=5e-4)
    assert spec.caches["l2"].size == 62914560
    assert spec.caches["l2"].bandwidth == pytest.approx(10.5e12, rel=5e-4)
    assert spec.sm_count == 132 and spec.max_threads_per_sm == 2048
    assert spec.device_names == ("NVIDIA H200",) and spec.compute_capability == "9.0"
    assert spec.capacity == pytest.approx(150_107_062_272, rel=1e-9)
    cited = {f: s.cite for s in spec.sources for f in s.fields}
    for field in ("memory.bandwidth", "memory.latency", "compute.fp32", "compute.fp64", "compute.fp16_tensor",
                  "caches.l2.bandwidth", "caches.l2.size", "sm_count", "max_threads_per_sm", "memory.capacity"):
        assert field in cited, field
    assert cited["memory.bandwidth"].startswith("roofline calibrate 0.1.0 on NVIDIA H200, 2026-11-30: copy kernel")
    assert "CUDA device properties" in cited["sm_count"]
    assert "compute.tf32_tensor" not in cited
    assert "TF32 tensor (cuBLAS) (failed: wrong result)" in spec.notes
    assert "not reachable from CuPy" in spec.notes


def test_the_written_spec_works_as_a_spec_in_analyze_and_plot(tmp_path, h200, run_cli):
    doc, _ = measured_spec(figures(), H200_DEVICE, h200, "2026-11-30", "0.1.0")
    path = write(tmp_path, spec_yaml(doc))
    result = run_cli("analyze", "vector_add", "--spec", "h200", "--spec", path, "--format", "json")
    assert result.code == 0, result.err
    docs = json.loads(result.out)
    assert [d["machine"]["id"] for d in docs] == ["h200-sxm", "h200-sxm-measured"]
    png = tmp_path / "roofs.png"
    result = run_cli("plot", "vector_add", "--spec", "h200", "--measured-spec", path, "-o", png, "--dpi", "50")
    assert result.code == 0, result.err
    assert png.stat().st_size > 1000
    result = run_cli("specs", "show", path)
    assert result.code == 0 and "measured" in result.out


def test_a_figure_that_was_not_measured_falls_back_to_the_datasheet_with_a_source_saying_so(tmp_path, h200):
    figs = figures(memory_latency=Figure("memory.latency", FAILED, None, "pointer chase", "chase ended elsewhere"))
    doc, warnings = measured_spec(figs, H200_DEVICE, h200, "2026-11-30", "0.1.0")
    spec = load_spec(write(tmp_path, spec_yaml(doc)))
    assert spec.latency == pytest.approx(h200.latency, rel=5e-4)
    cite = next(s.cite for s in spec.sources if "memory.latency" in s.fields)
    assert cite.startswith("datasheet, not measured")
    assert len(warnings) == 1 and "DRAM latency was not measured" in warnings[0]


def test_no_compute_roof_measured_copies_fp32_from_the_datasheet_labelled(tmp_path, h200):
    figs = [f if not f.field.startswith("compute.") else Figure(f.field, FAILED, None, "", "x") for f in figures()]
    doc, warnings = measured_spec(figs, H200_DEVICE, h200, "2026-11-30", "0.1.0")
    spec = load_spec(write(tmp_path, spec_yaml(doc)))
    assert set(spec.roofs) == {"fp32"} and spec.roofs["fp32"] == pytest.approx(66.9e12, rel=5e-4)
    assert any("FP32" in w for w in warnings)


def test_nothing_to_fall_back_on_is_an_input_error():
    figs = figures(memory_bandwidth=Figure("memory.bandwidth", FAILED, None, "", "both failed"))
    with pytest.raises(InputError, match="DRAM bandwidth .* was not measured"):
        measured_spec(figs, H200_DEVICE, None, "2026-11-30", "0.1.0")


def test_without_a_datasheet_the_id_comes_from_the_device_name(tmp_path):
    device = {**H200_DEVICE, "name": "NVIDIA Mystery GPU 99"}
    doc, _ = measured_spec(figures(), device, None, "2026-11-30", "0.1.0")
    assert doc["id"] == spec_id(None, "NVIDIA Mystery GPU 99") == "nvidia-mystery-gpu-99-measured"
    spec = load_spec(write(tmp_path, spec_yaml(doc)))
    assert spec.name == "NVIDIA Mystery GPU 99 (measured)"


@pytest.mark.parametrize("value, kind, text", [
    (4.2126e12, "bandwidth", "4.213 TB/s"),
    (64.1e12, "flops", "64.1 TFLOP/s"),
    (794.04e12, "flops", "794 TFLOP/s"),
    (1.2346e15, "flops", "1.235 PFLOP/s"),
    (341.24e-9, "time", "341.2 ns"),
    (1.5e-6, "time", "1.5 µs"),
    (62914560, "bytes", "60 MiB"),
    (150_107_062_272, "bytes", "150107062272 B"),
    (850e9, "bandwidth", "850 GB/s"),
])
def test_quantity_text_is_what_the_loader_reads_back(value, kind, text):
    assert quantity_text(value, kind) == text
    back_kind = "bytes" if kind == "bytes" else kind
    assert parse_quantity(text, back_kind) == pytest.approx(value, rel=5e-4)


@settings(max_examples=300, deadline=None)
@given(kind=st.sampled_from(["bandwidth", "flops", "time"]), exponent=st.floats(-12, 18), mantissa=st.floats(1, 10))
def test_quantity_text_round_trips_through_the_parser(kind, exponent, mantissa):
    value = mantissa * 10.0 ** exponent
    text = quantity_text(value, kind)
    assert "e" not in text.split()[0]  # never exponent form: the spec files stay readable
    assert parse_quantity(text, kind) == pytest.approx(value, rel=5e-4)


@given(whole=st.integers(1, 2**50))
def test_quantity_text_keeps_byte_counts_exact(whole):
    assert parse_quantity(quantity_text(whole, "bytes"), "bytes") == whole


def test_an_ok_figure_needs_a_value_and_a_failed_one_carries_none():
    with pytest.raises(ValueError):
        Figure("compute.fp32", OK, None)
    with pytest.raises(ValueError):
        Figure("compute.nonsense", OK, 1.0)
    assert Figure("compute.fp32", FAILED, 5.0, "", "x").value is None


# ---- the comparison table ----------------------------------------------------------------------------


def test_comparison_rows_hold_datasheet_measured_and_ratio(h200):
    rows = {r["field"]: r for r in comparison_rows(figures(), h200)}
    assert list(rows)[:3] == ["memory.bandwidth", "caches.l2.bandwidth", "memory.latency"]
    bw = rows["memory.bandwidth"]
    assert (bw["datasheet"], bw["measured"], bw["status"]) == (4.8e12, 4.2126e12, OK)
    assert bw["ratio"] == pytest.approx(4.2126 / 4.8)
    assert rows["memory.latency"]["ratio"] == pytest.approx(341.2 / 332)
    assert rows["compute.fp32"]["ratio"] == pytest.approx(64.1 / 66.9)
    assert rows["compute.fp16_tensor"]["ratio"] == pytest.approx(794 / 989.4)
    assert rows["caches.l2.bandwidth"]["datasheet"] is None and rows["caches.l2.bandwidth"]["ratio"] is None
    skipped_row = rows["compute.bf16_tensor"]
    assert skipped_row["status"] == SKIPPED and skipped_row["measured"] is None and skipped_row["ratio"] is None
    assert skipped_row["datasheet"] == pytest.approx(989.4e12)
    assert rows["compute.tf32_tensor"]["note"] == "wrong result"


def test_the_table_and_the_notes_render_the_rows(h200):
    from rich.console import Console

    from roofline.render.tables.calibrate import calibration_notes, clock_text, comparison_table

    rows = comparison_rows(figures(), h200)
    console = Console(width=200, record=True, file=io.StringIO())
    console.print(comparison_table(rows, h200, H200_DEVICE, 31.2, False, 0.10))
    text = console.export_text()
    assert "Calibrated on NVIDIA H200 (CuPy 14.2.0, CUDA 13.0) vs datasheet h200-sxm; 31 s" in text
    assert "4.21 TB/s" in text and "88%" in text and "341 ns" in text
    assert calibration_notes(rows, ["spec warning"]) == [
        "SKIPPED compute.bf16_tensor: not reachable from CuPy", "FAILED compute.tf32_tensor: wrong result",
        "SKIPPED compute.fp8_tensor: not reachable from CuPy", "warning: spec warning"]
    row = {"sm_clock": 1.44e9, "power_capped": 0.96}
    assert clock_text(row, 0.10) == "1440 MHz, power-capped 96%"
    assert clock_text({**row, "power_capped": 0.05}, 0.10) == "1440 MHz" and clock_text({}, 0.10) == "–"


def test_datasheet_value_and_ratio_edges(h200, toy_spec):
    assert datasheet_value(None, "memory.bandwidth") is None
    assert datasheet_value(toy_spec, "compute.fp64") is None
    assert datasheet_value(h200, "caches.l2.bandwidth") is None
    assert ratio(None, 1.0) is None and ratio(1.0, None) is None and ratio(2.0, 4.0) == 0.5


# ---- host-checkable parts of the GPU code -------------------------------------------------------------


def test_the_pointer_chase_chain_is_one_cycle_and_the_expected_slot_matches_a_walk():
    from roofline.measurement.calibrate.probes import LINE, chase_order, expected_slot, fill_chain

    slots, base = 4096, 1 << 40
    order = chase_order(slots, seed=7)
    assert sorted(order.tolist()) == list(range(slots))
    chain = np.zeros(slots * (LINE // 8), dtype=np.uint64)
    fill_chain(np, chain, order, base)
    words = LINE // 8
    assert np.count_nonzero(chain) == slots and np.all(chain.reshape(slots, words)[:, 1:] == 0)
    address = base + int(order[0]) * LINE
    seen = set()
    for step in range(1, slots + 1):  # the walk the GPU does, one line per step
        address = int(chain[(address - base) // 8])
        slot = (address - base) // LINE
        seen.add(slot)
        if step in (1, 2, 100, 1000, slots - 1):
            assert slot == expected_slot(order, step)
    assert len(seen) == slots and address == base + int(order[0]) * LINE  # back at the start after every slot


def test_the_l2_checksum_matches_an_emulated_kernel():
    from roofline.measurement.calibrate.probes import l2_expected_sum

    rng = np.random.default_rng(3)
    words = rng.integers(0, 2**32, 4 * 1000, dtype=np.uint32)
    vec = words.reshape(-1, 4)
    threads, repeats = 96, 5  # each thread sums its strided float4 words mod 2^32, as l2_read does
    acc = [0] * threads
    for _ in range(repeats):
        for t in range(threads):
            acc[t] = (acc[t] + int(vec[t::threads].sum(dtype=np.uint64))) % 2**32
    assert sum(acc) % 2**32 == l2_expected_sum(words, repeats)
    assert l2_expected_sum(words, repeats) != l2_expected_sum(words, repeats + 1)


def test_harness_jobs_give_verified_figures_and_report_failures():
    from roofline.measurement.backend_numpy import NumpyBackend
    from roofline.measurement.calibrate.jobs import Job, run_jobs
    from roofline.measurement.calibrate.peaks import dram_bandwidth, flops_figure
    from roofline.measurement.calibrate.plan import Plan
    from roofline.measurement.policy import MeasurePolicy

    policy = MeasurePolicy(min_time=0.0, min_repeats=3, warmup_time=0.0)
    results = run_jobs(NumpyBackend(), [Job("copy", "copy", {"n": 4096}), Job("triad", "triad", {"n": 4096}),
                                        Job("missing", "no_such_kernel", {})], policy)
    assert results["copy"]["status"] == OK and results["triad"]["status"] == OK
    assert results["missing"]["status"] == FAILED and "no_such_kernel" in results["missing"]["error"]
    fig = dram_bandwidth(results, Plan(stream_n=4096))
    best = max(results["copy"]["achieved_bandwidth"], results["triad"]["achieved_bandwidth"])
    assert fig.ok and fig.value == best and "best of copy and triad" in fig.method
    assert results["copy"]["bytes"] == 2 * 4096 * 4 and results["triad"]["bytes"] == 3 * 4096 * 4

    results["triad"] = {"status": FAILED, "error": "wrong result"}
    fig = dram_bandwidth(results, Plan(stream_n=4096))
    assert fig.ok and fig.value == results["copy"]["achieved_bandwidth"] and "triad FAILED" in fig.note
    results["copy"] = {"status": FAILED, "error": "boom"}
    fig = dram_bandwidth(results, Plan(stream_n=4096))
    assert fig.status == FAILED and fig.value is None and "boom" in fig.note
    assert flops_figure("compute.fp32", None, "fma").status == FAILED


def test_tf32_counts_only_when_it_beats_the_fp32_cores():
    from roofline.measurement.calibrate.peaks import tf32_figure

    entry = {"status": OK, "time_median": 1e-3, "achieved_flops": 60e12, "repeats": 10, "timing": "events"}
    fig = tf32_figure(entry, 64e12, "cuBLAS tf32")
    assert fig.status == SKIPPED and "TF32 did not apply" in fig.note and fig.value is None
    fig = tf32_figure({**entry, "achieved_flops": 380e12}, 64e12, "cuBLAS tf32")
    assert fig.ok and fig.value == 380e12


def test_calibrate_without_a_gpu_exits_3(run_cli):
    from conftest import gpu_available

    if gpu_available():
        pytest.skip("a GPU is present")
    result = run_cli("calibrate", "--quick")
    assert result.code == 3 and result.err.startswith("error: calibrate measures a GPU: ")
    # calibrate's own fix replaces the shared one: running on the host is no way to calibrate a GPU
    assert "pip install cupy-cuda12x" in result.err and "--backend numpy" not in result.err


def test_an_error_keeps_its_reason_apart_from_its_fix():
    from roofline.errors import BackendUnavailable

    exc = BackendUnavailable("no CUDA device found", fix="install CuPy")
    assert exc.message == str(exc) == "no CUDA device found; install CuPy"
    assert exc.reason == "no CUDA device found" and exc.fix == "install CuPy" and exc.exit_code == 3
    plain = InputError("bad value")
    assert plain.message == plain.reason == "bad value" and plain.fix is None


def test_calibrate_help_names_the_method(run_cli):
    result = run_cli("calibrate", "--help")
    assert result.code == 0
    for word in ("pointer", "copy and triad", "-o", "--quick", "--spec", "not reachable from CuPy"):
        assert word in result.out


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="needs nvcc to compile-check the CUDA source")
def test_the_calibration_kernels_compile_for_hopper(tmp_path):
    from roofline.measurement.calibrate.plan import KERNELS_FILE

    done = subprocess.run(["nvcc", "-arch=sm_90", "-cubin", "-std=c++17", "-o", str(tmp_path / "k.cubin"),
                           str(KERNELS_FILE)], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


# ---- on a GPU ------------------------------------------------------------------------------------------


@pytest.mark.gpu
def test_calibrate_quick_gives_sane_figures(tmp_path, run_cli):
    out = tmp_path / "measured.yaml"
    result = run_cli("calibrate", "--quick", "-o", out, "--format", "json")
    assert result.code == 0, result.err
    doc = json.loads(result.out)
    spec = load_spec(out)
    assert spec.measured
    rows = {r["field"]: r for r in doc["rows"]}
    bw, fp32, lat = rows["memory.bandwidth"], rows["compute.fp32"], rows["memory.latency"]
    assert bw["status"] == OK and fp32["status"] == OK and lat["status"] == OK, doc["figures"]
    if bw["datasheet"]:
        assert 0.5 <= bw["ratio"] <= 1.0, bw
    if fp32["datasheet"]:
        assert 0.7 <= fp32["ratio"] <= 1.05, fp32
    assert 150e-9 <= lat["measured"] <= 800e-9, lat
    assert spec.bandwidth == pytest.approx(bw["measured"], rel=1e-3)
    assert spec.latency == pytest.approx(lat["measured"], rel=1e-3)
    l2 = rows["caches.l2.bandwidth"]
    if l2["status"] == OK:
        assert l2["measured"] > bw["measured"], "L2 should be faster than DRAM"
    for row in doc["rows"]:
        assert (row["measured"] is None) == (row["status"] != OK)


# ---- the GPU orchestration on an emulated device ------------------------------------------------------
# A stand-in for CuPy whose "kernels" are NumPy emulations of roofline/measurement/calibrate/kernels.cu: it runs every step of
# calibrate.gpu (chain building, the checks, the figures) on the host. The CUDA itself is checked by nvcc above and
# on a GPU by the gpu-marked tests.


class FakeArray(np.ndarray):
    @property
    def data(self):  # noqa: D401 - CuPy's MemoryPointer: .ptr is the device address
        from types import SimpleNamespace

        return SimpleNamespace(ptr=self.ctypes.data)

    def get(self):
        return np.asarray(self).copy()

    def sum(self, *args, **kwargs):
        return np.asarray(np.ndarray.sum(np.asarray(self), *args, **kwargs)).view(FakeArray)


class FakeKernels:
    def __init__(self, cp, corrupt: str | None = None):
        self.cp, self.corrupt = cp, corrupt

    def get_function(self, name):
        return lambda grid, block, args: getattr(self, name)(grid[0] * block[0], *args)

    def l2_read(self, threads, buf, nslices, slice_vecs, out):
        vec = np.asarray(buf).view(np.uint32).reshape(-1, 4).sum(axis=1, dtype=np.uint64)
        per_slice = vec[: int(nslices) * int(slice_vecs)].reshape(int(nslices), -1)
        blocks = threads // 1024
        acc = np.zeros((blocks, 1024), dtype=np.uint64)  # block b reads slice b mod nslices; thread t vectors t::1024
        for b in range(blocks):
            acc[b] = per_slice[b % int(nslices)].reshape(-1, 1024).sum(axis=0)
        out[:] = (acc.ravel() + (1 if self.corrupt == "l2" else 0)) % 2**32

    def pointer_chase(self, threads, start, steps, out):
        p = int(start)
        for _ in range(int(steps)):
            arr = self.cp.owner(p)
            p = int(arr[(p - arr.ctypes.data) // 8])
        out[0] = p + (128 if self.corrupt == "chase" else 0)
        out[1] = int(steps) * 300  # 300 ns per step
        out[2] = int(steps) * 594  # at 1.98 GHz

    def noop(self, threads, flag, set_it):
        if int(set_it):
            flag[0] = 1

    def one_element(self, threads, src, dst):
        dst[0] = src[0] + 1


class FakeCupy:
    uint64, uint32, int32, int64, float32 = np.uint64, np.uint32, np.int32, np.int64, np.float32

    def __init__(self, corrupt: str | None = None):
        self.arrays: list[FakeArray] = []
        self.corrupt = corrupt

    def _keep(self, a):
        a = np.ascontiguousarray(a).view(FakeArray)
        self.arrays.append(a)
        return a

    def owner(self, address):
        for a in self.arrays:
            if a.ctypes.data <= address < a.ctypes.data + a.nbytes:
                return a
        raise AssertionError(f"wild pointer {address:#x}")

    def asarray(self, a):
        return self._keep(np.array(a))

    def zeros(self, n, dtype):
        return self._keep(np.zeros(n, dtype))

    def full(self, n, value, dtype):
        return self._keep(np.full(n, value, dtype))

    def empty(self, n, dtype):
        return self._keep(np.empty(n, dtype))

    def arange(self, n, dtype):
        return self._keep(np.arange(n, dtype=dtype))

    def roll(self, a, shift):
        return np.roll(a, shift).view(FakeArray)

    def all(self, a):
        return np.asarray(np.all(a)).view(FakeArray)

    def count_nonzero(self, a):
        return np.asarray(np.count_nonzero(a)).view(FakeArray)

    def RawModule(self, code, options):  # noqa: N802 - CuPy's name
        assert "pointer_chase" in code and "l2_read" in code
        return FakeKernels(self, self.corrupt)


class Recorder:
    """A Progress that remembers what it heard."""

    def __init__(self) -> None:
        self.started: list[str] = []
        self.finished: list[tuple[str, str]] = []

    def start(self, name: str) -> None:
        self.started.append(name)

    def finish(self, name: str, status: str) -> None:
        self.finished.append((name, status))


def fake_backend(corrupt: str | None = None):
    from roofline.measurement.backend_numpy import NumpyBackend

    backend = NumpyBackend()
    backend.cp = FakeCupy(corrupt)
    backend.info = {"name": "Fake GPU", "compute_capability": "9.0", "sm_count": 2, "max_threads_per_sm": 2048,
                    "l2_size": 1 << 20}
    backend.free_bytes = lambda: 1 << 34
    return backend


def tiny_plan():
    from roofline.measurement.calibrate.plan import Plan

    return Plan(stream_n=4096, matmul_n=64, chase_passes=3, chase_steps=2000, chase_min_footprint=1 << 20,
                l2_bytes_per_launch=1 << 20, min_time=0.0)


def test_l2_bandwidth_and_latency_on_an_emulated_device():
    from roofline.measurement.calibrate.plan import load_module
    from roofline.measurement.calibrate.probes import dram_latency, l2_bandwidth

    backend = fake_backend()
    module = load_module(backend)
    from roofline.measurement.policy import MeasurePolicy

    policy = MeasurePolicy(min_time=0.0, min_repeats=3, warmup_time=0.0)
    l2 = l2_bandwidth(backend, module, tiny_plan(), policy)
    assert l2.ok, l2.note
    curve = l2.details["curve"]  # 1 MiB L2: 0.5 MiB slices from 1.5 MiB (the first point) to 2 × L2
    assert [c["working_set"] for c in curve] == [512 << 10, 1 << 20, 3 << 19, 2 << 20]
    assert [c["repeats"] for c in curve] == [2, 1, 1, 1]
    for c in curve:
        assert c["bandwidth"] == pytest.approx(c["working_set"] * c["repeats"] / c["time_median"])
    assert l2.value == pytest.approx(curve[0]["bandwidth"])  # the plateau: points at ≤ L2/2 only
    assert l2.details["buffer_bytes"] == 512 << 10
    lat = dram_latency(backend, module, tiny_plan())
    assert lat.ok, lat.note
    assert lat.value == pytest.approx(300e-9)
    assert lat.details["footprint_bytes"] == 16 << 20 and lat.details["implied_clock_hz"] == pytest.approx(1.98e9)
    assert "16× L2" in lat.method and "3 timed passes of 2000 steps" in lat.method


@pytest.mark.parametrize("corrupt, field", [("l2", "caches.l2.bandwidth"), ("chase", "memory.latency")])
def test_a_wrong_result_on_the_device_is_a_failed_figure(corrupt, field):
    from roofline.measurement.calibrate.plan import load_module
    from roofline.measurement.calibrate.probes import dram_latency, l2_bandwidth
    from roofline.measurement.policy import MeasurePolicy

    backend = fake_backend(corrupt)
    module = load_module(backend)
    policy = MeasurePolicy(min_time=0.0, min_repeats=3, warmup_time=0.0)
    fig = (l2_bandwidth(backend, module, tiny_plan(), policy) if field.startswith("caches")
           else dram_latency(backend, module, tiny_plan()))
    assert fig.status == FAILED and fig.value is None
    assert ("wrong sum" in fig.note) if corrupt == "l2" else ("host's walk" in fig.note)


def test_launch_overheads_on_an_emulated_device():
    from roofline.measurement.launch_overhead import launch_overheads
    from roofline.measurement.policy import MeasurePolicy

    found = launch_overheads(fake_backend(), MeasurePolicy(min_time=0.0, min_repeats=20, warmup_time=0.0), sets=16)
    assert found["launch_floor"] > 0 and found["one_element"] > 0
    assert found["kernel_latency"] == max(0.0, found["one_element"] - found["launch_floor"])
    assert found["one_element_sets"] == 16 and found["one_element_footprint"] >= 4 << 20


def test_the_whole_calibration_on_an_emulated_device(tmp_path, h200):
    from roofline.measurement.calibrate.gpu import _calibrate, calibrate

    backend = fake_backend()
    steps = Recorder()
    raw = _calibrate(backend, h200, tiny_plan(), steps)  # the orchestration, before the physical bounds
    by = {f.field: f for f in raw}
    assert [f.field for f in raw] == [k.field for k in KINDS]
    for field in ("memory.bandwidth", "caches.l2.bandwidth", "memory.latency", "compute.fp32", "compute.fp64",
                  "compute.fp16_tensor"):
        assert by[field].ok, (field, by[field].note)
    assert by["compute.bf16_tensor"].status == SKIPPED and "not reachable from CuPy" in by["compute.bf16_tensor"].note
    assert by["compute.fp8_tensor"].status == SKIPPED
    # no real CuPy here: setting the TF32 compute type fails, and the figure is FAILED, not invented
    assert by["compute.tf32_tensor"].status == FAILED and by["compute.tf32_tensor"].value is None
    assert steps.started[:2] == ["copy", "triad"] and "DRAM latency" in steps.started
    assert [name for name, _ in steps.finished] == steps.started  # each step heard finishing, in order
    finished = dict(steps.finished)
    assert finished["copy"] == OK and finished["DRAM latency"] == OK and finished["tf32_tensor"] == FAILED
    assert by["compute.fp32"].details["params"]["blocks"] == 32  # 16 blocks per SM × 2 SMs

    # calibrate() itself holds every figure to its physical bounds. The emulated timings are the host CPU's: its
    # "L2" reads slower than its "DRAM", so that figure is impossible and FAILED, never written into the spec.
    bounded = {f.field: f for f in calibrate(fake_backend(), h200, tiny_plan())}
    l2 = bounded["caches.l2.bandwidth"]
    assert l2.status == FAILED and l2.note.startswith("physically impossible") and "below" in l2.note
    assert l2.details["impossible_value"] > 0
    assert bounded["memory.latency"].ok  # 300 ns a step: possible

    # The round trip below is about the document, so the timed figures take values a 2-SM GPU can have.
    figs = raw
    for field, value in {"memory.bandwidth": 0.4e12, "caches.l2.bandwidth": 0.8e12, "compute.fp32": 1.5e12,
                         "compute.fp64": 0.7e12, "compute.fp16_tensor": 5e12}.items():
        by[field].value = value
    doc, _ = measured_spec(figs, {**backend.info, "total_memory": 1 << 34}, h200, "2026-11-30", "0.1.0")
    spec = load_spec(write(tmp_path, spec_yaml(doc)))
    assert spec.latency == pytest.approx(300e-9, rel=1e-3) and "tf32_tensor" not in spec.roofs


def test_the_l2_curve_spans_1_5_mib_to_twice_the_l2_in_whole_slices():
    from roofline.measurement.calibrate.probes import SLICE, l2_working_sets

    mib = 1 << 20
    h200 = l2_working_sets(60 * mib)
    assert h200 == [int(x * mib) for x in (1.5, 2, 4, 8, 16, 30, 45, 60, 90, 120)]
    assert all(w % SLICE == 0 for w in l2_working_sets(40 * 10**6))  # an A100's 40 MB: whole 512 KiB slices
    assert l2_working_sets(4 * mib)[0] == 1.5 * mib and l2_working_sets(4 * mib)[-1] == 8 * mib  # a T4


def test_the_shipped_11_pb_per_s_l2_figure_is_refused_and_never_reaches_the_spec(h200):
    """Issue 21: calibrate once wrote an L2 bandwidth of 11.07 PB/s beside an L1 of 33.4 TB/s."""
    from roofline.measurement.calibrate.figures import enforce_bounds

    state = {"sm_clock_end": 1.98e9}
    figs = [Figure("memory.bandwidth", OK, 4.37e12, "triad", gpu_state=state),
            Figure("caches.l2.bandwidth", OK, 11.07e15, "l2_read", gpu_state=state),
            Figure("caches.l1.bandwidth", OK, 33.4e12, "l1_read", gpu_state=state),
            Figure("memory.latency", OK, 336e-9, "pointer_chase"),
            Figure("compute.fp32", OK, 65.1e12, "fma_peak", gpu_state=state)]
    out = {f.field: f for f in enforce_bounds(figs, h200, {"sm_count": 132})}
    l2 = out["caches.l2.bandwidth"]
    assert l2.status == FAILED and l2.value is None and "every L2 byte passes through L1" in l2.note
    assert all(out[f].ok for f in ("memory.bandwidth", "caches.l1.bandwidth", "memory.latency", "compute.fp32"))
    # FP32 above 132 SMs × 256 FLOP/clk × the observed 1.98 GHz × 1.02 = 68.2 TFLOP/s is impossible too
    hot = enforce_bounds([Figure("compute.fp32", OK, 70e12, "fma_peak", gpu_state=state)], h200, {"sm_count": 132})
    assert hot[0].status == FAILED
    doc, _ = measured_spec(list(out.values()), H200_DEVICE, h200, "2026-12-01", "0.1.0")
    assert "bandwidth" not in doc.get("caches", {}).get("l2", {})
