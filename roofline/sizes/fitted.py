"""`roofline sweep`, the pure part: the time model that predicts each size, and its fit to the sizes measured.

The model (Little's Law with the launch in series)
--------------------------------------------------
A streaming kernel launched back to back (as the harness times it: CUDA-graph replay, or events) costs per launch

    t(B) = L + λ + B / (η · BW)

  L   launch floor: the time per launch of an empty kernel timed the same way (graph replay). In a stream the next
      kernel cannot start before the previous one has finished, so this turnaround is paid in series, not hidden.
  λ   latency: the first bytes arrive one memory round trip after the kernel starts (a load, then the store that
      must be performed before the kernel may end). Measured as the time of a one-element kernel (one load, one
      store, on lines that are not in L2) minus L; without a GPU, the spec's memory latency.
  B / (η · BW)
      the transfer once the pipe is full. Little's Law: sustaining BW needs BW × λ bytes in flight; a launch that
      moves fewer bytes than that finishes within about one latency (latency-bound), one that moves many times
      more runs at the bandwidth (bandwidth-bound). η is the fraction of BW this kernel reaches when streaming: by
      default taken from the largest size measured (one anchor, so the largest size is exact by construction and
      every other size is a prediction); --efficiency 1 uses the bandwidth as given.

The first-order form max(L, λ + B / BW) treats the launch as overlapping the work. It does not: a kernel's
memory round trip starts only after its launch, so the terms add. The max form is also computed for every size
("simple model", with the spec's latency and bandwidth) so the two can be compared on the same measurements.

Regimes: launch-bound when L is at least the rest (λ + transfer); otherwise latency-bound when the transfer is
shorter than λ (fewer bytes than BW × λ in flight); otherwise bandwidth-bound.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, replace
from typing import Any, Iterable, Mapping, MutableMapping, Sequence

from roofline.errors import InputError
from roofline.model.types import MachineSpec

FIRST_PRINCIPLES = "first-principles"  # the model of roofline.sizes.predict, which builds on this module
MODELS = ("additive", "max")  # the fitted model's two forms
MODEL_CHOICES = (FIRST_PRINCIPLES, "fitted", *MODELS)  # --model; 'fitted' is the additive form
LAUNCH_BOUND = "launch-bound"
LATENCY_BOUND = "latency-bound"
BANDWIDTH_BOUND = "bandwidth-bound"
TARGET_ERROR = 0.25  # the sweep's acceptance target: every size predicted within 25 %


# ---- the model ---------------------------------------------------------------------------------------


def _check_inputs(bytes_: float, bandwidth: float, latency: float, launch_floor: float) -> None:
    for name, value in (("bytes", bytes_), ("latency", latency), ("launch_floor", launch_floor)):
        if not math.isfinite(value) or value < 0:
            raise ValueError(f"{name} must be a finite number ≥ 0, got {value!r}")
    if not math.isfinite(bandwidth) or bandwidth <= 0:
        raise ValueError(f"bandwidth must be a finite number > 0, got {bandwidth!r}")


def predict_time(bytes_: float, bandwidth: float, latency: float, launch_floor: float,
                 model: str = "additive") -> float:
    """Seconds per launch for a kernel that moves `bytes_` (see the module docstring).

    additive (default): launch_floor + latency + bytes_ / bandwidth
    max (the first-order form): max(launch_floor, latency + bytes_ / bandwidth)
    `bandwidth` is the streaming bandwidth the kernel reaches (η × peak), in B/s; times in seconds."""
    _check_inputs(bytes_, bandwidth, latency, launch_floor)
    transfer = bytes_ / bandwidth
    if model == "additive":
        return launch_floor + latency + transfer
    if model == "max":
        return max(launch_floor, latency + transfer)
    raise ValueError(f"unknown model {model!r}; expected one of {', '.join(MODELS)}")


def regime(bytes_: float, bandwidth: float, latency: float, launch_floor: float) -> str:
    """launch-bound, latency-bound or bandwidth-bound: which term of the model dominates at this size."""
    _check_inputs(bytes_, bandwidth, latency, launch_floor)
    transfer = bytes_ / bandwidth
    if launch_floor >= latency + transfer:
        return LAUNCH_BOUND
    if transfer < latency:
        return LATENCY_BOUND
    return BANDWIDTH_BOUND


def efficiency_from(anchor_bytes: float, anchor_time: float, bandwidth: float, latency: float,
                    launch_floor: float) -> tuple[float, str]:
    """η such that the additive model reproduces the anchor: bytes / (η BW) = time − L − λ.

    Only a bandwidth-bound anchor says anything about the streaming bandwidth: when the fixed costs (L + λ) are
    half the measured time or more, or the raw model does not put the anchor in the bandwidth-bound regime,
    η = 1 is returned with the reason."""
    _check_inputs(anchor_bytes, bandwidth, latency, launch_floor)
    if not math.isfinite(anchor_time) or anchor_time <= 0:
        return 1.0, "the largest size has no measured time; efficiency 1 (bandwidth as given)"
    streaming = anchor_time - launch_floor - latency
    raw_regime = regime(anchor_bytes, bandwidth, latency, launch_floor)
    if raw_regime != BANDWIDTH_BOUND or streaming < 0.5 * anchor_time:
        return 1.0, (f"the largest size ({anchor_bytes:.4g} B) is not bandwidth-bound, so it cannot calibrate the "
                     "streaming bandwidth; efficiency 1 (bandwidth as given). Sweep up to a few hundred MB.")
    eta = (anchor_bytes / bandwidth) / streaming
    return eta, f"from the largest size: {anchor_bytes:.4g} B in {anchor_time:.4g} s"


@dataclass(frozen=True)
class ModelInputs:
    """What the prediction used and where each figure came from (written to the results file)."""

    model: str
    bandwidth: float  # B/s, before the efficiency
    bandwidth_source: str
    latency: float  # s: λ in the model
    latency_source: str
    launch_floor: float  # s
    launch_floor_source: str
    memory_latency: float  # s: the spec's (or calibrated) DRAM latency, for Little's Law and the simple model
    memory_latency_source: str
    efficiency: float = 1.0
    efficiency_source: str = "not set"
    measured_latency: float | None = None  # s: the one-element round trip, when λ was anchored on the smallest size
    measured_latency_source: str | None = None

    @property
    def streaming_bandwidth(self) -> float:
        return self.efficiency * self.bandwidth

    @property
    def bytes_in_flight(self) -> float:
        return self.bandwidth * self.memory_latency

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["streaming_bandwidth"] = self.streaming_bandwidth
        out["bytes_in_flight"] = self.bytes_in_flight
        return out


def _usable(entry: Mapping[str, Any]) -> bool:
    t = entry.get("time_median")
    return entry.get("status") == "OK" and isinstance(t, (int, float)) and math.isfinite(t) and t > 0


def measured_time(entry: Mapping[str, Any]) -> float | None:
    """The entry's verified median time, or None (a FAILED size, no time)."""
    return float(entry["time_median"]) if _usable(entry) else None


