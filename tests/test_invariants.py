"""Physical invariants (roofline.model.invariants): each bound at and just over its edge, on specs and on measured figures;
impossible spec files refused through the CLI naming the file and the field; every bundled spec possible."""

from __future__ import annotations

import dataclasses
import math
from pathlib import Path

import pytest

from conftest import KERNELS
from roofline.model import invariants as inv
from roofline.load.bundled import bundled_dir
from roofline.errors import InputError
from roofline.model.invariants import FigureContext, check_spec, impossible_figure
from roofline.model.types import CacheLevel, MachineSpec
from roofline.load.specs import load_spec

BUNDLED_SPEC_FILES = sorted(bundled_dir("specs").glob("*.yaml"))
H200_FILE = bundled_dir("specs") / "h200-sxm.yaml"
JUST_OVER = 1.001
JUST_UNDER = 0.999


def machine(**changes: object) -> MachineSpec:
    """A possible GPU with round numbers: 100 SMs at 2 GHz boost (L1 bound 100 x 128 B x 2 GHz x 1.1 = 28.16 TB/s),
    1 TB/s DRAM, 4 TB/s L2, 20 TB/s L1; FP32 = 100 x 256 x 2 GHz = 51.2 TFLOP/s."""
    base = MachineSpec(
        id="m", name="M", bandwidth=1e12, latency=400e-9, capacity=16e9, sm_count=100,
        roofs={"fp32": 51.2e12, "fp64": 25.6e12, "fp16_tensor": 409.6e12, "bf16_tensor": 409.6e12,
               "tf32_tensor": 204.8e12, "fp8_tensor": 819.2e12},
        clocks={"boost": 2e9},
        caches={"l1": CacheLevel(size=256 * 1024, bandwidth=20e12, latency=20e-9),
                "l2": CacheLevel(size=50e6, bandwidth=4e12, latency=200e-9)},
    )
    return dataclasses.replace(base, **changes)


def cache(spec: MachineSpec, level: str, **changes: object) -> dict[str, CacheLevel]:
    caches = dict(spec.caches)
    caches[level] = dataclasses.replace(caches.get(level, CacheLevel()), **changes)
    return caches


def fields(spec: MachineSpec, severity: str | None = None) -> list[str]:
    return [v.field for v in check_spec(spec) if severity is None or v.severity == severity]


def test_the_reference_machine_is_possible() -> None:
    assert check_spec(machine()) == []


# ---- the bundled specs ---------------------------------------------------------------------------


@pytest.mark.parametrize("path", BUNDLED_SPEC_FILES, ids=lambda p: p.stem)
def test_every_bundled_spec_is_physically_possible(path: Path) -> None:
    spec = load_spec(path)  # a hard violation would raise here
    assert [v.line() for v in check_spec(spec)] == []  # and no soft finding either


# ---- spec invariants: the hierarchy --------------------------------------------------------------


def test_bandwidth_falls_from_l1_to_l2_to_dram() -> None:
    m = machine()
    assert fields(machine(caches=cache(m, "l2", bandwidth=20e12))) == []  # L2 = L1 is allowed
    over = check_spec(machine(caches=cache(m, "l2", bandwidth=20e12 * JUST_OVER)))
    assert [(v.field, v.severity) for v in over] == [("caches.l2.bandwidth", "hard")]
    assert "above caches.l1.bandwidth 20 TB/s" in over[0].message
    assert fields(machine(caches=cache(m, "l2", bandwidth=1e12))) == []  # L2 = DRAM is allowed
    under = check_spec(machine(caches=cache(m, "l2", bandwidth=1e12 * JUST_UNDER)))
    assert [v.field for v in under] == ["caches.l2.bandwidth"]
    assert "below memory.bandwidth 1 TB/s" in under[0].message


