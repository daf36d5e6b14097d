"""Roofline and sweep charts as matplotlib Figures. Pure: documents in, a Figure out; nothing here computes physics.

Every ceiling, ridge and attainable value comes from the analysis or results documents (roofline.analysis did the
arithmetic); this module only places geometry and text. matplotlib is imported lazily and only through its object
API (Figure + FigureCanvasAgg), so it works headless and never touches pyplot's global state.
"""

from __future__ import annotations

import io
import math
from dataclasses import dataclass
from typing import Any, Sequence

from roofline.results import params_text, sweep_groups
from roofline.units import format_bytes, format_rate, format_si

FORMATS = ("png", "svg", "pdf")
_COLORS = ("#1f77b4", "#2ca02c", "#9467bd", "#8c564b", "#17becf", "#bcbd22", "#7f7f7f", "#e377c2")
_FAILED_COLOR = "#d62728"
_GID = "roofline:"  # every artist this module draws carries a gid, so tests can count roofs and points


def roof_label(roof: str) -> str:
    """'bf16_tensor' -> 'BF16 tensor', 'fp32' -> 'FP32'."""
    base, _, rest = roof.partition("_")
    return base.upper() + (f" {rest}" if rest else "")


def _roofs_label(roofs: Sequence[str]) -> str:
    """['fp16_tensor', 'bf16_tensor'] -> 'FP16 / BF16 tensor'."""
    suffixes = {r.partition("_")[2] for r in roofs}
    if len(suffixes) == 1:
        suffix = suffixes.pop()
        return " / ".join(r.partition("_")[0].upper() for r in roofs) + (f" {suffix}" if suffix else "")
    return " / ".join(roof_label(r) for r in roofs)


def _peak_text(roofs: Sequence[str], value: float) -> str:
    unit = "OP/s" if all(r.startswith("int") for r in roofs) else "FLOP/s"
    return format_si(value, unit)


@dataclass(frozen=True)
class RoofSet:
    """One machine's roofs as drawn: solid for the datasheet, dashed for a measured (calibrated) spec."""

    machine: dict[str, Any]
    measured: bool
    color: str


@dataclass(frozen=True)
class Point:
    number: int
    name: str
    params: str
    x: float  # FLOP/B
    y: float  # FLOP/s: attainable (model), achieved (measured) or the ceiling (FAILED, drawn there)
    ceiling: float
    kind: str  # "model" | "measured" | "failed"
    color: str
    fraction: float | None


def roofline_axes(fig: Any, rect: tuple[float, float, float, float], xlim: tuple[float, float],
                  ylim: tuple[float, float]) -> Any:
    """Log-log axes in FLOP/B and FLOP/s with human tick labels: the frame every roofline chart shares."""
    from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

    ax = fig.add_axes(rect)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlim(*xlim)
    ax.set_ylim(*ylim)
    ax.xaxis.set_major_locator(LogLocator(base=10))
    ax.yaxis.set_major_locator(LogLocator(base=10))
    ax.xaxis.set_major_formatter(FuncFormatter(_intensity_tick))
    ax.yaxis.set_major_formatter(FuncFormatter(_flops_tick))
    ax.xaxis.set_minor_formatter(NullFormatter())
    ax.yaxis.set_minor_formatter(NullFormatter())
    ax.grid(True, which="major", color="#dddddd", linewidth=0.6)
    ax.set_axisbelow(True)
    return ax


def _require_matplotlib() -> None:
    try:
        import matplotlib  # noqa: F401
    except ImportError as exc:  # pragma: no cover - matplotlib is a dependency; the message is for broken installs
        from roofline.errors import InputError

        raise InputError(f"plotting needs matplotlib ({exc}): pip install matplotlib") from None


def _assign_roofsets(datasheet: Sequence[dict[str, Any]], measured: Sequence[dict[str, Any]]) -> list[RoofSet]:
    sets: list[RoofSet] = []
    colors: dict[str, str] = {}
    for m in datasheet:
        colors.setdefault(m["id"], _COLORS[len(colors) % len(_COLORS)])
        sets.append(RoofSet(m, False, colors[m["id"]]))
    for m in measured:
        paired = next((c for mid, c in colors.items() if m["id"].startswith(mid) or mid.startswith(m["id"])), None)
        if paired is None:
            paired = colors.setdefault(m["id"], _COLORS[len(colors) % len(_COLORS)])
        sets.append(RoofSet(m, True, paired))
    return sets


