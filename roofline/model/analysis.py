"""The roofline model as pure functions: machine + workload in, figures in SI base units out.

The analysis document (roofline/analysis/v1) is defined here; its history:
  v1  first version: schema, machine (id, name, bandwidth, latency, bytes_in_flight, resident_threads, roofs),
      kernels (the fields of KernelAnalysis). `bytes` is DRAM traffic. Added within v1 (older readers ignore it,
      older files simply lack it): a kernel's "traffic", {level: {"bytes", "intensity"}} for each cache level
      (l1, l2) its descriptor gives, intensity = flops / that level's bytes (null when those bytes are 0); {} when
      none is given; the machine's "caches", {level: {size, bandwidth, latency}} with the figures its spec gives,
      so a results file carries what the hierarchical chart draws. A kernel's "links", {link: {"bytes",
      "bandwidth", "time", "intensity"}} for each interconnect link its descriptor sends bytes over (bandwidth is
      the spec's one-direction roof, time = bytes / bandwidth); {} when none. Such a kernel's sol_time is the
      largest of its compute, memory and link times, and its bound "interconnect (nvlink)" when a link's is.
      Where the spec has an energy block (and a figure for the kernel's roof), a kernel's "energy" (the fields of
      roofline.model.energy.KernelEnergy: min_energy J, its flop/memory/idle parts, energy_balance and
      effective_balance FLOP/B, energy_bound, differs, flops_per_joule, bytes_per_joule, power W) and the
      machine's "energy" (roofline.model.energy.energy_summary); absent otherwise.
      The power roof (roofline.model.power; Choi et al., IPDPS 2014), where the spec has a power_limit and an energy
      figure for the kernel's roof: a kernel's "power_roof" (the fields of PowerRoof: power_limit W, time s, flops
      FLOP/s, binds, time_roof_sol_time s and time_roof_bound, the time roofline's figures without the cap,
      memory_rate B/s), absent otherwise. Where it binds, bound reads "power", sol_time is its time and
      attainable_flops flops / sol_time. The machine's "power_limit_what_if": true when `--power-limit` replaced the
      spec's limit (absent otherwise).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Mapping

from roofline.errors import InputError
from roofline.model.energy import KernelEnergy, energy_summary, kernel_energy
from roofline.model.power import PowerRoof, kernel_power_roof
from roofline.model.types import KernelDescriptor, MachineSpec, Workload

ANALYSIS_SCHEMA = "roofline/analysis/v1"


def ridge_point(peak_flops: float, bandwidth: float) -> float:
    """Machine balance in FLOP/B: below it a kernel is memory-bound."""
    return peak_flops / bandwidth


def intensity(flops: float, bytes_: float) -> float:
    return flops / bytes_


def attainable(ai: float, peak_flops: float, bandwidth: float) -> float:
    return min(peak_flops, ai * bandwidth)


def sol_time(flops: float, bytes_: float, peak_flops: float, bandwidth: float) -> float:
    """Speed-of-light time: the larger of the compute and memory times."""
    return max(flops / peak_flops, bytes_ / bandwidth)


def timed_elsewhere(flops: float, bytes_: float, time: float, peak: float, machine: MachineSpec,
                    compute_time: float | None = None) -> dict[str, Any]:
    """The analysis and measured fields of one launch timed by another tool (ncu, a profiler trace): one run of
    `time` seconds, judged against `peak` and the machine's bandwidth. `compute_time` replaces flops / peak where
    the work is spread over several roofs (ncu's placement)."""
    bw = machine.bandwidth
    ai, ridge = intensity(flops, bytes_), ridge_point(peak, bw)
    memory_time = bytes_ / bw
    compute_time = flops / peak if compute_time is None else compute_time
    sol = max(memory_time, compute_time)
    return {"flops": flops, "bytes": bytes_, "intensity": ai, "peak_flops": peak, "bandwidth": bw, "ridge": ridge,
            "bound": "memory" if ai < ridge else "compute", "attainable_flops": attainable(ai, peak, bw),
            "memory_time": memory_time, "compute_time": compute_time, "sol_time": sol,
            "latency_bound": bytes_ < machine.bytes_in_flight, "time_median": time, "time_min": time,
            "time_max": time, "repeats": 1, "achieved_bandwidth": bytes_ / time, "achieved_flops": flops / time,
            "fraction_of_ceiling": sol / time}


@dataclass(frozen=True)
class StageAnalysis:
    name: str
    flops: float
    bytes: float
    sol_time: float


@dataclass(frozen=True)
class LevelTraffic:
    """The bytes a kernel requests at one cache level and its intensity there (the hierarchical roofline)."""

    bytes: float
    intensity: float | None  # None where the kernel requests nothing at that level (JSON has no infinity)


def level_traffic(flops: float, traffic: Mapping[str, float]) -> dict[str, LevelTraffic]:
    """Per-level bytes and intensity, in the order the descriptor gives the levels."""
    return {level: LevelTraffic(b, intensity(flops, b) if b else None) for level, b in traffic.items()}


def traffic_fields(flops: float, traffic: Mapping[str, float]) -> dict[str, dict[str, float | None]]:
    """The JSON form of level_traffic: {level: {"bytes", "intensity"}}; it needs no machine."""
    return {level: asdict(t) for level, t in level_traffic(flops, traffic).items()}


@dataclass(frozen=True)
class LinkTraffic:
    """The bytes a kernel sends over one interconnect link, the link's one-direction roof and the time they take."""

    bytes: float
    bandwidth: float  # B/s, one direction (a ring sends and receives at once, each at this rate)
    time: float
    intensity: float | None  # FLOPs per byte over the link; None when nothing is sent


def link_traffic(machine: MachineSpec, work: Workload) -> dict[str, LinkTraffic]:
    """Per link the descriptor names: its bytes against the spec's link roof. A spec without that link cannot bound
    the kernel, which is an input error naming both."""
    out = {}
    for link, b in work.interconnect.items():
        roof = machine.interconnect.get(link)
        if roof is None:
            raise InputError(f"kernel '{work.name}' sends bytes over {link}, and {machine.id} gives no "
                             f"interconnect.{link} bandwidth (it gives: {', '.join(machine.interconnect) or 'none'})")
        out[link] = LinkTraffic(b, roof.per_direction, b / roof.per_direction, intensity(work.flops, b) if b else None)
    return out


def lacks(machine: MachineSpec, d: KernelDescriptor) -> str | None:
    """What a kernel needs that the spec does not give ('the bf16_tensor roof', 'interconnect.nvlink'), or None:
    such a kernel is skipped on that machine, by analyze and measure alike."""
    if d.roof not in machine.roofs:
        return f"the {d.roof} roof"
    missing = [link for link in d.interconnect if link not in machine.interconnect]
    return f"interconnect.{missing[0]}" if missing else None


@dataclass(frozen=True)
class KernelAnalysis:
    name: str
    params: dict[str, int | float]
    dtype: str
    roof: str
    launches: int
    stages: list[StageAnalysis]
    flops: float
    bytes: float
    intensity: float
    peak_flops: float
    bandwidth: float
    ridge: float
    bound: str
    attainable_flops: float
    memory_time: float
    compute_time: float
    sol_time: float
    access_bytes: float
    threads_needed: float
    latency_bound: bool
    traffic: dict[str, LevelTraffic] = field(default_factory=dict)
    links: dict[str, LinkTraffic] = field(default_factory=dict)
    energy: KernelEnergy | None = None  # the energy roofline (roofline.model.energy), where the spec has figures
    power_roof: PowerRoof | None = None  # the power roof (roofline.model.power), where the spec has the figures

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        for key in ("energy", "power_roof"):  # a spec without energy figures writes what it always wrote
            if out[key] is None:
                del out[key]
        return out


def machine_summary(machine: MachineSpec) -> dict[str, Any]:
    return {
        "id": machine.id,
        "name": machine.name,
        "bandwidth": machine.bandwidth,
        "latency": machine.latency,
        "bytes_in_flight": machine.bytes_in_flight,
        "resident_threads": machine.resident_threads,
        "roofs": dict(machine.roofs),
        "caches": {level: {k: v for k, v in (("size", c.size), ("bandwidth", c.bandwidth), ("latency", c.latency))
                           if v is not None} for level, c in machine.caches.items()},
        **({"energy": energy} if (energy := energy_summary(machine)) is not None else {}),
        "power_limit": machine.power_limit,  # W, the board's; None where the spec gives none
    }


def analyze(machine: MachineSpec, work: Workload) -> KernelAnalysis:
    if work.roof not in machine.roofs:
        raise InputError(
            f"kernel '{work.name}' needs the {work.roof} roof, which {machine.id} does not have "
            f"(it has {', '.join(machine.roofs)})"
        )
    peak = machine.roofs[work.roof]
    bw = machine.bandwidth
    ai = intensity(work.flops, work.bytes)
    ridge = ridge_point(peak, bw)
    memory_time = work.bytes / bw
    compute_time = work.flops / peak
    links = link_traffic(machine, work)
    link_name, link_time = max(((k, t.time) for k, t in links.items()), key=lambda kt: kt[1], default=("", 0.0))
    link_bound = link_time > max(memory_time, compute_time)
    sol = max(memory_time, compute_time, link_time)
    bound = f"interconnect ({link_name})" if link_bound else ("memory" if ai < ridge else "compute")
    attain = work.flops / sol if link_bound else attainable(ai, peak, bw)
    power = kernel_power_roof(machine, work.roof, work.flops, work.bytes, sol, bound)
    if power is not None and power.binds:  # the board's power limit is the lowest ceiling (Choi et al. 2014)
        sol, bound, attain = power.time, "power", work.flops / power.time
    return KernelAnalysis(
        name=work.name,
        params=dict(work.params),
        dtype=work.dtype,
        roof=work.roof,
        launches=work.launches,
        stages=[StageAnalysis(s.name, s.flops, s.bytes, sol_time(s.flops, s.bytes, peak, bw)) for s in work.stages],
        flops=work.flops,
        bytes=work.bytes,
        intensity=ai,
        peak_flops=peak,
        bandwidth=bw,
        ridge=ridge,
        bound=bound,
        attainable_flops=attain,
        memory_time=memory_time,
        compute_time=compute_time,
        sol_time=sol,
        access_bytes=work.access_bytes,
        threads_needed=machine.bytes_in_flight / work.access_bytes,
        latency_bound=work.bytes < machine.bytes_in_flight,
        traffic=level_traffic(work.flops, work.traffic),
        links=links,
        energy=kernel_energy(machine, work.roof, work.flops, work.bytes, sol, bound),
        power_roof=power,
    )


def analysis_document(machine: MachineSpec, kernels: list[KernelAnalysis],
                      power_limit_what_if: bool = False) -> dict[str, Any]:
    """The analysis JSON contract (roofline/analysis/v1) that plot and report read. `power_limit_what_if`: the
    machine's power_limit is the user's (`--power-limit`), not its datasheet's."""
    summary = machine_summary(machine)
    if power_limit_what_if:
        summary["power_limit_what_if"] = True
    return {
        "schema": ANALYSIS_SCHEMA,
        "machine": summary,
        "kernels": [k.to_dict() for k in kernels],
    }
