"""Physical invariants: figures no NVIDIA GPU can produce, checked wherever a figure enters the tool.

Why: `calibrate` once wrote an L2 bandwidth of 11.07 PB/s (330x its own L1 figure) into a measured spec, and every
command accepted it. A ceiling is only worth drawing if it is physically possible, so two kinds of checks live here,
pure (no I/O, no device) and in SI units:

- `check_spec(spec)`: a MachineSpec against itself (hierarchy order, per-SM limits, latency ranges, roof families).
  A `hard` violation means the spec cannot describe a real GPU (the loader refuses it, exit 2); a `soft` one means a
  figure disagrees with its family or with the bus it is derived from (a warning naming the field).
- `impossible_figure(field, value, context)` and the per-kind functions under it: one measured figure against the
  bounds of the GPU it was measured on (its SMs, the SM clock observed during the run, the datasheet, the other
  figures of the same run). They return the reason a figure is impossible, or None; the caller marks it FAILED.

- `PLAUSIBLE`: each field's plausible range on its own (a clock, a bandwidth, a cache size, FLOP per SM per clock),
  whatever the other figures say: a 1.41 THz boost clock makes a 19.5 PFLOP/s FP32 roof look consistent with it, so
  the figures are also judged one by one. Outside its range is hard.

Fields are the dotted names a spec file uses (memory.bandwidth, caches.l2.bandwidth, compute.fp32, ...). A roof
that is not finite (a derived spec's unknown FP32 is +inf) is not a figure and is never checked.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

from roofline.model.types import MachineSpec
from roofline.model.units import format_flops, format_rate, format_si, format_small, format_time

Severity = Literal["hard", "soft"]
HARD: Severity = "hard"
SOFT: Severity = "soft"

# ---- the constants, in one table, each with why ------------------------------------------------------------------
#
# L1/shared: 32 banks x 4 B = 128 B per clock per SM, the most any NVIDIA SM from Volta to Blackwell loads from L1 or
# shared memory (Jia et al., "Dissecting the NVIDIA Volta GPU Architecture via Microbenchmarking", 2018, and the
# Turing/Ampere follow-ups; measured on the H200: 33.4 TB/s = 99.8 % of 132 SMs x 128 B x 1.98 GHz).
L1_BYTES_PER_CLOCK_PER_SM = 128
# CUDA-core FLOP per clock per SM, at most: 128 FP32 lanes x 2 (an FMA) on GA10x, Ada, Hopper and Blackwell; FP64
# never has more lanes than FP32; packed half2 doubles FP16/BF16 (A100 and H100 non-tensor FP16: 512 FLOP/clk/SM).
CUDA_CORE_FLOP_PER_CLOCK_PER_SM = {"fp32": 256, "fp64": 256, "fp16": 512, "bf16": 512}
# No NVIDIA GPU's SM clock exceeds this: the highest rated boost is 2.52 GHz (RTX 4090, L40S), and GPU Boost on
# GeForce cards runs about 10 % above the rating; 3.5 GHz leaves room for overclocks. Used only where no clock is known.
MAX_SM_CLOCK = 3.5e9  # Hz
# GPU Boost may run above the spec's rated boost clock when nothing observed the clock (an RTX 4090 rated 2.52 GHz
# is commonly seen at 2.7-2.8 GHz): a figure bound without an observed clock allows this much above clocks.boost.
UNOBSERVED_CLOCK_HEADROOM = 1.15
# A figure measured at an observed clock: the clock is sampled at the start and end of the timed window and may step
# between samples; 2 % covers one boost bin (15 MHz) at 1 GHz with margin, and no more.
OBSERVED_CLOCK_TOLERANCE = 1.02
# A spec's L1 bandwidth against SMs x 128 B x boost: 10 %, for a spec that measured its L1 above the rated boost.
SPEC_L1_TOLERANCE = 1.10
# A spec's CUDA-core roof against SMs x FLOP/clk x boost: datasheets round (66.9 vs 67 TFLOP/s), 2 % covers it.
SPEC_ROOF_TOLERANCE = 1.02
# A measured DRAM bandwidth against the datasheet: a streaming kernel reaches 85-93 % of it (H200 STREAM Triad 86.5 %,
# Dot 93.3 %); 5 % above is a timer or byte-count error, never the memory.
DRAM_DATASHEET_TOLERANCE = 1.05
# No GPU memory delivers this: the fastest announced is Rubin's HBM4 at about 22 TB/s (NVIDIA, 2026); B200 is 8 TB/s.
# Twice the fastest announced, so a new GPU is not refused but a unit slip (PB/s for TB/s) is.
DRAM_MAX_BANDWIDTH = 40e12  # B/s
# memory.bandwidth against memory.bus_width / 8 x memory.clock x 2 (double data rate): the bundled specs agree within
# 1 %; more than 10 % above means the bandwidth, the bus width or the clock was copied wrong (soft: some datasheets
# give the effective data rate as the clock, which only makes the derived figure larger).
DRAM_BUS_TOLERANCE = 1.10
# Load-to-use latency ranges (s), with why:
#   l1 (and shared): an L1 hit is 28-40 cycles from Volta to Hopper (15-40 ns at 1-2 GHz; H200 measured 16.2 ns);
#     under 1 ns is under two cycles, and over 100 ns is an L2 hit, not L1.
#   l2: 150-300 cycles (H200 141.7 ns near partition, 199-258 ns far; A100 146 ns); under 10 ns is an L1 hit, over
#     1 us is slower than DRAM on any GPU.
#   memory: 300-600 ns on every GPU here (H200 332 ns, A100 406 ns); under 50 ns would beat an L2 hit, over 5 us is a
#     pointer chase thrashing the TLB or a timer error.
LATENCY_RANGE = {"l1": (1e-9, 100e-9), "shared": (1e-9, 100e-9), "l2": (10e-9, 1000e-9), "memory": (50e-9, 5e-6)}
# Tensor roofs against fp16_tensor on the same arch (dense, FP32 accumulate): BF16 = FP16, FP8 = 2 x FP16,
# TF32 = FP16 / 2 (A100, H100/H200, L4, L40S, B200 datasheets; the bundled specs agree within 2.2 %).
TENSOR_FAMILY = {"bf16_tensor": 1.0, "fp8_tensor": 2.0, "tf32_tensor": 0.5}
# How far a roof may sit from its family before a warning: datasheet rounding stays within 2.2 %; a measured spec
# holds what cuBLAS reached per precision (H200: BF16 4-6 % above FP16, TF32 10 % above FP16 / 2), so it gets more.
FAMILY_TOLERANCE = 0.05
MEASURED_FAMILY_TOLERANCE = 0.25
# roof / (SMs x clock) is lanes x 2 FLOP per SM per clock, a power of two on every NVIDIA GPU (FP32 128 or 256,
# FP64 64 or 128, FP16 tensor 1024-4096); 3 % off a power of two means the SM count, the clock or the roof is wrong.
# The bundled specs sit within 0.5 %.
POWER_OF_TWO_TOLERANCE = 0.03

# ---- plausible ranges, field by field -----------------------------------------------------------------------------
#
# Each field's range is the smallest and largest real GPU in /work/shared/reference/hardware.md (T4 and L4 at the
# bottom, B200 at the top) widened for the next generations, so a new GPU loads and a unit slip (a bare 1555 for
# 1555 GB/s, MHz for GHz, PB/s for TB/s) does not. The same ranges are listed in README.md (Machine specs).
GHZ, GB, TB = 1e9, 1e9, 1e12
KIB, MIB, GIB, TIB = 2.0**10, 2.0**20, 2.0**30, 2.0**40


@dataclass(frozen=True)
class Plausible:
    """The range a figure of one kind of field can take on any GPU, in SI units, and why."""

    low: float
    high: float
    unit: str  # how to show it: Hz, B/s, B (binary prefixes), s, FLOP/s, FLOP/clk, or '' (a count)
    why: str


PLAUSIBLE: dict[str, Plausible] = {
    # SM clocks: the slowest quoted is the T4's 585 MHz base, the fastest rated boost 2.52 GHz (RTX 4090, L40S);
    # MAX_SM_CLOCK (3.5 GHz) leaves room for GPU Boost and overclocks.
    "sm_clock": Plausible(100e6, MAX_SM_CLOCK, "Hz", "an SM clock: 585 MHz (T4 base) to 2.52 GHz (RTX 4090 boost)"),
    # Memory clocks as drivers report them: 877.5 MHz (V100 HBM2) to 6.25 GHz (L4 GDDR6, half the 12.5 Gb/s data
    # rate); GDDR7 at 36-48 Gb/s per pin would report 18-24 GHz.
    "memory_clock": Plausible(100e6, 40 * GHZ, "Hz", "a memory clock: 877.5 MHz (V100 HBM2) to 6.25 GHz (L4)"),
    # DRAM: 300 GB/s (L4) to 7.7 TB/s (B200); DRAM_MAX_BANDWIDTH is twice the fastest announced (Rubin's HBM4, about
    # 22 TB/s). The floor keeps a laptop CPU's measured memory (10-100 GB/s) and refuses 1555 B/s.
    "memory_bandwidth": Plausible(1 * GB, DRAM_MAX_BANDWIDTH, "B/s",
                                  "DRAM: 300 GB/s (L4) to 7.7 TB/s (B200), twice the fastest GPU memory announced"),
    "memory_capacity": Plausible(256 * MIB, 16 * TIB, "B", "GPU memory: 16 GB (T4) to 180 GB (B200)"),
    "bus_width": Plausible(32, 32768, "", "a memory bus: 192 bits (L4) to 6016 bits (H200), 8192 (B200)"),
    # Per SM: 96 KB (T4) to 256 KB (H100, H200, B200) of L1/shared.
    "l1_size": Plausible(8 * KIB, 4 * MIB, "B", "L1/shared per SM: 96 KB (T4) to 256 KB (H100, B200)"),
    "l2_size": Plausible(256 * KIB, 2 * GIB, "B", "an L2: 4 MiB (T4) to 126 MB (B200)"),
    "l3_size": Plausible(1 * MIB, 16 * GIB, "B", "a cache beyond L2 (none of the GPUs here has one)"),
    # Aggregate cache bandwidth: the fastest L1 is about 37 TB/s (B200: 148 SMs x 128 B x 1.965 GHz).
    "cache_bandwidth": Plausible(1 * GB, 500 * TB, "B/s", "a cache: up to about 37 TB/s (B200 L1, all SMs)"),
    # CUDA-core roofs: 7.8 (V100 FP64) to 91.6 TFLOP/s (L40S FP32); tensor roofs up to 9 PFLOP/s (B200 FP4 dense).
    "cuda_core_roof": Plausible(1e9, 1e15, "FLOP/s", "a CUDA-core roof: 7.8 TFLOP/s (V100 FP64) to 91.6 TFLOP/s "
                                                     "(L40S FP32)"),
    "tensor_roof": Plausible(1e9, 200e15, "FLOP/s", "a tensor roof: 65 TFLOP/s (T4 FP16) to 9 PFLOP/s (B200 FP4)"),
    # roof / (SMs x the roof's clock): 4 (RTX 4090 FP64, 1:64) to 512 on CUDA cores (the upper bound per precision is
    # CUDA_CORE_FLOP_PER_CLOCK_PER_SM); tensor roofs 512 (RTX 4090 FP16) to about 32768 (B200 FP4 dense).
    "flop_per_clock": Plausible(1, 2.0**17, "FLOP/clk", "FLOP per SM per clock: 4 (RTX 4090 FP64) to 32768 "
                                                         "(B200 FP4)"),
    "sm_count": Plausible(1, 1024, "", "SMs: 40 (T4) to 148 (B200)"),
    "threads_per_sm": Plausible(64, 4096, "", "resident threads per SM: 1024 (T4) to 2048"),
    # Links both directions summed: a 1 Gb/s management network (125 MB/s) to NVLink 5 at 1.8 TB/s (B200).
    "link_bandwidth": Plausible(10e6, 100 * TB, "B/s", "a link: 1 Gb/s Ethernet to 1.8 TB/s (B200 NVLink 5)"),
    # Board power (results' gpu_state power_limit and power_mean): 70 W (T4) to 1 kW (B200 HGX), 1.2 kW in GB200.
    "power": Plausible(1.0, 5000.0, "W", "a GPU's power: 70 W (T4) to 1.2 kW (B200 in GB200)"),
    # Energy per byte moved (over idle): about 115 pJ/B from an H200's HBM3e on random data (issue 33: 583 W against
    # 101 W idle at 4.2 TB/s) to 513 pJ/B from a GTX 580's GDDR5 (Choi et al., IPDPS 2013); an L2 byte costs less.
    # pJ for nJ or fJ is 1000x out.
    "energy_per_byte": Plausible(0.1e-12, 5000e-12, "J/B", "moving a byte: about 115 pJ/B (H200 HBM3e, random data) "
                                                           "to 513 pJ/B (GTX 580 GDDR5), less from L2"),
    # Energy per FLOP (over idle): about 1 pJ on H200 FP16 tensor cores on random data (issue 33) to 212 pJ for a GTX
    # 580's FP64 (Choi et al. 2013); FP8/FP4 tensor cores go lower.
    "energy_per_flop": Plausible(0.01e-12, 1000e-12, "J/FLOP", "a FLOP: about 1 pJ (H200 FP16 tensor) to 212 pJ "
                                                              "(GTX 580 FP64)"),
}


# The hierarchy, nearest the SM first; memory is DRAM (the spec's memory block).
_CHAIN = ("l1", "l2", "l3", "memory")
_CUDA_CORE_ROOFS = tuple(CUDA_CORE_FLOP_PER_CLOCK_PER_SM)


@dataclass(frozen=True)
class Violation:
    """One invariant a spec breaks: the dotted field to blame, hard (impossible) or soft (suspect), what is wrong
    with the figures and the bound, and what to do."""

    field: str
    severity: Severity
    message: str
    fix: str

    def line(self) -> str:
        return f"{self.field}: {self.message}; {self.fix}"


@dataclass(frozen=True)
class FigureContext:
    """What is known about the GPU when one measured figure is judged. Every item is optional; a bound whose inputs
    are missing is not applied (or falls back as each function says)."""

    datasheet: MachineSpec | None = None  # the datasheet spec of this GPU
    sm_count: int | None = None  # SMs of the device measured (CUDA attribute); else the datasheet's
    sm_clock: float | None = None  # Hz, the SM clock observed during the figure's timed window
    dram_bandwidth: float | None = None  # B/s, DRAM bandwidth measured in the same run
    l1_bandwidth: float | None = None  # B/s, L1 bandwidth measured in the same run


# ---- spec invariants ---------------------------------------------------------------------------------------------


def check_spec(spec: MachineSpec) -> list[Violation]:
    """Every invariant the spec breaks, hard ones first, in a stable order."""
    found = [*_plausible(spec), *_energy_order(spec), *_hierarchy(spec), *_bandwidth_bounds(spec), *_latency_ranges(spec), *_compute(spec),
             *_dram_bus(spec)]
    return [v for v in found if v.severity == HARD] + [v for v in found if v.severity == SOFT]


def hard_violations(spec: MachineSpec) -> list[Violation]:
    return [v for v in check_spec(spec) if v.severity == HARD]


def soft_violations(spec: MachineSpec) -> list[Violation]:
    return [v for v in check_spec(spec) if v.severity == SOFT]


def _field(level: str, what: str) -> str:
    """The dotted spec field of a level's figure: memory.bandwidth, caches.l2.size; DRAM's size is capacity."""
    if level == "memory":
        return "memory.capacity" if what == "size" else f"memory.{what}"
    return f"caches.{level}.{what}"


def _level_value(spec: MachineSpec, level: str, what: str) -> float | None:
    if level == "memory":
        value = {"bandwidth": spec.bandwidth, "latency": spec.latency, "size": spec.capacity}[what]
    else:
        cache = spec.caches.get(level)
        value = getattr(cache, what) if cache is not None else None
    return value if value is not None and math.isfinite(value) and value > 0 else None


def _show(what: str, value: float) -> str:
    if what == "bandwidth":
        return format_rate(value)
    if what == "latency":
        return format_time(value)
    return format_si(value, "B", binary=True)


def show_plausible(value: float, unit: str) -> str:
    """A figure in the unit of its range, for messages: 1.41 THz, 1.56 kB/s, 50 MiB, 4 FLOP/clk, 1024."""
    if unit == "B":
        return format_si(value, "B", binary=True)
    if unit == "s":
        return format_time(value)
    if unit.startswith("J/"):
        return format_small(value, unit)
    if unit in ("", "FLOP/clk"):
        text = str(int(value)) if float(value).is_integer() and abs(value) < 1e9 else f"{value:.4g}"
        return text + (f" {unit}" if unit else "")
    return format_si(value, unit)


def outside(kind: str, value: float) -> str | None:
    """Why `value` is outside the plausible range of `kind` (a PLAUSIBLE key), or None when it is inside."""
    r = PLAUSIBLE[kind]
    if r.low <= value <= r.high:
        return None
    return (f"{show_plausible(value, r.unit)} is outside {show_plausible(r.low, r.unit)} to "
            f"{show_plausible(r.high, r.unit)}, the plausible range of {r.why}")


def _plausible_figures(spec: MachineSpec) -> list[tuple[str, str, float]]:
    """(field, PLAUSIBLE kind, value) of every figure the spec gives. A cache's measured curve is left
    out: its points are what a probe reached at each working set (calibrate bounds each as it measures)."""
    out: list[tuple[str, str, float]] = [("memory.bandwidth", "memory_bandwidth", spec.bandwidth)]
    if spec.capacity:
        out.append(("memory.capacity", "memory_capacity", spec.capacity))
    if spec.memory_bus_width:
        out.append(("memory.bus_width", "bus_width", spec.memory_bus_width))
    if spec.memory_clock:
        out.append(("memory.clock", "memory_clock", spec.memory_clock))
    # The clocks and SMs before the roofs: a clock in THz makes its roof look right, so the clock is named first.
    for name, value in spec.clocks.items():
        out.append((f"clocks.{name}", "memory_clock" if name == "memory" else "sm_clock", value))
    if spec.sm_count:
        out.append(("sm_count", "sm_count", spec.sm_count))
    if spec.max_threads_per_sm:
        out.append(("max_threads_per_sm", "threads_per_sm", spec.max_threads_per_sm))
    for roof, value in _finite_roofs(spec).items():
        out.append((f"compute.{roof}", "tensor_roof" if roof.endswith("_tensor") else "cuda_core_roof", value))
    for level, cache in spec.caches.items():
        if cache.size:
            out.append((f"caches.{level}.size", {"l2": "l2_size", "l3": "l3_size"}.get(level, "l1_size"), cache.size))
        if cache.bandwidth:
            out.append((f"caches.{level}.bandwidth", "cache_bandwidth", cache.bandwidth))
    for name, link in spec.interconnect.items():
        out.append((f"interconnect.{name}.bandwidth", "link_bandwidth", link.bandwidth))
    if spec.power_limit:
        out.append(("power_limit", "power", spec.power_limit))
    if spec.energy is not None:
        out.append(("energy.idle_power", "power", spec.energy.idle_power))
        out += [(f"energy.memory.{level}", "energy_per_byte", v) for level, v in spec.energy.memory.items()]
        out += [(f"energy.compute.{roof}", "energy_per_flop", v) for roof, v in spec.energy.compute.items()]
        if spec.energy.dram_bandwidth:
            out.append(("energy.dram_bandwidth", "memory_bandwidth", spec.energy.dram_bandwidth))
    return out


def _plausible(spec: MachineSpec) -> list[Violation]:
    """Each figure against its field's range on its own, then each roof's FLOP per SM per clock (a 1.41 THz clock
    and a 19.5 PFLOP/s FP32 roof agree with each other; neither agrees with any GPU)."""
    out = []
    for field, kind, value in _plausible_figures(spec):
        if (why := outside(kind, value)) is not None:
            out.append(Violation(field, HARD, why, "check the unit and the figure"))
    if spec.sm_count:
        for roof, value in _finite_roofs(spec).items():
            clock, clock_name = _roof_clock(spec, roof)
            if clock and not PLAUSIBLE["sm_clock"].low <= clock <= PLAUSIBLE["sm_clock"].high:
                continue  # the clock is refused on its own
            if clock and (why := outside("flop_per_clock", value / (spec.sm_count * clock))) is not None:
                out.append(Violation(f"compute.{roof}", HARD, f"{format_flops(value)} / ({spec.sm_count} SMs x "
                                     f"{clock_name} {format_si(clock, 'Hz')}): {why}",
                                     f"check compute.{roof}, sm_count and {clock_name}"))
    return out


def _energy_order(spec: MachineSpec) -> list[Violation]:
    """A byte from the L2 costs less than one from DRAM, which must also cross the L2 and the memory bus; and a GPU
    doing nothing draws less than its board's power limit (an idle 4,900 W on a 700 W board is a unit slip)."""
    e = spec.energy
    if e is None:
        return []
    out = []
    if spec.power_limit and e.idle_power >= spec.power_limit:
        out.append(Violation("energy.idle_power", HARD, f"{e.idle_power:,.0f} W is not below power_limit "
                             f"{spec.power_limit:,.0f} W: an idle GPU draws a fraction of its board's limit "
                             "(126 W of 700 W on an H200 SXM)", "check energy.idle_power and power_limit"))
    if "l2" not in e.memory or e.memory["l2"] < e.dram:
        return out
    return out + [Violation("energy.memory.l2", HARD, f"{format_small(e.memory['l2'], 'J/B')} is not below "
                      f"energy.memory.dram {format_small(e.dram, 'J/B')}: a DRAM byte also crosses the L2, so it "
                      "costs more",
                      "check both figures and their units")]


