"""Two programs on one roofline (`roofline diff A B --chart FILE`): each group's A point (hollow) and B point
(filled), an arrow from A to B where the group is on both sides, sized by its share of its side's GPU time and
coloured by its roof. The roofs drawn are A's machine's (B's too where its spec differs: dashed). The HTML form is
the same Figure as inline SVG with both sides in each point's tooltip (roofline.render.charts.html's page, script
and escaping). Groups with no FLOPs have no place on a log-log chart and are listed beside it. Pure: a Diff and
the two machine blocks in, a Figure or a page out."""

from __future__ import annotations

from typing import Any, Mapping, Sequence

from roofline.model.units import format_flops, format_fraction, format_time
from roofline.records.diff import Diff, GroupDiff, GroupSide
from roofline.render.charts.html import _SCRIPT, _STYLE, _figure_svg, _json_for_script
from roofline.render.charts.profile import MEMORY_COLOR, marker_size
from roofline.render.charts.roofs import (COLORS, GID, log_bounds, peak_text, require_matplotlib, roof_label,
                                          roofline_axes, separate_labels)
from roofline.render.tables.diff import signed_share, signed_time
from roofline.render.text import clean, html_text, mpl

NUMBERED = 15  # the rows (most moved first) the chart numbers and the side panel lists


def _placed(g: GroupSide | None) -> bool:
    return g is not None and bool(g.intensity) and bool(g.achieved_flops)


def _rows(d: Diff) -> list[tuple[int, GroupDiff]]:
    """The rows with a point on either side, numbered in the diff's order (most moved first)."""
    return [(i, r) for i, r in enumerate(d.rows, 1) if r.kind != "unmodelled" and (_placed(r.a) or _placed(r.b))]


def _colors(rows: Sequence[tuple[int, GroupDiff]]) -> dict[str, str]:
    roofs = sorted({g.roof for _, r in rows for g in (r.a, r.b) if g is not None and g.roof})
    return {roof: COLORS[i % len(COLORS)] for i, roof in enumerate(roofs)}


def diff_figure(d: Diff, machine_a: Mapping[str, Any], machine_b: Mapping[str, Any] | None = None,
                title: str | None = None) -> Any:
    require_matplotlib()
    # lazy: matplotlib is a start-up cost only this path pays
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    # lazy: matplotlib is a start-up cost only this path pays
    from matplotlib.figure import Figure
    # lazy: matplotlib is a start-up cost only this path pays
    from matplotlib.lines import Line2D

    rows = _rows(d)
    colors = _colors(rows)
    machines = [(machine_a, "-")]
    if machine_b is not None and machine_b.get("id") != machine_a.get("id"):
        machines.append((machine_b, "--"))
    points = [(g.intensity, g.achieved_flops) for _, r in rows for g in (r.a, r.b) if _placed(g)]
    roofs = {r: machine_a["roofs"][r] for r in colors if r in machine_a["roofs"]}
    bw = machine_a["bandwidth"]
    xlim = log_bounds([p[0] for p in points] + [v / bw for v in roofs.values()] or [1.0], 1.0, 1.0)
    ylim = log_bounds([p[1] for p in points] + list(roofs.values()) or [1e12], 1.0, 0.3)
    fig = Figure(figsize=(10, 6.2))
    FigureCanvasAgg(fig)
    ax = roofline_axes(fig, (0.1, 0.1, 0.52, 0.8), xlim, ylim)
    ax.set_xlabel("arithmetic intensity (FLOP/B, DRAM)")
    ax.set_ylabel("achieved FLOP/s")
    labels = []
    for machine, style in machines:
        mbw = machine["bandwidth"]
        shown = {r: machine["roofs"][r] for r in colors if r in machine["roofs"]}
        top = max(shown.values()) if shown else ylim[1]
        ax.plot([xlim[0], top / mbw], [xlim[0] * mbw, top], color=MEMORY_COLOR, linewidth=1.2, linestyle=style,
                gid=f"roof-memory-{machine.get('id')}")
        for roof, peak in shown.items():
            ax.plot([peak / mbw, xlim[1]], [peak, peak], color=colors[roof], linewidth=1.2, linestyle=style)
            if style == "-":
                labels.append(ax.text(xlim[1], peak, " " + mpl(f"{roof_label(roof)} {peak_text([roof], peak)}"),
                                      color=colors[roof], va="center", ha="left", fontsize=8, clip_on=False,
                                      gid=GID + "roof-label"))
    separate_labels(fig, labels)
    for number, r in rows:
        a, b = r.a, r.b
        if _placed(a) and _placed(b):
            ax.annotate("", xy=(b.intensity, b.achieved_flops), xytext=(a.intensity, a.achieved_flops),
                        arrowprops={"arrowstyle": "->", "color": "#555555", "linewidth": 0.9}, zorder=2)
        for side, g in (("a", a), ("b", b)):
            if not _placed(g):
                continue
            color = colors.get(g.roof or "", "#888888")
            ax.scatter([g.intensity], [g.achieved_flops], s=marker_size(g.share),
                       facecolors="none" if side == "a" else color, edgecolors=color if side == "a" else "black",
                       linewidths=1.2 if side == "a" else 0.5, alpha=0.8, zorder=3,
                       gid=f"pt-{number}" + ("-a" if side == "a" and _placed(b) else ""))
        if number <= NUMBERED:
            at = b if _placed(b) else a
            ax.annotate(str(number), (at.intensity, at.achieved_flops), xytext=(4, 4), textcoords="offset points",
                        fontsize=7, zorder=4)
    handles = [Line2D([], [], marker="o", linestyle="", markerfacecolor="none", color="#555555", label="A"),
               Line2D([], [], marker="o", linestyle="", color="#555555", label="B (arrow: A → B)")]
    handles += [Line2D([], [], marker="o", linestyle="", color=c, label=mpl(roof_label(r))) for r, c in colors.items()]
    ax.legend(handles=handles, loc="lower right", fontsize=7)
    ax.set_title(mpl(title or f"A: {d.a.source} → B: {d.b.source}"), fontsize=9, loc="left")
    side = fig.add_axes((0.8, 0.1, 0.19, 0.8))
    side.axis("off")
    lines = ["area: share of its side's GPU time", "", "most moved (B - A):"]
    for number, r in [(i, r) for i, r in enumerate(d.rows, 1) if r.kind != "unmodelled"][:NUMBERED]:
        mark = "" if _placed(r.a) or _placed(r.b) else " (0 FLOPs)"
        lines.append(mpl(f"{number}. {r.name[:24]}{mark}"))
        lines.append(f"    {signed_time(r.delta)}")
    if len(d.rows) - 1 > NUMBERED:
        lines.append(f"and {len(d.rows) - 1 - NUMBERED} more")
    side.text(0.0, 1.0, "\n".join(lines), va="top", ha="left", fontsize=7, family="monospace",
              gid=GID + "side-panel")
    return fig