def collect_points(analysis_docs: Sequence[dict[str, Any]], results_docs: Sequence[dict[str, Any]],
                   colors: dict[str, str]) -> tuple[list[Point], list[str]]:
    """Points to draw (numbered by kernel name and parameters) and the kernels that cannot sit on log axes."""
    numbers: dict[tuple[str, str], int] = {}
    points: list[Point] = []
    unplottable: list[str] = []

    def number(k: dict[str, Any]) -> int:
        return numbers.setdefault((k["name"], params_text(k["params"])), len(numbers) + 1)

    for doc in analysis_docs:
        color = colors.get(doc["machine"]["id"], _COLORS[0])
        for k in doc["kernels"]:
            if k["intensity"] <= 0 or k["attainable_flops"] <= 0:
                unplottable.append(k["name"])
                continue
            points.append(Point(number(k), k["name"], params_text(k["params"]), k["intensity"],
                                k["attainable_flops"], k["attainable_flops"], "model", color, None))
    for doc in results_docs:
        color = colors.get(doc["machine"]["id"], _COLORS[0])
        for k in doc["kernels"]:
            failed = k["status"] == "FAILED" or k["verified"] is False or k.get("achieved_flops") is None
            y = k["attainable_flops"] if failed else k["achieved_flops"]
            if k["intensity"] <= 0 or not y or y <= 0:
                unplottable.append(k["name"])
                continue
            points.append(Point(number(k), k["name"], params_text(k["params"]), k["intensity"], y,
                                k["attainable_flops"], "failed" if failed else "measured",
                                _FAILED_COLOR if failed else color, k.get("fraction_of_ceiling")))
    return points, sorted(set(unplottable))


def _log_bounds(values: Sequence[float], pad_low: float, pad_high: float) -> tuple[float, float]:
    lo = math.log10(min(values)) - pad_low
    hi = math.log10(max(values)) + pad_high
    return 10 ** math.floor(lo), 10 ** math.ceil(hi)


def _intensity_tick(value: float, _pos: object = None) -> str:
    if value >= 1000:
        return format_si(value, "").strip()
    return f"{value:g}"


def _flops_tick(value: float, _pos: object = None) -> str:
    return format_si(value, "FLOP/s", digits=3)


def _spread(wanted: list[float], gap: float, lo: float = 0.0, hi: float = 1.0) -> list[float]:
    """Positions near `wanted` (sorted ascending) at least `gap` apart, kept within [lo, hi]."""
    placed: list[float] = []
    for y in wanted:
        placed.append(max(y, placed[-1] + gap) if placed else max(y, lo))
    overflow = placed[-1] - hi if placed else 0.0
    if overflow > 0:  # shift down, keeping the gaps
        placed = [p - overflow for p in placed]
        for i in range(len(placed) - 2, -1, -1):
            placed[i] = min(placed[i], placed[i + 1] - gap)
    return placed


