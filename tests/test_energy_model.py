"""The energy roofline (roofline.model.energy, issue 33): the spec's energy block and Choi et al.'s figures, against
numbers worked out by hand on the toy GPU with energy figures (tests/data/specs/toy-energy.yaml):
1 TB/s, fp32 10 TFLOP/s (ridge 10 FLOP/B), idle 100 W, DRAM 100 pJ/B, L2 20 pJ/B, fp32 20 pJ/FLOP."""

from __future__ import annotations

import csv
import io
import json
from dataclasses import replace

import pytest

from conftest import KERNELS, SPECS, TOY_SPEC
from roofline.load.specs import load_spec
from roofline.model.analysis import analysis_document, analyze
from roofline.model.energy import (effective_balance, energy_balance, flops_per_joule, kernel_energy,
                                   power_at_ceiling)
from roofline.model.types import Workload
from roofline.model.units import format_small, parse_quantity

SPEC = SPECS / "toy-energy.yaml"


@pytest.fixture(scope="module")
def toy():
    return load_spec(SPEC)


def test_spec_carries_the_energy_block_in_si(toy) -> None:
    e = toy.energy
    assert e.idle_power == 100.0
    assert e.memory == {"dram": pytest.approx(100e-12), "l2": pytest.approx(20e-12)}
    assert e.compute == {"fp32": pytest.approx(20e-12), "fp16_tensor": pytest.approx(2e-12)}
    assert e.inputs == "random" and e.source == "Invented for the test suite"
    assert load_spec(TOY_SPEC).energy is None  # optional


def test_energy_units_parse_and_print() -> None:
    assert parse_quantity("138 pJ/B", "energy_per_byte", unit_required=True) == pytest.approx(138e-12)
    assert parse_quantity("1.07 pJ/FLOP", "energy_per_flop", unit_required=True) == pytest.approx(1.07e-12)
    assert parse_quantity("0.7 kW", "power", unit_required=True) == pytest.approx(700.0)
    assert format_small(138e-12, "J/B") == "138 pJ/B"
    assert format_small(0.65, "J") == "650 mJ"


def test_balance_points_by_hand() -> None:
    assert energy_balance(100e-12, 20e-12) == pytest.approx(5.0)
    # ε̂_mem = 100 pJ + 100 W / 1 TB/s = 200 pJ/B; ε̂_flop = 20 pJ + 100 W / 10 TFLOP/s = 30 pJ
    assert effective_balance(100e-12, 20e-12, 100.0, 10e12, 1e12) == pytest.approx(200 / 30)


@pytest.mark.parametrize(("ai", "flop_per_j", "watts"), [
    (1.0, 1 / 220e-12, 220.0),  # 20 + 100/1 + 100 W x 1 ps/FLOP; power (20 + 100) pJ / 1 ps + 100 W
    (10.0, 1 / 40e-12, 400.0),  # at the ridge: 20 + 10 + 100 W x 0.1 ps; (20 + 10) / 0.1 ps + 100 W: the peak
    (100.0, 1 / 31e-12, 310.0),  # 20 + 1 + 10; (20 + 1) / 0.1 ps + 100 W
])
def test_arch_line_and_power_line_by_hand(ai: float, flop_per_j: float, watts: float) -> None:
    args = (20e-12, 100e-12, 100.0, 10e12, 1e12)
    assert flops_per_joule(ai, *args) == pytest.approx(flop_per_j)
    assert power_at_ceiling(ai, *args) == pytest.approx(watts)


def test_kernel_between_energy_balance_and_ridge_is_bound_differently(toy) -> None:
    # 6 GFLOP over 1 GB: AI 6, memory-bound in time (ridge 10) but its FLOPs cost 0.12 J and its bytes 0.10 J.
    work = Workload("k", "custom", "float32", "fp32", {}, flops=6e9, bytes=1e9, access_bytes=4)
    a = analyze(toy, work)
    e = a.energy
    assert a.bound == "memory" and a.sol_time == pytest.approx(1e-3)
    assert (e.flop_energy, e.memory_energy, e.idle_energy) == pytest.approx((0.12, 0.10, 0.10))
    assert e.min_energy == pytest.approx(0.32)
    assert e.energy_bound == "compute" and e.differs
    assert e.power == pytest.approx(320.0)
    assert e.flops_per_joule == pytest.approx(6e9 / 0.32)
    assert e.bytes_per_joule == pytest.approx(1e9 / 0.32)