def _hierarchy(spec: MachineSpec) -> list[Violation]:
    """Down the hierarchy (L1, L2, L3, DRAM) bandwidth falls, size and latency grow. Of two levels out of order the
    lower cache is blamed (an L2 above L1 or below DRAM is an L2 figure gone wrong), or the cache when the other is
    DRAM. Sizes compare as the spec gives them: L1 per SM, L2 per GPU."""
    out = []
    for what, falls in (("bandwidth", True), ("size", False), ("latency", False)):
        present = [(lvl, v) for lvl in _CHAIN if (v := _level_value(spec, lvl, what)) is not None]
        for (upper, a), (lower, b) in zip(present, present[1:]):
            if (a < b) if falls else (a >= b):
                blamed, other = (lower, upper) if lower != "memory" else (upper, lower)
                if falls:
                    relation = "above" if blamed == lower else "below"
                else:
                    relation = "not above" if blamed == lower else "not below"
                out.append(Violation(
                    _field(blamed, what), HARD,
                    f"{_show(what, a if blamed == upper else b)} is {relation} {_field(other, what)} "
                    f"{_show(what, b if blamed == upper else a)}, but {what} must "
                    f"{'fall' if falls else 'grow'} from L1 to L2 to DRAM",
                    f"check the {what} of both levels (a unit slip, or a probe that measured the wrong level)"))
    return out