def roofline_figure(
    analysis_docs: Sequence[dict[str, Any]] = (),
    results_docs: Sequence[dict[str, Any]] = (),
    measured_machines: Sequence[dict[str, Any]] = (),
    title: str | None = None,
) -> Any:
    """A log-log roofline: compute roofs, memory roofs, ridge points and kernel points. Returns a Figure."""
    _require_matplotlib()
    from matplotlib.figure import Figure
    from matplotlib.lines import Line2D

    datasheet: list[dict[str, Any]] = []
    for m in [d["machine"] for d in analysis_docs] + [d["machine"] for d in results_docs]:
        if not any(m["id"] == o["id"] and m["roofs"] == o["roofs"] and m["bandwidth"] == o["bandwidth"]
                   for o in datasheet):
            datasheet.append(m)
    roofsets = _assign_roofsets(datasheet, measured_machines)
    if not roofsets:
        from roofline.errors import InputError

        raise InputError("nothing to plot: give kernels or --spec for the model, or --results FILE")
    colors = {rs.machine["id"]: rs.color for rs in roofsets}
    points, unplottable = collect_points(analysis_docs, results_docs, colors)
    used_roofs = {k["roof"] for d in [*analysis_docs, *results_docs] for k in d["kernels"]}

    # ---- ranges from the data ----
    ridges = [peak / rs.machine["bandwidth"] for rs in roofsets for peak in rs.machine["roofs"].values()]
    peaks = [peak for rs in roofsets for peak in rs.machine["roofs"].values()]
    xs = [p.x for p in points] + ridges
    x_lo, x_hi = _log_bounds(xs, 0.35, 0.35)
    low_y = [p.y for p in points] + [rs.machine["bandwidth"] * x_lo for rs in roofsets]
    y_lo, _ = _log_bounds(low_y, 0.25, 0)
    y_hi = 10 ** (math.log10(max(peaks)) + 0.35)

    from matplotlib.backends.backend_agg import FigureCanvasAgg

    fig = Figure(figsize=(16, 8.5), layout=None)
    FigureCanvasAgg(fig)  # a renderer to measure text with; headless
    ax = roofline_axes(fig, (0.075, 0.085, 0.48, 0.83), (x_lo, x_hi), (y_lo, y_hi))
    ax.grid(True, which="minor", color="#f2f2f2", linewidth=0.4)
    ax.set_xlabel("Arithmetic intensity (FLOP/B)")
    ax.set_ylabel("Performance (FLOP/s)")
    names = list(dict.fromkeys(rs.machine["name"] for rs in roofsets if not rs.measured))
    ax.set_title(title or f"Roofline: {' vs '.join(names) or roofsets[0].machine['name']}", loc="left",
                 fontsize=13)

    def to_frac(y: float) -> float:
        return (math.log10(y) - math.log10(y_lo)) / (math.log10(y_hi) - math.log10(y_lo))

    # ---- roofs ----
    right_labels: list[tuple[float, str, str, bool]] = []  # (axes y fraction, text, color, emphasised)
    for rs in roofsets:
        m, style = rs.machine, ("--" if rs.measured else "-")
        tag = " measured" if rs.measured else ""
        bw = m["bandwidth"]
        groups: dict[float, list[str]] = {}
        for roof, peak in m["roofs"].items():
            groups.setdefault(peak, []).append(roof)
        top = max(groups)
        ax.plot([x_lo, top / bw], [bw * x_lo, top], style, color=rs.color, linewidth=2.0, gid=_GID + "memory-roof")
        for peak, roofs in sorted(groups.items()):
            ridge = peak / bw
            used = bool(used_roofs & set(roofs)) or not used_roofs
            ax.plot([ridge, x_hi], [peak, peak], style, color=rs.color, linewidth=2.0 if used else 1.0,
                    alpha=1.0 if used else 0.45, gid=_GID + "compute-roof")
            ax.plot([ridge], [peak], "D", color=rs.color, markersize=5 if used else 3.5,
                    alpha=1.0 if used else 0.5, gid=_GID + "ridge")
            text = (f"{_roofs_label(roofs)}{tag} {_peak_text(roofs, peak)} · ridge "
                    f"{_intensity_tick(float(f'{ridge:.3g}'))}")
            right_labels.append((to_frac(peak), text, rs.color, used))
        # the memory roof's label, along the slope where no point is near
        _label_memory_roof(ax, fig, rs, points, x_lo, top / bw, tag)

    order = sorted(range(len(right_labels)), key=lambda i: right_labels[i][0])
    spread = _spread([right_labels[i][0] for i in order], 0.03, 0.0, 0.99)
    labels = []
    for i, y in zip(order, spread):
        want, text, color, used = right_labels[i]
        labels.append(ax.annotate(text, xy=(1.0, want), xycoords="axes fraction", xytext=(1.012, y), textcoords="axes fraction",
                    fontsize=8.5 if used else 7.5, color=color, alpha=1.0 if used else 0.6, va="center",
                    fontweight="bold" if used else "normal", annotation_clip=False, gid=_GID + "roof-label",
                    arrowprops={"arrowstyle": "-", "color": color, "alpha": 0.4, "linewidth": 0.6,
                                "shrinkA": 0, "shrinkB": 0}))
    renderer = fig.canvas.get_renderer()
    table_x = max(t.get_window_extent(renderer).x1 for t in labels) / fig.bbox.width + 0.012

    # ---- kernels ----
    for p in points:
        if p.kind == "measured":
            ax.plot([p.x, p.x], [p.y, p.ceiling], ":", color=p.color, linewidth=1.2, alpha=0.8, gid=_GID + "gap")
            ax.plot([p.x], [p.y], "o", color=p.color, markersize=7, markeredgecolor="black", markeredgewidth=0.5,
                    gid=_GID + "point-measured", zorder=5)
        elif p.kind == "failed":
            ax.plot([p.x], [p.y], "X", color=_FAILED_COLOR, markersize=10, markeredgecolor="white",
                    markeredgewidth=0.8, gid=_GID + "point-failed", zorder=6)
        else:
            ax.plot([p.x], [p.y], "o", markerfacecolor="white", markeredgecolor=p.color, markeredgewidth=1.6,
                    markersize=7, gid=_GID + "point-model", zorder=4)
    _label_points(ax, fig, points)

    # ---- legends: marker meanings, then the numbered kernel table ----
    handles = []
    kinds = {p.kind for p in points}
    if "model" in kinds:
        handles.append(Line2D([], [], marker="o", linestyle="", markerfacecolor="white", markeredgecolor="black",
                              markeredgewidth=1.4, label="model: attainable"))
    if "measured" in kinds:
        handles.append(Line2D([], [], marker="o", linestyle="", color="black", label="measured: achieved"))
        handles.append(Line2D([], [], linestyle=":", color="black", label="gap to its ceiling"))
    if "failed" in kinds:
        handles.append(Line2D([], [], marker="X", linestyle="", color=_FAILED_COLOR,
                              label="FAILED verification (at its ceiling)"))
    handles.append(Line2D([], [], marker="D", linestyle="", color="black", markersize=4, label="ridge point"))
    if any(rs.measured for rs in roofsets):
        handles.append(Line2D([], [], linestyle="-", color="black", label="datasheet roof"))
        handles.append(Line2D([], [], linestyle="--", color="black", label="measured roof"))
    if len({rs.color for rs in roofsets}) > 1:
        for rs in roofsets:
            if not rs.measured:
                handles.append(Line2D([], [], linestyle="-", linewidth=3, color=rs.color, label=rs.machine["name"]))
    ax.legend(handles=handles, loc="lower right", fontsize=8, framealpha=0.9)
    _kernel_table(fig, points, unplottable, min(table_x, 0.8))
    return fig