def test_without_l2_an_l1_below_dram_is_blamed_on_l1() -> None:
    m = machine()
    caches = {"l1": dataclasses.replace(m.caches["l1"], bandwidth=0.5e12)}
    assert fields(machine(caches=caches)) == ["caches.l1.bandwidth"]


def test_sizes_grow_down_the_hierarchy() -> None:
    m = machine()
    # a 1 GB DRAM, so that an L2 as large as it is still inside the L2's own plausible range (up to 2 GiB)
    assert fields(machine(capacity=1e9, caches=cache(m, "l2", size=1e9 * JUST_UNDER))) == []
    assert fields(machine(capacity=1e9, caches=cache(m, "l2", size=1e9))) == ["caches.l2.size"]  # as large as DRAM
    assert fields(machine(caches=cache(m, "l2", size=256 * 1024))) == ["caches.l2.size"]  # as small as L1


def test_latencies_grow_down_the_hierarchy() -> None:
    m = machine()
    assert fields(machine(caches=cache(m, "l2", latency=20e-9))) == ["caches.l2.latency"]  # = L1
    assert fields(machine(caches=cache(m, "l2", latency=20e-9 * 1.01))) == []
    assert fields(machine(caches=cache(m, "l2", latency=400e-9))) == ["caches.l2.latency"]  # = DRAM


@pytest.mark.parametrize("level, low, high", [("l1", 1e-9, 100e-9), ("l2", 10e-9, 1000e-9), ("memory", 50e-9, 5e-6)])
def test_latency_ranges_at_and_just_past_each_end(level: str, low: float, high: float) -> None:
    def spec_with(latency: float) -> MachineSpec:
        # only the level under test carries a latency, so the hierarchy order does not interfere
        m = machine(caches={k: dataclasses.replace(c, latency=None) for k, c in machine().caches.items()})
        if level == "memory":
            return dataclasses.replace(m, latency=latency)
        return dataclasses.replace(m, latency=5e-6, caches=cache(m, level, latency=latency))

    field = "memory.latency" if level == "memory" else f"caches.{level}.latency"
    assert fields(spec_with(low)) == [] and fields(spec_with(high)) == []
    assert fields(spec_with(low * JUST_UNDER)) == [field]
    assert fields(spec_with(high * JUST_OVER)) == [field]
    assert inv.impossible_latency(level, low) is None and inv.impossible_latency(level, high) is None
    assert "outside" in inv.impossible_latency(level, high * JUST_OVER)
    assert "outside" in inv.impossible_latency(level, low * JUST_UNDER)


# ---- spec invariants: per-SM bounds -----------------------------------------------------------------


def test_l1_bandwidth_at_and_over_sms_x_128_b_x_boost_x_1_1() -> None:
    m = machine()
    bound = 100 * 128 * 2e9 * 1.1  # 28.16 TB/s
    assert fields(machine(caches=cache(m, "l1", bandwidth=bound))) == []
    found = check_spec(machine(caches=cache(m, "l1", bandwidth=bound * JUST_OVER)))
    assert [(v.field, v.severity) for v in found] == [("caches.l1.bandwidth", "hard")]
    assert "100 SMs x 128 B/clk x clocks.boost 2 GHz x 1.1" in found[0].message


def test_without_a_boost_clock_l1_is_bounded_at_the_fastest_sm_clock() -> None:
    m = machine(clocks={})
    bound = 100 * 128 * inv.MAX_SM_CLOCK * 1.1
    assert fields(machine(clocks={}, caches=cache(m, "l1", bandwidth=bound))) == []
    assert fields(machine(clocks={}, caches=cache(m, "l1", bandwidth=bound * JUST_OVER))) == ["caches.l1.bandwidth"]


