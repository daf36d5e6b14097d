"""The first-principles size model: a kernel's time at any size from machine-level figures and the kernel's launch
geometry, with nothing fitted on the kernel. docs/calibrate-sweep.md says what each term is and why.

Machine (measured once per machine, not per kernel): L the launch floor; λ_k, what a small streaming launch on every
SM pays beyond L (one cold load and one store per thread, to completion: the stream probe); BW the (calibrated)
bandwidth; the resident threads (SMs × threads per SM). Kernel (descriptor): the DRAM bytes of each launch, its
threads, the bytes b each thread has in flight at once, and the number of launches.

Per launch of B bytes and T threads in K blocks:

    F  = min(T, resident threads) · b                bytes in flight (Little's Law)
    BW' = the active SMs' bandwidth (per-SM curve at min(K, SMs)) when K < SMs, the L2's for a later pass that
          re-reads a working set the L2 holds (everything the pass touches: its own writes stream through the same
          L2 and evict what it re-reads), else BW
    t  = L + max(λ_k + B / BW' + r · R,  ceil(B / F) · (λ_k + r · R))

The first form is the pipe: the first bytes land one round trip after the launch, the rest stream at BW'. The second
is Little's Law: with only F bytes in flight a launch moves F per round trip, so it needs ceil(B / F) of them, and a
last partial window (the tail of the last wave) costs a whole round trip; a block holds its thread slots through its
reductions, so each window also pays them. r · R is the work between a block's loads and its stores that no load
overlaps: r block-wide reductions in series (the descriptor's `reductions`, one per launch in order: a row softmax
has two in its one launch, a three-pass layer norm one in each of its first two), each costing R. One SM can pull
only so much by itself, so a launch of fewer blocks than SMs streams at what that many SMs reach together (the
per-SM curve `calibrate` measures: k blocks, one per SM). Launches run in series: a kernel's time is the sum over
its launches. Every prediction names its regime. Where neither a probe nor the spec gives a machine figure, a stated
default stands in and `MachineFigures.assumed` names it. Pure: no device, no files.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any, Iterable, Mapping, MutableMapping, Sequence

from roofline.model.launch import DEFAULT_LAUNCH_FLOOR  # s: one figure for the size model and the gates
from roofline.model.types import MachineSpec
from roofline.model.geometry import EPS as _EPS, LaunchShape
from roofline.sizes.fitted import FIRST_PRINCIPLES, measured_time, predict_time

LAUNCH_BOUND, LATENCY_BOUND = "launch-bound", "latency-bound"
CONCURRENCY_BOUND, BANDWIDTH_BOUND = "concurrency-bound", "bandwidth-bound"
SM_BOUND, L2_BOUND, COMPUTE_BOUND = "sm-bound", "l2-bound", "compute-bound"
BLOCK_BOUND = "block-bound"  # more blocks than an SM can start in the time the bytes take  # fewer blocks than SMs; a later pass re-reading what fits in L2

# What the model assumes where neither a probe nor the spec gives a figure; each use is named in `assumed`.
DEFAULT_REDUCTION = 0.2e-6  # s: one block reduction (warp shuffles, a shared-memory slot per warp, two barriers)
DEFAULT_SM_SHARE = 2.0  # one SM alone streams at this many times its share of BW (BW / SMs)
DEFAULT_BLOCK_THREADS = 128  # threads per block when the descriptor gives no `blocks` (the map kernels' block)


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
    # (active SMs, aggregate B/s) by increasing SM count: what k blocks, one per SM, stream at; empty: no cap
    sm_curve: tuple[tuple[float, float], ...] = ()
    sm_curve_source: str = "not known: a launch of few blocks is taken at BW"
    # (working set B, B/s) by increasing working set: the L2's read bandwidth; empty: re-reads go to DRAM
    l2_curve: tuple[tuple[float, float], ...] = ()
    l2_source: str = "not known: a later pass re-reads at BW"
    assumed: tuple[str, ...] = ()  # every figure not measured, as "name: assumed value (why)"
    block_interval: float = 0.0  # s: how often one SM starts a new block; 0: block dispatch not modelled
    block_interval_source: str = "not measured: block dispatch not modelled"
    accuracy: str = ""  # how close this kind of prediction came on held-out kernels (docs/calibrate-sweep.md)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def sm_bandwidth(self, active: float) -> float:
        """What `active` SMs (one block each) stream at together: the per-SM curve, linear between its points and
        through zero below the first, flat beyond the last; never above BW."""
        curve = self.sm_curve
        if not curve:
            return self.bandwidth
        if active <= curve[0][0]:
            got = curve[0][1] * active / curve[0][0]
        elif active >= curve[-1][0]:
            got = curve[-1][1]
        else:
            (k0, b0), (k1, b1) = next((a, b) for a, b in zip(curve, curve[1:]) if a[0] <= active <= b[0])
            got = b0 + (b1 - b0) * (active - k0) / (k1 - k0)
        return min(self.bandwidth, got)

    def l2_bandwidth(self, working_set: float) -> float | None:
        """The L2's bandwidth for a working set re-read on chip (log-linear between the curve's points), or None
        beyond the curve's last point or without a curve: the data then comes from DRAM."""
        curve = self.l2_curve
        if not curve or working_set <= 0 or working_set > curve[-1][0]:
            return None
        if working_set <= curve[0][0]:
            return max(self.bandwidth, curve[0][1])
        (w0, b0), (w1, b1) = next((a, b) for a, b in zip(curve, curve[1:]) if a[0] <= working_set <= b[0])
        f = math.log(working_set / w0) / math.log(w1 / w0)
        return max(self.bandwidth, b0 + (b1 - b0) * f)