def _label_memory_roof(ax: Any, fig: Any, rs: RoofSet, points: Sequence[Point], x_lo: float, x_top: float,
                       tag: str) -> None:
    bw = rs.machine["bandwidth"]
    trans = ax.transData
    lo, hi = math.log10(x_lo), math.log10(x_top)
    candidates = [10 ** (lo + (hi - lo) * f / 20) for f in range(1, 18)]
    pts = [trans.transform((p.x, p.y)) for p in points]
    ymin = ax.get_ylim()[0]

    length = 0.6 * 9 * (len(format_rate(bw)) + len(tag) + 8) * fig.dpi / 72.0  # the label's extent, pixels

    def clearance(x: float) -> float:
        if bw * x < ymin * 1.5:
            return -1.0
        a, b = trans.transform((x, bw * x)), trans.transform((x * 10, bw * x * 10))
        step = ((b[0] - a[0]) / math.dist(a, b), (b[1] - a[1]) / math.dist(a, b))
        samples = [(a[0] + step[0] * t - step[1] * 12, a[1] + step[1] * t + step[0] * 12)
                   for t in (0, length / 4, length / 2, 3 * length / 4, length)]
        if trans.inverted().transform(samples[-1])[1] > ax.get_ylim()[1]:
            return -1.0
        return min((math.dist(q, sample) for q in pts for sample in samples), default=1e9)

    x = max(candidates, key=clearance)
    a, b = trans.transform((x, bw * x)), trans.transform((x * 10, bw * x * 10))
    angle = math.degrees(math.atan2(b[1] - a[1], b[0] - a[0]))
    ax.annotate(f"memory{tag} {format_rate(bw)}", xy=(x, bw * x), xytext=(0, 5), textcoords="offset points",
                rotation=angle, rotation_mode="anchor", ha="left", va="bottom", fontsize=9, color=rs.color,
                fontweight="bold", gid=_GID + "memory-label",
                bbox={"boxstyle": "round,pad=0.1", "facecolor": "white", "edgecolor": "none", "alpha": 0.7})