def l1_bandwidth_bound(sm_count: int, sm_clock: float) -> float:
    """SMs x 128 B per clock x clock: the most L1 (or shared memory) can deliver, B/s."""
    return sm_count * L1_BYTES_PER_CLOCK_PER_SM * sm_clock


def _clock_text(spec: MachineSpec) -> tuple[float, str]:
    boost = spec.clocks.get("boost")
    if boost:
        return boost, f"clocks.boost {format_si(boost, 'Hz')}"
    return MAX_SM_CLOCK, f"{format_si(MAX_SM_CLOCK, 'Hz')} (no clocks.boost: the fastest any SM runs)"


def _bandwidth_bounds(spec: MachineSpec) -> list[Violation]:
    out: list[Violation] = []  # DRAM's own range is PLAUSIBLE["memory_bandwidth"]
    if not spec.sm_count:
        return out
    clock, clock_text = _clock_text(spec)
    bound = l1_bandwidth_bound(spec.sm_count, clock) * SPEC_L1_TOLERANCE
    levels = ["l1", "shared"] + (["l2"] if _level_value(spec, "l1", "bandwidth") is None else [])
    for level in levels:
        value = _level_value(spec, level, "bandwidth")
        if value is not None and value > bound:
            out.append(Violation(
                _field(level, "bandwidth"), HARD,
                f"{format_rate(value)} is above {format_rate(bound)} = {spec.sm_count} SMs x "
                f"{L1_BYTES_PER_CLOCK_PER_SM} B/clk x {clock_text} x {SPEC_L1_TOLERANCE:g}, the most the SMs' L1 can "
                "deliver" + (", and every L2 byte passes through L1" if level == "l2" else ""),
                "check the figure and sm_count; a probe that reports this timed less work than it counted"))
    return out


