"""The hierarchical roofline: each profiled kernel at its L1, L2 and DRAM intensity (three linked points at one
performance) against the L1, L2 and DRAM bandwidth roofs. Pure: results documents in, a matplotlib Figure out.

A kernel's three intensities are FLOPs ÷ the bytes that level served (l1tex__t_bytes, lts__t_bytes, DRAM read +
write). Where a point sits close to its own level's roof, that level is the bottleneck; the usual picture is the
DRAM point nearest its roof for a streaming kernel, and the L1 or L2 point nearest for a kernel with reuse.
Beside the counters' points (filled) the model's are drawn hollow, at the model's FLOPs over the same time: DRAM
from the descriptor's `bytes`, L1 and L2 from its `traffic` where given, so each level compares model and hardware.
Cache bandwidths come from an explicit mapping (a calibrated spec: `roofline calibrate` measures L1 / shared-memory
and L2 bandwidth, which datasheets do not give), else the results' machine.caches; a roof from the mapping says
"measured spec" in its label; a level without a known bandwidth is drawn as points with no roof, and the chart says
so.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Mapping, Sequence

from roofline.render.charts.roofs import COLORS, GID, require_matplotlib, roof_label, roofline_axes
from roofline.render.text import mpl
from roofline.records.files import params_text
from roofline.model.units import format_rate, format_si, quantity_text
from roofline.records.document import KernelResult, ResultsDocument, Status, as_result
from roofline.errors import InputError

LEVELS = ("l1", "l2", "dram")
_LEVEL_LABEL = {"l1": "L1", "l2": "L2", "dram": "DRAM"}
_MARKER = {"l1": "^", "l2": "s", "dram": "o"}
_ROOF_STYLE = {"l1": ":", "l2": "--", "dram": "-"}


@dataclass(frozen=True)
class HierPoint:
    number: int
    name: str
    params: str
    level: str
    x: float  # FLOP/B at this level
    y: float  # FLOP/s achieved
    color: str
    model: bool = False  # the descriptor's count (drawn hollow), not the counters'


def _kernels(doc: ResultsDocument | Mapping[str, Any]) -> Sequence[KernelResult]:
    """A document's entries typed; a dict is a producer's document or a test's, read here once (as_result)."""
    return doc.kernels if isinstance(doc, ResultsDocument) else [as_result(k) for k in doc["kernels"]]


def _machine(doc: ResultsDocument | Mapping[str, Any]) -> Mapping[str, Any]:
    """The document's machine block (the analysis machine summary, read as written)."""
    return (doc.machine or {}) if isinstance(doc, ResultsDocument) else doc["machine"]


def kernel_flops(kernel: KernelResult) -> float:
    """Measured FLOPs when the counters have some, else the model's."""
    measured = kernel.counters.flops if kernel.counters is not None else None
    return float(measured) if measured else float(kernel.flops or 0.0)


def kernel_time(kernel: KernelResult) -> float | None:
    return kernel.time_median or (kernel.counters.time if kernel.counters is not None else None)


def hierarchy_points(results_docs: Sequence[ResultsDocument | Mapping[str, Any]]) -> tuple[list[HierPoint], list[str]]:
    """Points for every kernel with counters (three per kernel where all levels are known), and the names of
    kernels that cannot be drawn (no counters, no FLOPs, no time)."""
    points: list[HierPoint] = []
    skipped: list[str] = []
    numbers: dict[tuple[str, str], int] = {}
    for doc in results_docs:
        for k in _kernels(doc):
            counters = k.counters
            flops, time = kernel_flops(k), kernel_time(k)
            if counters is None or k.failed or not flops or not time:
                skipped.append(k.name)
                continue
            key = (k.name, params_text(k.params or {}))
            number = numbers.setdefault(key, len(numbers) + 1)
            color = COLORS[(number - 1) % len(COLORS)]
            drawn = False
            for level, nbytes in counters.level_bytes().items():
                if nbytes:
                    points.append(HierPoint(number, key[0], key[1], level, flops / nbytes, flops / time, color))
                    drawn = True
            if not drawn:
                skipped.append(k.name)
    return points, sorted(set(skipped))