@dataclass(frozen=True)
class LaunchTime:
    """The model's terms for one launch (seconds, bytes)."""

    bytes: float
    threads: float
    launch: float  # L
    round_trip: float  # λ_k
    transfer: float  # B / the bandwidth it streams at
    in_flight: float  # F
    windows: int  # ceil(B / F): the round trips Little's Law needs
    time: float
    regime: str
    reductions: float = 0.0  # r · R
    blocks: float | None = None
    active_sms: float | None = None  # min(blocks, SMs): the SMs the launch engages
    stream_bandwidth: float | None = None  # B/s the transfer is taken at: BW, the active SMs' or the L2's


def machine_figures(source: MachineSpec, overheads: Mapping[str, Any]) -> MachineFigures:
    """The model's machine inputs. BW, the DRAM latency, the resident threads, the per-SM curve and the L2 curve from
    `source` (the calibrated or datasheet spec); L, λk and R from `overheads` (the probes at the start of a sweep) when
    they measured them, else from the spec's `model:` block, else a stated default (listed in `assumed`). λk from the
    stream probe is its time less L and less the probe's own bytes at BW; with neither probe nor spec figure it is
    2 × the DRAM latency (a load's round trip and the store's). `overheads` is empty for a prediction without a GPU."""
    kind = "measured spec" if source.measured else ("derived spec" if source.derived else "datasheet spec")
    spec = f"{kind} {source.id}"
    model_spec = origin(source, "model.launch_floor")
    fig = source.model
    assumed: list[str] = []
    bw, latency = source.bandwidth, source.latency
    measured_floor = "launch_floor" in overheads and not overheads.get("launch_floor_error")
    if measured_floor:
        floor, floor_why = float(overheads["launch_floor"] or 0.0), str(overheads.get("launch_floor_source") or "?")
    elif fig.launch_floor is not None:
        floor, floor_why = fig.launch_floor, f"{model_spec} (model.launch_floor)"
        if overheads.get("launch_floor_error"):
            floor_why += f"; measuring it here failed ({overheads['launch_floor_error']})"
    elif overheads.get("launch_floor_error"):
        floor, floor_why = float(overheads.get("launch_floor") or 0.0), str(overheads.get("launch_floor_source"))
    else:
        floor = DEFAULT_LAUNCH_FLOOR
        floor_why = (f"assumed {floor * 1e6:.1f} µs (not measured: no probe ran and {source.id} gives no "
                     "model.launch_floor; a graph-replayed empty launch on recent NVIDIA data-centre GPUs)")
        assumed.append(f"launch floor: {floor_why}")
    lam, lam_why = _round_trip(overheads, fig.round_trip, model_spec, floor, bw, latency)
    if lam_why.startswith(("not measured", "the stream probe")):
        assumed.append(f"streaming round trip: {lam * 1e9:.0f} ns, {lam_why}")
    probe = overheads.get("reduction") or {}
    if probe.get("time") or probe.get("error"):
        reduction, reduction_why = _reduction(probe)
    elif fig.reduction is not None:
        reduction, reduction_why = fig.reduction, f"{model_spec} (model.reduction)"
    elif overheads:  # a sweep whose probes ran without the reduction probe: as before, 0
        reduction, reduction_why = 0.0, "not measured: 0"
    else:
        reduction = DEFAULT_REDUCTION
        reduction_why = (f"assumed {reduction * 1e9:.0f} ns (not measured: {source.id} gives no model.reduction; "
                         "a block reduction's shuffles and barriers)")
        assumed.append(f"block reduction: {reduction_why}")
    sms = source.sm_count or (overheads.get("stream") or {}).get("sm_count")
    curve, curve_why = _sm_curve(source, model_spec, sms)
    if curve and curve_why.startswith("assumed"):
        assumed.append(f"per-SM bandwidth: {curve_why}")
    if fig.block_interval is not None:
        interval, interval_why = fig.block_interval, f"{model_spec} (model.block_interval)"
    else:
        interval = 0.0
        interval_why = f"not modelled (0): {source.id} gives no model.block_interval, which calibrate measures"
        assumed.append(f"block dispatch: {interval_why}")
    l2, l2_why = _l2_curve(source, spec)
    if l2 and l2_why.startswith("assumed"):
        assumed.append(f"L2 bandwidth: {l2_why}")
    resident = source.resident_threads
    return MachineFigures(
        bandwidth=bw, bandwidth_source=f"{origin(source, 'memory.bandwidth')} (memory.bandwidth)",
        memory_latency=latency, memory_latency_source=f"{origin(source, 'memory.latency')} (memory.latency)",
        launch_floor=floor, launch_floor_source=floor_why,
        round_trip=lam, round_trip_source=lam_why, resident_threads=resident,
        resident_source=(f"{origin(source, 'sm_count')} (sm_count × max_threads_per_sm)" if resident
                         else "not known: bytes in flight are not capped"),
        sm_count=sms, reduction=reduction, reduction_source=reduction_why,
        sm_curve=curve, sm_curve_source=curve_why, l2_curve=l2, l2_source=l2_why, assumed=tuple(assumed),
        block_interval=interval, block_interval_source=interval_why,
        accuracy=accuracy(source, bool(overheads)),
    )