def _latency_ranges(spec: MachineSpec) -> list[Violation]:
    out = []
    for level, (low, high) in LATENCY_RANGE.items():
        value = _level_value(spec, level, "latency")
        if value is not None and not low <= value <= high:
            out.append(Violation(_field(level, "latency"), HARD,
                                 f"{format_time(value)} is outside {format_time(low)} to {format_time(high)}, the "
                                 f"range of a {'DRAM' if level == 'memory' else level.upper()} load on any GPU",
                                 "check the unit (ns, not us) and the figure"))
    return out


def _finite_roofs(spec: MachineSpec) -> dict[str, float]:
    return {k: v for k, v in spec.roofs.items() if math.isfinite(v) and v > 0}


def _roof_clock(spec: MachineSpec, roof: str) -> tuple[float | None, str]:
    """The clock a datasheet quotes a roof at: clocks.tensor for tensor roofs when given, else clocks.boost. FP64
    tensor is quoted at the boost clock (H100 SXM: 67 TFLOP/s = 132 SMs x 256 FLOP/clk x 1.98 GHz, where the 1.83 GHz
    tensor clock would give 277 FLOP/clk, no power of two)."""
    if roof.endswith("_tensor") and roof != "fp64_tensor" and spec.clocks.get("tensor"):
        return spec.clocks["tensor"], "clocks.tensor"
    return spec.clocks.get("boost"), "clocks.boost"