def test_the_measured_l1_of_442_tb_s_on_132_sms_is_refused() -> None:
    """The two-GPU calibrate of 2026-11-30 wrote L1 442.9 TB/s on an H200 (13x what 132 SMs load; the file left the
    tree with the other raw runs, git history keeps it)."""
    spec = MachineSpec(id="h", name="H", bandwidth=4.362e12, latency=349.1e-9, roofs={"fp32": 64.99e12},
                       sm_count=132, measured=True,
                       caches={"l1": CacheLevel(bandwidth=442.9e12),
                               "l2": CacheLevel(size=62914560, bandwidth=8.173e12)})
    assert fields(spec, "hard") == ["caches.l1.bandwidth"]


def test_without_an_l1_figure_l2_is_bounded_by_what_l1_can_take() -> None:
    m = machine()
    bound = 100 * 128 * 2e9 * 1.1
    caches = {"l2": dataclasses.replace(m.caches["l2"], bandwidth=bound)}
    assert fields(machine(caches=caches)) == []
    caches = {"l2": dataclasses.replace(m.caches["l2"], bandwidth=bound * JUST_OVER)}
    assert fields(machine(caches=caches)) == ["caches.l2.bandwidth"]


def test_dram_above_any_gpu_memory_is_refused() -> None:
    big = machine(caches={}, bandwidth=inv.DRAM_MAX_BANDWIDTH)
    assert fields(big) == []
    assert fields(machine(caches={}, bandwidth=inv.DRAM_MAX_BANDWIDTH * JUST_OVER)) == ["memory.bandwidth"]


@pytest.mark.parametrize("roof, per_clock", [("fp32", 256), ("fp64", 256), ("fp16", 512), ("bf16", 512)])
def test_cuda_core_roofs_at_and_over_sms_x_flop_per_clock_x_boost_x_1_02(roof: str, per_clock: int) -> None:
    bound = 100 * per_clock * 2e9 * 1.02
    at = machine(roofs={roof: bound})
    assert fields(at, "hard") == []
    over = check_spec(machine(roofs={roof: bound * JUST_OVER}))
    assert [v.field for v in over if v.severity == "hard"] == [f"compute.{roof}"]


def test_a_roof_that_is_not_finite_is_not_checked() -> None:
    """A derived spec's unknown FP32 is +inf (roofline.measurement.device): not a figure."""
    assert check_spec(machine(roofs={"fp32": math.inf})) == []


# ---- spec invariants: soft findings ----------------------------------------------------------------


def test_a_roof_off_a_power_of_two_per_sm_per_clock_is_a_warning() -> None:
    # fp32 51.2 TFLOP/s = 256 FLOP/clk per SM; 3 % off is allowed, just past it is not
    assert fields(machine(roofs={"fp32": 51.2e12 * 0.97})) == []
    found = check_spec(machine(roofs={"fp32": 51.2e12 * 0.97 * JUST_UNDER}))
    assert [(v.field, v.severity) for v in found] == [("compute.fp32", "soft")]
    assert "power of two" in found[0].message


def test_tensor_roofs_use_the_tensor_clock_but_fp64_tensor_the_boost_clock() -> None:
    # the H100 SXM: 989.4 TFLOP/s at 1.83 GHz = 4096 FLOP/clk per SM; FP64 tensor 67 TFLOP/s at 1.98 GHz = 256
    spec = MachineSpec(id="h", name="H", bandwidth=3.35e12, latency=331e-9, sm_count=132,
                       clocks={"boost": 1.98e9, "tensor": 1.83e9},
                       roofs={"fp16_tensor": 989.4e12, "fp64_tensor": 67e12})
    assert check_spec(spec) == []