def test_memory_bound_in_both(toy) -> None:
    work = Workload("k", "custom", "float32", "fp32", {}, flops=1e9, bytes=1e9, access_bytes=4)
    e = analyze(toy, work).energy
    assert e.energy_bound == "memory" and not e.differs
    assert e.min_energy == pytest.approx(1e9 * 20e-12 + 1e9 * 100e-12 + 100 * 1e-3)


def test_no_energy_for_a_roof_without_a_figure(toy) -> None:
    only_fp32 = replace(toy, energy=replace(toy.energy, compute={"fp32": 20e-12}))
    assert kernel_energy(only_fp32, "fp16_tensor", 1e9, 1e6, 1e-5, "compute") is None
    work = Workload("k", "custom", "float16", "fp16_tensor", {}, flops=1e9, bytes=1e6, access_bytes=2)
    assert "energy" not in analyze(only_fp32, work).to_dict()
    assert "energy" not in analysis_document(load_spec(TOY_SPEC), [analyze(load_spec(TOY_SPEC), work)])["machine"]


def test_machine_summary_has_the_roofs_balance_and_peak_power(toy) -> None:
    work = Workload("k", "custom", "float32", "fp32", {}, flops=1e9, bytes=1e9, access_bytes=4)
    m = analysis_document(toy, [analyze(toy, work)])["machine"]["energy"]
    assert m["roofs"]["fp32"]["energy_balance"] == pytest.approx(5.0)
    assert m["roofs"]["fp32"]["power_at_ridge"] == pytest.approx(400.0)
    assert m["roofs"]["fp32"]["peak_flops_per_joule"] == pytest.approx(1 / 30e-12)


def test_analyze_shows_min_energy_only_with_figures(run_cli, no_bundled_kernels) -> None:
    k = KERNELS / "t_vadd.yaml"
    plain = run_cli("analyze", "--kernels", k, "--spec", TOY_SPEC, "--format", "markdown")
    assert plain.code == 0 and "min energy" not in plain.out and "pJ" not in plain.out
    # the header says once why there is no power roof (no energy figures), and nothing else about energy
    assert plain.out.count("energy") == 2 and plain.out.count("no power roof: the spec has no energy block") == 1
    md = run_cli("analyze", "--kernels", k, "--spec", SPEC, "--format", "markdown")
    assert md.code == 0 and "min energy" in md.out and "energy balance" in md.out
    assert "idle 100 W; dram 100 pJ/B, l2 20 pJ/B" in md.out
    js = json.loads(run_cli("analyze", "--kernels", k, "--spec", SPEC, "--format", "json").out)
    kernel = js[0]["kernels"][0] if isinstance(js, list) else js["kernels"][0]
    e = kernel["energy"]
    expected = kernel["flops"] * 20e-12 + kernel["bytes"] * 100e-12 + 100.0 * kernel["sol_time"]
    assert e["min_energy"] == pytest.approx(expected)
    rows = list(csv.DictReader(io.StringIO(run_cli("analyze", "--kernels", k, "--spec", SPEC, "--format",
                                                   "csv").out)))
    assert float(rows[0]["min_energy"]) == pytest.approx(expected)
    assert "min_energy" not in run_cli("analyze", "--kernels", k, "--spec", TOY_SPEC, "--format", "csv").out
    table = run_cli("analyze", "--kernels", k, "--spec", SPEC)
    assert table.code == 0 and "min energy" in table.out


def test_specs_show_prints_the_energy_block(run_cli) -> None:
    r = run_cli("specs", "show", SPEC)
    assert r.code == 0
    for text in ("energy.idle_power", "100 W", "energy.memory.dram", "100 pJ/B", "20 pJ/FLOP",
                 "energy balance 5 FLOP/B (time ridge 10 FLOP/B)", "energy.inputs", "random"):
        assert text in r.out