def _compute(spec: MachineSpec) -> list[Violation]:
    out = []
    roofs = _finite_roofs(spec)
    if spec.sm_count:
        clock, clock_text = _clock_text(spec)
        for roof in _CUDA_CORE_ROOFS:
            value = roofs.get(roof)
            per_clock = CUDA_CORE_FLOP_PER_CLOCK_PER_SM[roof]
            bound = spec.sm_count * per_clock * clock * SPEC_ROOF_TOLERANCE
            if value is not None and value > bound:
                out.append(Violation(
                    f"compute.{roof}", HARD,
                    f"{format_flops(value)} is above {format_flops(bound)} = {spec.sm_count} SMs x {per_clock} "
                    f"FLOP/clk x {clock_text} x {SPEC_ROOF_TOLERANCE:g}, more than any NVIDIA SM issues",
                    "check the figure (a dense, not a sparse or tensor figure), sm_count and clocks.boost"))
        if not spec.measured:  # a measured roof is what a kernel reached, not lanes x clock
            out += _power_of_two(spec, roofs)
    out += _families(spec, roofs)
    return out


def _power_of_two(spec: MachineSpec, roofs: dict[str, float]) -> list[Violation]:
    out = []
    assert spec.sm_count
    for roof, value in roofs.items():
        clock, clock_name = _roof_clock(spec, roof)
        if not clock:
            continue
        rate = value / (spec.sm_count * clock)
        nearest = 2.0 ** round(math.log2(rate))
        if not _within(rate, nearest, POWER_OF_TWO_TOLERANCE):
            out.append(Violation(
                f"compute.{roof}", SOFT,
                f"{format_flops(value)} / ({spec.sm_count} SMs x {clock_name} {format_si(clock, 'Hz')}) = "
                f"{rate:.4g} FLOP/clk per SM, {abs(rate / nearest - 1.0):.0%} from {nearest:g}; lanes x 2 is a "
                "power of two on every NVIDIA GPU",
                f"check compute.{roof}, sm_count and {clock_name} against the datasheet"))
    return out