@pytest.mark.parametrize("roof, factor", [("bf16_tensor", 1.0), ("fp8_tensor", 2.0), ("tf32_tensor", 0.5)])
def test_a_tensor_roof_far_from_its_family_is_a_warning(roof: str, factor: float) -> None:
    roofs = {"fp16_tensor": 409.6e12}
    expected = 409.6e12 * factor
    clocks = {}  # no clock: only the family check speaks
    assert fields(machine(clocks=clocks, roofs={**roofs, roof: expected * 1.05})) == []
    found = check_spec(machine(clocks=clocks, roofs={**roofs, roof: expected * 1.05 * JUST_OVER}))
    assert [(v.field, v.severity) for v in found] == [(f"compute.{roof}", "soft")]
    assert "compute.fp16_tensor" in found[0].message
    # a measured spec holds what cuBLAS reached per precision: 25 % apart is allowed
    assert fields(machine(clocks=clocks, measured=True, roofs={**roofs, roof: expected * 1.25})) == []
    assert fields(machine(clocks=clocks, measured=True, roofs={**roofs, roof: expected * 1.25 * JUST_OVER})) == [
        f"compute.{roof}"]


def test_a_measured_spec_is_not_held_to_powers_of_two() -> None:
    """A measured roof is what a kernel reached (the H200's FP32 FMA 65.1 of 66.9), not lanes x clock."""
    assert fields(machine(measured=True, roofs={"fp32": 51.2e12 * 0.9})) == []


def test_dram_more_than_10_percent_above_its_bus_is_a_warning() -> None:
    derived = 5120 / 8 * 1.593e9 * 2  # the A100 80GB: 2.039 TB/s
    m = machine(caches={}, memory_bus_width=5120, memory_clock=1.593e9)
    assert fields(dataclasses.replace(m, bandwidth=derived * 1.1)) == []
    found = check_spec(dataclasses.replace(m, bandwidth=derived * 1.1 * JUST_OVER))
    assert [(v.field, v.severity) for v in found] == [("memory.bandwidth", "soft")]
    assert "memory.bus_width 5120 / 8 x memory.clock" in found[0].message


def test_hard_violations_come_before_soft_ones() -> None:
    m = machine(roofs={"fp32": 51.2e12 * 0.9}, caches=cache(machine(), "l2", bandwidth=30e12))
    assert [v.severity for v in check_spec(m)] == ["hard", "soft"]
    assert [v.field for v in inv.hard_violations(m)] == ["caches.l2.bandwidth"]
    assert [v.field for v in inv.soft_violations(m)] == ["compute.fp32"]


# ---- figure bounds ----------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def h200() -> MachineSpec:
    return load_spec(H200_FILE)


def test_dram_figure_at_and_over_the_datasheet_x_1_05(h200: MachineSpec) -> None:
    ctx = FigureContext(datasheet=h200)
    assert inv.impossible_dram_bandwidth(4.8e12 * 1.05, ctx) is None
    reason = inv.impossible_dram_bandwidth(4.8e12 * 1.05 * JUST_OVER, ctx)
    assert reason is not None and "4.8 TB/s x 1.05 = 5.04 TB/s" in reason
    assert inv.impossible_dram_bandwidth(inv.DRAM_MAX_BANDWIDTH, FigureContext()) is None
    assert inv.impossible_dram_bandwidth(inv.DRAM_MAX_BANDWIDTH * JUST_OVER, FigureContext()) is not None


def test_l1_figure_at_and_over_sms_x_128_b_x_the_observed_clock(h200: MachineSpec) -> None:
    ctx = FigureContext(datasheet=h200, sm_clock=1.5e9)  # held down to 1.5 GHz: the bound follows the clock
    bound = 132 * 128 * 1.5e9 * 1.02
    assert inv.impossible_l1_bandwidth(bound, ctx) is None
    reason = inv.impossible_l1_bandwidth(bound * JUST_OVER, ctx)
    assert reason is not None and "132 SMs x 128 B/clk x the observed clock 1.5 GHz x 1.02" in reason
    # the device's SM count wins over the datasheet's
    assert inv.impossible_l1_bandwidth(bound, dataclasses.replace(ctx, sm_count=66)) is not None