def _label_points(ax: Any, fig: Any, points: Sequence[Point]) -> None:
    """Numbers beside the points, placed greedily where they overlap nothing; a leader line when moved far."""
    scale = 72.0 / fig.dpi  # display pixels -> points
    fontsize = 7.5
    anchors = [tuple(v * scale for v in ax.transData.transform((p.x, p.y))) for p in points]
    box = ax.get_window_extent()
    bounds = (box.x0 * scale, box.y0 * scale, box.x1 * scale, box.y1 * scale)
    taken = [(x - 4.5, y - 4.5, x + 4.5, y + 4.5) for x, y in anchors]  # the markers themselves
    directions = [(1, 1), (-1, 1), (1, -1), (-1, -1), (1, 0), (-1, 0), (0, 1), (0, -1)]
    seen: set[tuple[int, float, float]] = set()

    def overlap(a: tuple[float, ...], b: tuple[float, ...]) -> float:
        w = min(a[2], b[2]) - max(a[0], b[0])
        h = min(a[3], b[3]) - max(a[1], b[1])
        return w * h if w > 0 and h > 0 else 0.0

    for p, (x, y) in sorted(zip(points, anchors), key=lambda t: (t[1][0], t[1][1])):
        key = (p.number, round(x, 1), round(y, 1))
        if key in seen:  # the same kernel drawn twice at one place (model and FAILED)
            continue
        seen.add(key)
        text = str(p.number)
        w, h = 0.62 * fontsize * len(text) + 5, fontsize + 3
        best, best_cost = None, float("inf")
        for radius in (7, 12, 18, 26, 36):
            for dx, dy in directions:
                norm = math.hypot(dx, dy)
                cx, cy = x + dx / norm * radius, y + dy / norm * radius
                rect = (cx - w / 2, cy - h / 2, cx + w / 2, cy + h / 2)
                outside = rect[0] < bounds[0] or rect[1] < bounds[1] or rect[2] > bounds[2] or rect[3] > bounds[3]
                cost = sum(overlap(rect, t) for t in taken) + (1e6 if outside else 0.0) + radius * 0.01
                if cost < best_cost:
                    best, best_cost = (cx - x, cy - y, rect, radius), cost
            if best is not None and best_cost < 1.0:
                break
        assert best is not None
        dx, dy, rect, radius = best
        taken.append(rect)
        arrow = {"arrowstyle": "-", "color": p.color, "linewidth": 0.6, "alpha": 0.7} if radius > 12 else None
        ax.annotate(text, xy=(p.x, p.y), xytext=(dx, dy), textcoords="offset points", ha="center", va="center",
                    fontsize=fontsize, color=p.color if p.kind != "model" else "black", fontweight="bold",
                    arrowprops=arrow, gid=_GID + "point-label", zorder=7,
                    bbox={"boxstyle": "round,pad=0.12", "facecolor": "white", "edgecolor": "none", "alpha": 0.75})