def _within(value: float, expected: float, tolerance: float) -> bool:
    """expected x (1 - tolerance) <= value <= expected x (1 + tolerance), the edges included."""
    return expected * (1.0 - tolerance) <= value <= expected * (1.0 + tolerance)


def _families(spec: MachineSpec, roofs: dict[str, float]) -> list[Violation]:
    base = roofs.get("fp16_tensor")
    if base is None:
        return []
    tolerance = MEASURED_FAMILY_TOLERANCE if spec.measured else FAMILY_TOLERANCE
    out = []
    for roof, factor in TENSOR_FAMILY.items():
        value = roofs.get(roof)
        if value is None:
            continue
        expected = base * factor
        if not _within(value, expected, tolerance):
            out.append(Violation(
                f"compute.{roof}", SOFT,
                f"{format_flops(value)} is {value / expected - 1.0:+.0%} from {factor:g} x compute.fp16_tensor = "
                f"{format_flops(expected)} (more than {tolerance:.0%}); on one arch the tensor roofs keep that ratio",
                "check both figures are dense (not 2:4 sparse) with the same accumulate type"))
    return out


def _dram_bus(spec: MachineSpec) -> list[Violation]:
    if not spec.memory_bus_width or not spec.memory_clock:
        return []
    derived = spec.memory_bus_width / 8 * spec.memory_clock * 2
    if spec.bandwidth <= derived * DRAM_BUS_TOLERANCE:
        return []
    return [Violation(
        "memory.bandwidth", SOFT,
        f"{format_rate(spec.bandwidth)} is {spec.bandwidth / derived - 1.0:.0%} above memory.bus_width "
        f"{spec.memory_bus_width} / 8 x memory.clock {format_si(spec.memory_clock, 'Hz')} x 2 = {format_rate(derived)}",
        "check memory.bandwidth, memory.bus_width and memory.clock against the datasheet")]