def test_l1_figure_without_an_observed_clock(h200: MachineSpec) -> None:
    bound = 132 * 128 * 1.98e9 * inv.UNOBSERVED_CLOCK_HEADROOM
    ctx = FigureContext(datasheet=h200)
    assert inv.impossible_l1_bandwidth(bound, ctx) is None
    assert inv.impossible_l1_bandwidth(bound * JUST_OVER, ctx) is not None
    bare = FigureContext(sm_count=132)  # no datasheet, no clock: the fastest any SM runs
    assert inv.impossible_l1_bandwidth(132 * 128 * inv.MAX_SM_CLOCK, bare) is None
    assert inv.impossible_l1_bandwidth(132 * 128 * inv.MAX_SM_CLOCK * JUST_OVER, bare) is not None
    assert inv.impossible_l1_bandwidth(1e18, FigureContext()) is None  # no SM count: no bound to apply


def test_the_11_pb_s_l2_of_issue_21_is_impossible(h200: MachineSpec) -> None:
    ctx = FigureContext(datasheet=h200, sm_clock=1.98e9, dram_bandwidth=4.37e12, l1_bandwidth=33.4e12)
    reason = impossible_figure("caches.l2.bandwidth", 11.07e15, ctx)
    assert reason is not None and "L1 bandwidth measured in this run" in reason and "11.1 PB/s" in reason
    assert impossible_figure("caches.l2.bandwidth", 10.2e12, ctx) is None  # the published H200 L2 plateau


def test_l2_figure_between_dram_and_l1(h200: MachineSpec) -> None:
    ctx = FigureContext(datasheet=h200, sm_clock=1.98e9, dram_bandwidth=4.0e12, l1_bandwidth=30e12)
    assert inv.impossible_l2_bandwidth(4.0e12 / 1.02, ctx) is None
    assert "below the DRAM bandwidth measured" in inv.impossible_l2_bandwidth(4.0e12 / 1.02 * JUST_UNDER, ctx)
    assert inv.impossible_l2_bandwidth(30e12 * 1.02, ctx) is None
    assert "above the L1 bandwidth measured" in inv.impossible_l2_bandwidth(30e12 * 1.02 * JUST_OVER, ctx)
    # without figures of the same run: the datasheet DRAM and the L1 bound
    sheet_only = FigureContext(datasheet=h200, sm_clock=1.98e9)
    assert "below the datasheet DRAM" in inv.impossible_l2_bandwidth(4.8e12 / 1.02 * JUST_UNDER, sheet_only)
    l1_bound = 132 * 128 * 1.98e9 * 1.02
    assert inv.impossible_l2_bandwidth(l1_bound, sheet_only) is None
    assert "above the L1 bound" in inv.impossible_l2_bandwidth(l1_bound * JUST_OVER, sheet_only)


def test_flops_at_and_over_sms_x_flop_per_clock_x_the_observed_clock(h200: MachineSpec) -> None:
    ctx = FigureContext(datasheet=h200, sm_clock=1.5e9)
    fp32 = 132 * (66.9e12 / (132 * 1.98e9)) * 1.5e9 * 1.02  # FP32 per clock from clocks.boost
    assert inv.impossible_flops("fp32", fp32, ctx) is None
    assert "the observed clock 1.5 GHz" in inv.impossible_flops("fp32", fp32 * JUST_OVER, ctx)
    tensor = 132 * (989.4e12 / (132 * 1.83e9)) * 1.5e9 * 1.02  # tensor per clock from clocks.tensor
    assert inv.impossible_flops("bf16_tensor", tensor, ctx) is None
    assert inv.impossible_flops("bf16_tensor", tensor * JUST_OVER, ctx) is not None