def model_points(results_docs: Sequence[ResultsDocument | Mapping[str, Any]],
                 counted: Sequence[HierPoint]) -> list[HierPoint]:
    """The model's points for each kernel the counters placed (same number and colour): x = model FLOPs ÷ the
    model's bytes at that level (DRAM `bytes`, `traffic` for L1/L2 where the descriptor gives it), y = model FLOPs
    ÷ the measured time. Results written before `traffic` existed give the DRAM point only; launches imported from
    a profiler have no model."""
    placed = {(p.name, p.params): p for p in counted}
    out: list[HierPoint] = []
    seen: set[tuple[str, str]] = set()
    for doc in results_docs:
        for k in _kernels(doc):
            key = (k.name, params_text(k.params or {}))
            ref, time, flops = placed.get(key), kernel_time(k), float(k.flops or 0.0)
            if ref is None or key in seen or not time or not flops or k.status is Status.IMPORTED:
                continue  # an imported launch has no descriptor: its "model" would be its own counters
            seen.add(key)
            levels = k.traffic_bytes()
            levels["dram"] = k.bytes
            for level in LEVELS:
                if levels.get(level):
                    out.append(HierPoint(ref.number, key[0], key[1], level, flops / levels[level], flops / time,
                                         ref.color, model=True))
    return out


def cache_bandwidths(doc: ResultsDocument | Mapping[str, Any],
                     override: Mapping[str, float | None] | None = None) -> dict[str, float | None]:
    """{'l1': B/s or None, 'l2': ..., 'dram': B/s}: the override (a calibrated spec), else the results' own machine
    block, which carries the spec's cache figures (files written before it did have none: no cache roofs)."""
    machine = _machine(doc)
    out: dict[str, float | None] = {"l1": None, "l2": None, "dram": machine["bandwidth"]}
    caches = machine.get("caches") or {}
    for level in ("l1", "l2"):
        value = (caches.get(level) or {}).get("bandwidth")
        out[level] = float(value) if value else None
    for level, value in (override or {}).items():
        if value:
            out[level] = float(value)
    return out