# How close the model came, by what fed it: held-out kernels (not those its form was developed on) on one H200 SXM,
# 2026-12-04, run B of docs/calibrate-sweep.md ("Issue 32: held-out validation"), sizes within 25 % of the measured
# time. No other GPU has been validated.
VALIDATION = {
    "calibrated": "within 25 % at 90 % of held-out sizes (127/141), worst -43 %",
    "model block": "within 25 % at 93 % of held-out sizes (131/141), worst -46 %",
    "datasheet": "within 25 % at 76 % of held-out sizes (107/141), worst -53 %",
}


def accuracy(source: MachineSpec, probed: bool) -> str:
    """The validation figure for a prediction made from `source`: measured figures (a calibrated spec or the probes
    of a sweep), a spec whose model: block was measured, or a datasheet alone (every model figure a default)."""
    if source.measured or probed:
        key, how = "calibrated", "a calibrated spec"
    elif source.model:
        key, how = "model block", "a spec whose model: block was measured"
    else:
        key, how = "datasheet", "a datasheet spec alone"
    return (f"accuracy: with {how}, the model was {VALIDATION[key]} on one H200 SXM (docs/calibrate-sweep.md, held-out "
            "validation); other GPUs are not validated")


def origin(source: MachineSpec, field: str) -> str:
    """Where one figure of `source` came from, as the prediction names it: the spec's kind (measured, derived,
    datasheet), except that a datasheet spec's figure cited as measured (the bundled H200's DRAM latency and its
    calibrate-measured `model:` block, tag M in its sources) says so rather than passing for the datasheet's."""
    if source.measured:
        return f"measured spec {source.id}"
    if source.derived:
        return f"derived spec {source.id}"
    cited = [s.cite for s in source.sources if field in s.fields]
    if any(c.lower().startswith("measured") for c in cited) or (field.startswith("model.") and not cited):
        return f"spec {source.id}, measured"
    return f"datasheet spec {source.id}"