def test_flops_without_an_observed_clock_or_a_datasheet(h200: MachineSpec) -> None:
    unobserved = 66.9e12 * inv.UNOBSERVED_CLOCK_HEADROOM  # the boost clock with GPU Boost's headroom
    assert inv.impossible_flops("fp32", unobserved, FigureContext(datasheet=h200)) is None
    assert inv.impossible_flops("fp32", unobserved * JUST_OVER, FigureContext(datasheet=h200)) is not None
    # no datasheet: the most any SM issues, at the observed clock
    bare = FigureContext(sm_count=2, sm_clock=2e9)
    assert inv.impossible_flops("fp32", 2 * 256 * 2e9 * 1.02, bare) is None
    assert "the most any NVIDIA SM issues" in inv.impossible_flops("fp32", 2 * 256 * 2e9 * 1.02 * JUST_OVER, bare)
    assert inv.impossible_flops("fp16_tensor", 1e18, bare) is None  # no per-SM rate known for a tensor roof
    # a datasheet roof without SMs or clocks: the roof x the headroom
    nvl = MachineSpec(id="n", name="N", bandwidth=4.8e12, latency=332e-9, roofs={"fp32": 60e12})
    assert inv.impossible_flops("fp32", 60e12 * 1.15, FigureContext(datasheet=nvl)) is None
    assert inv.impossible_flops("fp32", 60e12 * 1.15 * JUST_OVER, FigureContext(datasheet=nvl)) is not None


@pytest.mark.parametrize("field, value", [
    ("memory.bandwidth", 6e12), ("caches.l2.bandwidth", 1e12), ("caches.l1.bandwidth", 50e12),
    ("caches.shared.bandwidth", 50e12), ("compute.fp32", 100e12), ("memory.latency", 10e-6),
    ("caches.l1.latency", 0.5e-9), ("caches.l2.latency", 2e-6),
])
def test_impossible_figure_dispatches_on_the_spec_field(h200: MachineSpec, field: str, value: float) -> None:
    assert impossible_figure(field, value, FigureContext(datasheet=h200, sm_clock=1.98e9)) is not None


@pytest.mark.parametrize("value", [0.0, -1.0, math.inf, math.nan])
def test_a_value_that_is_not_a_positive_finite_number_is_impossible(value: float) -> None:
    assert "not a positive finite number" in impossible_figure("memory.bandwidth", value, FigureContext())


def test_unknown_fields_and_levels_are_programming_errors() -> None:
    with pytest.raises(ValueError, match="no physical bound for field 'memory.capacity'"):
        impossible_figure("memory.capacity", 1e9, FigureContext())
    with pytest.raises(ValueError, match="no latency range for level 'l9'"):
        inv.impossible_latency("l9", 1e-7)
    assert inv.impossible_latency("dram", 332e-9) is None  # 'dram' is memory


# ---- impossible spec files through the loader and the CLI -------------------------------------------


def _h200_with(tmp_path: Path, name: str, *edits: tuple[str, str]) -> Path:
    """h200-sxm.yaml with each (old, new) text replaced, written as tmp_path/NAME.yaml."""
    text = H200_FILE.read_text(encoding="utf-8")
    for old, new in edits:
        assert old in text
        text = text.replace(old, new)
    path = tmp_path / f"{name}.yaml"
    path.write_text(text, encoding="utf-8")
    return path


_L2 = "l2: {size: 60 MiB, latency: 141.7 ns}"
_L1 = "l1: {size: 256 KiB, latency: 16.2 ns}"

# (case, edits to h200-sxm.yaml, the field the message names)
IMPOSSIBLE = [
    # L1 33.4 TB/s (the H200's measured figure) and L2 11.07 PB/s, as calibrate once wrote them
    ("l2_above_l1", [(_L1, "l1: {size: 256 KiB, latency: 16.2 ns, bandwidth: 33.4 TB/s}"),
                     (_L2, "l2: {size: 60 MiB, latency: 141.7 ns, bandwidth: 11.07 PB/s}")], "caches.l2.bandwidth"),
    ("l2_below_dram", [(_L2, "l2: {size: 60 MiB, latency: 141.7 ns, bandwidth: 3 TB/s}")], "caches.l2.bandwidth"),
    ("l1_442_tb_s", [(_L1, "l1: {size: 256 KiB, latency: 16.2 ns, bandwidth: 442.9 TB/s}")], "caches.l1.bandwidth"),
    ("fp32_doubled", [("fp32: 66.9 TFLOP/s", "fp32: 133.8 TFLOP/s")], "compute.fp32"),
    ("latency_us", [("latency: 332 ns", "latency: 332 us")], "memory.latency"),
    ("l2_larger_than_dram", [("size: 60 MiB", "size: 160 GB")], "caches.l2.size"),
]
IMPOSSIBLE_IDS = [case for case, _, _ in IMPOSSIBLE]


