"""Roofline and sweep charts as matplotlib Figures. Pure: documents in, a Figure out; nothing here computes physics.

Every ceiling, ridge and attainable value comes from the analysis or results documents (roofline.model.analysis did the
arithmetic); this module only places geometry and text. Results are read typed (ResultsDocument; issue 30); their
`machine` block is the analysis machine summary an analysis document carries too, read as written. matplotlib is
imported lazily and only through its object API (Figure + FigureCanvasAgg), so it works headless and never touches
pyplot's global state.

This is the entry point the CLI uses: it assembles the roofline figure and renders figures to bytes. The roof
geometry lives in roofline.render.charts.roofs, the kernel points and the numbered table in roofline.render.charts.points, and
the sweep chart in roofline.render.charts.sweep.
"""

from __future__ import annotations

import io
import math
from typing import Any, Mapping, Sequence

from roofline.render.charts.points import collect_points, kernel_table, label_points
from roofline.render.charts.powerroof import power_curves
from roofline.render.text import mpl
from roofline.render.charts.roofs import (
    FAILED_COLOR,
    GID,
    assign_roofsets,
    intensity_tick,
    label_memory_roof,
    log_bounds,
    peak_text,
    require_matplotlib,
    roof_label,
    roofline_axes,
    roofs_label,
    shown_roofs,
    spread_positions,
)
from roofline.errors import InputError
from roofline.records.document import ResultsDocument, as_document

FORMATS = ("png", "svg", "pdf")