def _round_trip(overheads: Mapping[str, Any], spec_value: float | None, spec: str, floor: float, bw: float,
                latency: float) -> tuple[float, str]:
    """λk: the stream probe's time less L and its bytes at BW; else the spec's model.round_trip; else 2 × latency."""
    fallback = "not measured: 2 × the DRAM latency (a load's round trip and the store's)"
    probe = overheads.get("stream") or {}
    if probe.get("time"):
        got = probe["time"] - floor - probe["bytes"] / bw
        if got > 0:
            return got, (f"measured: stream probe ({probe.get('method', '?')}) {probe['time'] * 1e9:.0f} ns per "
                         f"launch, minus L and its {probe['bytes']:.4g} B at BW")
        why = f"the stream probe left {got * 1e9:.0f} ns after L and its bytes"
    elif probe.get("error"):
        why = f"the stream probe failed ({probe['error']})"
    else:
        why = ""
    if spec_value is not None:
        return spec_value, f"{spec} (model.round_trip)" + (f"; {why}" if why else "")
    return 2 * latency, f"{why}; {fallback}" if why else fallback


def _sm_curve(source: MachineSpec, spec: str, sms: int | None) -> tuple[tuple[tuple[float, float], ...], str]:
    """The per-SM curve: the spec's model.sm_curve, or its model.sm_bandwidth × SMs; else DEFAULT_SM_SHARE × BW / SMs
    per SM, assumed; none without an SM count (then no launch is known to engage fewer SMs than the GPU has)."""
    fig = source.model
    if fig.sm_curve:
        pts = ", ".join(f"{k}: {b / 1e9:.0f} GB/s" for k, b in fig.sm_curve[:3])
        return tuple((float(k), b) for k, b in fig.sm_curve), f"{spec} (model.sm_curve: {pts}, …)"
    if not sms:
        return (), "not known: the spec gives no sm_count, so no launch is taken to engage fewer SMs"
    if fig.sm_bandwidth is not None:
        return _linear(fig.sm_bandwidth, source.bandwidth), \
            f"{spec} (model.sm_bandwidth {fig.sm_bandwidth / 1e9:.0f} GB/s per SM, × active SMs up to BW)"
    per = DEFAULT_SM_SHARE * source.bandwidth / sms
    return _linear(per, source.bandwidth), \
        (f"assumed {per / 1e9:.0f} GB/s per SM, × active SMs up to BW (not measured: {DEFAULT_SM_SHARE:g} × BW / "
         f"{sms} SMs; {source.id} gives no model.sm_curve)")


def _linear(per_sm: float, bandwidth: float) -> tuple[tuple[float, float], ...]:
    """The curve of SMs that each stream at `per_sm` until together they reach BW."""
    saturate = bandwidth / per_sm
    return ((1.0, per_sm), (saturate, bandwidth)) if saturate > 1 else ((1.0, bandwidth),)