def hierarchy_figure(results_docs: Sequence[ResultsDocument | Mapping[str, Any]],
                     bandwidths: Mapping[str, float | None] | None = None, title: str | None = None,
                     l2_curve: Sequence[tuple[float, float]] = (), l2_size: float | None = None) -> Any:
    """The hierarchical roofline of the first results document's machine (the others' kernels are drawn
    against it too). `bandwidths` overrides {'l1','l2','dram'} in B/s, e.g. from a calibrated spec; `l2_curve`, the
    measured spec's (working set, bandwidth) points, adds a panel showing where the L2 plateau falls to DRAM."""
    require_matplotlib()

    if not results_docs:
        raise InputError("the hierarchical roofline needs --results from 'measure --profile ncu' or 'import ncu'")
    points, skipped = hierarchy_points(results_docs)
    if not points:
        raise InputError("no kernel in these results has counters (L1/L2/DRAM bytes, FLOPs and time); measure with "
                         "'--profile ncu' or import an ncu CSV")
    modelled = model_points(results_docs, points)
    # lazy: matplotlib is a start-up cost only this path pays
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure  # lazy: matplotlib is a start-up cost only this path pays
    from matplotlib.lines import Line2D  # lazy: matplotlib is a start-up cost only this path pays

    machine = _machine(results_docs[0])
    bws = cache_bandwidths(results_docs[0], bandwidths)
    from_override = {lvl for lvl, bw in (bandwidths or {}).items() if bw}
    used_roofs = {k.roof for d in results_docs for k in _kernels(d) if k.counters is not None}
    peaks = {r: p for r, p in machine["roofs"].items() if r in used_roofs} or dict(machine["roofs"])
    top = max(peaks.values())

    known = {lvl: bw for lvl, bw in bws.items() if bw}
    ridges = [top / bw for bw in known.values()]
    xs = [p.x for p in points + modelled] + ridges
    x_lo = 10.0 ** math.floor(math.log10(min(xs)) - 0.3)
    x_hi = 10.0 ** math.ceil(math.log10(max(xs)) + 0.3)
    ys = [p.y for p in points + modelled] + [min(known.values()) * x_lo]
    y_lo = 10.0 ** math.floor(math.log10(min(ys)) - 0.2)
    y_hi = 10 ** (math.log10(top) + 0.35)

    fig = Figure(figsize=(12, 8))
    FigureCanvasAgg(fig)
    ax = roofline_axes(fig, (0.08, 0.09, 0.62, 0.83), (x_lo, x_hi), (y_lo, y_hi))
    ax.set_xlabel("Arithmetic intensity at each level (FLOP/B)")
    ax.set_ylabel("Performance (FLOP/s)")
    ax.set_title(title or f"Hierarchical roofline: {machine['name']}", loc="left", fontsize=13)

    # ---- roofs: one compute roof per used precision, one bandwidth roof per level with a known bandwidth ----
    for roof, peak in sorted(peaks.items(), key=lambda kv: kv[1]):
        x_from = peak / max(known.values())
        ax.plot([x_from, x_hi], [peak, peak], "-", color="black", linewidth=1.8, gid=GID + "hier-compute-roof")
        ax.annotate(f"{roof_label(roof)} {format_si(peak, 'FLOP/s')}", xy=(x_hi, peak), xytext=(-4, 4),
                    textcoords="offset points", ha="right", fontsize=8.5)
    for level in LEVELS:
        bw = known.get(level)
        if not bw:
            continue
        x_ridge = top / bw
        ax.plot([x_lo, x_ridge], [bw * x_lo, top], _ROOF_STYLE[level], color="#444444", linewidth=1.6,
                gid=f"{GID}hier-roof:{level}")
        origin = " (measured spec)" if level in from_override else ""
        _label_slope(ax, f"{_LEVEL_LABEL[level]} {format_rate(bw)}{origin}", bw, x_lo * 1.6, level)

    # ---- kernels: three linked points each ----
    by_kernel: dict[int, list[HierPoint]] = {}
    for p in points:
        by_kernel.setdefault(p.number, []).append(p)
    for p in modelled:  # hollow: the descriptor's count, beside the counters' filled point of the same level
        ax.plot([p.x], [p.y], _MARKER[p.level], markerfacecolor="none", markeredgecolor=p.color, markersize=9,
                markeredgewidth=1.4, zorder=4, gid=f"{GID}hier-model:{p.level}")
    for number, group in by_kernel.items():
        group = sorted(group, key=lambda p: p.x)
        ax.plot([p.x for p in group], [p.y for p in group], "-", color=group[0].color, linewidth=1.0, alpha=0.7,
                gid=f"{GID}hier-link:{number}")
        for p in group:
            ax.plot([p.x], [p.y], _MARKER[p.level], color=p.color, markersize=8, markeredgecolor="black",
                    markeredgewidth=0.5, zorder=5, gid=f"{GID}hier-point:{p.level}")
        dram = next((p for p in group if p.level == "dram"), group[-1])
        ax.annotate(str(number), xy=(dram.x, dram.y), xytext=(5, -10), textcoords="offset points", fontsize=8,
                    color=dram.color, fontweight="bold")

    drawn = {p.level for p in points + modelled}  # the legend lists only markers the chart shows
    handles = [Line2D([], [], marker=_MARKER[lvl], linestyle="", color="gray", markeredgecolor="black",
                      label=f"{_LEVEL_LABEL[lvl]} intensity") for lvl in LEVELS if lvl in drawn]
    if modelled:
        handles += [Line2D([], [], marker="o", linestyle="", color="gray", markeredgecolor="black",
                           label="counters (filled)"),
                    Line2D([], [], marker="o", linestyle="", markerfacecolor="none", markeredgecolor="gray",
                           markeredgewidth=1.4, label="model (hollow)")]
    handles += [Line2D([], [], linestyle=_ROOF_STYLE[lvl], color="#444444", label=f"{_LEVEL_LABEL[lvl]} roof")
                for lvl in LEVELS if known.get(lvl)]
    ax.legend(handles=handles, loc="lower right", fontsize=8, framealpha=0.9)

    # ---- the side table: numbered kernels, then what is missing ----
    lines = []
    for number, group in by_kernel.items():
        p = group[0]
        lines.append(f"{number:>2}  {mpl(p.name)}" + (f" ({mpl(p.params)})" if p.params else ""))
    unknown = [lvl for lvl in ("l1", "l2") if not bws.get(lvl)]
    if unknown:
        lines += ["", "No roof drawn for " + " and ".join(_LEVEL_LABEL[u] for u in unknown) + ":",
"the spec gives no bandwidth for it;", "add caches.<level>.bandwidth, or",
                  "'roofline calibrate -o m.yaml' (it",
                  "measures L1 and L2) and --measured-spec m.yaml."]
    if skipped:
        lines += ["", "Not drawn (no counters): " + ", ".join(mpl(n) for n in skipped[:8])
                  + (" …" if len(skipped) > 8 else "")]
    fig.text(0.72, 0.92, "\n".join(lines), va="top", ha="left", fontsize=8.5, family="monospace",
             gid=GID + "hier-table")
    if l2_curve:
        _l2_curve_panel(fig, l2_curve, known.get("dram"), l2_size)
    return fig


