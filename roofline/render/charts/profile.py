"""The roofline of a profiled program: one point per group (or per kernel), sized by its share of GPU time and
coloured by the roof that bounds it. The same Figure is the PNG/SVG/PDF of a grouped profile and the chart inside
the HTML page (roofline.render.charts.html), where each point's SVG group id (`pt-N`) ties it to the hover data.
Pure: a results document in, a Figure out. The document is read typed (Group, KernelResult; issue 30); its machine
block (the analysis machine summary) is read as written."""

from __future__ import annotations

from typing import Any, Mapping, NamedTuple, Sequence

from roofline.records.document import KernelResult, ResultsDocument, as_result
from roofline.records.coverage import REASONS_SHOWN, Unmodelled, above_ceiling, bound_of, input_kind
from roofline.records.groups import Group
from roofline.records.timeline import Timeline

from roofline.model.units import format_rate, format_time
from roofline.render.charts.names import short_names
from roofline.render.charts.roofs import (COLORS, GID, RoofSet, label_memory_roof, log_bounds, peak_text,
                                          require_matplotlib, roof_label, roofline_axes, separate_labels)
from roofline.render.text import mpl

MEMORY_COLOR = "#444444"


class Profile(NamedTuple):
    """What the profile chart and page read of a document: its device and machine block, its groups typed (each
    share of all the GPU time), its launches typed where it has no groups, its timeline, and the work no model
    covers (issue 38: listed beside the chart, never left out of the shares)."""

    device_name: str
    machine: Mapping[str, Any]  # the analysis machine summary, as written
    launches: int
    groups: Sequence[Group]
    kernels: Sequence[KernelResult]  # only without groups (then each launch is a point)
    timeline: Timeline | None
    unmodelled: Unmodelled | None = None
    kind: str = "the results file"

    @classmethod
    def of(cls, doc: "ResultsDocument | Profile | Mapping[str, Any]") -> "Profile":
        """A ResultsDocument's parts. A dict is a producer's document (`plot` groups an ncu import in place) read
        here once; its launches are typed only where it has no groups (an import may hold 38,000)."""
        if isinstance(doc, Profile):
            return doc
        if isinstance(doc, ResultsDocument):
            return cls(doc.device_name, doc.machine or {}, len(doc.kernels), doc.grouped(), doc.kernels,
                       doc.timeline, doc.unmodelled(), input_kind(doc.extra))
        kernels = doc.get("kernels") or ()
        modelled = sum(k.get("time_median") or 0.0 for k in kernels)
        unmodelled = Unmodelled.of_document(doc, modelled)
        groups = Group.all_of(doc.get("groups"), unmodelled.gpu_time if unmodelled is not None else None)
        return cls(str(doc["device"]["name"]), doc["machine"], len(kernels), groups,
                   () if groups else [as_result(k) for k in kernels], Timeline.of(doc.get("timeline")),
                   unmodelled, input_kind(doc))


def chart_points(doc: "ResultsDocument | Profile | Mapping[str, Any]") -> list[dict[str, Any]]:
    """One row per group (the document's `groups`) or, without groups, per kernel with a time, ranked by
    recoverable time; each with what the hover and the table show, its share of ALL the GPU time (the unmodelled
    work's included) and, for one above its ceiling, why (`above`). `plotted` is False for 0 FLOPs (no place on
    a log-log chart)."""
    view = Profile.of(doc)
    if view.groups:
        rows = [dict(name=g.name, launches=g.launches, time=g.time, share=g.share, flops=g.flops,
                     bytes=g.bytes, intensity=g.intensity, achieved=g.achieved_flops,
                     bandwidth=g.achieved_bandwidth, roof=g.roof, dtype=g.dtype,
                     fraction=g.fraction_of_ceiling,
                     sol_time=g.sol_time, recoverable=g.recoverable_time, flag=g.flag,
                     mixed=g.mixed, bound=bound_of(g.intensity, g.roof, view.machine))
                for g in view.groups]
    else:
        timed = [k for k in view.kernels if k.time_median and k.sol_time is not None]
        total = (sum(k.time_median for k in timed) + (view.unmodelled.time if view.unmodelled else 0.0)) or 1.0
        rows = [dict(name=k.name, launches=k.launches, time=k.time_median,
                     share=k.time_median / total, flops=k.flops, bytes=k.bytes, intensity=k.intensity,
                     achieved=k.achieved_flops, bandwidth=k.achieved_bandwidth, roof=k.roof,
                     dtype=k.dtype,
                     fraction=k.fraction_of_ceiling, sol_time=k.sol_time,
                     recoverable=k.time_median - k.sol_time, flag=None,
                     mixed=k.mixed_roof, bound=k.bound) for k in timed]
        rows.sort(key=lambda r: -r["recoverable"])
    for i, r in enumerate(rows):
        r["id"] = f"pt-{i}"
        r["plotted"] = bool(r["flops"] and r["bytes"] and r["achieved"] and r["intensity"])
        above = above_ceiling(r["fraction"], r.pop("bound"), r["bytes"] / r["launches"] if r["launches"] else None,
                              view.machine, view.kind)
        r["above"] = above.text if above is not None else None
    return rows