# ---- figure bounds: one measured figure against the GPU it ran on --------------------------------------------------


def _sm_count(ctx: FigureContext) -> int | None:
    return ctx.sm_count or (ctx.datasheet.sm_count if ctx.datasheet is not None else None)


def _bound_clock(ctx: FigureContext) -> tuple[float, float, str]:
    """(clock, tolerance, words): the observed clock x 1.02; else the datasheet's boost with GPU Boost's headroom;
    else the fastest any SM runs."""
    if ctx.sm_clock:
        return ctx.sm_clock, OBSERVED_CLOCK_TOLERANCE, f"the observed clock {format_si(ctx.sm_clock, 'Hz')}"
    boost = ctx.datasheet.clocks.get("boost") if ctx.datasheet is not None else None
    if boost:
        return boost, UNOBSERVED_CLOCK_HEADROOM, f"clocks.boost {format_si(boost, 'Hz')} (no clock observed)"
    return MAX_SM_CLOCK, 1.0, f"{format_si(MAX_SM_CLOCK, 'Hz')} (no clock known: the fastest any SM runs)"


def _not_a_figure(value: float) -> str | None:
    if not isinstance(value, (int, float)) or not math.isfinite(value) or value <= 0:
        return f"{value!r} is not a positive finite number"
    return None


def l1_bound(ctx: FigureContext) -> tuple[float, str] | None:
    """The most L1 can deliver on this GPU (B/s) with how it was worked out, or None without an SM count."""
    sms = _sm_count(ctx)
    if not sms:
        return None
    clock, tolerance, words = _bound_clock(ctx)
    bound = l1_bandwidth_bound(sms, clock) * tolerance
    return bound, f"{format_rate(bound)} = {sms} SMs x {L1_BYTES_PER_CLOCK_PER_SM} B/clk x {words} x {tolerance:g}"


def impossible_dram_bandwidth(value: float, ctx: FigureContext) -> str | None:
    """DRAM bandwidth above the datasheet x 1.05, or above any GPU memory."""
    if (bad := _not_a_figure(value)) is not None:
        return bad
    sheet = ctx.datasheet.bandwidth if ctx.datasheet is not None else None
    if sheet and math.isfinite(sheet) and value > sheet * DRAM_DATASHEET_TOLERANCE:
        return (f"DRAM bandwidth {format_rate(value)} is above the datasheet's {format_rate(sheet)} x "
                f"{DRAM_DATASHEET_TOLERANCE:g} = {format_rate(sheet * DRAM_DATASHEET_TOLERANCE)}: the timed window "
                "moved fewer bytes than counted, or the data stayed in the cache")
    if value > DRAM_MAX_BANDWIDTH:
        return (f"DRAM bandwidth {format_rate(value)} is above {format_rate(DRAM_MAX_BANDWIDTH)}, twice the fastest "
                "GPU memory announced")
    return None


def impossible_l1_bandwidth(value: float, ctx: FigureContext) -> str | None:
    """L1 (or shared) bandwidth above SMs x 128 B x the clock."""
    if (bad := _not_a_figure(value)) is not None:
        return bad
    bound = l1_bound(ctx)
    if bound is not None and value > bound[0]:
        return f"L1 bandwidth {format_rate(value)} is above {bound[1]}, the most the SMs' L1 can deliver"
    return None


def impossible_l2_bandwidth(value: float, ctx: FigureContext) -> str | None:
    """L2 bandwidth outside [DRAM ... L1]: every DRAM byte passes through L2, and every L2 byte through L1. The lower
    end is the DRAM bandwidth measured in the same run, else the datasheet's; the upper end the L1 measured in the
    same run x 1.02, or the L1 bound, whichever is lower."""
    if (bad := _not_a_figure(value)) is not None:
        return bad
    if ctx.dram_bandwidth:
        low, low_words = ctx.dram_bandwidth / OBSERVED_CLOCK_TOLERANCE, "the DRAM bandwidth measured in this run"
    elif ctx.datasheet is not None and math.isfinite(ctx.datasheet.bandwidth):
        low, low_words = ctx.datasheet.bandwidth / OBSERVED_CLOCK_TOLERANCE, "the datasheet DRAM bandwidth"
    else:
        low, low_words = 0.0, ""
    if value < low:
        return (f"L2 bandwidth {format_rate(value)} is below {low_words} ({format_rate(low)} with 2 % margin), but "
                "every DRAM byte passes through L2: the working set missed L2")
    highs = []
    if ctx.l1_bandwidth:
        high = ctx.l1_bandwidth * OBSERVED_CLOCK_TOLERANCE
        highs.append((high, f"the L1 bandwidth measured in this run x {OBSERVED_CLOCK_TOLERANCE:g} = "
                            f"{format_rate(high)}"))
    if (bound := l1_bound(ctx)) is not None:
        highs.append((bound[0], f"the L1 bound {bound[1]}"))
    if highs:
        high, words = min(highs)
        if value > high:
            return (f"L2 bandwidth {format_rate(value)} is above {words}, but every L2 byte passes through L1: the "
                    "probe timed less work than it counted")
    return None