def _l2_curve_panel(fig: Any, curve: Sequence[tuple[float, float]], dram: float | None, l2_size: float | None) -> None:
    """L2 read bandwidth against working set (calibrate's curve) under the side table: the plateau the L2 roof is
    taken from, the L2 size, and the fall to the DRAM roof beyond it."""
    ax = fig.add_axes((0.75, 0.09, 0.22, 0.26))
    xs = [w / 2**20 for w, _ in curve]
    ys = [b / 1e12 for _, b in curve]
    ax.plot(xs, ys, "s-", color="#444444", markersize=4, linewidth=1.2, gid=GID + "hier-l2-curve")
    ax.set_xscale("log", base=2)
    from matplotlib.ticker import FuncFormatter  # lazy: matplotlib is a start-up cost only this path pays

    ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
    ax.set_ylim(0, max(ys) * 1.15)
    if dram:
        ax.axhline(dram / 1e12, linestyle="-", color="#999999", linewidth=1.0)
        ax.annotate(f"DRAM {format_rate(dram)}", xy=(xs[0], dram / 1e12), xytext=(0, 3), textcoords="offset points",
                    fontsize=7, color="#666666")
    if l2_size:
        ax.axvline(l2_size / 2**20, linestyle=":", color="#999999", linewidth=1.0)
        ax.annotate(f"L2 {quantity_text(l2_size, 'bytes')}", xy=(l2_size / 2**20, max(ys) * 1.05), xytext=(-3, 0),
                    textcoords="offset points", fontsize=7, color="#666666", ha="right")
    ax.set_xlabel("working set (MiB)", fontsize=7.5)
    ax.set_ylabel("L2 read (TB/s)", fontsize=7.5)
    ax.tick_params(labelsize=7)
    ax.set_title("L2 bandwidth by working set (measured spec)", fontsize=8, loc="left")


def _label_slope(ax: Any, text: str, bw: float, x: float, level: str) -> None:
    """A bandwidth roof's label above its line, turned to the line's slope on screen, so no line runs through it."""
    a, b = ax.transData.transform((x, bw * x)), ax.transData.transform((x * 10, bw * x * 10))
    angle = math.degrees(math.atan2(b[1] - a[1], b[0] - a[0]))
    ax.annotate(text, xy=(x, bw * x), xytext=(0, 4), textcoords="offset points", rotation=angle,
                rotation_mode="anchor", ha="left", va="bottom", fontsize=8, color="#444444",
                gid=f"{GID}hier-roof-label:{level}",
                bbox={"boxstyle": "round,pad=0.1", "facecolor": "white", "edgecolor": "none", "alpha": 0.8})
