"""The power roof's curves for the roofline chart (roofline.model.power; Choi, Dukhan, Liu, Vuduc, IPDPS 2014): per
compute roof a machine has an energy figure for, the rate its power limit allows at each intensity, kept where it is
below the time roofline (elsewhere the time roof is the ceiling and the curve is not drawn). Pure: a machine block
(the analysis machine summary) in, numbers out; the chart (roofline.render.charts.plot) draws them."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping, Sequence

from roofline.model.power import PowerFigures, power_limited_rate


@dataclass(frozen=True)
class PowerCurve:
    roof: str
    limit: float  # W
    what_if: bool  # the limit is analyze --power-limit's, not the spec's
    xs: tuple[float, ...]  # FLOP/B
    ys: tuple[float | None, ...]  # FLOP/s where the power roof is below the time roof, else None (not drawn)
    asymptote: float  # FLOP/s at the largest intensity drawn: (P - idle) / eps_flop as I grows


def machine_power_figures(machine: Mapping[str, Any], roof: str) -> PowerFigures | None:
    """The power roof's figures from a machine block as analyze writes it (power_limit, energy), or None."""
    e, limit = machine.get("energy"), machine.get("power_limit")
    if not e or not limit or roof not in e["compute"]:
        return None
    rate = e.get("dram_bandwidth")
    return PowerFigures(limit, e["idle_power"], e["compute"][roof], e["memory"]["dram"],
                        min(rate, machine["bandwidth"]) if rate else machine["bandwidth"])


def power_curves(machine: Mapping[str, Any], roofs: Mapping[str, float], grid: Sequence[float]) -> list[PowerCurve]:
    """One curve per roof in `roofs` (name -> peak FLOP/s) that binds somewhere on `grid` (FLOP/B, ascending)."""
    out = []
    for roof, peak in roofs.items():
        f = machine_power_figures(machine, roof)
        if f is None:
            continue
        rates = [power_limited_rate(x, f) for x in grid]
        ys = tuple(r if r < min(peak, machine["bandwidth"] * x) else None for x, r in zip(grid, rates))
        if any(y is not None for y in ys):
            out.append(PowerCurve(roof, f.power_limit, bool(machine.get("power_limit_what_if")), tuple(grid), ys,
                                  rates[-1]))
    return out