def _kernel_table(fig: Any, points: Sequence[Point], unplottable: Sequence[str], x0: float) -> None:
    """The numbered legend to the right of the roof labels: number, kernel, parameters, fraction of ceiling."""
    entries: dict[int, list[Point]] = {}
    for p in points:
        entries.setdefault(p.number, []).append(p)
    lines: list[tuple[str, str]] = []
    measured = any(p.kind != "model" for p in points)
    for number in sorted(entries):
        group = entries[number]
        first = group[0]
        status = []
        for p in group:
            if p.kind == "failed":
                status.append("FAILED")
            elif p.kind == "measured":
                status.append("?" if p.fraction is None else f"{p.fraction:.0%}")
        color = _FAILED_COLOR if any(p.kind == "failed" for p in group) else "black"
        column = f"{' '.join(status):>6} " if measured else ""
        lines.append((f"{number:>2} {column}{first.name} {first.params}", color))
    for name in unplottable:
        lines.append((f" – {'       ' if measured else ''}{name}: 0 FLOP/s, not on a log chart", "#777777"))
    if not lines:
        return
    header = " # " + ("of ceil " if measured else "") + "kernel (parameters)"
    rows_per_column = 46
    columns = [lines[i:i + rows_per_column] for i in range(0, len(lines), rows_per_column)]
    fontsize = 7.5 if len(lines) <= rows_per_column else 6.5
    width = (0.995 - x0) / len(columns)
    chars = int(width * fig.get_figwidth() * 72 / (0.62 * fontsize))  # monospace advance ~0.6 em
    lines = [(t if len(t) <= chars else t[:chars - 1] + "…", c) for t, c in lines]
    columns = [lines[i:i + rows_per_column] for i in range(0, len(lines), rows_per_column)]
    step = min(0.0185, 0.86 / max(len(c) for c in columns))
    for c, column in enumerate(columns):
        x = x0 + c * width
        fig.text(x, 0.935, header, fontsize=fontsize, family="monospace", fontweight="bold", va="top",
                 gid=_GID + "table-header")
        for i, (text, color) in enumerate(column):
            fig.text(x, 0.935 - (i + 1.2) * step, text, fontsize=fontsize, family="monospace", color=color,
                     va="top", gid=_GID + "table-row")


# ---- sweep chart -------------------------------------------------------------------------------


