"""The first-principles size model: a kernel's time at any size from machine-level figures and the kernel's launch
geometry, with nothing fitted on the kernel. docs/calibrate-sweep.md says what each term is and why.

Machine (measured once per machine, not per kernel): L the launch floor; λ_k, what a small streaming launch on every
SM pays beyond L (one cold load and one store per thread, to completion: the stream probe); BW the (calibrated)
bandwidth; the resident threads (SMs × threads per SM). Kernel (descriptor): the DRAM bytes of each launch, its
threads, the bytes b each thread has in flight at once, and the number of launches.

Per launch of B bytes and T threads:

    F = min(T, resident threads) · b                 bytes in flight (Little's Law)
    t = L + max(λ_k + B / BW,  ceil(B / F) · λ_k) + r · R

The first form is the pipe: the first bytes land one round trip after the launch, the rest stream at BW. The second
is Little's Law: with only F bytes in flight a launch moves F per round trip, so it needs ceil(B / F) of them, and a
last partial window (the tail of the last wave) costs a whole round trip. r · R is the work between a block's loads and
its stores that no load overlaps: r block-wide reductions in series (the descriptor's `reductions`; a row softmax
has two, max then sum), each costing R, the reduction probe's figure. Launches run in series: a kernel's time is the
sum over its launches. Pure: no device, no files.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any, Iterable, Mapping, MutableMapping, Sequence

from roofline.model.types import MachineSpec
from roofline.model.geometry import EPS as _EPS, LaunchShape
from roofline.sizes.fitted import FIRST_PRINCIPLES, measured_time, predict_time

LAUNCH_BOUND, LATENCY_BOUND = "launch-bound", "latency-bound"
CONCURRENCY_BOUND, BANDWIDTH_BOUND = "concurrency-bound", "bandwidth-bound"


@dataclass(frozen=True)
class MachineFigures:
    """The machine-level inputs of the model, each with where it came from (written to the results file)."""

    bandwidth: float  # B/s
    bandwidth_source: str
    memory_latency: float  # s: the DRAM latency (pointer chase); 2 × it stands in for λ_k without a probe
    memory_latency_source: str
    launch_floor: float  # s: L
    launch_floor_source: str
    round_trip: float  # s: λ_k, a small streaming launch on every SM, beyond L
    round_trip_source: str
    resident_threads: int | None = None  # SMs × threads per SM: the most threads in flight at once
    resident_source: str = "not known: bytes in flight are not capped"
    sm_count: int | None = None
    reduction: float = 0.0  # s: R, one block-wide reduction (warp shuffles, barriers) that no load overlaps
    reduction_source: str = "not measured: 0"
    model: str = FIRST_PRINCIPLES

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class LaunchTime:
    """The model's terms for one launch (seconds, bytes)."""

    bytes: float
    threads: float
    launch: float  # L
    round_trip: float  # λ_k
    transfer: float  # B / BW
    in_flight: float  # F
    windows: int  # ceil(B / F): the round trips Little's Law needs
    time: float
    regime: str
    reductions: float = 0.0  # r · R


def machine_figures(source: MachineSpec, overheads: Mapping[str, Any]) -> MachineFigures:
    """The model's machine inputs: BW, the DRAM latency and the resident threads from `source` (the calibrated or
    datasheet spec); L and the stream probe from `overheads` (measured at the start of the sweep). λ_k is the probe's
    time less L and less the probe's own bytes at BW; without a usable probe it is 2 × the DRAM latency (a load's
    round trip and the store's), and its source says so."""
    kind = "measured spec" if source.measured else ("derived spec" if source.derived else "datasheet spec")
    bw, latency, floor = source.bandwidth, source.latency, float(overheads.get("launch_floor") or 0.0)
    lam, why = 2 * latency, "not measured: 2 × the DRAM latency (a load's round trip and the store's)"
    probe = overheads.get("stream") or {}
    if probe.get("time"):
        got = probe["time"] - floor - probe["bytes"] / bw
        if got > 0:
            lam = got
            why = (f"measured: stream probe ({probe.get('method', '?')}) {probe['time'] * 1e9:.0f} ns per launch, "
                   f"minus L and its {probe['bytes']:.4g} B at BW")
        else:
            why = f"the stream probe left {got * 1e9:.0f} ns after L and its bytes; {why}"
    elif probe.get("error"):
        why = f"the stream probe failed ({probe['error']}); {why}"
    resident = source.resident_threads
    reduction, reduction_why = _reduction(overheads.get("reduction") or {})
    return MachineFigures(
        bandwidth=bw, bandwidth_source=f"{kind} {source.id} (memory.bandwidth)",
        memory_latency=latency, memory_latency_source=f"{kind} {source.id} (memory.latency)",
        launch_floor=floor, launch_floor_source=str(overheads.get("launch_floor_source") or "not measured; 0"),
        round_trip=lam, round_trip_source=why, resident_threads=resident,
        resident_source=(f"{kind} {source.id} (sm_count × max_threads_per_sm)" if resident
                         else "not known: bytes in flight are not capped"),
        sm_count=source.sm_count or probe.get("sm_count"),
        reduction=reduction, reduction_source=reduction_why,
    )