def unmodelled_lines(u: Unmodelled | None, width: int = 30) -> list[str]:
    """The side panel's lines for the work no model covers: its time and share, then each reason (shortened)."""
    if u is None or not u.reasons:
        return []
    lines = ["", f"no model: {format_time(u.time)},", f"{u.share:.1%} of GPU time (not drawn):"]
    for r in u.reasons[:REASONS_SHOWN]:
        why = r.why if len(r.why) <= width else r.why[:width - 1] + "…"
        lines.append(mpl(f"- {why}"))
        lines.append(f"    {format_time(r.time)}, {r.share:.1%}")
        if r.hint:
            lines.append("    (profile --with torch")
            lines.append("     records their shapes)")
    if len(u.reasons) > REASONS_SHOWN:
        lines += [f"and {len(u.reasons) - REASONS_SHOWN} more: 'roofline", "report FILE' lists them"]
    return lines


def roof_colors(points: Sequence[Mapping[str, Any]]) -> dict[str, str]:
    roofs = sorted({p["roof"] for p in points})
    return {roof: COLORS[i % len(COLORS)] for i, roof in enumerate(roofs)}


def marker_size(share: float) -> float:
    """Marker area (points^2) for a share of GPU time: 20 for nothing, 1220 for all of it."""
    return 20.0 + 1200.0 * max(0.0, min(1.0, share))


MIXED_LEGEND = "N+: work on more than one roof,\ncoloured by the roof holding most"


class _At:
    def __init__(self, x: float, y: float) -> None:
        self.x, self.y = x, y


def profile_figure(doc: "ResultsDocument | Profile | Mapping[str, Any]", title: str | None = None) -> Any:
    """The Figure: the memory roof, the compute roofs the points sit under, each labelled with its value, and the
    points. Groups with no FLOPs (copies, `aten::cat` of integers) have no place on a log-log chart: the side
    panel lists them with their achieved bandwidth rather than dropping them."""
    require_matplotlib()
    # lazy: matplotlib is a start-up cost only this path pays
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    # lazy: matplotlib is a start-up cost only this path pays
    from matplotlib.figure import Figure
    # lazy: matplotlib is a start-up cost only this path pays
    from matplotlib.lines import Line2D

    view = Profile.of(doc)
    machine = view.machine
    points = chart_points(view)
    plotted = [p for p in points if p["plotted"]]
    colors = roof_colors(points)
    roofs = {r: machine["roofs"][r] for r in colors if r in machine["roofs"]}
    bw = machine["bandwidth"]
    xs = [p["intensity"] for p in plotted] + [r / bw for r in roofs.values()] or [1.0]
    ys = [p["achieved"] for p in plotted] + list(roofs.values()) or [1e12]
    xlim = log_bounds(xs, 1.0, 1.0)
    ylim = log_bounds(ys, 1.0, 0.3)
    lines = side_panel(points, unmodelled_lines(view.unmodelled))
    height = max(6.2, len(lines) * PANEL_LINE / 0.8)  # every line of the side panel fits: the figure grows
    fig = Figure(figsize=(10, height))
    FigureCanvasAgg(fig)  # a renderer, to place labels by their real extent
    ax = roofline_axes(fig, (0.1, 0.1, 0.52, 0.8), xlim, ylim)
    ax.set_xlabel("arithmetic intensity (FLOP/B, DRAM)")
    ax.set_ylabel("achieved FLOP/s")
    top = max(roofs.values()) if roofs else ylim[1]
    ax.plot([xlim[0], top / bw], [xlim[0] * bw, top], color=MEMORY_COLOR, linewidth=1.4, gid="roof-memory")
    labels = []
    for roof, peak in roofs.items():
        ax.plot([peak / bw, xlim[1]], [peak, peak], color=colors[roof], linewidth=1.4, gid=f"roof-{roof}")
        labels.append(ax.text(xlim[1], peak, " " + mpl(f"{roof_label(roof)} {peak_text([roof], peak)}"),
                              color=colors[roof], va="center", ha="left", fontsize=8, clip_on=False,
                              gid=GID + "roof-label"))
    separate_labels(fig, labels)  # equal or near roofs (FP16 and BF16 tensor) one above the other, never on top
    label_memory_roof(ax, fig, RoofSet(machine, False, MEMORY_COLOR),
                      [_At(p["intensity"], p["achieved"]) for p in plotted], xlim[0], top / bw, "")
    for rank, p in enumerate(points, 1):
        if not p["plotted"]:
            continue
        ax.scatter([p["intensity"]], [p["achieved"]], s=marker_size(p["share"]), color=colors[p["roof"]],
                   alpha=0.75, edgecolors="black", linewidths=0.5, gid=p["id"], zorder=3)
        ax.annotate(f"{rank}+" if p.get("mixed") else str(rank), (p["intensity"], p["achieved"]), xytext=(4, 4),
                    textcoords="offset points", fontsize=7, zorder=4)
    handles = [Line2D([], [], marker="o", linestyle="", color=c, label=mpl(roof_label(r))) for r, c in colors.items()]
    if any(p.get("mixed") for p in plotted):
        handles.append(Line2D([], [], linestyle="", label=MIXED_LEGEND))
    ax.legend(handles=handles, loc="lower right", fontsize=7, title="roof", title_fontsize=8)
    name = machine.get("name") or machine["id"]
    by = view.groups[0].by if view.groups else None
    ax.set_title(mpl(title or f"{view.device_name} · ceilings of {name}"
                     + (f" · grouped by {by}" if by else "")), fontsize=10, loc="left")
    side = fig.add_axes((0.8, 0.1, 0.19, 0.8))
    side.axis("off")
    side.text(0.0, 1.0, "\n".join(lines), va="top", ha="left", fontsize=7, family="monospace",
              gid=GID + "side-panel")
    return fig


