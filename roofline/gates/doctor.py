"""`roofline doctor`, the verdicts: is this GPU, and this measurement stack, telling the truth? Each check turns
raw findings (figures measured on the GPU by roofline.measurement.doctor, or read from NVML and Nsight Compute) into
PASS / WARN / FAIL / SKIP with the figure, the bound it was held to and the fix. Pure: every rule is tested on any
machine, with findings written by hand.

Why these bounds (docs/doctor.md gives the sources):
- known-traffic kernels at ≥ 85 % of the datasheet DRAM bandwidth: published H200 STREAM reaches 86.5 % (Triad) to
  93.3 % (Dot) (Azure AI-benchmarking-guide, ND H200 v5); our copy, triad and sum reach 89-93 %. Above 105 % the
  bytes did not all come from DRAM (a cache, a wrong byte count), which is as wrong as too slow.
- a known-FLOP FMA kernel at ≥ 95 % of the FP32 peak at the SM clock observed during its window (the peak scales
  with the clock; a power-capped GPU is not a broken one, a slow one at full clock is).
- three timers of one kernel within 10 %: CUDA events around single launches, CUDA-graph replay, Nsight Compute's
  gpu__time_duration. A launch outside the events' stream times nothing (an 11 PB/s L2 figure once shipped so).
- a working set that fits in L2 and is re-read (resident) must run faster than the same work rotated through
  buffers larger than L2, and the rotated one must not beat DRAM: otherwise the rotation (what every `measure`
  figure relies on) is not evicting, or something lands in the timed window.
- the counters: DRAM bytes of a copy within 2 % of 2 × n × 4 B, a cuBLAS FP16 GEMM's tensor FLOPs within 1 % of
  2·M·N·K (ncu's sm__ops_path_tensor counts an FMA as 2).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Mapping, Sequence

PASS, WARN, FAIL, SKIP = "PASS", "WARN", "FAIL", "SKIP"
ORDER = {PASS: 0, SKIP: 0, WARN: 1, FAIL: 2}
SCHEMA = "roofline/doctor/v1"

DRAM_MIN = 0.85  # of the datasheet DRAM bandwidth, per known-traffic kernel
DRAM_MAX = 1.05  # above this the bytes were not all DRAM bytes
FMA_MIN = 0.95  # of the FP32 peak at the observed SM clock
FMA_MAX = 1.02  # above this the FLOP count or the clock is wrong
TIMER_SPREAD = 0.10  # events, graph replay and ncu within this of each other
RESIDENT_GAIN = 1.15  # a resident working set at least this much faster than a rotated one
COUNTER_BYTES = 0.02  # ncu DRAM bytes of the copy within this of the model
COUNTER_FLOPS = 0.01  # ncu tensor FLOPs of the GEMM within this of 2·M·N·K
LATENCY_RANGE = (150e-9, 2e-6)  # DRAM latency: HBM/GDDR pointer chases read 300-700 ns; outside, a broken timer
POWER_CAP_MIN = 0.95  # enforced power limit below this share of the default limit is a reduced cap


@dataclass
class Check:
    """One verdict. `figure` and `bound` are short human strings (the renderer prints them as they are); `value`
    and `limits` carry the same in SI units for --format json."""

    name: str
    status: str
    figure: str = ""
    bound: str = ""
    note: str = ""
    fix: str = ""
    value: float | None = None
    limits: tuple[float | None, float | None] = (None, None)
    group: str = ""

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["limits"] = list(self.limits)
        return d


@dataclass
class Verdict:
    device: Mapping[str, Any]
    spec_id: str | None
    checks: list[Check] = field(default_factory=list)
    elapsed: float | None = None

    @property
    def status(self) -> str:
        worst = max((ORDER[c.status] for c in self.checks), default=0)
        return {0: PASS, 1: WARN, 2: FAIL}[worst]

    @property
    def exit_code(self) -> int:
        return 1 if self.status == FAIL else 0

    def to_dict(self) -> dict[str, Any]:
        counts = {s: sum(c.status == s for c in self.checks) for s in (PASS, WARN, FAIL, SKIP)}
        return {"schema": SCHEMA, "status": self.status, "counts": counts, "device": dict(self.device),
                "spec": self.spec_id, "elapsed": self.elapsed, "checks": [c.to_dict() for c in self.checks]}


UNAVAILABLE = "UNAVAILABLE"  # the verdict's status when there was no GPU (or CuPy) to check: exit 3


def unavailable(reason: str, fix: str | None, device: int) -> dict[str, Any]:
    """The verdict `doctor --format json` prints when it cannot look at a GPU: a script reading standard output
    gets a document saying why (status UNAVAILABLE, the exit code 3 and the fix), not an empty stream."""
    return {"schema": SCHEMA, "status": UNAVAILABLE, "counts": {s: 0 for s in (PASS, WARN, FAIL, SKIP)},
            "device": {"index": device}, "spec": None, "elapsed": None, "checks": [],
            "error": {"exit_code": 3, "reason": reason, "fix": fix}}


def _tb(v: float | None) -> str:
    return "—" if v is None else f"{v / 1e12:.3g} TB/s"


def _tf(v: float | None) -> str:
    return "—" if v is None else f"{v / 1e12:.4g} TFLOP/s"


def _pct(v: float) -> str:
    return f"{v:.1%}"


def skipped(name: str, why: str, group: str = "") -> Check:
    return Check(name, SKIP, note=why, group=group)


# ---- bandwidth and compute -----------------------------------------------------------------------------


def dram_check(kernel: str, achieved: float | None, datasheet: float | None, error: str | None = None) -> Check:
    """A known-traffic kernel (copy, triad, a read-only reduction) against the datasheet DRAM bandwidth."""
    name = f"DRAM bandwidth: {kernel}"
    if error:
        return Check(name, FAIL, note=f"the kernel failed: {error}", fix="run `roofline measure " + kernel +
                     "` to see the failure; a wrong result on a healthy GPU is a bug: report it", group="bandwidth")
    if achieved is None or not datasheet:
        return skipped(name, "no datasheet DRAM bandwidth for this GPU" if achieved else "not measured", "bandwidth")
    return _band(name, "bandwidth", achieved, datasheet, (DRAM_MIN, DRAM_MAX),
                 f"{_tb(achieved)} ({_pct(achieved / datasheet)} of {_tb(datasheet)})",
                 f"{DRAM_MIN:.0%}–{DRAM_MAX:.0%} of the datasheet",
                 ("faster than the memory can deliver: the bytes were not all DRAM bytes (a cache hit, a wrong byte "
                  "count) or the timer saw too little", "check the spec is this GPU's (--spec) and run the timer "
                                                         "checks below"),
                 ("well below what this GPU class reaches (published STREAM on an H200: 86.5-93.3 %)",
                  "look at the clocks and other processes below; check the memory clock (nvidia-smi -q -d CLOCK) and "
                  "ECC; compare with a second GPU of the same kind"))


def _band(name: str, group: str, value: float, reference: float, shares: tuple[float, float], figure: str,
          bound: str, too_high: tuple[str, str], too_low: tuple[str, str]) -> Check:
    """PASS when value / reference lies within `shares`; else FAIL with what being above or below means, and
    its fix."""
    lo, hi = shares
    limits = (lo * reference, hi * reference)
    share = value / reference
    if share > hi or share < lo:
        note, fix = too_high if share > hi else too_low
        return Check(name, FAIL, figure, bound, note, fix, value, limits, group)
    return Check(name, PASS, figure, bound, value=value, limits=limits, group=group)


def fma_check(achieved: float | None, datasheet: float | None, boost_clock: float | None,
              observed_clock: float | None, error: str | None = None) -> Check:
    """The FMA kernel against the FP32 peak scaled to the SM clock observed in its window."""
    name = "FP32 FMA peak"
    if error:
        return Check(name, FAIL, note=f"the kernel failed: {error}", fix="run `roofline measure fma_peak`",
                     group="compute")
    if achieved is None or not datasheet:
        return skipped(name, "no datasheet FP32 figure for this GPU" if achieved else "not measured", "compute")
    peak = datasheet
    clock_note = "at the datasheet's clock (no SM clock reading)"
    if boost_clock and observed_clock:
        peak = datasheet * observed_clock / boost_clock
        clock_note = f"at the observed {observed_clock / 1e6:.0f} MHz (datasheet {datasheet / 1e12:.4g} at " \
                     f"{boost_clock / 1e6:.0f} MHz)"
    return _band(name, "compute", achieved, peak, (FMA_MIN, FMA_MAX),
                 f"{_tf(achieved)} ({_pct(achieved / peak)} of {_tf(peak)})",
                 f"{FMA_MIN:.0%}–{FMA_MAX:.0%} of the peak {clock_note}",
                 ("more FLOP/s than the SMs can issue at this clock: the FLOP count or the clock reading is wrong",
                  "report it with `roofline doctor --format json`"),
                 ("the SMs issue fewer FMAs than they can at the clock they ran at",
                  "look for other processes on the GPU and for MIG or MPS limits (nvidia-smi)"))


def between_check(name: str, value: float | None, low: float | None, high: float | None, unit: str,
                  error: str | None = None, note: str = "", fix: str = "") -> Check:
    """A figure that must lie between two physical bounds (L2 between DRAM and L1; L1 below SMs × 128 B/clock)."""
    fmt = _tb if unit == "bandwidth" else (lambda v: "—" if v is None else f"{v * 1e9:.0f} ns")
    if error:
        return Check(name, FAIL, note=error, fix=fix or "run `roofline calibrate --format json` for the probe's "
                     "raw numbers", group="hierarchy")
    if value is None:
        return skipped(name, note or "not measured", "hierarchy")
    bound = f"{fmt(low)} … {fmt(high)}"
    inside = (low is None or value >= low) and (high is None or value <= high)
    return Check(name, PASS if inside else FAIL, fmt(value), bound,
                 note if inside else f"outside its physical bounds{': ' + note if note else ''}",
                 "" if inside else (fix or "the probe or its timer is wrong: do not trust calibrate's figure"),
                 value, (low, high), "hierarchy")


# ---- the timers ---------------------------------------------------------------------------------------


def timers_check(events: float | None, graph: float | None, ncu: float | None, ncu_why: str | None = None,
                 kernel: str = "copy") -> Check:
    """Three clocks of one kernel at one size agree within TIMER_SPREAD (ncu only where it ran)."""
    name = f"timers agree ({kernel})"
    got = {k: v for k, v in (("events", events), ("graph replay", graph), ("ncu", ncu)) if v}
    if len(got) < 2:
        return skipped(name, "fewer than two timers ran", "timers")
    lo, hi = min(got.values()), max(got.values())
    spread = hi / lo - 1.0
    figure = ", ".join(f"{k} {v * 1e6:.1f} µs" for k, v in got.items())
    note = "" if ncu else f"ncu not compared: {ncu_why or 'not run'}"
    if spread > TIMER_SPREAD:
        return Check(name, FAIL, figure, f"within {TIMER_SPREAD:.0%} of each other (spread {spread:.1%})",
                     "the clocks disagree: a launch outside the timed stream, a flush inside the window, or ncu's "
                     "replay seeing another kernel", "do not trust `measure`'s figures until this passes; report it",
                     spread, (None, TIMER_SPREAD), "timers")
    no_permission = not ncu and bool(ncu_why) and "permission" in ncu_why.lower()
    return Check(name, WARN if no_permission else PASS, figure,
                 f"within {TIMER_SPREAD:.0%} (spread {spread:.1%})", note, value=spread, limits=(None, TIMER_SPREAD),
                 group="timers")


def residency_check(resident: float | None, rotated: float | None, dram: float | None,
                    error: str | None = None) -> Check:
    """The same small copy with one buffer set (L2-resident) and rotated through sets larger than L2."""
    name = "resident vs rotated working set"
    if error:
        return Check(name, FAIL, note=error, group="timers")
    if resident is None or rotated is None:
        return skipped(name, "not measured", "timers")
    gain = resident / rotated
    figure = f"resident {_tb(resident)}, rotated {_tb(rotated)} ({gain:.2f}×)"
    if dram and rotated > DRAM_MAX * dram:
        return Check(name, FAIL, figure, f"rotated ≤ {_tb(DRAM_MAX * dram)} (DRAM × {DRAM_MAX})",
                     "the rotated runs are served from a cache: buffer rotation is not evicting (a persisting-L2 "
                     "window set by another program?), so every `measure` figure of a small kernel is a cache "
                     "figure", "reset the L2 persistence (cudaCtxResetPersistingL2Cache) or run on an idle GPU",
                     gain, (RESIDENT_GAIN, None), "timers")
    if gain < RESIDENT_GAIN:
        return Check(name, WARN, figure, f"resident ≥ {RESIDENT_GAIN}× rotated",
                     "re-reading an L2-resident set is not faster than DRAM: something flushes the L2 inside the "
                     "timed window, or the L2 is shared with another process", "look for other processes below",
                     gain, (RESIDENT_GAIN, None), "timers")
    return Check(name, PASS, figure, f"resident ≥ {RESIDENT_GAIN}× rotated; rotated ≤ DRAM × {DRAM_MAX}",
                 value=gain, limits=(RESIDENT_GAIN, None), group="timers")


# ---- the counters ---------------------------------------------------------------------------------------


def counter_check(name: str, counted: float | None, model: float | None, tolerance: float, unit: str,
                  why_missing: str | None = None) -> Check:
    """A counter of Nsight Compute against the exact count of a known kernel."""
    if counted is None or not model:
        return skipped(name, why_missing or "not counted", "counters")
    ratio = counted / model
    fmt = (lambda v: f"{v / 1e9:.4g} GB") if unit == "bytes" else (lambda v: f"{v / 1e12:.5g} TFLOP")
    figure = f"{fmt(counted)} counted, {fmt(model)} exact ({ratio:.4f}×)"
    bound = f"within {tolerance:.0%}"
    if abs(ratio - 1.0) > tolerance:
        return Check(name, FAIL, figure, bound, "the counters disagree with a kernel whose count is known: every "
                     "counter-based figure (measure --profile ncu, profile, import ncu) is suspect",
                     "check the ncu version against the driver (ncu --version) and that nothing else ran on the GPU",
                     ratio, (1 - tolerance, 1 + tolerance), "counters")
    return Check(name, PASS, figure, bound, value=ratio, limits=(1 - tolerance, 1 + tolerance), group="counters")


# ---- the GPU's state ------------------------------------------------------------------------------------


def state_checks(state: Mapping[str, Any], windows: Sequence[Mapping[str, Any]]) -> list[Check]:
    """What NVML says about the GPU (`state`: persistence, ECC, power limits, other processes) and what its clocks
    did in the timed windows of the other checks."""
    out: list[Check] = []
    if not state.get("nvml"):
        return [skipped("GPU state (NVML)", state.get("why") or "NVML not available: pip install nvidia-ml-py",
                        "state")]
    # clocks over the windows
    ends = [w.get("sm_clock_end") for w in windows if w and w.get("sm_clock_end")]
    top = next((w.get("sm_clock_max") for w in windows if w and w.get("sm_clock_max")), None)
    thermal = max((w.get("thermal_capped") or 0.0 for w in windows if w), default=0.0)
    power = max((w.get("power_capped") or 0.0 for w in windows if w), default=0.0)
    reasons = sorted({r for w in windows if w for r in (w.get("reasons_end") or []) if r != "idle"})
    if ends and top:
        low = min(ends)
        figure = f"SM clock {low / 1e6:.0f}–{max(ends) / 1e6:.0f} MHz of {top / 1e6:.0f} MHz"
        extra = f"; clock-event reasons seen: {', '.join(reasons)}" if reasons else ""
        if thermal > 0.10 or "thermal (hardware)" in reasons or "hardware slowdown" in reasons:
            out.append(Check("clocks during the windows", FAIL, figure, "no thermal or hardware slowdown",
                             f"thermally held {thermal:.0%} of a window{extra}",
                             "the GPU is too hot or its board reports a fault: check cooling (nvidia-smi -q -d "
                             "PERFORMANCE,TEMPERATURE)", low, (None, None), "state"))
        elif low < 0.90 * top and set(reasons) <= {"power cap"} and power > 0.10:
            # Tensor-core GEMMs reach the power limit within 0.1 s on an H200 and the clock falls to ~1500 MHz:
            # a GPU working as designed. The FMA check above is already held to the clock it ran at.
            out.append(Check("clocks during the windows", PASS, figure, "no thermal or hardware slowdown",
                             f"power-capped in {power:.0%} of a window (the GEMM at the power limit, as designed): "
                             "figures hold at the recorded clock", value=low, group="state"))
        elif low < 0.90 * top:
            out.append(Check("clocks during the windows", WARN, figure, "≥ 90 % of max",
                             f"the clock fell below 90 % of its maximum{extra or ' with no reason reported'}",
                             "look for an application-clock setting or a clock lock (nvidia-smi -q -d CLOCK)",
                             low, (0.9 * top, None), "state"))
        else:
            out.append(Check("clocks during the windows", PASS, figure, "≥ 90 % of max", extra.lstrip("; "),
                             value=low, limits=(0.9 * top, None), group="state"))
    limit, default = state.get("power_limit"), state.get("power_default_limit")
    if limit and default:
        share = limit / default
        status = PASS if share >= POWER_CAP_MIN else WARN
        out.append(Check("power limit", status, f"{limit:.0f} W of {default:.0f} W default", f"≥ {POWER_CAP_MIN:.0%}",
                         "" if status == PASS else "a reduced power cap lowers every compute figure",
                         "" if status == PASS else "nvidia-smi -q -d POWER shows who set it", share,
                         (POWER_CAP_MIN, None), "state"))
    persistence = state.get("persistence_mode")
    if persistence is not None:
        out.append(Check("persistence mode", PASS if persistence else WARN, "on" if persistence else "off", "on",
                         "" if persistence else "without it the driver may unload between runs: the first launch "
                         "of each run pays the initialisation and clocks start idle",
                         "" if persistence else "an administrator enables it (nvidia-smi -pm 1 or nvidia-persistenced)",
                         group="state"))
    ecc, uncorrected = state.get("ecc_mode"), state.get("ecc_uncorrected")
    if ecc is not None:
        if uncorrected:
            out.append(Check("ECC", FAIL, f"{uncorrected} volatile uncorrected errors", "0",
                             "the memory returned errors since the driver loaded: results may be wrong",
                             "drain the GPU and run the vendor diagnostics (dcgmi diag -r 3)", float(uncorrected),
                             (0, 0), "state"))
        else:
            out.append(Check("ECC", PASS if ecc else WARN, "on, no uncorrected errors" if ecc else "off", "on",
                             "" if ecc else "errors in memory would go unnoticed", group="state"))
    pending = state.get("retired_pending") or state.get("remap_pending")
    if pending:
        out.append(Check("row remapping", WARN, "a remap is pending", "none pending",
                         "the GPU needs a reset to apply it", "an administrator resets the GPU", group="state"))
    others = state.get("other_processes")
    if others is not None:
        out.append(Check("other processes on the GPU", PASS if not others else WARN,
                         "none" if not others else f"{len(others)}: " + ", ".join(str(p) for p in others[:5]),
                         "none", "" if not others else "they share the SMs, the memory and the L2 with every "
                         "figure above", "" if not others else "measure on an idle GPU", group="state"))
    return out


def latency_check(value: float | None, error: str | None = None) -> Check:
    lo, hi = LATENCY_RANGE
    return between_check("DRAM latency", value, lo, hi, "time", error,
                         fix="the pointer chase or %globaltimer is wrong: do not trust calibrate's latency")


# ---- the energy counter (issue 33) ------------------------------------------------------------------------------

# The counter's mean power (nvmlDeviceGetTotalEnergyConsumption over a steady 2 s load) and NVML's power samples
# (nvmlDeviceGetPowerUsage, a 1 s average on Ampere and newer) over the same span agree within this. Both come from
# the board's sensor; on A100/H100 the sampled reading covers about a quarter of the time (Yang et al., "Accurate
# and Convenient Energy Measurements for GPUs", SC24), so a steady load is used and 10 % allowed.
ENERGY_AGREEMENT = 0.10


def energy_counter_check(found: Mapping[str, Any] | None, why: str | None = None) -> Check:
    """Does NVML's energy counter advance under load and agree with the power samples? `found` is
    roofline.measurement.calibrate.energy.counter_agreement's result; `why` is why it was not measured."""
    name = "NVML energy counter"
    if why or not found:
        return skipped(name, why or "not measured", "state")
    counter, sampled, window = found.get("counter_power"), found.get("sampled_power"), found.get("window")
    if not found.get("energy") or not counter:
        return Check(name, FAIL, "did not advance under load", "advances",
                     f"the counter read no energy over a {window or 0:.1f} s copy: measure and calibrate --energy "
                     "record no energy on this GPU", "update the driver; nvidia-smi -q -d POWER shows whether the "
                     "board reports power", group="state")
    if sampled is None:
        return Check(name, WARN, f"{counter:.0f} W mean over {window:.1f} s", "agrees with the power samples",
                     "nvmlDeviceGetPowerUsage read nothing to compare with", value=counter, group="state")
    share = counter / sampled - 1.0
    figure = f"{counter:.0f} W (counter) vs {sampled:.0f} W (mean of {found.get('samples')} power samples)"
    status = PASS if abs(share) <= ENERGY_AGREEMENT else WARN
    return Check(name, status, figure, f"within {ENERGY_AGREEMENT:.0%}",
                 "" if status == PASS else f"they differ by {share:+.1%}: the energy figures of measure and "
                 "calibrate --energy are only as good as the counter", "" if status == PASS else
                 "run doctor again on an idle GPU; a lasting difference is the board's sensor: compare with an "
                 "external meter", share, (-ENERGY_AGREEMENT, ENERGY_AGREEMENT), "state")
