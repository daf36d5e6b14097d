"""What one timed window's NVML energy says about a kernel: joules per run, mean power, FLOP/J, B/J and the share of
the energy ceiling (roofline.model.energy), with how far the counter's resolution lets the figure be trusted and what
data the kernel ran on. Pure: a window's gpu_state and counts in, the results entry's `energy_measured` block out.

Why the window and the data are recorded with it:
- NVML's total-energy counter (nvmlDeviceGetTotalEnergyConsumption, mJ since the driver loaded) is updated every
  20-100 ms on recent GPUs (PETSc, PetscLogGpuEnergyMeter: "energy readings are updated every 20-100ms"), about every
  100 ms per Zeus (ml.energy, "Thermally Stable Profiling for Accurate GPU Energy Measurement": even one-second
  windows remain vulnerable to sampling noise). Each end of the window may read a value up to one update stale, so
  the window's energy is uncertain by up to one update period's worth: COUNTER_PERIOD / window of the figure.
- Power depends on the data: on an H200 an FP16 GEMM drew 377 W on all-ones matrices and 688 W on random normal ones
  (issue 33). A figure from constant inputs can be 2x low, so the block says whether the inputs varied.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

# The slowest update period reported for the energy counter on recent GPUs (PETSc: 20-100 ms; Zeus: about 100 ms).
COUNTER_PERIOD = 0.1  # s
# Below this window the counter's resolution alone may move the figure by more than 10 % (COUNTER_PERIOD / window).
MIN_ENERGY_WINDOW = 1.0  # s


@dataclass(frozen=True)
class MeasuredEnergy:
    """The figures a gate and a report row read from a results entry's `energy_measured` block (measured_energy):
    typed, so gates read attributes and the block's keys are spelt here once. Built only when a reader asks."""

    joules_per_run: float | None = None
    power_mean: float | None = None
    flops_per_joule: float | None = None
    fraction_of_energy_ceiling: float | None = None  # the spec's minimum energy over the measured energy
    window: float | None = None  # s
    uncertainty: float | None = None  # the share the counter's update period may move the figure by
    short_window: bool = False

    @classmethod
    def of(cls, block: Mapping[str, Any] | None) -> "MeasuredEnergy | None":
        """The typed block; None where the entry has none (or an empty one): no energy was measured."""
        if not block:
            return None
        return cls(block.get("joules_per_run"), block.get("power_mean"), block.get("flops_per_joule"),
                   block.get("fraction_of_energy_ceiling"), block.get("window"), block.get("uncertainty"),
                   bool(block.get("short_window")))

    @property
    def short_window_note(self) -> str | None:
        """short_window_note of the block this was read from: what `measure` prints under its table."""
        if not self.short_window:
            return None
        return _short_window_text(self.window, self.uncertainty)


def measured_energy(state: Mapping[str, Any] | None, runs: int | None, flops: float, bytes_: float,
                    min_energy: float | None, inputs: str | None) -> dict[str, Any] | None:
    """The `energy_measured` block of a results entry, or None where NVML read no energy over the window (no NVML,
    a GPU without the counter, or a window the counter did not advance over).

    joules_per_run is the window's energy over the runs executed in it: the GPU's idle gaps in the window (launches,
    event reads) are charged to the runs, as a program's would be."""
    if not state or not runs or runs <= 0:
        return None
    window, energy = state.get("window"), state.get("energy")
    if energy is None and state.get("power_mean") is not None and window:
        energy = state["power_mean"] * window  # a file from before `energy` was recorded in gpu_state
    if not window or window <= 0 or not energy or energy <= 0:
        return None
    per_run = energy / runs
    uncertainty = COUNTER_PERIOD / window
    return {
        "joules_per_run": per_run,
        "power_mean": energy / window,
        "flops_per_joule": flops / per_run if flops else None,
        "bytes_per_joule": bytes_ / per_run if bytes_ else None,
        "fraction_of_energy_ceiling": min_energy / per_run if min_energy else None,
        "window": window,
        "runs": runs,
        "energy": energy,
        "counter_period": COUNTER_PERIOD,
        "uncertainty": uncertainty,
        "short_window": window < MIN_ENERGY_WINDOW,
        "inputs": inputs or "unknown",
    }


