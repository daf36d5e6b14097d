"""The energy roofline as pure functions: a spec's energy figures and a kernel's work in, joules and watts out (SI).

The model is Choi, Bedard, Fowler and Vuduc, "A Roofline Model of Energy" (IPDPS 2013):

    E = W·ε_flop + Q·ε_mem + π0·T

W FLOPs at ε_flop J each (the spec's energy.compute of the kernel's roof), Q DRAM bytes at ε_mem J each
(energy.memory.dram), and the constant power π0 (energy.idle_power) drawn for the time T the work takes. Here T is the
speed-of-light time (the time roofline's max of the compute, memory and link times), so E is the least energy the
kernel can take on this GPU: its energy ceiling.

- energy balance B_ε = ε_mem / ε_flop: the intensity where the FLOPs' energy equals the bytes'. Above it a kernel's
  dynamic energy is mostly FLOPs (compute-energy-bound), below it mostly bytes (memory-energy-bound). It need not
  sit at the time ridge B_τ = peak / bandwidth; a kernel between the two is bound differently in time and energy.
- effective balance B̂_ε = ε̂_mem / ε̂_flop with the constant power folded into each operation, ε̂ = ε + π0·τ
  (τ_flop = 1 / peak, τ_mem = 1 / bandwidth), as Choi et al. do: what a byte and a FLOP cost once the idle power
  they keep on is charged to them.
- the energy roofline ("arch line" in FLOP/J): FLOPs per joule at intensity I,
  W / E = 1 / (ε_flop + ε_mem / I + π0·max(τ_flop, τ_mem / I)).
- power at the time ceiling: E / T at intensity I, (ε_flop·W + ε_mem·Q) / T + π0, highest at the time ridge.
  Where this is above the GPU's limit the GPU lowers its clock instead: the power roof (roofline.model.power).

Energy figures are the increment over idle of each FLOP and byte; docs/energy.md says how calibrate measures them.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from roofline.model.types import EnergySpec, MachineSpec


def energy_balance(eps_mem: float, eps_flop: float) -> float:
    """FLOP/B where a FLOP's energy times the intensity equals a byte's: B_ε = ε_mem / ε_flop."""
    return eps_mem / eps_flop


def effective_balance(eps_mem: float, eps_flop: float, idle_power: float, peak: float, bandwidth: float) -> float:
    """B̂_ε = (ε_mem + π0 / bandwidth) / (ε_flop + π0 / peak): the balance with the constant power charged to each
    operation at the rate the time roofline allows."""
    return (eps_mem + idle_power / bandwidth) / (eps_flop + idle_power / peak)


def minimum_energy(flops: float, bytes_: float, sol_time: float, eps_flop: float, eps_mem: float,
                   idle_power: float) -> float:
    """J: E = W·ε_flop + Q·ε_mem + π0·T at the speed-of-light time T."""
    return flops * eps_flop + bytes_ * eps_mem + idle_power * sol_time


def flops_per_joule(ai: float, eps_flop: float, eps_mem: float, idle_power: float, peak: float,
                    bandwidth: float) -> float:
    """The energy roofline at intensity `ai` (FLOP/B > 0): the most FLOPs one joule buys, FLOP/J."""
    return 1.0 / (eps_flop + eps_mem / ai + idle_power * max(1.0 / peak, 1.0 / (ai * bandwidth)))


def power_at_ceiling(ai: float, eps_flop: float, eps_mem: float, idle_power: float, peak: float,
                     bandwidth: float) -> float:
    """W drawn by a kernel of intensity `ai` running at the time ceiling (Choi's power line), no cap."""
    time_per_flop = max(1.0 / peak, 1.0 / (ai * bandwidth))
    return (eps_flop + eps_mem / ai) / time_per_flop + idle_power


def roof_energy(machine: MachineSpec, roof: str) -> tuple[EnergySpec, float] | None:
    """(the spec's energy block, ε_flop of `roof`) when the spec gives both, else None: no energy figures."""
    e = machine.energy
    if e is None or roof not in e.compute:
        return None
    return e, e.compute[roof]


@dataclass(frozen=True)
class KernelEnergy:
    """One kernel on the energy roofline (SI: J, W, FLOP/B, FLOP/J)."""

    min_energy: float  # J, W·ε_flop + Q·ε_mem + π0·T_sol
    flop_energy: float  # J, W·ε_flop
    memory_energy: float  # J, Q·ε_mem (DRAM)
    idle_energy: float  # J, π0·T_sol
    energy_balance: float  # FLOP/B, ε_mem / ε_flop
    effective_balance: float  # FLOP/B, ε̂_mem / ε̂_flop
    energy_bound: str  # "memory" or "compute": which of the FLOPs' and the bytes' energy is larger
    time_bound: str  # the time roofline's bound, repeated so a reader sees both
    differs: bool  # bound differently in energy than in time
    flops_per_joule: float | None  # FLOP/J at the minimum energy; None for a kernel without FLOPs
    bytes_per_joule: float | None  # B/J likewise
    power: float  # W, min_energy / sol_time: the mean power at the ceiling
    idle_power: float  # W, π0 (the spec's)
    eps_flop: float  # J/FLOP of the kernel's roof
    eps_mem: float  # J/B of DRAM

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def kernel_energy(machine: MachineSpec, roof: str, flops: float, bytes_: float, sol_time: float,
                  time_bound: str) -> KernelEnergy | None:
    """A kernel's energy figures from the spec's, or None when the spec has none for its roof."""
    found = roof_energy(machine, roof)
    if found is None:
        return None
    e, eps_flop = found
    eps_mem, idle = e.dram, e.idle_power
    flop_j, mem_j, idle_j = flops * eps_flop, bytes_ * eps_mem, idle * sol_time
    total = flop_j + mem_j + idle_j
    # Equal energies (or a kernel with neither) count as memory-bound, as the time roofline's ridge does.
    energy_bound = "compute" if flop_j > mem_j else "memory"
    time_kind = time_bound if time_bound in ("memory", "compute") else None
    return KernelEnergy(
        min_energy=total, flop_energy=flop_j, memory_energy=mem_j, idle_energy=idle_j,
        energy_balance=energy_balance(eps_mem, eps_flop),
        effective_balance=effective_balance(eps_mem, eps_flop, idle, machine.roofs[roof], machine.bandwidth),
        energy_bound=energy_bound, time_bound=time_bound, differs=time_kind is not None and time_kind != energy_bound,
        flops_per_joule=flops / total if flops and total > 0 else None,
        bytes_per_joule=bytes_ / total if bytes_ and total > 0 else None,
        power=total / sol_time if sol_time > 0 else idle,
        idle_power=idle, eps_flop=eps_flop, eps_mem=eps_mem,
    )


def energy_summary(machine: MachineSpec) -> dict[str, Any] | None:
    """The machine's energy block for an analysis or results document (SI), with each roof's balance points and
    the power at its time ridge; None when the spec has none."""
    e = machine.energy
    if e is None:
        return None
    roofs = {}
    for roof, eps in e.compute.items():
        peak, bw = machine.roofs[roof], machine.bandwidth
        ridge = peak / bw
        roofs[roof] = {"eps_flop": eps, "energy_balance": energy_balance(e.dram, eps),
                       "effective_balance": effective_balance(e.dram, eps, e.idle_power, peak, bw),
                       # The arch line's limit at infinite intensity: no bytes, the roof's FLOPs and idle power.
                       "peak_flops_per_joule": 1.0 / (eps + e.idle_power / peak),
                       "power_at_ridge": power_at_ceiling(ridge, eps, e.dram, e.idle_power, peak, bw)}
    return {"idle_power": e.idle_power, "memory": dict(e.memory), "compute": dict(e.compute), "inputs": e.inputs,
            "source": e.source, "roofs": roofs,
            **({"dram_bandwidth": e.dram_bandwidth} if e.dram_bandwidth else {})}