def _l2_curve(source: MachineSpec, spec: str) -> tuple[tuple[tuple[float, float], ...], str]:
    """The L2's bandwidth by working set: calibrate's caches.l2.curve; else caches.l2.bandwidth up to half of
    caches.l2.size (assumed: where a re-read still finds its data); else none."""
    l2 = source.caches.get("l2")
    if l2 is not None and l2.curve:
        return tuple(l2.curve), f"{spec} (caches.l2.curve, {len(l2.curve)} working sets)"
    if l2 is not None and l2.bandwidth and l2.size:
        return ((l2.size / 2, l2.bandwidth),), (f"assumed: caches.l2.bandwidth {l2.bandwidth / 1e12:.2f} TB/s up to "
                                                f"half of caches.l2.size (not measured as a curve)")
    return (), f"not known: {source.id} gives no caches.l2.curve; a later pass re-reads at BW"


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
    """One launch: L + max(λk + B/BW' + r·R, ceil(B/F) · (λk + r·R)) (see the module docstring), with its regime.

    With a block dispatch interval b (the spec's model.block_interval), a launch also takes at least
    ceil(blocks / SMs) · b + λk + r·R: each SM starts its blocks one after another (block-bound).

    BW' is the bandwidth the launch can stream at: the active SMs' (min(blocks, SMs), the per-SM curve) when it
    engages fewer SMs than the GPU has, the L2's when it re-reads a working set an earlier launch of the run brought
    on chip and the L2 curve holds all the launch touches (its re-read and its own traffic together), else BW. A
    block holds its thread slots through its reductions, so each Little's-Law window costs λk + r·R."""
    lam = m.round_trip
    resident = shape.threads if m.resident_threads is None else min(shape.threads, m.resident_threads)
    in_flight = resident * shape.bytes_per_thread
    blocks = shape.blocks if shape.blocks is not None else max(1.0, math.ceil(shape.threads / DEFAULT_BLOCK_THREADS))
    active = min(blocks, m.sm_count) if m.sm_count else None
    bw, limited = m.bandwidth, BANDWIDTH_BOUND
    if shape.reread:
        l2 = m.l2_bandwidth(max(shape.reread, shape.bytes))
        if l2 is not None:
            bw, limited = l2, L2_BOUND
    if active is not None and m.sm_count and active < m.sm_count and m.sm_curve:
        few = m.sm_bandwidth(active)
        if few < bw:
            bw, limited = few, SM_BOUND
    transfer = shape.bytes / bw
    if shape.bytes <= 0:
        windows = 0
    elif in_flight <= 0:
        raise ValueError("a launch that moves bytes needs bytes in flight (bytes_per_thread > 0)")
    else:
        windows = max(1, math.ceil(shape.bytes / in_flight - _EPS))
    reductions = shape.reductions * m.reduction
    pipe, little = lam + transfer + reductions, windows * (lam + reductions)
    # each SM starts its blocks one after another; its last block still pays a round trip and its reductions
    dispatch = (math.ceil(blocks / m.sm_count - _EPS) * m.block_interval + lam + reductions
                if m.sm_count and m.block_interval and shape.bytes > 0 else 0.0)
    body = max(pipe, little, dispatch)
    if m.launch_floor >= body:
        regime = LAUNCH_BOUND
    elif dispatch > max(pipe, little):
        regime = BLOCK_BOUND
    elif little > pipe:
        regime = CONCURRENCY_BOUND
    elif transfer < lam:
        regime = LATENCY_BOUND
    else:
        regime = limited
    return LaunchTime(bytes=shape.bytes, threads=shape.threads, launch=m.launch_floor, round_trip=lam,
                      transfer=transfer, in_flight=in_flight, windows=windows, time=m.launch_floor + body,
                      regime=regime, reductions=reductions, blocks=blocks, active_sms=active, stream_bandwidth=bw)


def predict(shapes: Sequence[LaunchShape], m: MachineFigures) -> tuple[float, tuple[LaunchTime, ...], str]:
    """(seconds, each launch's terms, the kernel's regime): launches in series. The regime is launch-bound when the
    launch floors are at least the rest, else the regime of the launch that takes longest."""
    times = tuple(launch_time(s, m) for s in shapes)
    total = sum(t.time for t in times)
    floors = sum(t.launch for t in times)
    regime = LAUNCH_BOUND if floors >= total - floors else max(times, key=lambda t: t.time).regime
    return total, times, regime


def annotate(entries: Iterable[MutableMapping[str, Any]], shapes: Sequence[Sequence[LaunchShape]],
             m: MachineFigures, compute: Sequence[float] | None = None) -> None:
    """Add predicted_time, prediction_error (predicted / measured − 1; null without a verified time) and the terms
    to every entry, in place; `shapes` holds each entry's launches. `compute`, where given, is each entry's FLOPs ÷
    its roof: when that is longer than everything but the launch floors, the kernel is compute-bound and takes the
    floors plus it. The first-order max(L, λ + B/BW) with the spec's latency is kept beside it (`simple_max_time`), as
    the fitted model does."""
    for i, (e, launches) in enumerate(zip(entries, shapes)):
        total, times, regime = predict(launches, m)
        floors = sum(t.launch for t in times)
        arithmetic = compute[i] if compute is not None else 0.0
        if arithmetic > total - floors:
            total, regime = floors + arithmetic, COMPUTE_BOUND
        measured = measured_time(e)
        simple = predict_time(float(e["bytes"]), m.bandwidth, m.memory_latency, m.launch_floor, "max")
        main = max(times, key=lambda t: t.bytes)
        e["predicted_time"] = total
        e["prediction_error"] = total / measured - 1.0 if measured else None
        e["prediction"] = {
            "model": FIRST_PRINCIPLES, "regime": regime,
            "launch": sum(t.launch for t in times), "latency": main.round_trip,
            "transfer": sum(t.transfer for t in times), "in_flight": main.in_flight, "windows": main.windows,
            "reductions": sum(t.reductions for t in times), "compute": arithmetic,
            "active_sms": main.active_sms, "stream_bandwidth": main.stream_bandwidth,
            "launches": [asdict(t) for t in times],
            "simple_max_time": simple, "simple_max_error": simple / measured - 1.0 if measured else None,
        }