def roofline_figure(
    analysis_docs: Sequence[dict[str, Any]] = (),
    results_docs: Sequence[ResultsDocument | Mapping[str, Any]] = (),
    measured_machines: Sequence[dict[str, Any]] = (),
    title: str | None = None,
    roofs: str | None = None,
) -> Any:
    """A log-log roofline: compute roofs, memory roofs, ridge points and kernel points. Returns a Figure.

    `roofs` picks each machine's compute roofs (render.roofs.shown_roofs): 'used' or 'all'; by default 'used' when
    the chart shows several machines and 'all' for one."""
    require_matplotlib()
    results_docs = [as_document(d) for d in results_docs]
    from matplotlib.figure import Figure  # lazy: matplotlib is a start-up cost only this path pays
    from matplotlib.lines import Line2D  # lazy: matplotlib is a start-up cost only this path pays

    datasheet: list[dict[str, Any]] = []
    for m in [d["machine"] for d in analysis_docs] + [d.machine for d in results_docs]:
        if not any(m["id"] == o["id"] and m["roofs"] == o["roofs"] and m["bandwidth"] == o["bandwidth"]
                   for o in datasheet):
            datasheet.append(m)
    roofsets = assign_roofsets(datasheet, measured_machines)
    if not roofsets:
        raise InputError("nothing to plot: give kernels or --spec for the model, or --results FILE")
    colors = {rs.machine["id"]: rs.color for rs in roofsets}
    points, unplottable = collect_points(analysis_docs, results_docs, colors)
    roofs_of = [(d["machine"]["id"], {k["roof"] for k in d["kernels"]}) for d in analysis_docs]
    roofs_of += [(d.machine_id, {k.roof for k in d.kernels}) for d in results_docs]
    used_roofs = {roof for _, used in roofs_of for roof in used}
    choice = roofs or ("used" if len(datasheet) > 1 else "all")
    used_by: list[set[str]] = []  # per roofset, the roofs its machine's kernels use (all kernels for a measured spec)
    for rs in roofsets:
        mine = {roof for machine_id, used in roofs_of if machine_id == rs.machine["id"] for roof in used}
        used_by.append(used_roofs if rs.measured else mine)
    drawn = [shown_roofs(rs.machine["roofs"], used, choice) for rs, used in zip(roofsets, used_by)]

    # ---- ranges from the data ----
    ridges = [peak / rs.machine["bandwidth"] for rs, shown in zip(roofsets, drawn) for peak in shown.values()]
    peaks = [peak for shown in drawn for peak in shown.values()]
    xs = [p.x for p in points] + ridges
    x_lo, x_hi = log_bounds(xs, 0.35, 0.35)
    low_y = [p.y for p in points] + [rs.machine["bandwidth"] * x_lo for rs in roofsets]
    y_lo, _ = log_bounds(low_y, 0.25, 0)
    y_hi = 10 ** (math.log10(max(peaks)) + 0.35)

    # lazy: matplotlib is a start-up cost only this path pays
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    fig = Figure(figsize=(16, 8.5), layout=None)
    FigureCanvasAgg(fig)  # a renderer to measure text with; headless
    ax = roofline_axes(fig, (0.075, 0.085, 0.48, 0.83), (x_lo, x_hi), (y_lo, y_hi))
    ax.grid(True, which="minor", color="#f2f2f2", linewidth=0.4)
    ax.set_xlabel("Arithmetic intensity (FLOP/B)")
    ax.set_ylabel("Performance (FLOP/s)")
    ax.set_title(mpl(title or "Roofline: " + default_title(roofsets, results_docs)), loc="left", fontsize=13)

    def to_frac(y: float) -> float:
        return (math.log10(y) - math.log10(y_lo)) / (math.log10(y_hi) - math.log10(y_lo))

    # ---- roofs ----
    right_labels: list[tuple[float, str, str, bool]] = []  # (axes y fraction, text, color, emphasised)
    taken: list[Any] = []  # the memory labels' boxes, display coordinates: no two overlap
    for rs, shown, used_here in zip(roofsets, drawn, used_by):
        m, style = rs.machine, ("--" if rs.measured else "-")
        tag = " measured" if rs.measured else ""
        bw = m["bandwidth"]
        groups: dict[float, list[str]] = {}
        for roof, peak in shown.items():
            groups.setdefault(peak, []).append(roof)
        top = max(groups)
        ax.plot([x_lo, top / bw], [bw * x_lo, top], style, color=rs.color, linewidth=2.0, gid=GID + "memory-roof")
        for peak, roofs in sorted(groups.items()):
            ridge = peak / bw
            used = bool(used_here & set(roofs)) or not used_here
            ax.plot([ridge, x_hi], [peak, peak], style, color=rs.color, linewidth=2.0 if used else 1.0,
                    alpha=1.0 if used else 0.45, gid=GID + "compute-roof")
            ax.plot([ridge], [peak], "D", color=rs.color, markersize=5 if used else 3.5,
                    alpha=1.0 if used else 0.5, gid=GID + "ridge")
            text = (f"{roofs_label(roofs)}{tag} {peak_text(roofs, peak)} · ridge "
                    f"{intensity_tick(float(f'{ridge:.3g}'))}")
            right_labels.append((to_frac(peak), text, rs.color, used))
        # the power roof (Choi et al. 2014), where the spec's energy figures and power limit put it below the time
        # roof: dash-dot, with its height at the right edge
        if not rs.measured:
            grid = [10 ** (math.log10(x_lo) + (math.log10(x_hi) - math.log10(x_lo)) * i / 300) for i in range(301)]
            for curve in power_curves(m, shown, grid):
                ys = [float("nan") if y is None else y for y in curve.ys]
                ax.plot(curve.xs, ys, "-.", color=rs.color, linewidth=1.6, gid=f"{GID}power-roof:{curve.roof}")
                whose = "what-if" if curve.what_if else "limit"
                drawn_at = [(x, y) for x, y in zip(curve.xs, curve.ys) if y is not None]
                if curve.asymptote < shown[curve.roof]:  # below the roof at every larger intensity: its height
                    where, height = peak_text([curve.roof], curve.asymptote), curve.asymptote
                else:  # it binds only between two intensities, under the bandwidth roof's knee
                    where = (f"below the time roof at {intensity_tick(float(f'{drawn_at[0][0]:.2g}'))}-"
                             f"{intensity_tick(float(f'{drawn_at[-1][0]:.2g}'))} FLOP/B")
                    height = drawn_at[-1][1]
                right_labels.append((to_frac(height), f"{roof_label(curve.roof)} at the {curve.limit:.0f} W {whose}: "
                                     f"{where} (power roof)", rs.color, True))
        # the memory roof's label, along the slope where no point is near
        label_memory_roof(ax, fig, rs, points, x_lo, top / bw, tag, taken)

    order = sorted(range(len(right_labels)), key=lambda i: right_labels[i][0])
    spread = spread_positions([right_labels[i][0] for i in order], 0.03, 0.0, 0.99)
    labels = []
    for i, y in zip(order, spread):
        want, text, color, used = right_labels[i]
        labels.append(ax.annotate(text, xy=(1.0, want), xycoords="axes fraction", xytext=(1.012, y), textcoords="axes fraction",
                    fontsize=8.5 if used else 7.5, color=color, alpha=1.0 if used else 0.6, va="center",
                    fontweight="bold" if used else "normal", annotation_clip=False, gid=GID + "roof-label",
                    arrowprops={"arrowstyle": "-", "color": color, "alpha": 0.4, "linewidth": 0.6,
                                "shrinkA": 0, "shrinkB": 0}))
    renderer = fig.canvas.get_renderer()
    table_x = max(t.get_window_extent(renderer).x1 for t in labels) / fig.bbox.width + 0.012

    # ---- kernels ----
    for p in points:
        if p.kind == "measured":
            ax.plot([p.x, p.x], [p.y, p.ceiling], ":", color=p.color, linewidth=1.2, alpha=0.8, gid=GID + "gap")
            ax.plot([p.x], [p.y], "o", color=p.color, markersize=7, markeredgecolor="black", markeredgewidth=0.5,
                    gid=GID + "point-measured", zorder=5)
        elif p.kind == "failed":
            ax.plot([p.x], [p.y], "X", color=FAILED_COLOR, markersize=10, markeredgecolor="white",
                    markeredgewidth=0.8, gid=GID + "point-failed", zorder=6)
        else:
            ax.plot([p.x], [p.y], "o", markerfacecolor="white", markeredgecolor=p.color, markeredgewidth=1.6,
                    markersize=7, gid=GID + "point-model", zorder=4)
    label_points(ax, fig, points)

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
        handles.append(Line2D([], [], marker="X", linestyle="", color=FAILED_COLOR,
                              label="FAILED verification (at its ceiling)"))
    handles.append(Line2D([], [], marker="D", linestyle="", color="black", markersize=4, label="ridge point"))
    if any(line.get_gid() and line.get_gid().startswith(GID + "power-roof:") for line in ax.get_lines()):
        handles.append(Line2D([], [], linestyle="-.", color="black", label="power roof (Choi et al. 2014)"))
    if any(rs.measured for rs in roofsets):
        handles.append(Line2D([], [], linestyle="-", color="black", label="datasheet roof"))
        handles.append(Line2D([], [], linestyle="--", color="black", label="measured roof"))
    if len({rs.color for rs in roofsets}) > 1:
        for rs in roofsets:
            if not rs.measured:
                handles.append(Line2D([], [], linestyle="-", linewidth=3, color=rs.color,
                                      label=mpl(rs.machine["name"])))
    ax.legend(handles=handles, loc="lower right", fontsize=8, framealpha=0.9)
    kernel_table(fig, points, unplottable, min(table_x, 0.8))
    return fig


