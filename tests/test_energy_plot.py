"""plot --energy (issue 33): the energy roofline and the power line of each roof with energy figures, measured points
from results with NVML energy, and a clear refusal when there is nothing to draw."""

from __future__ import annotations

import json

import pytest

from conftest import DATA, KERNELS, SPECS
from roofline.render.charts.energy import energy_figure, energy_lines, energy_points

SPEC = SPECS / "toy-energy.yaml"


def _gids(fig) -> list[str]:
    return [a.get_gid() for ax in fig.axes for a in (*ax.lines, *ax.collections) if a.get_gid()]


def _machine():
    from roofline.load.specs import load_spec
    from roofline.model.analysis import machine_summary

    return machine_summary(load_spec(SPEC))


def test_energy_lines_hold_the_balance_and_the_ridge() -> None:
    lines = {line["roof"]: line for line in energy_lines(_machine())}
    assert lines["fp32"]["energy_balance"] == pytest.approx(5.0) and lines["fp32"]["ridge"] == pytest.approx(10.0)
    assert lines["fp16_tensor"]["energy_balance"] == pytest.approx(50.0)
    assert energy_lines({"id": "x", "roofs": {}, "bandwidth": 1.0}) == []


def test_the_chart_draws_each_roof_and_the_measured_points() -> None:
    pytest.importorskip("matplotlib")
    results = json.loads((DATA / "results" / "h100.json").read_text())
    k = results["kernels"][0]
    k["energy_measured"] = {"joules_per_run": 1e-3, "power_mean": 500.0, "flops_per_joule": k["flops"] / 1e-3,
                            "bytes_per_joule": k["bytes"] / 1e-3, "fraction_of_energy_ceiling": None, "window": 2.0,
                            "runs": 10, "energy": 0.01, "counter_period": 0.1, "uncertainty": 0.05,
                            "short_window": False, "inputs": "random"}
    k["gpu_state"] = {"window": 2.0, "power_mean": 500.0, "power_limit": 700.0, "energy": 1000.0}
    points = energy_points([results], [])
    assert len(points) == 1 and points[0]["power"] == 500.0 and points[0]["measured"]
    gids = _gids(energy_figure([_machine()], [], [results]))
    for gid in ("roofline:energy-roof:toy-energy:fp32", "roofline:energy-roof:toy-energy:fp16_tensor",
                "roofline:power-line:toy-energy:fp32", "roofline:energy-balance:toy-energy:fp32",
                "roofline:measured-point:1", "roofline:measured-power:1", "roofline:power-limit"):
        assert gid in gids, gid


def test_plot_energy_writes_a_chart_and_refuses_an_empty_one(run_cli, tmp_path, no_bundled_kernels) -> None:
    pytest.importorskip("matplotlib")
    out = tmp_path / "e.svg"
    r = run_cli("plot", "--energy", "--kernels", KERNELS / "t_vadd.yaml", "--spec", SPEC, "-o", out)
    assert r.code == 0, r.err
    assert "roofline:energy-roof:toy-energy:fp32" in out.read_text()
    empty = run_cli("plot", "--energy", "--kernels", KERNELS / "t_vadd.yaml", "--spec", SPECS / "toy.yaml",
                    "-o", tmp_path / "x.png")
    assert empty.code == 2 and "nothing to draw" in empty.err and "no energy block" in empty.err
    assert not (tmp_path / "x.png").exists()
    clash = run_cli("plot", "--energy", "--sweep", DATA / "results" / "sweep.json", "-o", tmp_path / "y.png")
    assert clash.code == 2 and "--energy draws the energy roofline" in clash.err