def _side_text(label: str, g: GroupSide | None) -> str:
    if g is None:
        return f"{label}: not in this program"
    intensity = "-" if not g.intensity else f"{g.intensity:.3g} FLOP/B"
    return (f"{label}: {format_time(g.time)} ({g.share:.1%} of its GPU time), {intensity}, "
            f"{format_flops(g.achieved_flops or 0.0)}, {format_fraction(g.fraction_of_ceiling)} of ceiling")


def _tooltip(number: int, r: GroupDiff) -> str:
    lines = [f"{number}. {clean(r.name, newlines=False)}", _side_text("A", r.a), _side_text("B", r.b),
             f"change: {signed_time(r.delta)} ({signed_share(r.change)})"]
    if r.where:
        lines.append(clean(r.where, newlines=False)[:300])
    return "\n".join(lines)


def diff_html(d: Diff, machine_a: Mapping[str, Any], machine_b: Mapping[str, Any] | None = None,
              title: str | None = None) -> str:
    """The chart as one self-contained page, each point's tooltip holding both sides and the change."""
    heading = title or f"roofline diff · A: {d.a.source} → B: {d.b.source}"
    fig = diff_figure(d, machine_a, machine_b, title)
    points = []
    for number, r in _rows(d):
        text = _tooltip(number, r)
        points.append({"id": f"pt-{number}", "name": r.name, "tooltip": text})
        if _placed(r.a) and _placed(r.b):
            points.append({"id": f"pt-{number}-a", "name": r.name, "tooltip": text})
    summary = (f"GPU time {format_time(d.a.gpu_time)} → {format_time(d.b.gpu_time)} ({signed_share(d.change)}); "
               f"MFU {format_fraction(d.a.mfu)} → {format_fraction(d.b.mfu)}; GPU idle "
               f"{format_fraction(d.a.idle_share)} → {format_fraction(d.b.idle_share)}")
    return (
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
        f"<title>{html_text(heading)}</title><style>{_STYLE}</style></head><body>\n"
        f"<h1 style=\"font-size:1.2em\">{html_text(heading)}</h1>\n<p>{html_text(summary)}</p>\n"
        f"<div id=\"chart\">{_figure_svg(fig)}</div>\n<div id=\"tooltip\" role=\"tooltip\"></div>\n"
        "<p>Hollow: A; filled: B; the arrow runs from A to B. Hover a point for both sides.</p>\n"
        f"<script type=\"application/json\" id=\"roofline-data\">{_json_for_script({'points': points})}</script>\n"
        f"<script>{_SCRIPT}</script>\n</body></html>\n"
    )