def choose_efficiency(entries: Iterable[Mapping[str, Any]], inputs: ModelInputs, setting: str | float) -> ModelInputs:
    """inputs with η set: 'auto' anchors on the largest verified size (given inputs' λ and L), a number is used as
    given."""
    if setting != "auto":
        value = float(setting)
        if not math.isfinite(value) or value <= 0:
            raise InputError(f"--efficiency: expected 'auto' or a positive number, got {setting!r}")
        return replace(inputs, efficiency=value, efficiency_source="--efficiency (given)")
    usable = [e for e in entries if _usable(e)]
    if not usable:
        return replace(inputs, efficiency=1.0, efficiency_source="no verified size to anchor on; efficiency 1")
    anchor = max(usable, key=lambda e: e["bytes"])
    eta, why = efficiency_from(anchor["bytes"], anchor["time_median"], inputs.bandwidth, inputs.latency,
                               inputs.launch_floor)
    return replace(inputs, efficiency=eta, efficiency_source=why)


LATENCY_SETTINGS = ("auto", "measured")


def anchor_latency(entries: Iterable[Mapping[str, Any]], inputs: ModelInputs, setting: str = "auto") -> ModelInputs:
    """inputs with λ anchored. 'auto': λ becomes this kernel's own fixed cost, read off the smallest verified size
    (t − L − B/BW there).

    Why: the one-element kernel measures one memory round trip, but a real streaming kernel at a tiny size pays
    more before its last store lands: its blocks are scheduled, each thread loads, computes and stores, and the
    launch ends only when the slowest block is done. On an H200 that fixed cost came out ≈ 2.6 round trips for a
    float4 vector add. Reading it off the smallest size (where the transfer is a few per cent of the time) makes the
    smallest size exact by construction, as η makes the largest; every size between is a prediction. 'measured'
    keeps the one-element figure, the first-principles form.
    """
    if setting == "measured":
        return inputs
    if setting != "auto":
        raise InputError(f"--latency: expected one of {', '.join(LATENCY_SETTINGS)}, got {setting!r}")
    usable = [e for e in entries if _usable(e)]
    if len(usable) < 3:
        return inputs  # an anchor at each end needs sizes between them to predict
    small = min(usable, key=lambda e: e["bytes"])
    transfer = small["bytes"] / inputs.bandwidth
    fixed = small["time_median"] - inputs.launch_floor - transfer
    if fixed <= 0 or transfer > 0.1 * small["time_median"]:
        return inputs  # the smallest size is not dominated by fixed costs: keep the measured round trip
    return replace(
        inputs, latency=fixed, measured_latency=inputs.latency, measured_latency_source=inputs.latency_source,
        latency_source=(f"this kernel's fixed cost at the smallest size ({small['bytes']:.4g} B in "
                        f"{small['time_median']:.4g} s, minus L and the transfer); the one-element round trip was "
                        f"{inputs.latency * 1e9:.0f} ns"),
    )