def impossible_flops(roof: str, value: float, ctx: FigureContext) -> str | None:
    """FLOP/s of one roof above SMs x FLOP/clk per SM x the clock. FLOP/clk per SM comes from the datasheet
    (roof / (its SMs x its clock: clocks.tensor for tensor roofs when given, else clocks.boost)); a CUDA-core roof
    the datasheet cannot give it for takes the most any SM issues (256 FP32/FP64, 512 FP16/BF16). Without any SM
    count or clock, a datasheet roof is bounded by itself x the boost headroom."""
    if (bad := _not_a_figure(value)) is not None:
        return bad
    sheet = ctx.datasheet
    sheet_roof = sheet.roofs.get(roof) if sheet is not None else None
    if sheet_roof is not None and not (math.isfinite(sheet_roof) and sheet_roof > 0):
        sheet_roof = None
    sms = _sm_count(ctx)
    per_clock, per_words = None, ""
    if sheet is not None and sheet_roof is not None and sheet.sm_count:
        quoted, quoted_name = _roof_clock(sheet, roof)
        if quoted:
            per_clock = sheet_roof / (sheet.sm_count * quoted)
            per_words = f"{per_clock:.4g} FLOP/clk (datasheet {format_flops(sheet_roof)} / {sheet.sm_count} SMs / " \
                        f"{quoted_name} {format_si(quoted, 'Hz')})"
    if per_clock is None and roof in CUDA_CORE_FLOP_PER_CLOCK_PER_SM:
        per_clock = CUDA_CORE_FLOP_PER_CLOCK_PER_SM[roof]
        per_words = f"{per_clock} FLOP/clk (the most any NVIDIA SM issues for {roof})"
    if per_clock is not None and sms:
        clock, tolerance, words = _bound_clock(ctx)
        bound = sms * per_clock * clock * tolerance
        if value > bound:
            return (f"{roof} {format_flops(value)} is above {format_flops(bound)} = {sms} SMs x {per_words} x {words} "
                    f"x {tolerance:g}: the kernel did fewer FLOPs than counted, or the timer missed work")
        return None
    if sheet_roof is not None and value > sheet_roof * UNOBSERVED_CLOCK_HEADROOM:
        bound = sheet_roof * UNOBSERVED_CLOCK_HEADROOM
        return (f"{roof} {format_flops(value)} is above the datasheet's {format_flops(sheet_roof)} x "
                f"{UNOBSERVED_CLOCK_HEADROOM:g} = {format_flops(bound)} (no SM count or clock to do better)")
    return None


def impossible_latency(level: str, value: float) -> str | None:
    """A latency outside the range of its level (l1, shared, l2, memory; 'dram' means memory)."""
    if (bad := _not_a_figure(value)) is not None:
        return bad
    level = "memory" if level == "dram" else level
    if level not in LATENCY_RANGE:
        raise ValueError(f"no latency range for level {level!r}; known: {', '.join(LATENCY_RANGE)}")
    low, high = LATENCY_RANGE[level]
    if not low <= value <= high:
        name = "DRAM" if level == "memory" else level.upper()
        return (f"{name} latency {format_time(value)} is outside {format_time(low)} to {format_time(high)}, the range "
                f"of a {name} load on any GPU")
    return None


def impossible_figure(field: str, value: float, ctx: FigureContext) -> str | None:
    """Why one figure, named by its dotted spec field, is physically impossible; None when it is possible.

    Fields: memory.bandwidth, caches.l2.bandwidth, caches.l1.bandwidth, caches.shared.bandwidth, compute.<roof>,
    memory.latency, caches.<l1|shared|l2>.latency. Any other field is a programming error (ValueError)."""
    if field == "memory.bandwidth":
        return impossible_dram_bandwidth(value, ctx)
    if field == "caches.l2.bandwidth":
        return impossible_l2_bandwidth(value, ctx)
    if field in ("caches.l1.bandwidth", "caches.shared.bandwidth"):
        return impossible_l1_bandwidth(value, ctx)
    if field.startswith("compute."):
        return impossible_flops(field.split(".", 1)[1], value, ctx)
    if field == "memory.latency":
        return impossible_latency("memory", value)
    if field.startswith("caches.") and field.endswith(".latency"):
        return impossible_latency(field.split(".")[1], value)
    raise ValueError(f"no physical bound for field {field!r}")