def _reduction(probe: Mapping[str, Any]) -> tuple[float, str]:
    """R from the reduction probe: (its time with `reductions` block reductions − its time with none) ÷ reductions.
    The two launches differ only in those reductions, so launch, round trip and bytes cancel."""
    if probe.get("error"):
        return 0.0, f"the reduction probe failed ({probe['error']}); 0 assumed"
    if not probe.get("time") or not probe.get("base_time") or not probe.get("reductions"):
        return 0.0, "not measured: 0"
    got = (probe["time"] - probe["base_time"]) / probe["reductions"]
    if got <= 0:
        return 0.0, f"the reduction probe measured {got * 1e9:.0f} ns per reduction; 0 assumed"
    return got, (f"measured: reduction probe ({probe.get('method', '?')}) {probe['time'] * 1e9:.0f} ns with "
                 f"{probe['reductions']} reductions, {probe['base_time'] * 1e9:.0f} ns without")


def launch_time(shape: LaunchShape, m: MachineFigures) -> LaunchTime:
    """One launch: L + max(λ_k + B/BW, ceil(B/F) · λ_k) + r · R (see the module docstring), with its regime."""
    lam = m.round_trip
    resident = shape.threads if m.resident_threads is None else min(shape.threads, m.resident_threads)
    in_flight = resident * shape.bytes_per_thread
    transfer = shape.bytes / m.bandwidth
    if shape.bytes <= 0:
        windows = 0
    elif in_flight <= 0:
        raise ValueError("a launch that moves bytes needs bytes in flight (bytes_per_thread > 0)")
    else:
        windows = max(1, math.ceil(shape.bytes / in_flight - _EPS))
    pipe, little = lam + transfer, windows * lam
    reductions = shape.reductions * m.reduction
    body = max(pipe, little) + reductions
    if m.launch_floor >= body:
        regime = LAUNCH_BOUND
    elif little > pipe:
        regime = CONCURRENCY_BOUND
    elif transfer < lam:
        regime = LATENCY_BOUND
    else:
        regime = BANDWIDTH_BOUND
    return LaunchTime(bytes=shape.bytes, threads=shape.threads, launch=m.launch_floor, round_trip=lam,
                      transfer=transfer, in_flight=in_flight, windows=windows, time=m.launch_floor + body,
                      regime=regime, reductions=reductions)


def predict(shapes: Sequence[LaunchShape], m: MachineFigures) -> tuple[float, tuple[LaunchTime, ...], str]:
    """(seconds, each launch's terms, the kernel's regime): launches in series. The regime is launch-bound when the
    launch floors are at least the rest, else the regime of the launch that takes longest."""
    times = tuple(launch_time(s, m) for s in shapes)
    total = sum(t.time for t in times)
    floors = sum(t.launch for t in times)
    regime = LAUNCH_BOUND if floors >= total - floors else max(times, key=lambda t: t.time).regime
    return total, times, regime


def annotate(entries: Iterable[MutableMapping[str, Any]], shapes: Sequence[Sequence[LaunchShape]],
             m: MachineFigures) -> None:
    """Add predicted_time, prediction_error (predicted / measured − 1; null without a verified time) and the terms
    to every entry, in place; `shapes` holds each entry's launches. The first-order max(L, λ + B/BW) with the spec's
    latency is kept beside it (`simple_max_time`), as the fitted model does."""
    for e, launches in zip(entries, shapes):
        total, times, regime = predict(launches, m)
        measured = measured_time(e)
        simple = predict_time(float(e["bytes"]), m.bandwidth, m.memory_latency, m.launch_floor, "max")
        main = max(times, key=lambda t: t.bytes)
        e["predicted_time"] = total
        e["prediction_error"] = total / measured - 1.0 if measured else None
        e["prediction"] = {
            "model": FIRST_PRINCIPLES, "regime": regime,
            "launch": sum(t.launch for t in times), "latency": main.round_trip,
            "transfer": sum(t.transfer for t in times), "in_flight": main.in_flight, "windows": main.windows,
            "reductions": sum(t.reductions for t in times),
            "launches": [asdict(t) for t in times],
            "simple_max_time": simple, "simple_max_error": simple / measured - 1.0 if measured else None,
        }