def sweep_figure(doc: dict[str, Any], kernels: Sequence[str] = (),
                 measured_machines: Sequence[dict[str, Any]] = (), title: str | None = None) -> Any:
    """Achieved bandwidth against bytes moved (log x) for kernels measured at several sizes."""
    _require_matplotlib()
    from matplotlib.figure import Figure
    from matplotlib.lines import Line2D
    from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

    from roofline.errors import InputError

    groups = sweep_groups(doc)
    if kernels:
        missing = [k for k in kernels if k not in groups]
        if missing:
            raise InputError(f"--sweep: {', '.join(missing)} not measured at several sizes in {doc.get('_source')}; "
                             f"sweeps there: {', '.join(groups) or 'none'}")
        groups = {k: groups[k] for k in kernels}
    if not groups:
        raise InputError(f"{doc.get('_source', 'results')}: no kernel measured at several sizes (entries sharing a "
                         "name with different bytes); run a sweep first")
    machine = doc["machine"]
    bw, in_flight = machine["bandwidth"], machine["bytes_in_flight"]

    all_bytes = [k["bytes"] for g in groups.values() for k in g] + [in_flight]
    x_lo, x_hi = _log_bounds(all_bytes, 0.2, 0.2)
    achieved = [k["achieved_bandwidth"] for g in groups.values() for k in g if k.get("achieved_bandwidth")]
    ceilings = [bw] + [m["bandwidth"] for m in measured_machines]
    y_hi = max(ceilings + achieved) * 1.15

    fig = Figure(figsize=(11, 6.5))
    ax = fig.add_axes((0.09, 0.1, 0.86, 0.8))
    ax.set_xscale("log")
    ax.set_xlim(x_lo, x_hi)
    ax.set_ylim(0, y_hi)
    ax.xaxis.set_major_locator(LogLocator(base=10))
    ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _p: format_bytes(v)))
    ax.xaxis.set_minor_formatter(NullFormatter())
    ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _p: format_rate(v) if v else "0"))
    ax.grid(True, which="major", color="#dddddd", linewidth=0.6)
    ax.set_axisbelow(True)
    ax.set_xlabel("Bytes moved per launch (B)")
    ax.set_ylabel("Achieved bandwidth (B/s)")
    ax.set_title(title or f"Bandwidth vs size: {', '.join(groups)} on {doc['device']['name']}", loc="left",
                 fontsize=13)

    # the latency-bound region and the Little's Law line
    ax.axvspan(x_lo, in_flight, color="#f4f4f4", zorder=0, gid=_GID + "latency-region")
    ax.axvline(in_flight, color="#555555", linestyle="-.", linewidth=1.2, gid=_GID + "littles-law")
    ax.annotate(f"Little's Law: {format_bytes(in_flight)} in flight\n"
                f"({format_rate(bw)} × {_time(machine['latency'])})\nsmaller transfers are latency-bound",
                xy=(in_flight, y_hi * 0.97), xytext=(-6, 0), textcoords="offset points", ha="right", va="top",
                fontsize=8.5, color="#333333", gid=_GID + "littles-law-label")
    ax.axhline(bw, color=_COLORS[0], linewidth=2, gid=_GID + "bandwidth-roof")
    ax.annotate(f"peak {format_rate(bw)} ({machine['name']})", xy=(x_hi, bw), xytext=(-4, 4),
                textcoords="offset points", ha="right", va="bottom", fontsize=9, color=_COLORS[0], fontweight="bold")
    for m in measured_machines:
        ax.axhline(m["bandwidth"], color=_COLORS[0], linewidth=1.5, linestyle="--", gid=_GID + "bandwidth-roof")
        ax.annotate(f"measured {format_rate(m['bandwidth'])}", xy=(x_hi, m["bandwidth"]), xytext=(-4, -4),
                    textcoords="offset points", ha="right", va="top", fontsize=9, color=_COLORS[0])

    handles = []
    for i, (name, entries) in enumerate(groups.items()):
        color = _COLORS[(i + 1) % len(_COLORS)]
        ok = [k for k in entries if k.get("achieved_bandwidth") and k["status"] != "FAILED" and k["verified"] is not False]
        bad = [k for k in entries if k not in ok]
        ax.plot([k["bytes"] for k in ok], [k["achieved_bandwidth"] for k in ok], "-o", color=color, markersize=6,
                linewidth=1.6, gid=_GID + "sweep-line")
        for k in ok:
            if k.get("fraction_of_ceiling") is not None:
                fraction = k["fraction_of_ceiling"]
                ax.annotate(f"{fraction:.0%}" if fraction >= 0.01 else f"{fraction:.1%}", xy=(k["bytes"], k["achieved_bandwidth"]),
                            xytext=(0, 7), textcoords="offset points", ha="center", fontsize=7.5, color=color)
        if bad:
            ax.plot([k["bytes"] for k in bad], [y_hi * 0.02] * len(bad), "X", color=_FAILED_COLOR, markersize=9,
                    linestyle="", gid=_GID + "point-failed")
        handles.append(Line2D([], [], marker="o", color=color, label=f"{name} (achieved; % of its ceiling)"))
    if any(k["status"] == "FAILED" or k["verified"] is False for g in groups.values() for k in g):
        handles.append(Line2D([], [], marker="X", linestyle="", color=_FAILED_COLOR, label="FAILED verification"))
    ax.legend(handles=handles, loc="lower right", fontsize=8.5, framealpha=0.9)
    return fig


def _time(seconds: float) -> str:
    from roofline.units import format_time

    return format_time(seconds)


def figure_bytes(fig: Any, fmt: str, dpi: int) -> bytes:
    """Render a Figure to PNG, SVG or PDF bytes with the Agg canvas (no display, no pyplot)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    if fmt not in FORMATS:
        raise ValueError(fmt)
    FigureCanvasAgg(fig)
    buffer = io.BytesIO()
    metadata = {"Software": "roofline"} if fmt == "png" else ({"Creator": "roofline"} if fmt == "pdf" else None)
    fig.savefig(buffer, format=fmt, dpi=dpi, metadata=metadata, facecolor="white")
    return buffer.getvalue()