CONSTANT_INPUTS = "an input array is constant: power depends on the data, so this energy can be 2x low"


def beyond_ceiling(block: Mapping[str, Any] | None) -> str | None:
    """Why a share of the energy ceiling above 1 is not a success, where it is above 1 by more than the counter's
    uncertainty; None otherwise. The spec's energy figures are means of probes on random data at one clock and
    temperature, not lower bounds: another kernel's data, a cooler GPU or a spec from another GPU (or `calibrate
    --quick`'s smaller GEMM) can put a kernel under the figure's minimum. Above 1 within the uncertainty is the
    counter's resolution, said by the short-window note where the window was short."""
    if not block or block.get("fraction_of_energy_ceiling") is None:
        return None
    share, loose = float(block["fraction_of_energy_ceiling"]), float(block.get("uncertainty") or 0.0)
    if share <= 1.0 + loose:
        return None
    return (f"used {1 / share:.0%} of the spec's minimum energy ({share:.0%} of the energy ceiling; the counter allows "
            f"{loose:.0%}): the spec's energy figures are not this GPU's at this data and clock")


def short_window_note(block: Mapping[str, Any] | None) -> str | None:
    """Why the figure is loose where the window was short for the counter, in one clause; None otherwise."""
    if not block or not block.get("short_window"):
        return None
    return _short_window_text(block["window"], block["uncertainty"])


def _short_window_text(window: Any, uncertainty: Any) -> str:
    """The clause short_window_note and MeasuredEnergy.short_window_note both print."""
    return (f"energy over a {window:.2g} s window, short for NVML's energy counter (updated every 20-100 "
            f"ms): up to {uncertainty:.0%} off; --min-time {MIN_ENERGY_WINDOW:g} or more makes it tighter")


def step_energy(measured: Mapping[str, Any] | None, range_: str, tokens: int | None) -> dict[str, Any]:
    """The results' top-level `energy` block of a profiled program (`profile --with torch`): the profiled range's
    joules from NVML's counter of the program's GPU, its mean power, joules per step when the range is one step
    (start-stop or an NVTX range: the capture records the first one only; the whole run is not a step), and
    joules per token with --tokens. {why} where nothing was read."""
    if not measured or measured.get("joules") is None:
        return {"why": str((measured or {}).get("why") or "the capture read no energy")}
    joules, window = float(measured["joules"]), float(measured.get("window") or 0.0)
    if joules <= 0 and window < COUNTER_PERIOD:  # the counter did not update: no reading, not zero joules
        return {"why": f"the profiled range ({window * 1e3:.3g} ms) ended before NVML's energy counter updated "
                       f"(every 20-100 ms): profile a range of many steps (an NVTX range around them) for its joules"}
    step = range_ != "all"
    return {
        "joules": joules, "window": window, "power_mean": joules / window if window > 0 else None,
        "gpu": measured.get("gpu"), "device": measured.get("device"), "range": range_,
        "joules_per_step": joules if step else None, "tokens": tokens,
        "joules_per_token": joules / tokens if tokens else None,
        "counter_period": COUNTER_PERIOD, "uncertainty": COUNTER_PERIOD / window if window > 0 else None,
        "short_window": window < MIN_ENERGY_WINDOW,
        "note": "measured while torch.profiler recorded: its host-side overhead can lengthen the range and add "
                "idle energy; the GPU the program ran on only (each rank measures its own)",
    }


def step_energy_line(block: Mapping[str, Any] | None) -> str | None:
    """The block in one line for standard error."""
    if not block:
        return None
    if block.get("joules") is None:
        return f"energy: not measured ({block.get('why')})"
    parts = [f"energy: {block['joules']:.4g} J over the profiled range ({block['window']:.3g} s"
             + (f", {block['power_mean']:.0f} W mean" if block.get("power_mean") else "") + f", GPU {block['gpu']})"]
    if block.get("joules_per_step") is not None:
        parts.append("one step")
    if block.get("joules_per_token") is not None:
        parts.append(f"{block['joules_per_token']:.4g} J per token ({block['tokens']} tokens)")
    if block.get("short_window"):
        parts.append(f"a window under {MIN_ENERGY_WINDOW:g} s: up to {block['uncertainty']:.0%} off (NVML's counter "
                     "updates every 20-100 ms)")
    return "; ".join(parts)
