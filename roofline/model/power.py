"""The power roof as pure functions: the rate a kernel can sustain under the board's power limit (SI: W, J, s).

Choi, Dukhan, Liu and Vuduc, "Algorithmic time, energy, and power on candidate HPC compute building blocks" (IPDPS
2014) put a power cap into the roofline: with the energy model of Choi et al. (IPDPS 2013),
E = W·ε_flop + Q·ε_mem + π0·T, a kernel's mean power is π0 + (W·ε_flop + Q·ε_mem) / T, and a board held at P watts
cannot run it faster than

    T_power = (W·ε_flop + Q·ε_mem) / (P − π0)

so at intensity I the power-limited rate is (P − π0) / (ε_flop + ε_mem / I), and a kernel's attainable rate is the
least of its roof, I × bandwidth and that. The GPU meets the cap by lowering its SM clock (the H200's BF16 GEMM ran
at 1.46 GHz and 699 W, docs/measurements/h200-energy.md).

Which bandwidth the DRAM energy applies to. ε_mem is calibrate's copy: (P_copy − π0) / the rate the copy sustained
(4.2 TB/s on the H200, 88 % of the datasheet's 4.8 TB/s). No kernel moves DRAM bytes faster than that sustained
rate, so the memory never draws more than ε_mem × that rate: a copy at its full speed drew 641-648 W on a 700 W
board with its clock up. Charging ε_mem at the datasheet rate instead (588 W + 126 W idle = 714 W) would call every
streaming kernel power-bound at 4.69 TB/s, a power the memory never draws. So the bytes' power is
ε_mem × min(byte rate, sustained rate), the spec's `energy.dram_bandwidth` (the rate ε_mem was measured at; the
spec's bandwidth where it gives none), and the time above follows from solving for the least T at which
π0 + W·ε_flop / T + ε_mem·min(Q / T, sustained) ≤ P. Where the bytes stay under the sustained rate this is
Choi's formula exactly.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from roofline.model.types import MachineSpec


@dataclass(frozen=True)
class PowerFigures:
    """What the power roof of one roof needs: the limit and the spec's energy figures (SI)."""

    power_limit: float  # W, P
    idle_power: float  # W, π0
    eps_flop: float  # J/FLOP of the roof
    eps_mem: float  # J/B of DRAM
    memory_rate: float  # B/s, the most bytes per second the DRAM energy is charged at (see the module's docstring)


def power_figures(machine: MachineSpec, roof: str) -> PowerFigures | None:
    """The power roof's figures of `roof` on `machine`, or None when the spec lacks a power limit, an energy block
    or that roof's energy per FLOP (then there is no power roof: the time roofline alone)."""
    e = machine.energy
    if machine.power_limit is None or e is None or roof not in e.compute:
        return None
    rate = min(e.dram_bandwidth, machine.bandwidth) if e.dram_bandwidth else machine.bandwidth
    return PowerFigures(machine.power_limit, e.idle_power, e.compute[roof], e.dram, rate)


def power_limited_time(flops: float, bytes_: float, f: PowerFigures) -> float:
    """s: the least time W FLOPs and Q DRAM bytes can take without the mean power exceeding the limit."""
    budget = f.power_limit - f.idle_power  # > 0: the loader refuses an idle power at or above the limit
    choi = (flops * f.eps_flop + bytes_ * f.eps_mem) / budget
    if choi <= 0 or bytes_ <= 0 or bytes_ / choi <= f.memory_rate:
        return choi
    # The bytes would move faster than the DRAM sustains: they draw its full-speed power, the FLOPs get the rest.
    left = budget - f.eps_mem * f.memory_rate
    if left <= 0:  # the memory alone at full speed would exceed the limit: Choi's formula holds throughout
        return choi
    return flops * f.eps_flop / left


def power_limited_rate(ai: float, f: PowerFigures) -> float:
    """FLOP/s under the limit at intensity `ai` (FLOP/B > 0): the power roof's height, for charts;
    (P − π0) / (ε_flop + ε_mem / I) where the bytes stay under the sustained rate."""
    return ai / power_limited_time(ai, 1.0, f)


def power_at(rate: float, ai: float, f: PowerFigures) -> float:
    """W a kernel of intensity `ai` draws at `rate` FLOP/s, with the DRAM charged as power_limited_time does."""
    return f.idle_power + rate * f.eps_flop + f.eps_mem * min(rate / ai, f.memory_rate)


@dataclass(frozen=True)
class PowerRoof:
    """One kernel under the power roof (SI): the limit, the time and rate it allows, and the time roofline's
    figures without it, so a reader can judge a measured time against either ceiling."""

    power_limit: float  # W
    time: float  # s, power_limited_time
    flops: float | None  # FLOP/s, W / time; None for a kernel without FLOPs
    binds: bool  # the power roof is the lowest ceiling: the kernel is power-bound
    time_roof_sol_time: float  # s, the time roofline's speed-of-light time (datasheet roofs, no cap)
    time_roof_bound: str  # its bound without the cap
    memory_rate: float  # B/s, the DRAM rate the bytes' energy is charged at most

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def kernel_power_roof(machine: MachineSpec, roof: str, flops: float, bytes_: float, sol_time: float,
                      bound: str) -> PowerRoof | None:
    """The kernel's power roof against its time roofline's (sol_time, bound), or None without the figures."""
    f = power_figures(machine, roof)
    if f is None:
        return None
    t = power_limited_time(flops, bytes_, f)
    return PowerRoof(power_limit=f.power_limit, time=t, flops=flops / t if flops and t > 0 else None,
                     binds=t > sol_time, time_roof_sol_time=sol_time, time_roof_bound=bound,
                     memory_rate=f.memory_rate)