def fit_model(entries: Sequence[Mapping[str, Any]], source: MachineSpec, overheads: Mapping[str, Any],
              model: str = "additive", latency: str = "auto", efficiency: str | float = "auto") -> ModelInputs:
    """The model's inputs for these measured sizes, each with where it came from.

    BW and the DRAM latency come from `source` (the datasheet spec, or a calibrated one); L and the one-element
    round trip from the measured overheads (the spec's latency stands in for λ when there is none). Then λ is
    anchored on the smallest size (--latency) and η on the largest given that λ (--efficiency): η is fitted to what
    the fixed costs leave of the largest size's time, so it is computed second."""
    kind = "measured spec" if source.measured else ("derived spec" if source.derived else "datasheet spec")
    memory_latency_source = f"{kind} {source.id} (memory.latency)"
    round_trip = overheads.get("kernel_latency")
    base = ModelInputs(
        model=model,
        bandwidth=source.bandwidth,
        bandwidth_source=f"{kind} {source.id} (memory.bandwidth)",
        latency=round_trip if round_trip is not None else source.latency,
        latency_source=overheads.get("kernel_latency_source") or memory_latency_source,
        launch_floor=overheads["launch_floor"],
        launch_floor_source=overheads["launch_floor_source"],
        memory_latency=source.latency,
        memory_latency_source=memory_latency_source,
    )
    return choose_efficiency(entries, anchor_latency(entries, base, latency), efficiency)




def annotate(entries: Iterable[MutableMapping[str, Any]], inputs: ModelInputs) -> None:
    """Add predicted_time, prediction_error (= predicted / measured − 1, null without a verified time) and the
    model's terms to every entry, in place."""
    bw = inputs.streaming_bandwidth
    for e in entries:
        b = float(e["bytes"])
        predicted = predict_time(b, bw, inputs.latency, inputs.launch_floor, inputs.model)
        simple = predict_time(b, inputs.bandwidth, inputs.memory_latency, inputs.launch_floor, "max")
        measured = measured_time(e)
        e["predicted_time"] = predicted
        e["prediction_error"] = predicted / measured - 1.0 if measured else None
        e["prediction"] = {
            "model": inputs.model,
            "launch": inputs.launch_floor,
            "latency": inputs.latency,
            "transfer": b / bw,
            "regime": regime(b, bw, inputs.latency, inputs.launch_floor),
            "simple_max_time": simple,
            "simple_max_error": simple / measured - 1.0 if measured else None,
        }


def summary(entries: Iterable[Mapping[str, Any]], target: float = TARGET_ERROR) -> dict[str, Any]:
    """Worst prediction error over the verified sizes and how many sizes are within the target."""
    errors = [(e["bytes"], e["prediction_error"]) for e in entries if e.get("prediction_error") is not None]
    simple = [e["prediction"]["simple_max_error"] for e in entries
              if e.get("prediction") and e["prediction"].get("simple_max_error") is not None]
    worst = max(errors, key=lambda x: abs(x[1]), default=None)
    return {
        "sizes": len(errors),
        "within_target": sum(1 for _, err in errors if abs(err) <= target),
        "target": target,
        "worst_error": worst[1] if worst else None,
        "worst_bytes": worst[0] if worst else None,
        "simple_worst_error": max(simple, key=abs, default=None),
    }