@pytest.mark.parametrize("case, edits, field", IMPOSSIBLE, ids=IMPOSSIBLE_IDS)
def test_the_loader_refuses_an_impossible_spec(tmp_path: Path, case: str, edits: list, field: str) -> None:
    path = _h200_with(tmp_path, case, *edits)
    with pytest.raises(InputError) as exc_info:
        load_spec(path)
    assert exc_info.value.message.startswith(f"{path}: {field}: ")
    assert exc_info.value.exit_code == 2


@pytest.mark.parametrize("case, edits, field", IMPOSSIBLE, ids=IMPOSSIBLE_IDS)
def test_specs_show_refuses_an_impossible_spec(run_cli, tmp_path: Path, case: str, edits: list, field: str) -> None:
    path = _h200_with(tmp_path, case, *edits)
    r = run_cli("specs", "show", path)
    assert r.code == 2
    assert r.err.startswith(f"error: {path}: {field}: ")
    assert "Traceback" not in r.err + r.out
    assert r.out == ""


@pytest.mark.parametrize("case, edits, field", IMPOSSIBLE, ids=IMPOSSIBLE_IDS)
def test_analyze_refuses_an_impossible_spec(run_cli, no_bundled_kernels, tmp_path: Path, case: str, edits: list,
                                            field: str) -> None:
    path = _h200_with(tmp_path, case, *edits)
    r = run_cli("analyze", "--kernels", KERNELS / "t_vadd.yaml", "--spec", path)
    assert r.code == 2
    assert r.err.startswith(f"error: {path}: {field}: ")
    assert "Traceback" not in r.err + r.out
    assert r.out == ""


def test_the_message_lists_the_other_impossible_fields(tmp_path: Path) -> None:
    path = _h200_with(tmp_path, "two", ("latency: 332 ns", "latency: 332 us"),
                      ("fp32: 66.9 TFLOP/s", "fp32: 133.8 TFLOP/s"))
    with pytest.raises(InputError) as exc_info:
        load_spec(path)
    assert exc_info.value.message.startswith(f"{path}: memory.latency: 332 µs is outside 50 ns to 5 µs")
    assert "(also impossible: compute.fp32); check the unit" in exc_info.value.message


def test_a_soft_finding_is_one_warning_naming_the_field(run_cli, no_bundled_kernels, tmp_path: Path) -> None:
    path = _h200_with(tmp_path, "soft", ("bandwidth: 4.8 TB/s", "bandwidth: 5.5 TB/s"))  # 14 % above its bus
    r = run_cli("specs", "show", path)
    assert r.code == 0 and "NVIDIA H200" in r.out
    assert r.err.count("warning:") == 1
    assert f"warning: {path}: memory.bandwidth: 5.5 TB/s is 14% above memory.bus_width 6016" in r.err
    # analyze: once, although the spec is named twice
    r = run_cli("analyze", "--kernels", KERNELS / "t_vadd.yaml", "--spec", path, "--spec", path, "--format", "json")
    assert r.code == 0 and r.out.startswith("{")
    assert r.err.count(f"warning: {path}: memory.bandwidth:") == 1


def test_a_bundled_spec_prints_no_warning(run_cli) -> None:
    r = run_cli("specs", "show", "h200")
    assert r.code == 0 and r.err == ""