def ran_on(results_docs: Sequence[ResultsDocument]) -> list[str]:
    """What measured the results when it was not the GPU of their spec: 'host CPU (…), numpy' for a CPU run."""
    ran = []
    for d in results_docs:
        if d.device_kind == "cpu" or d.backend == "numpy":
            ran.append(f"{d.device_name or 'CPU'}, {d.backend or 'numpy'}")
    return list(dict.fromkeys(ran))


def default_title(roofsets: Sequence[Any], results_docs: Sequence[ResultsDocument]) -> str:
    """The machines whose ceilings are drawn; for results measured on a CPU, what ran them first, so a numpy run
    against H200 ceilings is never titled as an H200."""
    names = list(dict.fromkeys(rs.machine["name"] for rs in roofsets if not rs.measured))
    machines = " vs ".join(names) or roofsets[0].machine["name"]
    ran = ran_on(results_docs)
    return f"measured on {'; '.join(ran)} · ceilings of {machines}" if ran else machines


def figure_bytes(fig: Any, fmt: str, dpi: int) -> bytes:
    """Render a Figure to PNG, SVG or PDF bytes with the Agg canvas (no display, no pyplot)."""
    # lazy: matplotlib is a start-up cost only this path pays
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    if fmt not in FORMATS:
        raise ValueError(fmt)
    FigureCanvasAgg(fig)
    buffer = io.BytesIO()
    metadata = {"Software": "roofline"} if fmt == "png" else ({"Creator": "roofline"} if fmt == "pdf" else None)
    fig.savefig(buffer, format=fmt, dpi=dpi, metadata=metadata, facecolor="white")
    return buffer.getvalue()