PANEL_LISTED = 60  # points named in the side panel; past them it says how many and where the rest are
PANEL_UNPLOTTED = 10  # 0-FLOP points whose bandwidth it gives
PANEL_NAME = 25  # characters of a name (the panel's width at 7 pt), cut from the middle: roofline.render.charts.names
PANEL_LINE = 7 * 1.2 / 72  # inches a line of the panel takes


def side_panel(points: Sequence[Mapping[str, Any]], unmodelled: Sequence[str] = ()) -> list[str]:
    """The side panel's lines: every point by its number on the chart (the first PANEL_LISTED; the caption says
    how many more and how to list them), with names shortened so that no two read alike; those above their
    ceiling; the `unmodelled` lines (unmodelled_lines); then the points a log-log chart cannot place (0 FLOPs) with
    their achieved bandwidth. User text is escaped for matplotlib here (mpl)."""
    names = short_names([str(p["name"]) for p in points], PANEL_NAME)
    listed = min(len(points), PANEL_LISTED)
    lines = ["area: share of all GPU time", "",
             "by recoverable time, as numbered:" if listed == len(points)
             else f"points 1-{listed} of {len(points)} by recoverable time:"]
    for i, (p, name) in enumerate(zip(points[:listed], names), 1):
        mark = "+" if p.get("mixed") else ""
        lines.append(mpl(f"{i}{mark}. {name}") + ("" if p["plotted"] else " *") + (" (!)" if p.get("above") else ""))
    if listed < len(points):
        lines += [f"the other {len(points) - listed}: 'roofline report", "FILE' lists every one"]
    above = [(i, p) for i, p in enumerate(points, 1) if p.get("above")]
    if above:
        lines += ["", "(!) above its ceiling (not a", "pass; see report):"]
        lines += [f"{i}. {p['fraction']:.0%} of ceiling" for i, p in above[:5]]
    lines += unmodelled
    unplotted = [(i, p, names[i - 1]) for i, p in enumerate(points, 1) if not p["plotted"]]
    if unplotted:
        lines += ["", "* not drawn, 0 FLOPs (no place", "on a log-log chart), at their", "achieved bandwidth:"]
        for i, p, name in unplotted[:PANEL_UNPLOTTED]:
            lines.append(mpl(f"{i}. {name}"))
            lines.append(f"    {format_rate(p['bandwidth'])} for {format_time(p['time'])}")
        if len(unplotted) > PANEL_UNPLOTTED:
            lines += [f"and {len(unplotted) - PANEL_UNPLOTTED} more: 'roofline report", "FILE' lists them"]
    return lines
