"""Validated, immutable model objects. Loaders build them; analysis reads them; nothing here does I/O."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Mapping

from roofline.model.expr import Expr

# Compute roofs a spec may name. Dense figures only: never the 2:4-sparse ones, which no dense kernel reaches.
ROOF_NAMES = (
    "fp64",
    "fp64_tensor",
    "fp32",
    "fp16",
    "bf16",
    "tf32_tensor",
    "fp16_tensor",
    "bf16_tensor",
    "fp8_tensor",
    "int8_tensor",
    "fp4_tensor",
    "int4_tensor",
)

# Bytes per element for the dtypes a descriptor may name.
ITEMSIZE = {
    "float64": 8,
    "float32": 4,
    "float16": 2,
    "bfloat16": 2,
    "float8_e4m3": 1,
    "float8_e5m2": 1,
    "int64": 8,
    "int32": 4,
    "int16": 2,
    "int8": 1,
    "uint8": 1,
    "complex64": 8,
    "complex128": 16,
}

CACHE_LEVELS = ("l1", "shared", "l2", "l3")

# Levels a descriptor's `traffic:` may give bytes for. DRAM is not one of them: DRAM traffic is `bytes` itself.
TRAFFIC_LEVELS = ("l1", "l2")
# What a descriptor that leaves them out gets: a minimal descriptor is name, flops and bytes.
DEFAULT_PATTERN = "custom"
NO_DTYPE = "unspecified"  # no dtype given: formulas may not use itemsize, and the kernel cannot be measured
DEFAULT_ACCESS_BYTES = 4  # one 32-bit load per thread, for Little's Law, when neither dtype nor access_bytes says


@dataclass(frozen=True)
class Source:
    cite: str
    fields: tuple[str, ...]


@dataclass(frozen=True)
class CacheLevel:
    size: float | None = None  # B
    bandwidth: float | None = None  # B/s
    latency: float | None = None  # s
    # (working set B, read bandwidth B/s) by increasing working set, as calibrate measures it for the L2: where the
    # plateau ends and the bandwidth falls to DRAM's. Empty for a datasheet spec.
    curve: tuple[tuple[float, float], ...] = ()


LINK_NAMES = ("nvlink", "pcie", "network")


@dataclass(frozen=True)
class ModelFigures:
    """The machine figures of the first-principles size model (roofline.sizes.predict), from the spec's `model:`
    block (what `roofline calibrate` measures); None or empty where the spec leaves one out, and the model then states
    the default it assumes. SI base units."""

    launch_floor: float | None = None  # s: L, an empty kernel's turnaround in a stream (graph replay)
    round_trip: float | None = None  # s: λk, a small streaming launch on every SM, beyond L
    reduction: float | None = None  # s: R, one block-wide reduction that no load overlaps
    sm_bandwidth: float | None = None  # B/s: one SM streaming alone (one block)
    block_interval: float | None = None  # s: how often one SM starts a new block (block dispatch)
    # (active SMs, aggregate B/s) by increasing SM count: k blocks, one per SM, streaming a large buffer
    sm_curve: tuple[tuple[int, float], ...] = ()

    def __bool__(self) -> bool:
        return any(v is not None for v in (self.launch_floor, self.round_trip, self.reduction, self.sm_bandwidth,
                                           self.block_interval)) \
            or bool(self.sm_curve)


@dataclass(frozen=True)
class Link:
    """A GPU's link to its peers (nvlink), its host (pcie) or other nodes (network: the fabric between nodes, per
    GPU, as `roofline fleet link-roofs` writes it), as the datasheet prints it: `bandwidth` is both directions
    together (NVIDIA's 900 GB/s NVLink 4 is 450 GB/s each way), so one direction's roof is half of it."""

    bandwidth: float  # B/s, both directions summed
    links: int | None = None  # NVLink links per GPU; PCIe lanes; network ports

    @property
    def per_direction(self) -> float:
        return self.bandwidth / 2.0


# The levels an `energy` block gives a per-byte energy for: DRAM (required) and the L2 where it was measured.
ENERGY_MEMORY_LEVELS = ("dram", "l2")
# What data the energy figures were measured on. Power depends on the data: the same FP16 GEMM drew 377 W on
# all-ones matrices and 688 W on random normal ones on an H200 (issue 33), so a figure must say which it was.
ENERGY_INPUTS = ("random", "application", "constant")


@dataclass(frozen=True)
class EnergySpec:
    """The energy roofline's figures (Choi et al., IPDPS 2013; docs/energy.md), SI inside: the GPU's constant power
    while a kernel runs (pi0, W), the energy per byte moved from each memory level (J/B) and per FLOP on each roof
    (J/FLOP), each the increment over idle."""

    idle_power: float  # W
    memory: Mapping[str, float]  # level (ENERGY_MEMORY_LEVELS) -> J/B; "dram" is always there
    compute: Mapping[str, float]  # roof name -> J/FLOP
    source: str
    inputs: str  # one of ENERGY_INPUTS
    # B/s, the DRAM rate memory.dram was measured at (calibrate's copy): the most bytes per second its energy is
    # charged at by the power roof (roofline.model.power); None where the spec does not say
    dram_bandwidth: float | None = None

    @property
    def dram(self) -> float:
        return self.memory["dram"]


@dataclass(frozen=True)
class MachineSpec:
    """A GPU as the roofline model sees it. All figures in SI base units (B/s, s, B, FLOP/s, Hz)."""

    id: str
    name: str
    bandwidth: float
    latency: float
    roofs: Mapping[str, float]
    capacity: float | None = None
    sm_count: int | None = None
    max_threads_per_sm: int | None = None
    caches: Mapping[str, CacheLevel] = field(default_factory=dict)
    clocks: Mapping[str, float] = field(default_factory=dict)
    aliases: tuple[str, ...] = ()
    device_names: tuple[str, ...] = ()
    architecture: str | None = None
    compute_capability: str | None = None
    notes: str | None = None
    sources: tuple[Source, ...] = ()
    measured: bool = False
    derived: bool = False
    measurement: Mapping[str, str] = field(default_factory=dict)
    path: Path | None = None
    interconnect: Mapping[str, Link] = field(default_factory=dict)  # nvlink, pcie, network
    memory_bus_width: int | None = None  # bits; with memory_clock, a cross-check of bandwidth (roofline.model.invariants)
    memory_clock: float | None = None  # Hz, the spec's memory.clock (bandwidth = bus / 8 x clock x 2)
    model: ModelFigures = field(default_factory=ModelFigures)  # the size model's machine figures (`model:` block)
    energy: EnergySpec | None = None  # the energy roofline's figures, where the spec gives them
    power_limit: float | None = None  # W, the board's power limit (TDP) as its datasheet gives it

    @property
    def bytes_in_flight(self) -> float:
        """Little's Law: the bytes that must be outstanding to sustain the bandwidth."""
        return self.bandwidth * self.latency

    @property
    def resident_threads(self) -> int | None:
        if self.sm_count is None or self.max_threads_per_sm is None:
            return None
        return self.sm_count * self.max_threads_per_sm


@dataclass(frozen=True)
class StageSpec:
    """One launch of a pipeline; its bytes are DRAM traffic like the kernel's."""

    name: str
    flops: Expr
    bytes: Expr
    # this launch's bytes in flight per thread where it differs from the kernel's (a loop whose loads wait on a
    # serial chain keeps one access in flight, where a streaming pass has all of its share)
    bytes_per_thread: Expr | None = None


@dataclass(frozen=True)
class LaunchGeometry:
    """How a kernel launches, for the first-principles size model (roofline.sizes.predict): formulas over the params,
    `itemsize` and `sm_count`; None where the descriptor leaves a field out (predict derives a default)."""

    threads: Expr | None = None  # threads per launch
    bytes_per_thread: Expr | None = None  # bytes one thread has in flight at once
    launches: int | None = None  # launches in series, for a kernel without stages (a reduction's second pass)
    reductions: int | None = None  # block-wide reductions on the critical path, in series, over all launches
    blocks: Expr | None = None  # blocks of the main launch (each stage's, for a pipeline): the SMs it engages

    def __bool__(self) -> bool:
        return any(v is not None for v in (self.threads, self.bytes_per_thread, self.launches, self.reductions,
                                           self.blocks))


@dataclass(frozen=True)
class KernelDescriptor:
    """A kernel as written in its YAML file: formulas not yet evaluated. `bytes` (and each stage's) is DRAM traffic,
    the roofline's denominator; `traffic` holds what the kernel requests from the caches, for the hierarchical
    roofline."""

    name: str
    description: str
    pattern: str
    dtype: str
    params: Mapping[str, Expr]
    roof: str
    flops: Expr | None = None
    bytes: Expr | None = None
    stages: tuple[StageSpec, ...] = ()
    access_bytes: Expr | None = None
    implementation: Path | None = None
    path: Path | None = None
    traffic: Mapping[str, Expr] = field(default_factory=dict)  # level (TRAFFIC_LEVELS) -> bytes requested there
    family: Path | None = None  # module whose names the implementation falls back on (docs/kernel-interface.md)
    test_params: Mapping[str, Expr] = field(default_factory=dict)  # small, awkward sizes for the GPU tests
    geometry: LaunchGeometry = field(default_factory=LaunchGeometry)  # threads, bytes in flight, launches
    interconnect: Mapping[str, Expr] = field(default_factory=dict)  # link (LINK_NAMES) -> bytes one GPU sends on it
    values: Mapping[str, tuple[float, ...]] = field(default_factory=dict)  # parameter -> the only values it may take

    @property
    def itemsize(self) -> int | None:
        """Bytes per element of the dtype; None when the descriptor gives no dtype."""
        return ITEMSIZE.get(self.dtype)


@dataclass(frozen=True)
class Stage:
    name: str
    flops: float
    bytes: float


@dataclass(frozen=True)
class Workload:
    """A descriptor evaluated at concrete parameters: the FLOPs and bytes the model counts."""

    name: str
    pattern: str
    dtype: str
    roof: str
    params: Mapping[str, int | float]
    flops: float
    bytes: float
    access_bytes: float
    stages: tuple[Stage, ...] = ()
    traffic: Mapping[str, float] = field(default_factory=dict)  # bytes at other levels than DRAM, where given
    declared_launches: int | None = None  # the descriptor's `launches` (a kernel without stages)
    interconnect: Mapping[str, float] = field(default_factory=dict)  # link -> bytes one GPU sends over it

    @property
    def launches(self) -> int:
        return len(self.stages) or self.declared_launches or 1
