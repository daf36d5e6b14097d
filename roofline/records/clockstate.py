"""What a kernel's `gpu_state` (the clocks and power over its timed window, recorded in the results) means for its
figure, in words. Pure: the results' readers (report, calibrate) use it without importing anything that measures.
"""

from __future__ import annotations

from typing import Any, Mapping

# A window is called capped when the power or thermal policy held the clocks down for more than this fraction of it
# and the SM clock at its end is below LOW_CLOCK_FRACTION of the maximum; where NVML has no violation counters, the
# low clock alone decides.
CAPPED_FRACTION = 0.10
LOW_CLOCK_FRACTION = 0.90


# Why a window's mean power may exceed the power limit, worked out from how both are read (issue 31: "834 W of a 700 W
# limit" in docs/measurements/h200-results.json, gelu_erf, and 778 W in calibrate's TF32 window):
# - power_mean is the difference of NVML's total-energy counter (nvmlDeviceGetTotalEnergyConsumption, mJ since the
#   driver loaded) across the two readings that bracket the timed window, divided by the host time between them
#   (roofline.measurement.gpustate.window_state): the true mean over that window, to within the counter's update
#   period (about 10 ms where it was observed; pynvml PR 18), a few per cent of a 0.5 s window.
# - the power limit (nvmlDeviceGetEnforcedPowerLimit) is enforced by the GPU's power controller on a running average
#   longer than the window (NVML's own power reading is a 1 s average on Ampere and newer, nvmlDeviceGetPowerUsage),
#   so after the idle gap before a timed window the GPU may draw above the limit for part of a second.
# The H200 file shows it: gelu_erf was power-capped for 100 % of its 0.53 s window (the controller held its clocks
# down throughout, so its own average had reached the limit) while the window's mean was 834 W. So a mean above the
# limit is a real, short excursion that the limit's longer average allows, not a counting error, and it is said so.


def power_over_limit(state: Mapping[str, Any] | None) -> str | None:
    """Why the window's mean power is above the power limit, in one clause; None when it is not (or is unknown)."""
    if not state:
        return None
    power, limit, window = state.get("power_mean"), state.get("power_limit"), state.get("window")
    if not power or not limit or power <= limit:
        return None
    span = f"this {window:.2g} s window" if window else "this window"
    return (f"mean {power:.0f} W is above the {limit:.0f} W limit over {span}: a real excursion, since the GPU "
            "holds its limit on a longer running average (NVML reads power as a 1 s average), not a counting error")


def describe(state: Mapping[str, Any] | None) -> str | None:
    """The window in one clause, for a calibrated figure's method: what clock and power it ran at."""
    if not state:
        return None
    parts = []
    end, top = state.get("sm_clock_end"), state.get("sm_clock_max")
    if end:
        parts.append(f"SM clock {end / 1e6:.0f} MHz at the end of the timed window"
                     + (f" (max {top / 1e6:.0f} MHz)" if top else ""))
    for key, what in (("power_capped", "power-capped"), ("thermal_capped", "thermally throttled")):
        if state.get(key) is not None:
            parts.append(f"{what} {state[key]:.0%} of it")
    power, limit = state.get("power_mean"), state.get("power_limit")
    if power:
        parts.append(f"mean power {power:.0f} W" + (f" of a {limit:.0f} W limit" if limit else "")
                     + (" (above it: the limit holds on a longer average than this window)"
                        if power_over_limit(state) else ""))
    return ", ".join(parts) or None


def throttle_warning(state: Mapping[str, Any] | None) -> str | None:
    """The quality warning for a window whose clocks were held down, with what it means for the figure; None when
    the clocks ran free (or nothing is known)."""
    if not state:
        return None
    end, top = state.get("sm_clock_end"), state.get("sm_clock_max")
    clock = f"SM clock {end / 1e6:.0f} of {top / 1e6:.0f} MHz at the end" if end and top else "SM clock unknown"
    power, limit = state.get("power_mean"), state.get("power_limit")
    watts = f", mean {power:.0f} W of a {limit:.0f} W limit" if power and limit else ""
    if power_over_limit(state):
        watts += ", above it over this window: the limit holds on a longer average"
    # Held for a real part of the window AND the clock really fell (or is unknown): a memory-bound kernel that
    # brushes the power limit and loses 1-6 % of its SM clock is no news (seen on the H200: gelu at 1860 MHz).
    clock_fell = not (end and top) or end < LOW_CLOCK_FRACTION * top
    thermal = state.get("thermal_capped")
    if thermal is not None and thermal > CAPPED_FRACTION and clock_fell:
        return (f"thermally throttled for {thermal:.0%} of the timed window ({clock}): the GPU is too hot, so the "
                "figure will not repeat; check its cooling and let it cool before measuring again")
    capped = state.get("power_capped")
    if capped is not None and capped > CAPPED_FRACTION and clock_fell:
        return (f"power-capped for {capped:.0%} of the timed window ({clock}{watts}): this is what the GPU sustains "
                "at its power limit, below its boost-clock peak")
    if capped is None and end and top and end < LOW_CLOCK_FRACTION * top:
        reasons = [r for r in state.get("reasons_end") or [] if r != "idle"]
        why = f" ({', '.join(reasons)})" if reasons else ""
        return f"{clock}{why}: the figure is below what the GPU reaches at its boost clock"
    return None


# A window with no violation counters (capped unknown) counts as at the cap when its mean power is this close to the
# limit and its SM clock fell: the controller holds the average at the limit by lowering the clock.
AT_LIMIT_FRACTION = 0.95


def at_power_limit(state: Mapping[str, Any] | None) -> bool | None:
    """Whether the window ran at the board's power limit: the GPU's own verdict, NVML's power-cap share above
    CAPPED_FRACTION (its controller held the clock down for a real part of the window, however far: gelu_erf on the
    H200 at 707 W, 78 % of the window, 1950 of 1980 MHz); without the share, a mean power within 5 % of the limit
    and the SM clock below LOW_CLOCK_FRACTION of its maximum. None when the window recorded neither."""
    if not state:
        return None
    end, top = state.get("sm_clock_end"), state.get("sm_clock_max")
    clock_fell = not (end and top) or end < LOW_CLOCK_FRACTION * top
    capped = state.get("power_capped")
    if capped is not None:
        return capped > CAPPED_FRACTION
    power, limit = state.get("power_mean"), state.get("power_limit")
    if power and limit and end and top:
        return power >= AT_LIMIT_FRACTION * limit and clock_fell
    return None


def power_measured(state: Mapping[str, Any] | None, power_roof: Mapping[str, Any] | None,
                   time_median: float | None) -> dict[str, Any] | None:
    """A timed kernel against the power roof (roofline.model.power), from its window's recorded clock and power:
    whether it ran power-bound (at the limit, clock lowered), at what SM clock (Hz) and power (W), and its fraction
    of the time roofline's ceiling (datasheet roofs, no cap) beside its fraction of the ceiling with the power roof.
    None without a recorded window state or a time."""
    if not state or not time_median:
        return None
    bound = at_power_limit(state)
    if bound is None:
        return None
    out: dict[str, Any] = {"power_bound": bound, "sm_clock": state.get("sm_clock_end"),
                           "sm_clock_max": state.get("sm_clock_max"), "power_mean": state.get("power_mean"),
                           "power_limit": state.get("power_limit"), "fraction_of_time_roof": None,
                           "fraction_of_power_roof": None}
    if power_roof:
        time_roof = power_roof["time_roof_sol_time"]
        out["fraction_of_time_roof"] = time_roof / time_median
        out["fraction_of_power_roof"] = max(time_roof, power_roof["time"]) / time_median
    return out
